#include "transport/http/intake.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#include "json/writer.h"

namespace evident::http {

bool Exchange::Suspend(const std::function<void()>& suspend) {
  std::lock_guard<std::mutex> lock(mu_);
  if (answered_) return false;
  suspend();
  suspended_ = true;
  return true;
}

void Exchange::Answer(int status, std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  if (answered_) return;
  answered_ = true;
  status_ = status;
  body_ = std::move(body);
  if (suspended_) wake_();
}

bool Exchange::answered() const {
  std::lock_guard<std::mutex> lock(mu_);
  return answered_;
}

int Exchange::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

const std::string& Exchange::body() const {
  std::lock_guard<std::mutex> lock(mu_);
  return body_;
}

std::string RefusalBody(int status, std::string_view reason, std::string_view message) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("status", static_cast<int64_t>(status)).Field("reason", reason);
  w.Field("message", message).EndObject();
  return out;
}

Intake::Intake(size_t events_max, size_t bytes_max)
    : events_max_(events_max), bytes_max_(bytes_max) {}

Intake::Taken Intake::Submit(const std::shared_ptr<Exchange>& exchange,
                             std::vector<std::string>&& events) {
  assert(!events.empty());
  size_t bytes = 0;
  for (const std::string& e : events) bytes += e.size();
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return Taken::kClosed;
  if (down_ || stopped_) return Taken::kDown;
  if (queue_.size() + events.size() > events_max_ || queued_bytes_ + bytes > bytes_max_) {
    // An empty queue takes any one request the request bounds let in.
    if (!queue_.empty()) return Taken::kFull;
  }
  exchange->first_seq_ = next_seq_;
  for (std::string& e : events) queue_.push_back(Queued{std::move(e), next_seq_++});
  exchange->last_seq_ = next_seq_ - 1;
  queued_bytes_ += bytes;
  outstanding_.push_back(exchange);
  ready_.notify_one();
  return Taken::kTaken;
}

void Intake::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
}

void Intake::SetDown(bool down) {
  std::lock_guard<std::mutex> lock(mu_);
  down_ = down;
}

size_t Intake::outstanding() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outstanding_.size();
}

size_t Intake::FailOutstanding(int status, std::string_view reason, std::string_view message) {
  std::deque<std::shared_ptr<Exchange>> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    failed.swap(outstanding_);
    queue_.clear();
    queued_bytes_ = 0;
  }
  const std::string body = RefusalBody(status, reason, message);
  for (const auto& exchange : failed) exchange->Answer(status, body);
  return failed.size();
}

void Intake::Rearm() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = false;
}

Exchange* Intake::Owner(int64_t seq) {
  auto after = std::upper_bound(
      outstanding_.begin(), outstanding_.end(), seq,
      [](int64_t s, const std::shared_ptr<Exchange>& e) { return s < e->first_seq_; });
  if (after == outstanding_.begin()) return nullptr;
  Exchange* owner = std::prev(after)->get();
  return seq <= owner->last_seq_ ? owner : nullptr;
}

// True when `owner` was answered a deferral of the event and consumer `drained` names: the
// drained decision is then for an event of this run, at that sequence number.
bool Intake::DeferredHere(const Exchange& owner, const Decision& drained) {
  const int64_t position = drained.index - owner.first_seq_;
  return std::any_of(owner.decisions_.begin(), owner.decisions_.end(), [&](const Decision& d) {
    return d.index == position && d.outcome == Outcome::kDeferred && d.consumer == drained.consumer;
  });
}

Status Intake::OnCommitted(const CommittedBatch& batch) {
  std::lock_guard<std::mutex> lock(mu_);
  Exchange* trigger = nullptr;
  int64_t trigger_position = 0;
  for (const Decision& decision : batch.decisions) {
    Exchange* owner = Owner(decision.index);
    if (decision.drained && owner != nullptr && !DeferredHere(*owner, decision)) {
      // Deferred by an earlier run (or by `evident consume`): its stored index is not one of
      // this run's sequence numbers, whatever request holds that number now.
      owner = nullptr;
    }
    int64_t position = 0;
    if (owner != nullptr) {
      position = decision.index - owner->first_seq_;
      trigger = owner;
      trigger_position = position;
    } else if (trigger != nullptr) {  // drained for an event of an answered request
      owner = trigger;
      position = trigger_position;
    } else {
      continue;  // no request of this daemon run is waiting for it
    }
    owner->decisions_.push_back(decision);
    owner->decisions_.back().index = position;
  }
  return Status::Ok();
}

// Every request is answered once, after its events are committed or refused: nothing of an
// earlier run is left to resume from.
Status Intake::Start(const std::optional<std::string>& position) {
  if (!position.has_value()) return Status::Ok();
  return Status::FailedPrecondition(
      "the HTTP intake has no position to resume from (each request was answered in its run)");
}

Result<Source::Fetched> Intake::Fetch(Message& out, int wait_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return stopped_ || !queue_.empty(); };
  if (wait_ms < 0) {
    ready_.wait(lock, ready);
  } else if (!ready_.wait_for(lock, std::chrono::milliseconds(wait_ms), ready)) {
    return Fetched::kWouldWait;
  }
  if (stopped_) return Fetched::kEnd;
  Queued& front = queue_.front();
  queued_bytes_ -= front.bytes.size();
  out.bytes = std::move(front.bytes);
  out.index = front.seq;
  out.cursor = Cursor{.a = front.seq};
  queue_.pop_front();
  return Fetched::kMessage;
}

std::string Intake::EncodePosition(const Cursor& cursor) const {
  return "seq=" + std::to_string(cursor.a);
}

Status Intake::Acknowledge(const Cursor& cursor) {
  std::vector<std::shared_ptr<Exchange>> done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!outstanding_.empty() && outstanding_.front()->last_seq_ <= cursor.a) {
      done.push_back(std::move(outstanding_.front()));
      outstanding_.pop_front();
    }
  }
  for (const auto& exchange : done) {
    std::string body;
    json::Writer w(body);
    w.BeginObject().Field("events", exchange->last_seq_ - exchange->first_seq_ + 1);
    w.Key("decisions").BeginArray();
    std::string one;
    for (const Decision& d : exchange->decisions_) {
      one.clear();
      AppendDecisionJson(d, one);
      w.Raw(one);
    }
    w.EndArray().EndObject();
    exchange->decisions_.clear();
    exchange->Answer(200, std::move(body));
  }
  return Status::Ok();
}

Status Intake::Reject(const Cursor& /*cursor*/, int64_t /*delay_ms*/) {
  // The loop's run ends after a rollback; Serve answers what is outstanding (FailOutstanding),
  // and the clients send those requests again.
  return Status::FailedPrecondition(
      "the HTTP intake cannot deliver a request's events again; their requests are answered "
      "with a refusal and sent again by their clients");
}

void Intake::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  ready_.notify_all();
}

std::optional<int64_t> Intake::backlog() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(queue_.size());
}

}  // namespace evident::http
