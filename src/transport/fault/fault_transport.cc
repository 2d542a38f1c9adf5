// FaultSource and FaultPublisher (evident/fault_transport.h).
#include "evident/fault_transport.h"

#include <cassert>

namespace evident {
namespace {

Status Injected(Code code, std::string_view call) {
  return Status(code, "injected fault: " + std::string(call));
}

}  // namespace

Status FaultSource::Fire(const SourceFault& fault, std::string_view call) {
  fired_.fetch_add(1);
  return Injected(fault.code, call);
}

FaultSource::FaultSource(std::unique_ptr<Source> inner) : inner_(std::move(inner)) {}

void FaultSource::Add(const SourceFault& fault) {
  assert(fault.nth >= 1 && "calls are counted from 1");
  std::lock_guard<std::mutex> lock(mu_);
  faults_.push_back(fault);
}

const SourceFault* FaultSource::Enter(SourceFault::Call call) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t nth = ++calls_[static_cast<size_t>(call)];
  for (const SourceFault& fault : faults_) {
    if (fault.call == call && fault.nth == nth) return &fault;
  }
  return nullptr;
}

Status FaultSource::Start(const std::optional<std::string>& position) {
  return inner_->Start(position);
}

Result<Source::Fetched> FaultSource::Fetch(Message& out, int wait_ms) {
  if (const SourceFault* fault = Enter(SourceFault::Call::kFetch)) {
    if (fault->unreachable_calls == 0) return Fire(*fault, "fetch");
    unreachable_spells_.fetch_add(1);
    unreachable_left_.store(fault->unreachable_calls);
  }
  if (unreachable_left_.load() > 0) {
    unreachable_left_.fetch_sub(1);
    unreachable_.store(true);
    return Fetched::kWouldWait;
  }
  unreachable_.store(false);
  return inner_->Fetch(out, wait_ms);
}

std::string FaultSource::EncodePosition(const Cursor& cursor) const {
  return inner_->EncodePosition(cursor);
}

Status FaultSource::Acknowledge(const Cursor& cursor) {
  if (const SourceFault* fault = Enter(SourceFault::Call::kAcknowledge)) {
    return Fire(*fault, "acknowledge");
  }
  return inner_->Acknowledge(cursor);
}

Status FaultSource::Reject(const Cursor& cursor, int64_t delay_ms) {
  if (const SourceFault* fault = Enter(SourceFault::Call::kReject)) {
    return Fire(*fault, "reject");
  }
  return inner_->Reject(cursor, delay_ms);
}

Status FaultSource::FlushAcknowledgements(int64_t timeout_ms) {
  if (const SourceFault* fault = Enter(SourceFault::Call::kFlush)) {
    return Fire(*fault, "flush acknowledgements");
  }
  return inner_->FlushAcknowledgements(timeout_ms);
}

bool FaultSource::unreachable() const { return unreachable_.load() || inner_->unreachable(); }

Result<bool> FaultSource::ConfirmIdle() {
  if (const SourceFault* fault = Enter(SourceFault::Call::kConfirmIdle)) {
    return Fire(*fault, "confirm idle");
  }
  return inner_->ConfirmIdle();
}

void FaultPublisher::Add(const PublisherFault& fault) {
  assert(fault.nth >= 1 && "calls are counted from 1");
  faults_.push_back(fault);
}

Result<size_t> FaultPublisher::Publish(std::span<const OutgoingMessage> batch) {
  ++calls_;
  const PublisherFault* armed = nullptr;
  for (const PublisherFault& fault : faults_) {
    if (fault.nth == calls_) armed = &fault;
  }
  if (armed == nullptr) return inner_->Publish(batch);
  ++fired_;
  switch (armed->kind) {
    case PublisherFault::Kind::kFail:
      return Injected(armed->code, "publish");
    case PublisherFault::Kind::kAcceptPrefix:
      return inner_->Publish(batch.first(std::min(armed->accepted, batch.size())));
    case PublisherFault::Kind::kAcceptThenFail: {
      const Result<size_t> accepted = inner_->Publish(batch);
      if (!accepted.ok()) return accepted;
      return Injected(armed->code, "publish (after the destination accepted the batch)");
    }
  }
  return Status::Internal("unknown publisher fault");
}

}  // namespace evident
