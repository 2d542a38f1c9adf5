// The Kafka source (evident/kafka.h): every partition of a topic, assigned by evident, its
// position in the store ("p0=12 p1=40"), Kafka's committed offsets following the store's.
#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "transport/kafka/kafka_client.h"

namespace evident {
namespace {

using Offsets = std::map<int32_t, int64_t>;  // partition -> the next offset

// "p0=12 p1=40" into offsets; nullopt when it is not such a text.
std::optional<Offsets> ParsePosition(const std::string& text) {
  Offsets out;
  std::istringstream in(text);
  for (std::string word; in >> word;) {
    int32_t partition = -1;
    long long offset = -1;
    char tail = 0;
    if (std::sscanf(word.c_str(), "p%d=%lld%c", &partition, &offset, &tail) != 2 || partition < 0 ||
        offset < 0 || out.count(partition) > 0) {
      return std::nullopt;
    }
    out[partition] = offset;
  }
  return out;
}

std::string FormatPosition(const Offsets& offsets) {
  std::string out;
  for (const auto& [partition, next] : offsets) {
    if (!out.empty()) out.push_back(' ');
    out += "p" + std::to_string(partition) + "=" + std::to_string(next);
  }
  return out;
}

struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const {
    rd_kafka_topic_partition_list_destroy(list);
  }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

class KafkaSource;

// What librdkafka's callbacks reach the source through: the handle may outlive the source (it is
// destroyed on a thread of its own), and its callbacks then find no source and do only what
// the client needs (a member leaving the group gives its partitions up).
struct Link {
  std::mutex mutex;
  KafkaSource* self = nullptr;
};

class KafkaSource final : public Source {
 public:
  explicit KafkaSource(const KafkaOptions& options)
      : options_(options),
        name_("kafka:" + options.topic + "/" + options.group),
        link_(std::make_shared<Link>()) {
    link_->self = this;
  }

  // Without the consumer's close: Kafka's offsets are informational, the store holds the
  // positions. Destroying the handle waits for librdkafka's threads, which wait out the requests
  // in flight (a commit to a coordinator that is down: up to socket.timeout.ms); that wait is
  // bounded here, and past it the handle is destroyed on a thread of its own (the process may
  // end first). No callback of this object runs there: they run only in Fetch's polls.
  // A member closes the consumer (it leaves the group, so that its partitions go to the others
  // at once rather than when its session ends).
  ~KafkaSource() override {
    {
      std::lock_guard<std::mutex> lock(link_->mutex);
      link_->self = nullptr;
    }
    if (rk_ == nullptr) return;
    if (options_.owner == nullptr) (void)rd_kafka_assign(rk_.get(), nullptr);
    rd_kafka_t* rk = rk_.release();
    auto destroyed = std::make_shared<std::promise<void>>();
    std::future<void> done = destroyed->get_future();
    const int flags = options_.owner == nullptr ? RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE : 0;
    std::thread([rk, destroyed, flags, link = link_] {
      rd_kafka_destroy_flags(rk, flags);
      destroyed->set_value();
    }).detach();
    (void)done.wait_for(std::chrono::milliseconds(kDestroyWaitMs));
  }

  Status Open() {
    kafka::Properties ours = {{"group.id", options_.group},
                              {"enable.auto.commit", "false"},
                              {"enable.auto.offset.store", "false"},
                              {"auto.offset.reset", "error"},
                              {"enable.partition.eof", "true"},
                              {"allow.auto.create.topics", "false"},
                              {"socket.connection.setup.timeout.ms", "5000"}};
    if (options_.owner != nullptr) {
      ours.emplace_back("session.timeout.ms", std::to_string(options_.session_ms));
      ours.emplace_back("heartbeat.interval.ms",
                        std::to_string(std::max<int64_t>(options_.session_ms / 4, 100)));
    }
    EVIDENT_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf, kafka::NewConf(options_, ours));
    rd_kafka_conf_set_opaque(conf, link_.get());
    rd_kafka_conf_set_error_cb(conf, &OnError);
    if (options_.owner != nullptr) rd_kafka_conf_set_rebalance_cb(conf, &OnRebalance);
    EVIDENT_ASSIGN_OR_RETURN(rk_, kafka::NewHandle(RD_KAFKA_CONSUMER, conf));
    // Errors and commit results come through the consumer's queue, which Fetch polls.
    (void)rd_kafka_poll_set_consumer(rk_.get());
    EVIDENT_ASSIGN_OR_RETURN(
        partitions_, kafka::PartitionCount(rk_.get(), options_.topic, options_.connect_timeout_ms));
    return Status::Ok();
  }

  const std::string& name() const override { return name_; }

  Status Start(const std::optional<std::string>& position) override {
    if (options_.owner != nullptr) return Subscribe();
    Offsets stored;
    if (position.has_value()) {
      std::optional<Offsets> parsed = ParsePosition(*position);
      if (!parsed.has_value()) {
        return Status::FailedPrecondition("the stored position '" + *position + "' of " + name_ +
                                          " is not a Kafka position (p<partition>=<offset> ...)");
      }
      stored = std::move(parsed).value();
    }
    if (!stored.empty() && stored.rbegin()->first >= partitions_) {
      return Status::FailedPrecondition("the stored position of " + name_ + " names partition " +
                                        std::to_string(stored.rbegin()->first) + ", but topic " +
                                        options_.topic + " has " + std::to_string(partitions_) +
                                        " (the topic was made again with fewer)");
    }
    // A partition the position does not name begins at its first offset, and enters the
    // position there at once: should retention remove records past it before they are
    // decided, the next run finds its stored offset gone and says so.
    const Result<Offsets> firsts = ListOffsets(RD_KAFKA_OFFSET_BEGINNING, 2000);
    Offsets begin = stored;
    for (int32_t p = 0; p < partitions_; ++p) {
      if (begin.count(p) == 0 && firsts.ok() && firsts->count(p) > 0) begin[p] = firsts->at(p);
    }
    PartitionList list(rd_kafka_topic_partition_list_new(partitions_));
    for (int32_t p = 0; p < partitions_; ++p) {
      const auto at = begin.find(p);
      rd_kafka_topic_partition_list_add(list.get(), options_.topic.c_str(), p)->offset =
          at == begin.end() ? RD_KAFKA_OFFSET_BEGINNING : at->second;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      acked_ = begin;
      eof_.clear();
    }
    skipped_ = Behind(stored, firsts);
    const rd_kafka_resp_err_t err = rd_kafka_assign(rk_.get(), list.get());
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::ErrorStatus("assign " + name_, err);
    return Status::Ok();
  }

  Result<Fetched> Fetch(Message& out, int wait_ms) override {
    for (;;) {
      if (stopped_.load()) return Fetched::kEnd;
      if (!assign_error_.ok()) return assign_error_;
      const int chunk = wait_ms < 0 || wait_ms > 200 ? 200 : wait_ms;
      if (HeldBack(chunk)) {
        if (wait_ms == 0 || (wait_ms > 0 && (wait_ms -= std::max(chunk, 1)) <= 0)) {
          return Fetched::kWouldWait;
        }
        continue;
      }
      const uint64_t rewinds = rewinds_.load();
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), chunk);
      if (m == nullptr) {
        if (stopped_.load()) return Fetched::kEnd;  // woken by Stop: no probe of the brokers
        MaybeReachable();
        if (wait_ms == 0 || (wait_ms > 0 && (wait_ms -= chunk) <= 0)) return Fetched::kWouldWait;
        continue;
      }
      const Result<bool> handed = Take(m, out, rewinds);
      rd_kafka_message_destroy(m);
      if (!handed.ok()) return handed.status();
      if (*handed) return Fetched::kMessage;
    }
  }

  std::string EncodePosition(const Cursor& cursor) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    Offsets next = acked_;
    for (const Handed& h : handed_) {
      if (h.count > cursor.b) break;
      int64_t& n = next[h.partition];
      n = std::max(n, h.offset + 1);
    }
    // The cursor's own message, and every one of its partition before it, whatever this
    // instance handed out (a cursor of an earlier run).
    int64_t& own = next[static_cast<int32_t>(cursor.a)];
    own = std::max(own, static_cast<int64_t>(cursor.c) + 1);
    return FormatPosition(next);
  }

  Status Acknowledge(const Cursor& cursor) override {
    PartitionList commit(rd_kafka_topic_partition_list_new(partitions_));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (!handed_.empty() && handed_.front().count <= cursor.b) {
        const Handed& h = handed_.front();
        if (options_.owner == nullptr || assigned_.count(h.partition) > 0) {
          int64_t& n = acked_[h.partition];
          n = std::max(n, h.offset + 1);
        }
        handed_.pop_front();
      }
      for (const auto& [partition, next] : acked_) {
        rd_kafka_topic_partition_list_add(commit.get(), options_.topic.c_str(), partition)->offset =
            next;
      }
    }
    settled_.notify_all();
    // Kafka's committed offsets follow the store's positions, for the cluster's own tools; a
    // failure is reported at the end of the run (FlushAcknowledgements). None is queued while
    // every broker is down: it would only wait there.
    if (commit->cnt > 0 && !unreachable_.load()) (void)rd_kafka_commit(rk_.get(), commit.get(), 1);
    return Status::Ok();
  }

  Status Reject(const Cursor& cursor, int64_t delay_ms) override {
    (void)cursor;  // every message handed out and not acknowledged comes again
    Offsets rewind;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const Handed& h : handed_) {
        const auto at = rewind.find(h.partition);
        if (at == rewind.end() || h.offset < at->second) rewind[h.partition] = h.offset;
      }
      handed_.clear();
      rewinds_.fetch_add(1);  // a record polled before the seek is not handed out (Take)
      for (const auto& [partition, offset] : rewind) eof_.erase(partition);
      // A member seeks only what is still its own; the rest is its new owner's to read.
      if (options_.owner != nullptr) {
        std::erase_if(rewind, [&](const auto& r) { return assigned_.count(r.first) == 0; });
      }
    }
    settled_.notify_all();
    if (rewind.empty()) return Status::Ok();
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(rewind.size())));
    for (const auto& [partition, offset] : rewind) {
      rd_kafka_topic_partition_list_add(list.get(), options_.topic.c_str(), partition)->offset =
          offset;
    }
    held_until_ms_.store(NowMs() + delay_ms);
    rd_kafka_error_t* error = rd_kafka_seek_partitions(rk_.get(), list.get(), 10'000);
    if (error != nullptr) {
      const Status s = Status::Unavailable(std::string("seek back in ") + name_ + ": " +
                                           rd_kafka_error_string(error));
      rd_kafka_error_destroy(error);
      return s;
    }
    return Status::Ok();
  }

  void Stop() override {
    {
      // Under the mutex: a revocation that just found stopped_ false is then waiting already.
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_.store(true);
    }
    settled_.notify_all();
    // A Fetch waiting in its poll (up to 200 ms) returns now and sees the stop: a run ends
    // when asked, not a poll later.
    if (rk_ == nullptr) return;
    rd_kafka_queue_t* queue = rd_kafka_queue_get_consumer(rk_.get());
    if (queue == nullptr) return;
    rd_kafka_queue_yield(queue);
    rd_kafka_queue_destroy(queue);
  }

  Result<std::map<int64_t, int64_t>> PartitionPositions(const Cursor& cursor) const override {
    std::map<int64_t, int64_t> next;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Handed& h : handed_) {
      if (h.count > cursor.b) break;
      if (h.assignment != assignment_) {
        return Status::FailedPrecondition(
            "lease lost: partition " + std::to_string(h.partition) + " of " + name_ +
            " was revoked while a batch held its record at offset " + std::to_string(h.offset));
      }
      int64_t& n = next[h.partition];
      n = std::max(n, h.offset + 1);
    }
    return next;
  }

  Status FlushAcknowledgements(int64_t timeout_ms) override;
  bool unreachable() const override { return unreachable_.load(); }
  Result<bool> ConfirmIdle() override;
  int64_t skipped() const override { return skipped_; }

 private:
  static constexpr int64_t kDestroyWaitMs = 2000;

  struct Handed {
    int64_t count = 0;
    int32_t partition = 0;
    int64_t offset = 0;
    uint64_t assignment = 0;  // the revocations before it was handed out (a member's)
  };

  static int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Waits out (at most `chunk` ms of) a rejection's delay; true while it lasts.
  bool HeldBack(int chunk) {
    const int64_t left = held_until_ms_.load() - NowMs();
    if (left <= 0) return false;
    std::unique_lock<std::mutex> lock(mutex_);  // Stop sets stopped_ under it, then notifies
    settled_.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(left, chunk)),
                      [this] { return stopped_.load(); });
    return true;
  }

  // One polled message: a record into `out` (true), or an event (false), or the run's end.
  // `rewinds`: Reject's count when `m` was polled.
  Result<bool> Take(const rd_kafka_message_t* m, Message& out, uint64_t rewinds);

  // The records the topic still holds before `stored` (what a resumed run passes over); 0 when
  // the cluster cannot say in time.
  static int64_t Behind(const Offsets& stored, const Result<Offsets>& low) {
    int64_t behind = 0;
    for (const auto& [partition, next] : stored) {
      if (!low.ok() || low->count(partition) == 0) continue;
      behind += std::max<int64_t>(0, next - low->at(partition));
    }
    return behind;
  }

  // Each partition's first offset (RD_KAFKA_OFFSET_BEGINNING) or end, its high watermark
  // (RD_KAFKA_OFFSET_END), as the partitions' leaders say within `timeout_ms` (ListOffsets: the
  // librdkafka call that keeps its timeout while brokers are down).
  Result<Offsets> ListOffsets(int64_t which, int64_t timeout_ms) {
    PartitionList list(rd_kafka_topic_partition_list_new(partitions_));
    for (int32_t p = 0; p < partitions_; ++p) {
      rd_kafka_topic_partition_list_add(list.get(), options_.topic.c_str(), p)->offset = which;
    }
    const rd_kafka_resp_err_t err =
        rd_kafka_offsets_for_times(rk_.get(), list.get(), static_cast<int>(timeout_ms));
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return kafka::ErrorStatus("the offsets of topic " + options_.topic, err);
    }
    Offsets out;
    for (int i = 0; i < list->cnt; ++i) {
      const rd_kafka_topic_partition_t& e = list->elems[i];
      if (e.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return kafka::ErrorStatus("the offsets of partition " + std::to_string(e.partition), e.err);
      }
      out[e.partition] = e.offset;
    }
    return out;
  }

  // While every broker was found down, asks one (at most once a second) whether it is back:
  // silence alone cannot say so.
  void MaybeReachable() {
    if (!unreachable_.load() || NowMs() - last_probe_ms_ < 1000) return;
    last_probe_ms_ = NowMs();
    const rd_kafka_metadata_t* metadata = nullptr;
    if (rd_kafka_metadata(rk_.get(), 0, nullptr, &metadata, 500) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      unreachable_.store(false);
    }
    if (metadata != nullptr) rd_kafka_metadata_destroy(metadata);
  }

  static void OnError(rd_kafka_t*, int err, const char*, void* opaque) {
    auto* link = static_cast<Link*>(opaque);
    std::lock_guard<std::mutex> lock(link->mutex);
    if (link->self != nullptr && err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
      link->self->unreachable_.store(true);
    }
  }

  // Kafka's group protocol (eager: every rebalance revokes all of a member's partitions, then
  // assigns anew), served inside Fetch's poll.
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* partitions, void* opaque) {
    auto* link = static_cast<Link*>(opaque);
    std::lock_guard<std::mutex> lock(link->mutex);
    if (link->self == nullptr) {
      (void)rd_kafka_assign(rk, nullptr);  // closing: whatever was assigned is given up
      return;
    }
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      link->self->Assign(partitions);
    } else {
      link->self->Revoke(partitions);
    }
  }

  Status Subscribe();
  void Assign(rd_kafka_topic_partition_list_t* partitions);
  void Revoke(rd_kafka_topic_partition_list_t* partitions);

  KafkaOptions options_;
  std::string name_;
  std::shared_ptr<Link> link_;
  kafka::Handle rk_;
  int32_t partitions_ = 0;
  std::atomic<bool> stopped_{false}, unreachable_{false};
  std::atomic<int64_t> held_until_ms_{0};
  std::atomic<uint64_t> rewinds_{0};  // Reject's seeks, counted (changed under mutex_)
  int64_t handed_out_ = 0;            // the reading thread's count of messages handed out
  int64_t last_probe_ms_ = 0;         // the reading thread's last MaybeReachable question
  int64_t skipped_ = 0;
  Status assign_error_;  // the owner's refusal of an assignment (the reading thread's)

  mutable std::mutex mutex_;   // guards what follows: the reading and deciding threads share it
  std::deque<Handed> handed_;  // handed out, not yet acknowledged, in delivery order
  // The next offset after the acknowledged ones, per partition read (a member: per partition
  // assigned to it now).
  Offsets acked_;
  std::condition_variable settled_;  // handed_ shrank, or the source stopped
  Offsets eof_;                      // partitions at their end: the offset their end was seen at
  std::set<int32_t> assigned_;       // a member's partitions now
  uint64_t assignment_ = 0;          // a member's revocations so far
};

Status KafkaSource::Subscribe() {
  PartitionList topics(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(topics.get(), options_.topic.c_str(), RD_KAFKA_PARTITION_UA);
  const rd_kafka_resp_err_t err = rd_kafka_subscribe(rk_.get(), topics.get());
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::ErrorStatus("subscribe " + name_, err);
  return Status::Ok();
}

// The owner fences the partitions off for their earlier holders and says where each begins;
// reading starts there. Should it refuse, nothing is read and Fetch ends the run with why.
void KafkaSource::Assign(rd_kafka_topic_partition_list_t* partitions) {
  std::vector<int64_t> given;
  for (int i = 0; i < partitions->cnt; ++i) given.push_back(partitions->elems[i].partition);
  Result<std::map<int64_t, int64_t>> begin = options_.owner->Assigned(given, partitions_);
  if (!begin.ok()) {
    assign_error_ = begin.status();
    (void)rd_kafka_assign(rk_.get(), nullptr);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 0; i < partitions->cnt; ++i) {
      rd_kafka_topic_partition_t& e = partitions->elems[i];
      const auto at = begin->find(e.partition);
      e.offset = at == begin->end() ? RD_KAFKA_OFFSET_BEGINNING : at->second;
      if (at != begin->end()) acked_[e.partition] = at->second;
      if (at == begin->end()) acked_.erase(e.partition);
      eof_.erase(e.partition);
      assigned_.insert(e.partition);
    }
  }
  const rd_kafka_resp_err_t err = rd_kafka_assign(rk_.get(), partitions);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) assign_error_ = kafka::ErrorStatus("assign " + name_, err);
}

// Waits (at most a session) for what was handed out of the revoked partitions to be committed
// or rejected by the deciding thread, then gives them up. What is still in hand past that is
// abandoned: its batch cannot commit once the partition's next holder has seized it.
void KafkaSource::Revoke(rd_kafka_topic_partition_list_t* partitions) {
  std::set<int32_t> taken;
  std::vector<int64_t> given_up;
  for (int i = 0; i < partitions->cnt; ++i) {
    taken.insert(partitions->elems[i].partition);
    given_up.push_back(partitions->elems[i].partition);
  }
  {
    std::unique_lock<std::mutex> lock(mutex_);
    (void)settled_.wait_for(lock, std::chrono::milliseconds(options_.session_ms), [&] {
      return stopped_.load() || std::none_of(handed_.begin(), handed_.end(), [&](const Handed& h) {
               return taken.count(h.partition) > 0;
             });
    });
    for (const int32_t p : taken) {
      acked_.erase(p);
      eof_.erase(p);
      assigned_.erase(p);
    }
    ++assignment_;  // what is still in hand past the wait can no longer commit
  }
  options_.owner->Revoked(given_up);
  (void)rd_kafka_assign(rk_.get(), nullptr);
}

Result<bool> KafkaSource::Take(const rd_kafka_message_t* m, Message& out, uint64_t rewinds) {
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    unreachable_.store(false);
    std::lock_guard<std::mutex> lock(mutex_);
    eof_[m->partition] = m->offset;
    return false;
  }
  if (m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
      m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
    return Status::FailedPrecondition(
        "partition " + std::to_string(m->partition) + " of topic " + options_.topic +
        " no longer holds the stored position of " + name_ +
        " (its records were removed by retention before this store decided them, or the topic "
        "was made again): " +
        rd_kafka_message_errstr(m));
  }
  if (m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
      m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
      m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
      m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
    return kafka::ErrorStatus("reading topic " + options_.topic, m->err);
  }
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return false;  // broker and transport trouble: librdkafka retries; the run waits meanwhile
  }
  unreachable_.store(false);
  const size_t length = m->len;
  const size_t kept = std::min(length, options_.event_bytes_max + 1);
  out.bytes.assign(static_cast<const char*>(m->payload), m->payload == nullptr ? 0 : kept);
  out.rejection.reset();
  if (length > options_.event_bytes_max) {
    out.rejection =
        Rejection{EnvelopeReason::kEnvelopeTooLarge,
                  "event of " + std::to_string(length) + " bytes exceeds the limit of " +
                      std::to_string(options_.event_bytes_max) + " bytes",
                  {},
                  {},
                  {}};
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (rewinds_.load() != rewinds) return false;  // polled before a seek back: it comes again
  out.index = m->offset;
  out.cursor = Cursor{.a = m->partition, .b = ++handed_out_, .c = static_cast<uint64_t>(m->offset)};
  handed_.push_back(Handed{out.cursor.b, m->partition, m->offset, assignment_});
  eof_.erase(m->partition);
  return true;
}

// Kafka's committed offsets brought to the store's, waiting at most `timeout_ms`.
Status KafkaSource::FlushAcknowledgements(int64_t timeout_ms) {
  PartitionList commit(rd_kafka_topic_partition_list_new(partitions_));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [partition, next] : acked_) {
      rd_kafka_topic_partition_list_add(commit.get(), options_.topic.c_str(), partition)->offset =
          next;
    }
  }
  if (commit->cnt == 0) return Status::Ok();
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk_.get());
  rd_kafka_resp_err_t err = rd_kafka_commit_queue(rk_.get(), commit.get(), queue, nullptr, nullptr);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    rd_kafka_event_t* event = rd_kafka_queue_poll(queue, static_cast<int>(timeout_ms));
    err = event == nullptr ? RD_KAFKA_RESP_ERR__TIMED_OUT : rd_kafka_event_error(event);
    if (event != nullptr) rd_kafka_event_destroy(event);
  }
  rd_kafka_queue_destroy(queue);
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Ok();
  // A member whose group is rebalancing, or that is no longer in it, holds those partitions no
  // more: their offsets are their next holder's to commit.
  if (options_.owner != nullptr &&
      (err == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS ||
       err == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION || err == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID)) {
    return Status::Ok();
  }
  return Status::Unavailable(
      "Kafka's committed offsets of group " + options_.group +
      " could not be brought to the "
      "store's positions (" +
      rd_kafka_err2name(err) +
      "); the store's positions are where the "
      "next run begins, so nothing is read twice or skipped, but the cluster's tools show a lag");
}

// Idle when everything handed out is acknowledged and every partition's end, as the brokers
// say now, is reached (acknowledged up to it, or seen as the end since nothing came).
Result<bool> KafkaSource::ConfirmIdle() {
  Offsets acked, eof;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!handed_.empty()) return false;
    acked = acked_;
    eof = eof_;
  }
  EVIDENT_ASSIGN_OR_RETURN(const Offsets ends, ListOffsets(RD_KAFKA_OFFSET_END, 2000));
  EVIDENT_ASSIGN_OR_RETURN(const Offsets firsts, ListOffsets(RD_KAFKA_OFFSET_BEGINNING, 2000));
  for (const auto& [p, high] : ends) {
    int64_t reached = firsts.count(p) > 0 ? firsts.at(p) : 0;
    if (const auto a = acked.find(p); a != acked.end()) reached = std::max(reached, a->second);
    if (const auto e = eof.find(p); e != eof.end()) reached = std::max(reached, e->second);
    if (reached < high) return false;
  }
  unreachable_.store(false);
  return true;
}

}  // namespace

Result<std::unique_ptr<Source>> OpenKafkaSource(const KafkaOptions& options) {
  if (options.topic.empty()) return Status::InvalidArgument("a Kafka source needs a topic");
  if (options.group.empty()) return Status::InvalidArgument("a Kafka source needs a group id");
  auto source = std::make_unique<KafkaSource>(options);
  EVIDENT_RETURN_IF_ERROR(source->Open());
  return std::unique_ptr<Source>(std::move(source));
}

// A consumer handle of the group that never joins it: it only asks.
Result<std::vector<BrokerPartition>> DescribeKafkaGroup(const KafkaOptions& options,
                                                        int64_t timeout_ms) {
  EVIDENT_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                           kafka::NewConf(options, {{"group.id", options.group},
                                                    {"enable.auto.commit", "false"},
                                                    {"allow.auto.create.topics", "false"}}));
  EVIDENT_ASSIGN_OR_RETURN(kafka::Handle rk, kafka::NewHandle(RD_KAFKA_CONSUMER, conf));
  EVIDENT_ASSIGN_OR_RETURN(const int32_t count,
                           kafka::PartitionCount(rk.get(), options.topic, timeout_ms));
  const auto list_of = [&](int64_t offset) {
    PartitionList list(rd_kafka_topic_partition_list_new(count));
    for (int32_t p = 0; p < count; ++p) {
      rd_kafka_topic_partition_list_add(list.get(), options.topic.c_str(), p)->offset = offset;
    }
    return list;
  };
  PartitionList committed = list_of(RD_KAFKA_OFFSET_INVALID);
  rd_kafka_resp_err_t err =
      rd_kafka_committed(rk.get(), committed.get(), static_cast<int>(timeout_ms));
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafka::ErrorStatus("the committed offsets of group " + options.group, err);
  }
  PartitionList ends = list_of(RD_KAFKA_OFFSET_END);
  err = rd_kafka_offsets_for_times(rk.get(), ends.get(), static_cast<int>(timeout_ms));
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return kafka::ErrorStatus("the offsets of topic " + options.topic, err);
  }
  std::vector<BrokerPartition> out(static_cast<size_t>(count));
  for (int32_t p = 0; p < count; ++p) {
    const rd_kafka_topic_partition_t& c = committed->elems[p];
    out[static_cast<size_t>(p)] = BrokerPartition{
        .partition = p,
        .committed = c.offset >= 0 ? std::optional<int64_t>(c.offset) : std::nullopt,
        .end = ends->elems[p].offset};
  }
  return out;
}

Status ProbeKafka(const KafkaOptions& options, int64_t timeout_ms) {
  EVIDENT_ASSIGN_OR_RETURN(rd_kafka_conf_t * conf,
                           kafka::NewConf(options, {{"allow.auto.create.topics", "false"}}));
  EVIDENT_ASSIGN_OR_RETURN(kafka::Handle rk, kafka::NewHandle(RD_KAFKA_PRODUCER, conf));
  return kafka::PartitionCount(rk.get(), options.topic, timeout_ms).status();
}

}  // namespace evident
