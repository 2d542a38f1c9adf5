// evident/fault_transport.h — a fault-injecting Source and Publisher around any other, as
// FaultStore (store_memory.h) is around any store: for tests and the deterministic simulation.
//
// A fault names a call and which of its calls (the nth, counted from 1 over the wrapper's life)
// fails with a given code instead of reaching the wrapped backend. A source's Fetch can also
// say the broker is unreachable for a number of calls (kWouldWait with unreachable() true), as a
// broker that is down does. A publisher's Publish can accept a prefix of the batch only, or
// accept the whole batch and then fail (the destination has it; the relay will send it again:
// a crash between the destination's acceptance and the relay's mark).
//
// Both join their conformance suites with no fault armed (src/transport/transport_backends.cc):
// a wrapper forwards every call unchanged. Thread-safety: as the wrapped backend's; the counters
// are atomic, so a source's reading and deciding threads may both call it.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "evident/publisher.h"
#include "evident/source.h"

namespace evident {

struct SourceFault {
  enum class Call : uint8_t { kFetch, kAcknowledge, kReject, kFlush, kConfirmIdle };
  Call call = Call::kFetch;
  int64_t nth = 1;  // the nth call of that kind
  Code code = Code::kUnavailable;
  // kFetch only: instead of an error, this many Fetch calls from the nth on say kWouldWait with
  // unreachable() true (0: an error).
  int64_t unreachable_calls = 0;
};

class FaultSource final : public Source {
 public:
  explicit FaultSource(std::unique_ptr<Source> inner);

  void Add(const SourceFault& fault);  // nth >= 1
  // Calls failed by a fault, and unreachable spells begun.
  int64_t faults_fired() const { return fired_.load(); }
  int64_t unreachable_spells() const { return unreachable_spells_.load(); }

  const std::string& name() const override { return inner_->name(); }
  Status Start(const std::optional<std::string>& position) override;
  Result<Fetched> Fetch(Message& out, int wait_ms) override;
  std::string EncodePosition(const Cursor& cursor) const override;
  Status Acknowledge(const Cursor& cursor) override;
  Status Reject(const Cursor& cursor, int64_t delay_ms) override;
  void Stop() override { inner_->Stop(); }
  Status FlushAcknowledgements(int64_t timeout_ms) override;
  bool unreachable() const override;
  Result<bool> ConfirmIdle() override;
  int64_t skipped() const override { return inner_->skipped(); }
  std::optional<int64_t> backlog() const override { return inner_->backlog(); }

 private:
  // The fault armed for the nth call of `call`, counting the call; null when none.
  const SourceFault* Enter(SourceFault::Call call);
  Status Fire(const SourceFault& fault, std::string_view call);  // counts it

  std::unique_ptr<Source> inner_;
  mutable std::mutex mu_;  // guards faults_ and calls_
  std::vector<SourceFault> faults_;
  std::array<int64_t, 5> calls_{};
  std::atomic<int64_t> fired_{0}, unreachable_spells_{0};
  std::atomic<int64_t> unreachable_left_{0};
  std::atomic<bool> unreachable_{false};
};

struct PublisherFault {
  int64_t nth = 1;  // the nth Publish call
  Code code = Code::kUnavailable;
  enum class Kind : uint8_t {
    kFail,            // nothing reaches the destination; the call fails
    kAcceptPrefix,    // the first `accepted` messages reach it; the call says so
    kAcceptThenFail,  // the whole batch reaches it; the call fails nevertheless
  };
  Kind kind = Kind::kFail;
  size_t accepted = 0;  // kAcceptPrefix
};

class FaultPublisher final : public Publisher {
 public:
  explicit FaultPublisher(std::unique_ptr<Publisher> inner) : inner_(std::move(inner)) {}

  void Add(const PublisherFault& fault);  // nth >= 1
  int64_t faults_fired() const { return fired_; }

  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override;
  const std::vector<PublishAck>& acks() const override { return inner_->acks(); }
  Status Close() override { return inner_->Close(); }

 private:
  std::unique_ptr<Publisher> inner_;
  std::vector<PublisherFault> faults_;
  int64_t calls_ = 0, fired_ = 0;
};

}  // namespace evident
