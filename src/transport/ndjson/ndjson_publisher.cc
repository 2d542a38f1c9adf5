// The NDJSON file publisher (evident/publisher.h): append, sync, then report the batch accepted.
#include <filesystem>

#include "evident/publisher.h"
#include "transport/ndjson/ndjson_lines.h"

namespace evident {
namespace {

class NdjsonPublisher final : public Publisher {
 public:
  NdjsonPublisher(std::unique_ptr<WritableFile> file, std::string path, bool torn_tail)
      : file_(std::move(file)), path_(std::move(path)), torn_tail_(torn_tail) {}

  // The whole batch (up to a message holding a newline: NdjsonLines) is one append and one
  // sync: either every message of it is on disk or the call fails and none counts as accepted
  // (a torn tail is possible after a crash, as with any file; the messages carry ids, so
  // offering them again is safe).
  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    if (file_ == nullptr) return Status::FailedPrecondition("publisher of " + path_ + " is closed");
    EVIDENT_ASSIGN_OR_RETURN(const size_t lines, NdjsonLines(batch, path_, text_));
    if (lines == 0) return size_t{0};
    if (!broken_.ok()) {
      return Status::FailedPrecondition("publisher of " + path_ +
                                        " refuses batches after a failed write (" +
                                        broken_.ToString() + "); reopen it");
    }
    broken_ = Write();
    if (!broken_.ok()) return broken_;
    return lines;
  }

  Status Close() override {
    if (file_ == nullptr) return Status::Ok();
    Status closed = file_->Close();
    file_.reset();
    return closed;
  }

 private:
  Status Write() {
    if (torn_tail_) {  // its own line for what follows; the fragment stays, as a line of its own
      EVIDENT_RETURN_IF_ERROR(file_->Append("\n"));
      torn_tail_ = false;
    }
    EVIDENT_RETURN_IF_ERROR(file_->Append(text_));
    EVIDENT_RETURN_IF_ERROR(file_->Flush());
    return file_->Sync();
  }

  std::unique_ptr<WritableFile> file_;
  std::string path_;
  std::string text_;  // the batch being written
  // The file ended inside a line (a write torn by a full disk or a crash, or someone else's
  // fragment): the first batch starts a new line, or its first message would be glued onto the
  // fragment, counted as accepted, and never readable.
  bool torn_tail_ = false;
  // The first failed append, flush or sync. After it the refused batch's bytes may still sit in
  // the file (a failed fsync says nothing about what reached the disk), and the next batch's
  // sync would make them durable behind the caller's back; so this publisher takes no more.
  // A caller that opens a new one accepts that the refused lines may appear: it offers them
  // again, and their ids make the copy a duplicate the ledger recognises.
  Status broken_ = Status::Ok();
};

}  // namespace

Result<std::unique_ptr<Publisher>> OpenNdjsonPublisher(Env& env, const std::string& path) {
  EVIDENT_ASSIGN_OR_RETURN(const bool existed, env.FileExists(path));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, env.NewAppendableFile(path));
  std::optional<char> last;
  if (existed) {
    EVIDENT_ASSIGN_OR_RETURN(last, env.LastByte(path));
  } else {
    // A new file's directory entry is durable only once its directory is synced.
    std::string dir = std::filesystem::path(path).parent_path().string();
    EVIDENT_RETURN_IF_ERROR(env.SyncDir(dir.empty() ? "." : dir));
  }
  return std::unique_ptr<Publisher>(
      new NdjsonPublisher(std::move(file), path, last.has_value() && *last != '\n'));
}

}  // namespace evident
