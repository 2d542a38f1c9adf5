// evident/baseline.h — baselines for consumers that join a stream late: a snapshot of the
// owner's subjects (each at a version, with its state and fields) imported as the consumer's
// projections, so that the next version applies instead of waiting forever for version 1.
//
// A snapshot file is NDJSON, one subject per line:
//   {"subject":"order-7","version":7,"state":"paid","fields":{"orderId":"order-7"},
//    "owner_source":"https://example.test/order-service"}
// `subject` (a non-empty string) and `version` (an integer >= 0) are required; `state` (a
// string), `fields` (an object) and `owner_source` (a string) are optional. Each imported
// projection records evidence `baseline` (source "snapshot:<origin>", its version).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "evident/status.h"
#include "evident/store.h"

namespace evident {

struct BaselineEntry {
  std::string subject;
  int64_t version = 0;
  std::string state;
  std::string fields_json = "{}";
  std::string owner_source;
};

// One snapshot line; kInvalidArgument, with what is wrong, for a line that is not one.
Result<BaselineEntry> ParseBaselineLine(std::string_view line);

enum class BaselineOutcome : uint8_t {
  kImported,      // the consumer had no projection of the subject: it has one now
  kAlreadyThere,  // it has one at this very version (a second import of the same file)
  kConflict,      // it has one at another version: nothing written
};

// Imports `entry` as consumer `consumer`'s projection, in the caller's transaction; `origin`
// names the snapshot (the file) in the evidence.
Result<BaselineOutcome> ImportBaseline(Transaction& tx, std::string_view consumer,
                                       const BaselineEntry& entry, std::string_view origin,
                                       int64_t now_ms);

}  // namespace evident
