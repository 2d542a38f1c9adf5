#include "transport/kafka/kafka_client.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <string_view>

namespace evident {
namespace {

// The properties evident's guarantees rest on; a user who sets one is refused.
constexpr std::array<std::string_view, 12> kOwnProperties = {
    "enable.idempotence", "acks",        "enable.auto.commit",   "enable.auto.offset.store",
    "auto.offset.reset",  "group.id",    "bootstrap.servers",    "metadata.broker.list",
    "message.timeout.ms", "partitioner", "enable.partition.eof", "allow.auto.create.topics"};

void Quiet(const rd_kafka_t*, int, const char*, const char*) {}

void ToStderr(const rd_kafka_t*, int level, const char* facility, const char* text) {
  std::fprintf(stderr, "librdkafka %d %s: %s\n", level, facility, text);
}

}  // namespace

Result<std::pair<std::string, std::string>> ParseKafkaProperty(std::string_view text) {
  const size_t equals = text.find('=');
  if (equals == std::string_view::npos || equals == 0) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not a property (KEY=VALUE, librdkafka's names)");
  }
  return std::pair{std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
}

Status CheckKafkaProperties(const std::vector<std::pair<std::string, std::string>>& properties) {
  // librdkafka knows about 200 properties: more options than that are a mistake, not a config.
  constexpr size_t kPropertiesMax = 256;
  if (properties.size() > kPropertiesMax) {
    return Status::InvalidArgument("--kafka-config is given " + std::to_string(properties.size()) +
                                   " times; at most " + std::to_string(kPropertiesMax));
  }
  for (const auto& [key, value] : properties) {
    if (std::find(kOwnProperties.begin(), kOwnProperties.end(), key) != kOwnProperties.end()) {
      return Status::InvalidArgument("the Kafka property " + key +
                                     " is evident's own (its guarantees rest on it)");
    }
  }
  return Status::Ok();
}

namespace kafka {

void HandleDeleter::operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }

Result<rd_kafka_conf_t*> NewConf(const KafkaOptions& options, const Properties& ours) {
  EVIDENT_RETURN_IF_ERROR(CheckKafkaProperties(options.properties));
  if (options.bootstrap.empty()) return Status::InvalidArgument("no Kafka bootstrap servers");
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char why[512];
  bool debug = false;
  auto set = [&](const std::string& key, const std::string& value) {
    debug = debug || key == "debug";
    if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), why, sizeof why) == RD_KAFKA_CONF_OK) {
      return Status::Ok();
    }
    return Status::InvalidArgument("Kafka property " + key + "=" + value + ": " + why);
  };
  Status s = set("bootstrap.servers", options.bootstrap);
  for (const auto& [key, value] : ours) {
    if (s.ok()) s = set(key, value);
  }
  for (const auto& [key, value] : options.properties) {
    if (s.ok()) s = set(key, value);
  }
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  rd_kafka_conf_set_log_cb(conf, debug ? &ToStderr : &Quiet);
  return conf;
}

Result<Handle> NewHandle(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  char why[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, why, sizeof why);
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);  // rd_kafka_new takes it only when it succeeds
    return Status::InvalidArgument(std::string("Kafka client: ") + why);
  }
  return Handle(rk);
}

Result<int32_t> PartitionCount(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms) {
  rd_kafka_topic_t* handle = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
  if (handle == nullptr) return ErrorStatus("topic " + topic, rd_kafka_last_error());
  const rd_kafka_metadata_t* metadata = nullptr;
  const rd_kafka_resp_err_t err =
      rd_kafka_metadata(rk, 0, handle, &metadata, static_cast<int>(timeout_ms));
  rd_kafka_topic_destroy(handle);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return ErrorStatus("the Kafka cluster's metadata", err);
  }
  Result<int32_t> count = Status::NotFound("the Kafka cluster has no topic " + topic);
  if (metadata->topic_cnt == 1 && metadata->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
      metadata->topics[0].partition_cnt > 0) {
    count = metadata->topics[0].partition_cnt;
  } else if (metadata->topic_cnt == 1 &&
             metadata->topics[0].err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
    count = ErrorStatus("topic " + topic, metadata->topics[0].err);
  }
  rd_kafka_metadata_destroy(metadata);
  return count;
}

Status ErrorStatus(std::string_view what, rd_kafka_resp_err_t err) {
  const std::string text =
      std::string(what) + ": " + rd_kafka_err2name(err) + " (" + rd_kafka_err2str(err) + ")";
  if (RefusedForWhatItIs(err)) return Status::InvalidArgument(text);
  switch (err) {
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return Status::NotFound(text);
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_INVALID_REQUIRED_ACKS:
      return Status::FailedPrecondition(text);
    case RD_KAFKA_RESP_ERR__INVALID_ARG:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
      return Status::InvalidArgument(text);
    default:
      return Status::Unavailable(text);
  }
}

// A permission the cluster denies is not the record's fault: it is no reason to park it (the
// relay would park the whole outbox), so it is kFailedPrecondition (see ErrorStatus).
bool RefusedForWhatItIs(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
      return true;
    default:
      return false;
  }
}

}  // namespace kafka
}  // namespace evident
