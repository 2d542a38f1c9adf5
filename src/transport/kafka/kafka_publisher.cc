// The Kafka publisher (evident/kafka.h): the idempotent producer, one Publish waiting for every
// delivery report of its batch.
#include <chrono>
#include <string>
#include <vector>

#include "transport/kafka/kafka_client.h"

namespace evident {
namespace {

using Clock = std::chrono::steady_clock;

// A message's delivery report not in yet.
constexpr rd_kafka_resp_err_t kPending = RD_KAFKA_RESP_ERR__IN_PROGRESS;

class KafkaPublisher final : public Publisher {
 public:
  KafkaPublisher(std::string topic, int64_t timeout_ms)
      : topic_(std::move(topic)), timeout_ms_(timeout_ms) {}

  Status Open(const KafkaOptions& options) {
    const std::string timeout = std::to_string(timeout_ms_);
    EVIDENT_ASSIGN_OR_RETURN(
        rd_kafka_conf_t * conf,
        kafka::NewConf(options, {{"enable.idempotence", "true"},
                                 {"acks", "all"},
                                 {"partitioner", "murmur2_random"},
                                 {"linger.ms", "2"},
                                 {"message.timeout.ms", timeout},
                                 {"allow.auto.create.topics", "false"},
                                 {"socket.connection.setup.timeout.ms", "5000"}}));
    rd_kafka_conf_set_opaque(conf, this);
    rd_kafka_conf_set_dr_msg_cb(conf, &OnDelivery);
    EVIDENT_ASSIGN_OR_RETURN(rk_, kafka::NewHandle(RD_KAFKA_PRODUCER, conf));
    // The topic's metadata now: a topic the cluster does not have is said at once, and the first
    // batch does not wait for the client's periodic scan (a second) to learn its partitions.
    return kafka::PartitionCount(rk_.get(), topic_, options.connect_timeout_ms).status();
  }

  Result<size_t> Publish(std::span<const OutgoingMessage> batch) override {
    if (!broken_.empty()) return Status::FailedPrecondition(broken_);
    if (batch.empty()) return size_t{0};
    Status refused;
    const size_t produced = ProduceAndWait(batch, refused);
    size_t accepted = 0;
    while (accepted < produced && results_[accepted] == RD_KAFKA_RESP_ERR_NO_ERROR) ++accepted;
    if (accepted > 0) return accepted;
    if (produced == 0) return refused;  // the client refused the first message itself
    if (results_[0] == kPending) return Status::Unavailable(broken_);
    // The broker refuses a whole request for one record in it (too large for the topic, a
    // record a compacted topic cannot take): the first row is blamed only once it is refused
    // when sent alone.
    if (kafka::RefusedForWhatItIs(results_[0]) && produced > 1 && broken_.empty()) {
      if (ProduceAndWait(batch.first(1), refused) == 1 &&
          results_[0] == RD_KAFKA_RESP_ERR_NO_ERROR) {
        return size_t{1};
      }
      if (!refused.ok()) return refused;
      if (results_[0] == kPending) return Status::Unavailable(broken_);
    }
    return kafka::ErrorStatus("topic " + topic_ + " refused message " + batch[0].id, results_[0]);
  }

  Status Close() override {
    if (rk_ == nullptr) return Status::Ok();
    // Whatever a broken Publish left in flight is given a moment, then dropped: the relay offers
    // those rows again.
    (void)rd_kafka_flush(rk_.get(), broken_.empty() ? 5000 : 100);
    (void)rd_kafka_purge(rk_.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
    (void)rd_kafka_poll(rk_.get(), 0);
    rk_.reset();
    return Status::Ok();
  }

  ~KafkaPublisher() override { (void)Close(); }

 private:
  // Hands `batch` to the producer and waits for its delivery reports (results_): how many were
  // handed over; `refused` says why the next one was not. A wait that ends with reports
  // outstanding, or a fatal producer error, breaks the publisher.
  size_t ProduceAndWait(std::span<const OutgoingMessage> batch, Status& refused) {
    results_.assign(batch.size(), kPending);
    outstanding_ = 0;
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms_ + 2000);
    size_t produced = 0;
    for (; produced < batch.size(); ++produced) {
      refused = Produce(batch[produced], produced, deadline);
      if (!refused.ok()) break;
      ++outstanding_;
    }
    while (outstanding_ > 0 && Clock::now() < deadline) rd_kafka_poll(rk_.get(), 20);
    if (Status fatal = Fatal(); !fatal.ok()) broken_ = fatal.message();
    if (outstanding_ > 0) {
      broken_ = std::to_string(outstanding_) +
                " of the last batch's delivery reports did not come "
                "within " +
                std::to_string(timeout_ms_) + " ms; open a new producer";
    }
    return produced;
  }

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<KafkaPublisher*>(opaque);
    const auto index = reinterpret_cast<uintptr_t>(m->_private);
    if (index == 0 || index > self->results_.size()) return;  // a batch before a broken one
    if (self->results_[index - 1] != kPending) return;
    self->results_[index - 1] = m->err;
    --self->outstanding_;
  }

  Status Fatal() {
    char why[512];
    const rd_kafka_resp_err_t err = rd_kafka_fatal_error(rk_.get(), why, sizeof why);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Ok();
    return Status::Unavailable(std::string("the Kafka producer failed for good: ") + why);
  }

  // Hands one message to the producer's queue, waiting (while the deadline allows) when the
  // queue is full.
  Status Produce(const OutgoingMessage& m, size_t index, Clock::time_point deadline) {
    for (;;) {
      rd_kafka_headers_t* headers = Headers(m);
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk_.get(), RD_KAFKA_V_TOPIC(topic_.c_str()),
          RD_KAFKA_V_KEY(m.key.empty() ? nullptr : m.key.data(), m.key.size()),
          RD_KAFKA_V_VALUE(const_cast<char*>(m.bytes.data()), m.bytes.size()),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers),
          RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(index + 1))),
          RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::Ok();
      rd_kafka_headers_destroy(headers);  // kept by the producer only when it took the message
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || Clock::now() >= deadline) {
        return kafka::ErrorStatus("topic " + topic_ + ", message " + m.id, err);
      }
      rd_kafka_poll(rk_.get(), 10);
    }
  }

  static rd_kafka_headers_t* Headers(const OutgoingMessage& m) {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(4);
    constexpr std::string_view kType = "application/cloudevents+json";
    rd_kafka_header_add(headers, "content-type", -1, kType.data(),
                        static_cast<ssize_t>(kType.size()));
    const std::pair<const char*, const std::string*> routing[] = {
        {"ce_id", &m.event_id}, {"ce_source", &m.source}, {"ce_type", &m.type}};
    for (const auto& [name, value] : routing) {
      if (value->empty()) continue;
      rd_kafka_header_add(headers, name, -1, value->data(), static_cast<ssize_t>(value->size()));
    }
    return headers;
  }

  std::string topic_;
  int64_t timeout_ms_;
  kafka::Handle rk_;
  std::vector<rd_kafka_resp_err_t> results_;  // by message of the current batch
  size_t outstanding_ = 0;
  std::string broken_;  // why every further batch is refused; empty while it is sound
};

}  // namespace

Result<std::unique_ptr<Publisher>> OpenKafkaPublisher(const KafkaOptions& options) {
  if (options.topic.empty()) return Status::InvalidArgument("a Kafka destination needs a topic");
  if (options.publish_timeout_ms < 1000) {
    return Status::InvalidArgument("a Kafka publish timeout under one second");
  }
  auto publisher = std::make_unique<KafkaPublisher>(options.topic, options.publish_timeout_ms);
  EVIDENT_RETURN_IF_ERROR(publisher->Open(options));
  return std::unique_ptr<Publisher>(std::move(publisher));
}

}  // namespace evident
