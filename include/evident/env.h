// evident/env.h — the file-system seam: every file evident reads or writes goes through an Env.
//
// Three backends share the interface and pass one conformance suite
// (src/env/env_conformance_test.cc): PosixEnv() (the real one), NewMemoryEnv() (a map from path
// to bytes, for tests and the deterministic simulation) and FaultInjectionEnv (wraps another Env
// and simulates power loss and failing calls, as LevelDB's fault_injection_test does).
//
// Errors are values. Every open, read, write, flush, sync, close, rename and remove is checked,
// and a failure names the operation, the path and the system's reason:
// "write /out/outcomes.ndjson: No space left on device". A missing file is kNotFound; any other
// failure is kIoError.
//
// Thread-safety: an Env may be used from any number of threads. A file object is used by one
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident {

// Reads a file from its start to its end.
class SequentialFile {
 public:
  virtual ~SequentialFile();
  // Reads up to `n` bytes into `buf`: the count read, 0 only at the end of the file. A short
  // count does not mean the end.
  virtual Result<size_t> Read(char* buf, size_t n) = 0;
};

// Writes a file from where it was opened (its start, or its end when appending).
//
// Lifecycle: Append any number of times, then Close. Close reports the last write's failure
// (the posix file buffers appends, so a write may fail only at Flush or Close) and must be
// called: the destructor closes a file left open, but best-effort, and its errors are lost.
// After Close, every call but Close fails with kFailedPrecondition; a second Close does nothing.
class WritableFile {
 public:
  virtual ~WritableFile();
  virtual Status Append(std::string_view data) = 0;
  // Hands the appended bytes to the operating system: other readers see them, a crash of this
  // process does not lose them, a power loss may.
  virtual Status Flush() = 0;
  // Flush, then make the bytes durable (fdatasync): a power loss no longer loses them. The
  // file's name is durable only once its directory is synced too (Env::SyncDir).
  virtual Status Sync() = 0;
  // Flush, then release the file. Does not Sync.
  virtual Status Close() = 0;
};

class Env {
 public:
  virtual ~Env();

  virtual Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) = 0;
  // Creates the file, or truncates it to empty when it exists.
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) = 0;
  // Creates the file, or opens it to append after its current end.
  virtual Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) = 0;

  // False when nothing exists at `path`; an error only when the question cannot be answered
  // (a permission denied on the way).
  virtual Result<bool> FileExists(const std::string& path) = 0;
  virtual Result<uint64_t> GetFileSize(const std::string& path) = 0;
  // The file's last byte; nullopt for an empty file.
  virtual Result<std::optional<char>> LastByte(const std::string& path) = 0;
  // Atomically replaces `to` when it exists. Durable once the directory is synced.
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status RemoveFile(const std::string& path) = 0;
  // Makes the directory's entries durable: the files created, renamed or removed in it.
  virtual Status SyncDir(const std::string& dir) = 0;

  // The names in a directory (files and directories, without "." and ".."), sorted bytewise;
  // kNotFound when `dir` is not a directory.
  virtual Result<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  // False when nothing, or a file, is at `path`.
  virtual Result<bool> IsDirectory(const std::string& path) = 0;
  // Creates the directory; its parent must exist. Ok when it exists already.
  virtual Status CreateDir(const std::string& dir) = 0;
};

// The real file system (POSIX calls; EINTR retried, short writes continued). Never destroyed.
Env& PosixEnv();

// Appends to a descriptor opened elsewhere (standard output, a pipe), buffered as a posix file
// is; `name` is what its errors say ("write standard output: Broken pipe"). Close flushes and
// leaves the descriptor open: it stays its opener's.
std::unique_ptr<WritableFile> WritableFileOnDescriptor(int fd, std::string name);

// A file system in memory. A file may be created under any prefix (the posix Env needs the
// directory): a directory exists when it was created or a file is below it; SyncDir always
// succeeds. An
// open file keeps its bytes when it is removed or renamed, as on POSIX.
std::unique_ptr<Env> NewMemoryEnv();

// A WritableFile several threads may share: each call on it runs under one mutex, so that one
// Append never interleaves with another's (a consumer group's partition loops share one
// --outcomes file). `base` must outlive it; its Close closes `base`.
std::unique_ptr<WritableFile> SharedWritableFile(WritableFile& base);

// Reads the whole file; kLimitExceeded when it is larger than `bytes_max`.
Result<std::string> ReadWholeFile(Env& env, const std::string& path, size_t bytes_max);

// Replaces the file at `path` with `contents` so that a crash leaves either the old file or the
// new one, never a mixture: writes `path`.tmp, syncs it, renames it over `path` and syncs the
// directory. A failure removes the temporary file, best-effort. One writer per path at a time:
// two would share the temporary file.
Status WriteFileAtomically(Env& env, const std::string& path, std::string_view contents);

// The kinds of call a FaultInjectionEnv counts and can make fail.
enum class FileOperation {
  kOpen,     // NewSequentialFile, NewWritableFile, NewAppendableFile
  kRead,     // SequentialFile::Read
  kAppend,   // WritableFile::Append
  kFlush,    // WritableFile::Flush
  kSync,     // WritableFile::Sync
  kClose,    // WritableFile::Close (its first call only)
  kRename,   // Env::RenameFile
  kRemove,   // Env::RemoveFile
  kSyncDir,  // Env::SyncDir
};
inline constexpr size_t kFileOperationCount = 9;
std::string_view FileOperationName(FileOperation operation);

struct FaultInjectionState;  // private to src/env/fault_injection_env.cc

// Wraps another Env (the posix one in a temporary directory, or a memory one) and keeps, for
// every file written through it, what a power loss would leave.
//
// Modelled, as in LevelDB's fault_injection_test:
// - data appended but not synced: DropUnsyncedData() truncates each file to its last synced size
//   (a file opened by NewWritableFile counts as truncated for good at once; a file that existed
//   before and is opened to append keeps its earlier bytes as synced);
// - files created since the last SyncDir of their directory:
//   RemoveFilesCreatedAfterLastDirSync() removes them. A rename carries the file's state to its
//   new name: a file created, synced and renamed is lost unless its directory is synced after.
// Not modelled: a rename or a remove being undone (both are durable at once, so a lost rename
// never brings back the file it replaced); reordering of writes within the unsynced tail (the
// tail is lost whole); partial sector writes; files written through the base Env directly, which
// count as durable. FileExists, GetFileSize, LastByte, GetChildren, IsDirectory and CreateDir are
// neither counted nor failed.
//
// Thread-safety: as any Env. The failure settings may change while other threads use it.
class FaultInjectionEnv final : public Env {
 public:
  // `base` must outlive this Env and every file opened through it.
  explicit FaultInjectionEnv(Env& base);
  // Owns `base`.
  explicit FaultInjectionEnv(std::unique_ptr<Env> base);
  ~FaultInjectionEnv() override;

  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override;
  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override;
  Result<bool> FileExists(const std::string& path) override;
  Result<uint64_t> GetFileSize(const std::string& path) override;
  Result<std::optional<char>> LastByte(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status RemoveFile(const std::string& path) override;
  Status SyncDir(const std::string& dir) override;
  Result<std::vector<std::string>> GetChildren(const std::string& dir) override;
  Result<bool> IsDirectory(const std::string& path) override;
  Status CreateDir(const std::string& dir) override;

  // While inactive, every call that would change the file system (opening for writing, append,
  // flush, sync, close, rename, remove, sync of a directory) fails with kIoError and changes
  // nothing, as if the machine had stopped; reads still work. A file's Close releases its base
  // file all the same.
  void SetFilesystemActive(bool active);

  // Makes the `nth` call (>= 1) of `operation` from now on fail with kIoError ("injected
  // fault: ..."), once; the calls before and after it run normally. A failed call changes
  // nothing, except that a failed Close still releases the file. A later FailNth of the same
  // operation replaces an earlier one that has not fired.
  void FailNth(FileOperation operation, int64_t nth);

  // How many calls of `operation` were made, failed ones included.
  int64_t CallCount(FileOperation operation) const;

  // Truncates every file written through this Env to its last synced size. Call it once the
  // files are closed or destroyed: an open file keeps writing to the base Env.
  Status DropUnsyncedData();
  // Removes every file created (or renamed from such a file) since the last SyncDir of its
  // directory.
  Status RemoveFilesCreatedAfterLastDirSync();
  // Both of the above, then forgets every file: what is left is durable. A simulated power loss.
  Status SimulatePowerLoss();

 private:
  // Shared with the files opened through this Env, which may outlive it.
  std::shared_ptr<FaultInjectionState> state_;
};

}  // namespace evident
