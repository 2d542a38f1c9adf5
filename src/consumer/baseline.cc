// Baselines imported from a snapshot (evident/baseline.h).
#include "evident/baseline.h"

#include <simdjson.h>

namespace evident {

Result<BaselineEntry> ParseBaselineLine(std::string_view line) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(line.data(), line.size()).get(object) != simdjson::SUCCESS) {
    return Status::InvalidArgument("not a JSON object");
  }
  BaselineEntry entry;
  std::string_view text;
  if (object["subject"].get(text) != simdjson::SUCCESS || text.empty()) {
    return Status::InvalidArgument("'subject' must be a non-empty string");
  }
  entry.subject = std::string(text);
  int64_t version = 0;
  if (object["version"].get(version) != simdjson::SUCCESS || version < 0) {
    return Status::InvalidArgument("'version' must be an integer >= 0");
  }
  entry.version = version;
  for (const auto& [key, value] : object) {
    if (key == "state" || key == "owner_source") {
      if (value.get(text) != simdjson::SUCCESS) {
        return Status::InvalidArgument("'" + std::string(key) + "' must be a string");
      }
      (key == "state" ? entry.state : entry.owner_source) = std::string(text);
    } else if (key == "fields") {
      if (!value.is_object()) return Status::InvalidArgument("'fields' must be an object");
      entry.fields_json = simdjson::minify(value);
    } else if (key != "subject" && key != "version") {
      return Status::InvalidArgument("unknown member '" + std::string(key) + "'");
    }
  }
  return entry;
}

Result<BaselineOutcome> ImportBaseline(Transaction& tx, std::string_view consumer,
                                       const BaselineEntry& entry, std::string_view origin,
                                       int64_t now_ms) {
  Projection projection;
  EVIDENT_ASSIGN_OR_RETURN(const bool found,
                           tx.ReadProjection(consumer, entry.subject, projection));
  if (found) {
    return projection.version == entry.version ? BaselineOutcome::kAlreadyThere
                                               : BaselineOutcome::kConflict;
  }
  projection.version = entry.version;
  projection.owner_version_seen = entry.version;
  projection.state = entry.state;
  projection.fields_json = entry.fields_json;
  projection.owner_source = entry.owner_source;
  projection.updated_at_ms = now_ms;
  EVIDENT_RETURN_IF_ERROR(tx.PutProjection(projection, std::nullopt));
  EVIDENT_RETURN_IF_ERROR(tx.PutEvidence({.consumer = std::string(consumer),
                                          .subject = entry.subject,
                                          .name = "baseline",
                                          .source = "snapshot:" + std::string(origin),
                                          .subject_version = entry.version,
                                          .recorded_at_ms = now_ms}));
  return BaselineOutcome::kImported;
}

}  // namespace evident
