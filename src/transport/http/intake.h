// transport/http/intake.h — the HTTP transport's Source (serve's): the events of HTTP requests,
// queued for the consume loop, and each request answered once every one of its events is committed.
//
// A request's events enter the queue together, numbered by a sequence that runs across
// requests; the sequence number is each event's index in the loop's decisions and its cursor.
// After a commit the loop hands over the batch's decisions (OnCommitted), which are sorted to
// their requests, then acknowledges through the last decided event (Acknowledge), which answers
// every request whose events are all committed. A decision drained from the deferred set for an
// event of an earlier request goes to the request whose event closed the gap.
//
// Thread-safety: Submit, Close and the counters from any thread; the Source calls as source.h
// says (the loop's reading and deciding threads); FailOutstanding once the loop has returned.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "evident/consumer.h"
#include "evident/source.h"

namespace evident::http {

// One request's events and, once answered, its response.
class Exchange {
 public:
  // `wake` resumes the request's connection once it is suspended.
  explicit Exchange(std::function<void()> wake) : wake_(std::move(wake)) {}
  // Calls `suspend` (the connection waits for the answer) unless the answer is already there:
  // false then, and the caller answers at once. Under the lock Answer takes, so an answer never
  // comes between the check and the suspension.
  bool Suspend(const std::function<void()>& suspend);
  // Sets the response and wakes the request's connection; the first answer counts.
  void Answer(int status, std::string body);
  bool answered() const;
  int status() const;
  const std::string& body() const;

 private:
  friend class Intake;
  std::function<void()> wake_;
  mutable std::mutex mu_;
  bool answered_ = false, suspended_ = false;
  int status_ = 0;
  std::string body_;
  // Owned by the Intake while queued.
  int64_t first_seq_ = 0, last_seq_ = -1;
  std::vector<Decision> decisions_;
};

// {"status":N,"reason":"...","message":"..."}
std::string RefusalBody(int status, std::string_view reason, std::string_view message);

class Intake final : public Source {
 public:
  Intake(size_t events_max, size_t bytes_max);

  enum class Taken : uint8_t { kTaken, kFull, kClosed, kDown };
  // Queues a request's events (all or none). kFull: over the queue's bounds; kClosed: the daemon
  // is stopping; kDown: the loop is not running (the store failed).
  Taken Submit(const std::shared_ptr<Exchange>& exchange, std::vector<std::string>&& events);
  void Close();                // refuse further submissions (kClosed)
  void SetDown(bool down);     // refuse (kDown) while the loop is not running
  size_t outstanding() const;  // requests taken and not answered
  // The loop has returned: every request taken and not answered gets `status` with `reason`,
  // and the queue is emptied. Returns how many were answered so.
  size_t FailOutstanding(int status, std::string_view reason, std::string_view message);
  // Makes the source usable again after the loop stopped it (a restarted loop).
  void Rearm();

  // The loop's on_committed.
  Status OnCommitted(const CommittedBatch& batch);

  // Source
  const std::string& name() const override { return name_; }
  Status Start(const std::optional<std::string>& position) override;
  Result<Fetched> Fetch(Message& out, int wait_ms) override;
  std::string EncodePosition(const Cursor& cursor) const override;
  Status Acknowledge(const Cursor& cursor) override;
  Status Reject(const Cursor& cursor, int64_t delay_ms) override;
  void Stop() override;
  std::optional<int64_t> backlog() const override;

 private:
  struct Queued {
    std::string bytes;
    int64_t seq = 0;
  };
  Exchange* Owner(int64_t seq);  // the outstanding request holding event `seq`, or null
  static bool DeferredHere(const Exchange& owner, const Decision& drained);

  const std::string name_ = "http";
  const size_t events_max_, bytes_max_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Queued> queue_;
  size_t queued_bytes_ = 0;
  std::deque<std::shared_ptr<Exchange>> outstanding_;  // by first_seq_
  int64_t next_seq_ = 0;
  bool stopped_ = false, closed_ = false, down_ = false;
};

}  // namespace evident::http
