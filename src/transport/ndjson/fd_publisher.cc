// A publisher onto an open file descriptor (evident/publisher.h): `evident relay --to -`.
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "evident/publisher.h"
#include "transport/ndjson/ndjson_lines.h"

namespace evident {
namespace {

class FdPublisher final : public Publisher {
 public:
  FdPublisher(int fd, std::string name, bool regular)
      : fd_(fd), name_(std::move(name)), regular_(regular) {}

  // One write of the whole batch, up to a message holding a newline (NdjsonLines), looping over
  // short writes; a regular file is synced too.
  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    if (!broken_.ok()) {
      return Status::FailedPrecondition(name_ + " refuses batches after a failed write (" +
                                        broken_.ToString() + ")");
    }
    EVIDENT_ASSIGN_OR_RETURN(const size_t lines, NdjsonLines(batch, name_, text_));
    if (lines == 0) return size_t{0};
    broken_ = Write();
    if (!broken_.ok()) return broken_;
    return lines;
  }

  Status Close() override { return Status::Ok(); }  // the descriptor is the caller's

 private:
  Status Write() {
    size_t done = 0;
    while (done < text_.size()) {
      const ssize_t n = ::write(fd_, text_.data() + done, text_.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return Status::IoError("write to " + name_ + ": " + std::strerror(errno));
      done += static_cast<size_t>(n);
    }
    if (regular_ && ::fsync(fd_) != 0) {
      return Status::IoError("fsync of " + name_ + ": " + std::strerror(errno));
    }
    return Status::Ok();
  }

  int fd_;
  std::string name_;
  bool regular_;
  std::string text_;
  Status broken_ = Status::Ok();  // as the file publisher: no batch after a failed write
};

}  // namespace

Result<std::unique_ptr<Publisher>> OpenFdPublisher(int fd, std::string name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return Status::IoError(name + ": " + std::strerror(errno));
  }
  return std::unique_ptr<Publisher>(new FdPublisher(fd, std::move(name), S_ISREG(st.st_mode)));
}

}  // namespace evident
