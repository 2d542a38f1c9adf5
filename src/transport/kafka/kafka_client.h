// transport/kafka/kafka_client.h — what the Kafka publisher and source share: a librdkafka
// handle built from KafkaOptions with evident's settings, and its errors as Status.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "evident/kafka.h"
#include "evident/status.h"

namespace evident::kafka {

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const;
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

using Properties = std::vector<std::pair<std::string, std::string>>;

// A configuration: bootstrap.servers, then `ours`, then the user's properties (checked:
// CheckKafkaProperties). librdkafka's log goes nowhere unless the user set "debug".
Result<rd_kafka_conf_t*> NewConf(const KafkaOptions& options, const Properties& ours);

// A handle of `type` over `conf` (consumed, whatever the outcome).
Result<Handle> NewHandle(rd_kafka_type_t type, rd_kafka_conf_t* conf);

// The partition count of `topic`, as the cluster's metadata says within `timeout_ms`:
// kNotFound for a topic the cluster does not have, kUnavailable for a cluster that does not
// answer.
Result<int32_t> PartitionCount(rd_kafka_t* rk, const std::string& topic, int64_t timeout_ms);

// `what`: librdkafka's name and words for `err`, as a Status of the fitting code.
Status ErrorStatus(std::string_view what, rd_kafka_resp_err_t err);

// A record the cluster refuses for what it is, and will refuse again (too large, not
// permitted, invalid): the relay may park it.
bool RefusedForWhatItIs(rd_kafka_resp_err_t err);

}  // namespace evident::kafka
