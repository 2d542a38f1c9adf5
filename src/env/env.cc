// What every Env shares: the base classes, path helpers, and the whole-file helpers built on the
// interface alone.
#include "evident/env.h"

#include <cassert>
#include <mutex>

#include "env/path.h"

namespace evident {

SequentialFile::~SequentialFile() = default;
WritableFile::~WritableFile() = default;
Env::~Env() = default;

std::string NormalizeDirectory(std::string_view dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.remove_suffix(1);
  return dir.empty() ? std::string(".") : std::string(dir);
}

std::string DirectoryOf(std::string_view path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ".";
  if (slash == 0) return "/";
  return NormalizeDirectory(path.substr(0, slash));
}

std::string_view FileOperationName(FileOperation operation) {
  switch (operation) {
    case FileOperation::kOpen:
      return "open";
    case FileOperation::kRead:
      return "read";
    case FileOperation::kAppend:
      return "append";
    case FileOperation::kFlush:
      return "flush";
    case FileOperation::kSync:
      return "sync";
    case FileOperation::kClose:
      return "close";
    case FileOperation::kRename:
      return "rename";
    case FileOperation::kRemove:
      return "remove";
    case FileOperation::kSyncDir:
      return "sync-dir";
  }
  return "unknown";
}

namespace {

class SharedFile final : public WritableFile {
 public:
  explicit SharedFile(WritableFile& base) : base_(base) {}
  Status Append(std::string_view data) override {
    std::lock_guard lock(mu_);
    return base_.Append(data);
  }
  Status Flush() override {
    std::lock_guard lock(mu_);
    return base_.Flush();
  }
  Status Sync() override {
    std::lock_guard lock(mu_);
    return base_.Sync();
  }
  Status Close() override {
    std::lock_guard lock(mu_);
    return base_.Close();
  }

 private:
  std::mutex mu_;
  WritableFile& base_;
};

}  // namespace

std::unique_ptr<WritableFile> SharedWritableFile(WritableFile& base) {
  return std::make_unique<SharedFile>(base);
}

Result<std::string> ReadWholeFile(Env& env, const std::string& path, size_t bytes_max) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> file, env.NewSequentialFile(path));
  std::string contents;
  char buffer[1 << 16];
  for (;;) {
    EVIDENT_ASSIGN_OR_RETURN(const size_t n, file->Read(buffer, sizeof buffer));
    assert(n <= sizeof buffer);
    if (n == 0) return contents;
    if (contents.size() + n > bytes_max) {
      return Status::LimitExceeded(path + " is larger than " + std::to_string(bytes_max) +
                                   " bytes");
    }
    contents.append(buffer, n);
  }
}

namespace {

Status WriteAndSync(Env& env, const std::string& path, std::string_view contents) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env.NewWritableFile(path));
  Status status = file->Append(contents);
  if (status.ok()) status = file->Sync();
  // Close even after a failure, and report the first error.
  const Status closed = file->Close();
  return status.ok() ? closed : status;
}

}  // namespace

Status WriteFileAtomically(Env& env, const std::string& path, std::string_view contents) {
  const std::string temporary = path + ".tmp";
  Status status = WriteAndSync(env, temporary, contents);
  if (status.ok()) status = env.RenameFile(temporary, path);
  if (!status.ok()) {
    (void)env.RemoveFile(temporary);  // best-effort: the error that matters is `status`
    return status;
  }
  // The rename is durable only once the directory is; until then a crash may keep the old file.
  return env.SyncDir(DirectoryOf(path));
}

}  // namespace evident
