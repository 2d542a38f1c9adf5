// A deferred event set aside (consumer/set_aside.h).
#include "consumer/set_aside.h"

#include <utility>

namespace evident {

std::string LedgerKeyText(std::string_view consumer, std::string_view source, std::string_view id) {
  std::string key;
  key.reserve(consumer.size() + source.size() + id.size() + 2);
  key.append(consumer).append(1, ':').append(source).append(1, ':').append(id);
  return key;
}

Status SetAsideDeferred(Transaction& tx, const DeferredEvent& d, SetAsideReason why, int64_t now_ms,
                        std::vector<Decision>& decisions) {
  EVIDENT_RETURN_IF_ERROR(tx.DeleteDeferred(d.consumer, d.subject, d.subject_version));
  EVIDENT_RETURN_IF_ERROR(tx.DeleteLedger(d.consumer, d.source, d.event_id));
  Decision decision;
  decision.index = d.input_index;
  decision.consumer = d.consumer;
  decision.outcome = why.outcome;
  decision.reason = std::move(why.reason);
  decision.message = std::move(why.message);
  decision.key = LedgerKeyText(d.consumer, d.source, d.event_id);
  decision.subject = d.subject;
  decision.subject_version = d.subject_version;
  decision.projection_version = why.projection_version;
  const QuarantineRecord record{.consumer = d.consumer,
                                .outcome = why.outcome,
                                .reason = decision.reason,
                                .message = decision.message,
                                .source = d.source,
                                .event_id = d.event_id,
                                .type = d.type,
                                .subject = d.subject,
                                .subject_version = d.subject_version,
                                .schema_version = d.schema_version,
                                .raw = d.raw,
                                .last_seen_ms = now_ms,
                                .input_index = d.input_index};
  EVIDENT_RETURN_IF_ERROR(tx.Quarantine(record).status());
  decisions.push_back(std::move(decision));
  return Status::Ok();
}

}  // namespace evident
