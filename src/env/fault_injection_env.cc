// FaultInjectionEnv: another Env plus a record of what a power loss would take away, and failures
// on chosen calls.
#include <array>
#include <cassert>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "env/path.h"
#include "evident/env.h"

namespace evident {
namespace {

// What a power loss leaves of one file written through the Env.
struct FileState {
  uint64_t size_bytes = 0;    // its size, as written through the Env
  uint64_t synced_bytes = 0;  // the prefix that a Sync made durable
  bool entry_synced = true;   // false until its directory is synced after its creation
};

// Keeps the first `size_bytes` of the file. Through the Env interface alone, so that any base
// will do: read the prefix, write it back.
Status Truncate(Env& env, const std::string& path, uint64_t size_bytes) {
  std::string kept;
  {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> in, env.NewSequentialFile(path));
    kept.resize(size_bytes);
    size_t have_bytes = 0;
    while (have_bytes < kept.size()) {
      EVIDENT_ASSIGN_OR_RETURN(const size_t n,
                               in->Read(kept.data() + have_bytes, kept.size() - have_bytes));
      if (n == 0) break;  // shorter already
      have_bytes += n;
    }
    kept.resize(have_bytes);
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out, env.NewWritableFile(path));
  EVIDENT_RETURN_IF_ERROR(out->Append(kept));
  return out->Close();
}

}  // namespace

struct FaultInjectionState {
  Env* base = nullptr;
  std::unique_ptr<Env> owned_base;  // set when the Env owns its base

  mutable std::mutex mu;  // guards everything below
  bool active = true;
  std::map<std::string, std::shared_ptr<FileState>> files;
  std::array<int64_t, kFileOperationCount> calls{};
  std::array<int64_t, kFileOperationCount> failing_call{};  // 0: no failure armed

  // Counts a call of `operation`, and says whether it may run: the injected failure it meets,
  // or the inactive file system's refusal of a change, or OK.
  Status Admit(FileOperation operation, std::string_view path, bool changes_files) {
    const auto i = static_cast<size_t>(operation);
    assert(i < kFileOperationCount);
    std::lock_guard lock(mu);
    const int64_t call = ++calls[i];
    const std::string what = std::string(FileOperationName(operation)) + " " + std::string(path);
    if (failing_call[i] == call) {
      failing_call[i] = 0;
      return Status::IoError("injected fault: " + what + " (call " + std::to_string(call) + ")");
    }
    if (changes_files && !active) {
      return Status::IoError(what + ": the file system is inactive (simulated crash)");
    }
    return Status::Ok();
  }
};

namespace {

class FaultSequentialFile final : public SequentialFile {
 public:
  FaultSequentialFile(std::shared_ptr<FaultInjectionState> state, std::string path,
                      std::unique_ptr<SequentialFile> base)
      : state_(std::move(state)), path_(std::move(path)), base_(std::move(base)) {}

  Result<size_t> Read(char* buf, size_t n) override {
    EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kRead, path_, false));
    return base_->Read(buf, n);
  }

 private:
  const std::shared_ptr<FaultInjectionState> state_;
  const std::string path_;
  const std::unique_ptr<SequentialFile> base_;
};

class FaultWritableFile final : public WritableFile {
 public:
  FaultWritableFile(std::shared_ptr<FaultInjectionState> state, std::string path,
                    std::unique_ptr<WritableFile> base, std::shared_ptr<FileState> file)
      : state_(std::move(state)),
        path_(std::move(path)),
        base_(std::move(base)),
        file_(std::move(file)) {}

  Status Append(std::string_view data) override {
    EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kAppend, path_, true));
    EVIDENT_RETURN_IF_ERROR(base_->Append(data));
    std::lock_guard lock(state_->mu);
    file_->size_bytes += data.size();
    return Status::Ok();
  }

  Status Flush() override {
    EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kFlush, path_, true));
    return base_->Flush();
  }

  Status Sync() override {
    EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kSync, path_, true));
    EVIDENT_RETURN_IF_ERROR(base_->Sync());
    std::lock_guard lock(state_->mu);
    file_->synced_bytes = file_->size_bytes;
    return Status::Ok();
  }

  // A failed Close still releases the base file: a process whose close(2) failed does not get
  // its descriptor back either.
  Status Close() override {
    if (closed_) return base_->Close();
    closed_ = true;
    const Status admitted = state_->Admit(FileOperation::kClose, path_, true);
    const Status closed = base_->Close();
    return admitted.ok() ? closed : admitted;
  }

 private:
  const std::shared_ptr<FaultInjectionState> state_;
  const std::string path_;
  const std::unique_ptr<WritableFile> base_;
  const std::shared_ptr<FileState> file_;
  bool closed_ = false;
};

}  // namespace

FaultInjectionEnv::FaultInjectionEnv(Env& base) : state_(std::make_shared<FaultInjectionState>()) {
  state_->base = &base;
}

FaultInjectionEnv::FaultInjectionEnv(std::unique_ptr<Env> base)
    : state_(std::make_shared<FaultInjectionState>()) {
  assert(base != nullptr);
  state_->base = base.get();
  state_->owned_base = std::move(base);
}

FaultInjectionEnv::~FaultInjectionEnv() = default;

Result<std::unique_ptr<SequentialFile>> FaultInjectionEnv::NewSequentialFile(
    const std::string& path) {
  EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kOpen, path, false));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<SequentialFile> base,
                           state_->base->NewSequentialFile(path));
  return std::unique_ptr<SequentialFile>(new FaultSequentialFile(state_, path, std::move(base)));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(const std::string& path) {
  EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kOpen, path, true));
  EVIDENT_ASSIGN_OR_RETURN(const bool existed, state_->base->FileExists(path));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> base, state_->base->NewWritableFile(path));
  std::shared_ptr<FileState> file;
  {
    std::lock_guard lock(state_->mu);
    std::shared_ptr<FileState>& slot = state_->files[path];
    // A file created unsynced stays so; one that existed has a durable entry.
    if (slot == nullptr) slot = std::make_shared<FileState>(FileState{.entry_synced = existed});
    // The truncation counts as durable at once (see env.h).
    slot->size_bytes = 0;
    slot->synced_bytes = 0;
    file = slot;
  }
  return std::unique_ptr<WritableFile>(
      new FaultWritableFile(state_, path, std::move(base), std::move(file)));
}

Result<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewAppendableFile(
    const std::string& path) {
  EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kOpen, path, true));
  EVIDENT_ASSIGN_OR_RETURN(const bool existed, state_->base->FileExists(path));
  uint64_t size_bytes = 0;
  if (existed) {
    EVIDENT_ASSIGN_OR_RETURN(size_bytes, state_->base->GetFileSize(path));
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> base,
                           state_->base->NewAppendableFile(path));
  std::shared_ptr<FileState> file;
  {
    std::lock_guard lock(state_->mu);
    std::shared_ptr<FileState>& slot = state_->files[path];
    // Bytes that were there before this Env wrote to the file count as durable.
    if (slot == nullptr)
      slot = std::make_shared<FileState>(FileState{size_bytes, size_bytes, existed});
    file = slot;
  }
  return std::unique_ptr<WritableFile>(
      new FaultWritableFile(state_, path, std::move(base), std::move(file)));
}

Result<bool> FaultInjectionEnv::FileExists(const std::string& path) {
  return state_->base->FileExists(path);
}

Result<uint64_t> FaultInjectionEnv::GetFileSize(const std::string& path) {
  return state_->base->GetFileSize(path);
}

Result<std::optional<char>> FaultInjectionEnv::LastByte(const std::string& path) {
  return state_->base->LastByte(path);
}

Result<std::vector<std::string>> FaultInjectionEnv::GetChildren(const std::string& dir) {
  return state_->base->GetChildren(dir);
}

Result<bool> FaultInjectionEnv::IsDirectory(const std::string& path) {
  return state_->base->IsDirectory(path);
}

Status FaultInjectionEnv::CreateDir(const std::string& dir) { return state_->base->CreateDir(dir); }

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kRename, from + " to " + to, true));
  EVIDENT_RETURN_IF_ERROR(state_->base->RenameFile(from, to));
  std::lock_guard lock(state_->mu);
  auto moved = state_->files.extract(from);
  if (moved.empty()) {
    state_->files.erase(to);  // a durable file took the name: `to` is durable now
  } else {
    state_->files.insert_or_assign(to, std::move(moved.mapped()));
  }
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kRemove, path, true));
  EVIDENT_RETURN_IF_ERROR(state_->base->RemoveFile(path));
  std::lock_guard lock(state_->mu);
  state_->files.erase(path);
  return Status::Ok();
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  EVIDENT_RETURN_IF_ERROR(state_->Admit(FileOperation::kSyncDir, dir, true));
  EVIDENT_RETURN_IF_ERROR(state_->base->SyncDir(dir));
  const std::string synced_dir = NormalizeDirectory(dir);
  std::lock_guard lock(state_->mu);
  for (auto& [path, file] : state_->files) {
    if (DirectoryOf(path) == synced_dir) file->entry_synced = true;
  }
  return Status::Ok();
}

void FaultInjectionEnv::SetFilesystemActive(bool active) {
  std::lock_guard lock(state_->mu);
  state_->active = active;
}

void FaultInjectionEnv::FailNth(FileOperation operation, int64_t nth) {
  assert(nth >= 1);
  const auto i = static_cast<size_t>(operation);
  std::lock_guard lock(state_->mu);
  state_->failing_call[i] = state_->calls[i] + nth;
}

int64_t FaultInjectionEnv::CallCount(FileOperation operation) const {
  std::lock_guard lock(state_->mu);
  return state_->calls[static_cast<size_t>(operation)];
}

Status FaultInjectionEnv::DropUnsyncedData() {
  std::vector<std::pair<std::string, uint64_t>> truncations;
  {
    std::lock_guard lock(state_->mu);
    for (auto& [path, file] : state_->files) {
      if (file->size_bytes == file->synced_bytes) continue;
      assert(file->size_bytes > file->synced_bytes);
      truncations.emplace_back(path, file->synced_bytes);
      file->size_bytes = file->synced_bytes;
    }
  }
  for (const auto& [path, size_bytes] : truncations) {
    const Status status = Truncate(*state_->base, path, size_bytes);
    // Gone from the base already (removed there directly): nothing left to lose.
    if (!status.ok() && status.code() != Code::kNotFound) return status;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::RemoveFilesCreatedAfterLastDirSync() {
  std::vector<std::string> lost;
  {
    std::lock_guard lock(state_->mu);
    for (auto it = state_->files.begin(); it != state_->files.end();) {
      if (it->second->entry_synced) {
        ++it;
        continue;
      }
      lost.push_back(it->first);
      it = state_->files.erase(it);
    }
  }
  for (const std::string& path : lost) {
    const Status status = state_->base->RemoveFile(path);
    if (!status.ok() && status.code() != Code::kNotFound) return status;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::SimulatePowerLoss() {
  EVIDENT_RETURN_IF_ERROR(DropUnsyncedData());
  EVIDENT_RETURN_IF_ERROR(RemoveFilesCreatedAfterLastDirSync());
  std::lock_guard lock(state_->mu);
  state_->files.clear();
  return Status::Ok();
}

}  // namespace evident
