// A file system in memory: a map from path to bytes, behind one mutex.
#include <map>
#include <mutex>
#include <set>

#include "evident/env.h"

namespace evident {
namespace {

// One file's bytes. Open files hold it, so it outlives a remove or a rename, as an inode does.
struct MemoryFile {
  std::string bytes;
};

struct MemoryFileSystem {
  std::mutex mu;  // guards `files`, `dirs` and every MemoryFile's bytes
  std::map<std::string, std::shared_ptr<MemoryFile>> files;
  std::set<std::string> dirs;  // created by CreateDir; a file's prefixes are directories too
};

// "a/b/" for "a/b" and "a/b/"; "/" for "/".
std::string AsDirPrefix(const std::string& dir) {
  std::string prefix = dir;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (prefix.empty() || prefix.back() != '/') prefix.push_back('/');
  return prefix;
}

// The first path component of `key` below `prefix`, added to `names`.
void AddChild(const std::string& key, const std::string& prefix, std::set<std::string>& names) {
  const std::string_view rest = std::string_view(key).substr(prefix.size());
  if (!rest.empty()) names.emplace(rest.substr(0, rest.find('/')));
}

Status Missing(std::string_view operation, const std::string& path) {
  return Status::NotFound(std::string(operation) + " " + path + ": No such file or directory");
}

class MemorySequentialFile final : public SequentialFile {
 public:
  MemorySequentialFile(std::shared_ptr<MemoryFileSystem> fs, std::shared_ptr<MemoryFile> file)
      : fs_(std::move(fs)), file_(std::move(file)) {}

  Result<size_t> Read(char* buf, size_t n) override {
    std::lock_guard lock(fs_->mu);
    const std::string& bytes = file_->bytes;
    // A file truncated under the reader reads as ended, as on POSIX.
    const size_t n_read = offset_ >= bytes.size() ? 0 : bytes.copy(buf, n, offset_);
    offset_ += n_read;
    return n_read;
  }

 private:
  const std::shared_ptr<MemoryFileSystem> fs_;
  const std::shared_ptr<MemoryFile> file_;
  size_t offset_ = 0;
};

// Appends go straight into the bytes: nothing is buffered, so Flush and Sync have nothing to do.
class MemoryWritableFile final : public WritableFile {
 public:
  MemoryWritableFile(std::shared_ptr<MemoryFileSystem> fs, std::shared_ptr<MemoryFile> file,
                     std::string path)
      : fs_(std::move(fs)), file_(std::move(file)), path_(std::move(path)) {}

  Status Append(std::string_view data) override {
    if (closed_) return Closed("append");
    std::lock_guard lock(fs_->mu);
    file_->bytes.append(data);
    return Status::Ok();
  }
  Status Flush() override { return closed_ ? Closed("flush") : Status::Ok(); }
  Status Sync() override { return closed_ ? Closed("sync") : Status::Ok(); }
  Status Close() override {
    closed_ = true;
    return Status::Ok();
  }

 private:
  Status Closed(std::string_view operation) const {
    return Status::FailedPrecondition(std::string(operation) + " " + path_ +
                                      ": the file is closed");
  }

  const std::shared_ptr<MemoryFileSystem> fs_;
  const std::shared_ptr<MemoryFile> file_;
  const std::string path_;
  bool closed_ = false;
};

class MemoryEnv final : public Env {
 public:
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path) override {
    std::lock_guard lock(fs_->mu);
    const auto it = fs_->files.find(path);
    if (it == fs_->files.end()) return Missing("open", path);
    return std::unique_ptr<SequentialFile>(new MemorySequentialFile(fs_, it->second));
  }

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path) override {
    return OpenForWriting(path, /*truncate=*/true);
  }

  Result<std::unique_ptr<WritableFile>> NewAppendableFile(const std::string& path) override {
    return OpenForWriting(path, /*truncate=*/false);
  }

  Result<bool> FileExists(const std::string& path) override {
    std::lock_guard lock(fs_->mu);
    return fs_->files.count(path) == 1;
  }

  Result<uint64_t> GetFileSize(const std::string& path) override {
    std::lock_guard lock(fs_->mu);
    const auto it = fs_->files.find(path);
    if (it == fs_->files.end()) return Missing("stat", path);
    return static_cast<uint64_t>(it->second->bytes.size());
  }

  Result<std::optional<char>> LastByte(const std::string& path) override {
    std::lock_guard lock(fs_->mu);
    const auto it = fs_->files.find(path);
    if (it == fs_->files.end()) return Missing("open", path);
    const std::string& bytes = it->second->bytes;
    return bytes.empty() ? std::nullopt : std::optional<char>(bytes.back());
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    std::lock_guard lock(fs_->mu);
    auto node = fs_->files.extract(from);
    if (node.empty()) return Missing("rename", from + " to " + to);
    fs_->files.insert_or_assign(to, std::move(node.mapped()));
    return Status::Ok();
  }

  Status RemoveFile(const std::string& path) override {
    std::lock_guard lock(fs_->mu);
    if (fs_->files.erase(path) == 0) return Missing("remove", path);
    return Status::Ok();
  }

  Status SyncDir(const std::string& /*dir*/) override { return Status::Ok(); }

  Result<std::vector<std::string>> GetChildren(const std::string& dir) override {
    std::lock_guard lock(fs_->mu);
    if (!IsDirectoryLocked(dir)) return Missing("list", dir);
    const std::string prefix = AsDirPrefix(dir);
    std::set<std::string> names;
    for (auto it = fs_->files.lower_bound(prefix);
         it != fs_->files.end() && it->first.starts_with(prefix); ++it) {
      AddChild(it->first, prefix, names);
    }
    for (auto it = fs_->dirs.lower_bound(prefix); it != fs_->dirs.end() && it->starts_with(prefix);
         ++it) {
      AddChild(*it, prefix, names);
    }
    return std::vector<std::string>(names.begin(), names.end());
  }

  Result<bool> IsDirectory(const std::string& path) override {
    std::lock_guard lock(fs_->mu);
    return IsDirectoryLocked(path);
  }

  Status CreateDir(const std::string& dir) override {
    std::lock_guard lock(fs_->mu);
    std::string path = AsDirPrefix(dir);
    if (path.size() > 1) path.pop_back();
    if (fs_->files.count(path) == 1) {
      return Status::IoError("mkdir " + dir + ": File exists");
    }
    fs_->dirs.insert(path);
    return Status::Ok();
  }

 private:
  bool IsDirectoryLocked(const std::string& path) const {
    if (path.empty()) return false;  // as stat(""): nothing
    const std::string prefix = AsDirPrefix(path);
    if (prefix == "/") return true;
    if (fs_->dirs.count(prefix.substr(0, prefix.size() - 1)) == 1) return true;
    const auto file = fs_->files.lower_bound(prefix);
    if (file != fs_->files.end() && file->first.starts_with(prefix)) return true;
    const auto sub = fs_->dirs.lower_bound(prefix);
    return sub != fs_->dirs.end() && sub->starts_with(prefix);
  }

  Result<std::unique_ptr<WritableFile>> OpenForWriting(const std::string& path, bool truncate) {
    std::lock_guard lock(fs_->mu);
    std::shared_ptr<MemoryFile>& file = fs_->files[path];
    if (file == nullptr) file = std::make_shared<MemoryFile>();
    // Truncated in place: readers already open see it, as they would on POSIX.
    if (truncate) file->bytes.clear();
    return std::unique_ptr<WritableFile>(new MemoryWritableFile(fs_, file, path));
  }

  const std::shared_ptr<MemoryFileSystem> fs_ = std::make_shared<MemoryFileSystem>();
};

}  // namespace

std::unique_ptr<Env> NewMemoryEnv() { return std::make_unique<MemoryEnv>(); }

}  // namespace evident
