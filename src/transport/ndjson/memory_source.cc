// The memory source (evident/source.h): a fixed list of messages, for embedding and tests.
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <mutex>

#include "evident/source.h"

namespace evident {
namespace {

class MemorySource final : public Source {
 public:
  MemorySource(std::string name, std::vector<std::string> messages)
      : name_(std::move(name)), messages_(std::move(messages)) {}

  const std::string& name() const override { return name_; }

  Status Start(const std::optional<std::string>& position) override {
    if (!position) return Status::Ok();
    int64_t offset = -1;
    int used = 0;
    if (std::sscanf(position->c_str(), "offset=%" SCNd64 "%n", &offset, &used) != 1 ||
        static_cast<size_t>(used) != position->size() || offset < 0) {
      return Status::Corruption("stored position '" + *position +
                                "' is not a memory source's position");
    }
    if (offset > static_cast<int64_t>(messages_.size())) {
      return Status::FailedPrecondition("cannot resume: the position is past the source's " +
                                        std::to_string(messages_.size()) + " messages");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = offset;
    skipped_ = offset;
    return Status::Ok();
  }

  Result<Fetched> Fetch(Message& out, int /*wait_ms*/) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_.load() || next_ >= static_cast<int64_t>(messages_.size())) {
      return Fetched::kEnd;
    }
    out.bytes = messages_[static_cast<size_t>(next_)];
    out.index = next_;
    out.cursor = Cursor{next_ + 1, 0, 0};
    ++next_;
    return Fetched::kMessage;
  }

  std::string EncodePosition(const Cursor& cursor) const override {
    return "offset=" + std::to_string(cursor.a);
  }
  Status Acknowledge(const Cursor& cursor) override {
    std::lock_guard<std::mutex> lock(mutex_);
    acknowledged_ = std::max(acknowledged_, cursor.a);
    return Status::Ok();
  }
  // Redelivery: the next Fetch starts again after the last acknowledged message.
  Status Reject(const Cursor& /*cursor*/, int64_t /*delay_ms*/) override {
    std::lock_guard<std::mutex> lock(mutex_);
    next_ = acknowledged_;
    return Status::Ok();
  }
  void Stop() override { stopped_.store(true); }
  int64_t skipped() const override { return skipped_; }

 private:
  std::string name_;
  std::vector<std::string> messages_;
  std::mutex mutex_;  // next_ and acknowledged_: Fetch runs beside Acknowledge and Reject
  int64_t next_ = 0;
  int64_t acknowledged_ = 0;
  int64_t skipped_ = 0;
  std::atomic<bool> stopped_{false};
};

}  // namespace

std::unique_ptr<Source> NewMemorySource(std::string name, std::vector<std::string> messages) {
  return std::make_unique<MemorySource>(std::move(name), std::move(messages));
}

}  // namespace evident
