// The real file system: POSIX calls, each checked, EINTR retried, short writes continued.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "evident/env.h"

namespace evident {
namespace {

// "write /out/x.ndjson: No space left on device"; a missing file is kNotFound.
Status PosixError(std::string_view operation, const std::string& path, int error_number) {
  std::string message(operation);
  message += " " + path + ": " + std::strerror(error_number);
  if (error_number == ENOENT) return Status::NotFound(std::move(message));
  return Status::IoError(std::move(message));
}

Result<int> Open(const std::string& path, int flags) {
  for (;;) {
    const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EINTR) return PosixError("open", path, errno);
  }
}

// fdatasync: the data and the size, not the times, which nothing here reads back.
Status DataSync(int fd, const std::string& path) {
  for (;;) {
    if (::fdatasync(fd) == 0) return Status::Ok();
    if (errno != EINTR) return PosixError("sync", path, errno);
  }
}

class PosixSequentialFile final : public SequentialFile {
 public:
  PosixSequentialFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixSequentialFile() override { ::close(fd_); }  // read-only: nothing to lose on close

  Result<size_t> Read(char* buf, size_t n) override {
    for (;;) {
      const ssize_t got = ::read(fd_, buf, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return PosixError("read", path_, errno);
    }
  }

 private:
  const std::string path_;
  const int fd_;
};

class PosixWritableFile final : public WritableFile {
 public:
  // `owns_fd`: Close closes the descriptor (else it only flushes: the descriptor is its opener's).
  PosixWritableFile(std::string path, int fd, bool owns_fd = true)
      : path_(std::move(path)), fd_(fd), owns_fd_(owns_fd) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();  // best-effort, as documented: callers Close() to see errors
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Closed("append");
    // Small appends gather in the buffer (one write(2) per kBufferBytes); a large one goes
    // straight to the file after what the buffer holds.
    if (buffer_.size() + data.size() <= kBufferBytes) {
      buffer_.append(data);
      return Status::Ok();
    }
    EVIDENT_RETURN_IF_ERROR(FlushBuffer());
    if (data.size() <= kBufferBytes) {
      buffer_.append(data);
      return Status::Ok();
    }
    size_t written_bytes = 0;
    return WriteAll(data, &written_bytes);
  }

  Status Flush() override {
    if (fd_ < 0) return Closed("flush");
    return FlushBuffer();
  }

  Status Sync() override {
    if (fd_ < 0) return Closed("sync");
    EVIDENT_RETURN_IF_ERROR(FlushBuffer());
    return DataSync(fd_, path_);
  }

  Status Close() override {
    if (fd_ < 0) return Status::Ok();
    Status status = FlushBuffer();
    const int fd = std::exchange(fd_, -1);
    if (!owns_fd_) return status;
    // Not retried on EINTR: Linux releases the descriptor even then, and a retry could close a
    // descriptor another thread has just opened. A write-back failure shows at Sync instead.
    if (::close(fd) != 0 && errno != EINTR && status.ok()) {
      status = PosixError("close", path_, errno);
    }
    return status;
  }

 private:
  static constexpr size_t kBufferBytes = 64 * 1024;

  Status Closed(std::string_view operation) const {
    return Status::FailedPrecondition(std::string(operation) + " " + path_ +
                                      ": the file is closed");
  }

  // Writes the buffer out. On a failure, keeps what was not written, so that Close tries again
  // and reports the failure a second time rather than dropping the bytes silently.
  Status FlushBuffer() {
    if (buffer_.empty()) return Status::Ok();
    size_t written_bytes = 0;
    Status status = WriteAll(buffer_, &written_bytes);
    buffer_.erase(0, written_bytes);
    return status;
  }

  // Loops over short writes; `written_bytes` says how far it got, also when it fails.
  Status WriteAll(std::string_view data, size_t* written_bytes) {
    while (*written_bytes < data.size()) {
      const ssize_t n = ::write(fd_, data.data() + *written_bytes, data.size() - *written_bytes);
      if (n < 0) {
        if (errno == EINTR) continue;
        return PosixError("write", path_, errno);
      }
      // write(2) returns 0 only for a count of 0; a loop that made no progress must not spin.
      if (n == 0) return Status::IoError("write " + path_ + ": wrote nothing");
      assert(static_cast<size_t>(n) <= data.size() - *written_bytes);
      *written_bytes += static_cast<size_t>(n);
    }
    return Status::Ok();
  }

  const std::string path_;
  int fd_;
  const bool owns_fd_;
  std::string buffer_;
};

class PosixEnvImpl final : public Env {
 public:
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    EVIDENT_ASSIGN_OR_RETURN(const int fd, Open(path, O_RDONLY));
    return std::unique_ptr<SequentialFile>(new PosixSequentialFile(path, fd));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    EVIDENT_ASSIGN_OR_RETURN(const int fd, Open(path, O_WRONLY | O_CREAT | O_TRUNC));
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    EVIDENT_ASSIGN_OR_RETURN(const int fd, Open(path, O_WRONLY | O_CREAT | O_APPEND));
    return std::unique_ptr<WritableFile>(new PosixWritableFile(path, fd));
  }

  Result<bool> FileExists(const std::string& path) override {
    struct stat info;
    if (::stat(path.c_str(), &info) == 0) return true;
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return PosixError("stat", path, errno);
  }

  Result<uint64_t> GetFileSize(const std::string& path) override {
    struct stat info;
    if (::stat(path.c_str(), &info) != 0) return PosixError("stat", path, errno);
    return static_cast<uint64_t>(info.st_size);
  }

  Result<std::optional<char>> LastByte(const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return PosixError("open", path, errno);
    struct stat info;
    std::optional<char> last;
    Status status = Status::Ok();
    if (::fstat(fd, &info) != 0) {
      status = PosixError("stat", path, errno);
    } else if (info.st_size > 0) {
      char byte = 0;
      ssize_t n = 0;
      do {
        n = ::pread(fd, &byte, 1, info.st_size - 1);
      } while (n < 0 && errno == EINTR);
      if (n == 1) last = byte;
      if (n < 0) status = PosixError("read", path, errno);
    }
    ::close(fd);  // read-only: nothing of ours to lose at close
    EVIDENT_RETURN_IF_ERROR(status);
    return last;
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) == 0) return Status::Ok();
    return PosixError("rename", from + " to " + to, errno);
  }

  Status RemoveFile(const std::string& path) override {
    if (::unlink(path.c_str()) == 0) return Status::Ok();
    return PosixError("remove", path, errno);
  }

  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    DIR* handle = ::opendir(dir.c_str());
    if (handle == nullptr) return PosixError("list", dir, errno == ENOTDIR ? ENOENT : errno);
    std::vector<std::string> names;
    errno = 0;
    while (const dirent* entry = ::readdir(handle)) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
      errno = 0;
    }
    const int read_error = errno;
    ::closedir(handle);  // read-only: nothing to lose
    if (read_error != 0) return PosixError("list", dir, read_error);
    std::sort(names.begin(), names.end());
    return names;
  }

  Result<bool> IsDirectory(const std::string& path) override {
    struct stat info;
    if (::stat(path.c_str(), &info) == 0) return S_ISDIR(info.st_mode);
    if (errno == ENOENT || errno == ENOTDIR) return false;
    return PosixError("stat", path, errno);
  }

  Status CreateDir(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) == 0) return Status::Ok();
    const int error_number = errno;
    if (error_number == EEXIST) {
      EVIDENT_ASSIGN_OR_RETURN(const bool directory, IsDirectory(dir));
      if (directory) return Status::Ok();
    }
    return PosixError("mkdir", dir, error_number);
  }

  Status SyncDir(const std::string& dir) override {
    EVIDENT_ASSIGN_OR_RETURN(const int fd, Open(dir, O_RDONLY | O_DIRECTORY));
    // fsync of a directory: fdatasync's guarantee for its entries is not spelled out anywhere.
    Status status;
    while (::fsync(fd) != 0) {
      if (errno == EINTR) continue;
      status = PosixError("sync", dir, errno);
      break;
    }
    ::close(fd);  // read-only descriptor: nothing to lose
    return status;
  }
};

}  // namespace

Env& PosixEnv() {
  static PosixEnvImpl* const env = new PosixEnvImpl;  // never freed, as SystemClock()
  return *env;
}

std::unique_ptr<WritableFile> WritableFileOnDescriptor(int fd, std::string name) {
  assert(fd >= 0);
  return std::make_unique<PosixWritableFile>(std::move(name), fd, /*owns_fd=*/false);
}

}  // namespace evident
