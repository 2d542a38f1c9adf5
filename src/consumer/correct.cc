// A person's correction of a projection, with the facts kept first (evident/correction.h).
#include <simdjson.h>

#include <algorithm>
#include <cassert>
#include <map>

#include "consumer/set_aside.h"
#include "evident/correction.h"
#include "evident/profile.h"
#include "evident/retry.h"
#include "json/pointer.h"
#include "json/writer.h"

namespace evident {
namespace {

// A stated field value is a JSON document of its own; its bound keeps a correction a
// correction, not a payload.
constexpr size_t kFieldValueBytesMax = 64 << 10;

// The name a pointer's member has in the projection's fields: its last token.
std::string FieldName(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (!json::SplitPointer(pointer, tokens) || tokens.empty()) return {};
  return tokens.back();
}

// The field names the consumer's projection steps copy (and so the ones a correction may set).
std::vector<std::string> CopiedNames(const ConsumerConfig& consumer) {
  std::vector<std::string> names;
  for (const auto& [type, step] : consumer.projection) {
    for (const std::string& pointer : step.copy) {
      const std::string name = FieldName(pointer);
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool Utf8(std::string_view text) { return simdjson::validate_utf8(text.data(), text.size()); }

Status CheckTexts(const CorrectionRequest& r) {
  if (r.by.empty() || r.note.empty()) {
    return Status::InvalidArgument("a correction names who makes it (by) and why (note)");
  }
  if (r.by.size() > kCorrectionByBytesMax || r.note.size() > kCorrectionNoteBytesMax) {
    return Status::InvalidArgument("a correction's by is at most " +
                                   std::to_string(kCorrectionByBytesMax) + " bytes, its note " +
                                   std::to_string(kCorrectionNoteBytesMax));
  }
  if (r.state.empty()) return Status::InvalidArgument("a correction states the projection's state");
  for (const std::string* text : {&r.by, &r.note, &r.state, &r.subject}) {
    if (!Utf8(*text)) return Status::InvalidArgument("a correction's texts are UTF-8");
  }
  if (r.version < 1) return Status::InvalidArgument("a corrected version is at least 1");
  if (r.fields.size() > kCorrectionFieldsMax) {
    return Status::InvalidArgument("at most " + std::to_string(kCorrectionFieldsMax) +
                                   " fields in one correction");
  }
  return Status::Ok();
}

// Each stated field: a pointer the consumer's projection copies, and JSON; returned as
// (field name, minified JSON).
Result<std::map<std::string, std::string>> CheckFields(const ConsumerConfig& consumer,
                                                       const CorrectionRequest& r) {
  const std::vector<std::string> names = CopiedNames(consumer);
  std::map<std::string, std::string> out;
  simdjson::dom::parser parser;
  for (const auto& [pointer, value] : r.fields) {
    const std::string name = IsValidJsonPointer(pointer) ? FieldName(pointer) : std::string();
    if (name.empty() || std::find(names.begin(), names.end(), name) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      return Status::InvalidArgument(
          "field '" + pointer + "' is not one the projection of " + r.consumer +
          " copies (its fields: " + (known.empty() ? "none" : known) + ")");
    }
    simdjson::dom::element parsed;
    if (value.size() > kFieldValueBytesMax ||
        parser.parse(value).get(parsed) != simdjson::SUCCESS) {
      return Status::InvalidArgument("the value of field '" + pointer + "' is not JSON (at most " +
                                     std::to_string(kFieldValueBytesMax) + " bytes): " + value);
    }
    out[name] = simdjson::to_string(parsed);
  }
  return out;
}

// The projection's fields with the stated ones set, names sorted (as the pipeline writes them).
Result<std::string> MergedFields(const std::string& fields_json,
                                 const std::map<std::string, std::string>& stated) {
  std::map<std::string, std::string> fields;
  simdjson::dom::parser parser;
  simdjson::dom::object existing;
  if (parser.parse(fields_json).get(existing) != simdjson::SUCCESS) {
    return Status::Corruption("the projection's fields are not a JSON object: " + fields_json);
  }
  for (auto field : existing) fields[std::string(field.key)] = simdjson::to_string(field.value);
  for (const auto& [name, value] : stated) fields[name] = value;
  std::string out;
  json::Writer w(out);
  w.BeginObject();
  for (const auto& [name, value] : fields) w.Key(name).Raw(value);
  w.EndObject();
  return out;
}

// What a correction record keeps of a projection; "null" for none.
std::string ProjectionJson(const Projection* p) {
  if (p == nullptr) return "null";
  std::string out;
  json::Writer w(out);
  w.BeginObject().Key("version").Int(p->version).Field("state", p->state);
  w.Key("fields").Raw(p->fields_json).Field("owner_source", p->owner_source);
  w.Key("owner_version_seen").Int(p->owner_version_seen).EndObject();
  return out;
}

// What allows the correction, read from one snapshot: an open gap (waiting events, or a record
// not closed) or a quarantined input of the consumer; empty when nothing does.
Result<std::string> BasisOf(Store& store, const CorrectionRequest& r) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
  EVIDENT_ASSIGN_OR_RETURN(const Rows<DeferredEvent> waiting,
                           snapshot->DeferredOf(r.consumer, r.subject, 64));
  if (!waiting.rows.empty()) {
    std::string versions;
    for (const DeferredEvent& d : waiting.rows) {
      versions += (versions.empty() ? "v" : ", v") + std::to_string(d.subject_version);
    }
    return "open gap: " + versions + (waiting.truncated ? ", ..." : "") + " waiting";
  }
  EVIDENT_ASSIGN_OR_RETURN(const Rows<GapRecord> gaps,
                           snapshot->GapRecordsOf(r.consumer, r.subject));
  for (const GapRecord& g : gaps.rows) {
    if (g.state != GapState::kClosed) {
      return "open gap record v" + std::to_string(g.expected_version) + "-v" +
             std::to_string(g.missing_to);
    }
  }
  EVIDENT_ASSIGN_OR_RETURN(const Rows<QuarantineRecord> kept, snapshot->QuarantineOf(r.subject));
  for (const QuarantineRecord& q : kept.rows) {
    if (q.consumer == r.consumer && q.status == QuarantineStatus::kOpen) {
      return "quarantined input #" + std::to_string(q.id) + " (" + q.reason + ")";
    }
  }
  return std::string();
}

// A waiting event at or below the corrected version can never apply: its receipt goes (a
// redelivery is decided afresh, as stale) and it is quarantined with its bytes.
Status SetAsideStale(Transaction& tx, const DeferredEvent& d, const CorrectionRequest& r,
                     int64_t now_ms, std::vector<Decision>& decisions) {
  return SetAsideDeferred(tx, d,
                          {.outcome = Outcome::kStale,
                           .reason = "stale-after-correction",
                           .message = "version " + std::to_string(d.subject_version) +
                                      " waited for a gap that a correction to version " +
                                      std::to_string(r.version) + " by " + r.by + " closed",
                           .projection_version = r.version},
                          now_ms, decisions);
}

struct Prepared {
  std::map<std::string, std::string> fields;  // name -> JSON
  std::string basis;
};

// The correction in `tx` (not committed here).
Result<CorrectionResult> Correct(Pipeline& pipeline, Transaction& tx, const CorrectionRequest& r,
                                 const Prepared& prepared, int64_t now_ms) {
  EVIDENT_RETURN_IF_ERROR(tx.WillDecide({r.consumer}));
  Projection p;
  EVIDENT_ASSIGN_OR_RETURN(const bool found, tx.ReadProjection(r.consumer, r.subject, p));
  if (r.version <= p.version) {
    return Status::FailedPrecondition("the projection of " + r.subject + " for " + r.consumer +
                                      " is at version " + std::to_string(p.version) +
                                      ": a correction sets a version above it");
  }
  const std::optional<int64_t> stored = found ? std::optional<int64_t>(p.version) : std::nullopt;
  CorrectionResult result;
  result.correction = {.consumer = r.consumer,
                       .subject = r.subject,
                       .before_json = ProjectionJson(found ? &p : nullptr),
                       .by = r.by,
                       .note = r.note,
                       .basis = prepared.basis,
                       .forced = r.force,
                       .at_ms = now_ms};
  EVIDENT_ASSIGN_OR_RETURN(p.fields_json, MergedFields(p.fields_json, prepared.fields));
  p.version = r.version;
  p.state = r.state;
  p.owner_version_seen = std::max(p.owner_version_seen, r.version);
  p.updated_at_ms = now_ms;
  p.applied_digest.clear();  // no event's payload set this version
  result.correction.after_json = ProjectionJson(&p);
  EVIDENT_ASSIGN_OR_RETURN(const BatchRows rows,
                           tx.Load(BatchKeys{{}, {SubjectKey{r.consumer, r.subject}}}));
  for (const DeferredEvent& d : rows.deferred) {
    if (d.subject_version <= r.version) {
      EVIDENT_RETURN_IF_ERROR(SetAsideStale(tx, d, r, now_ms, result.decisions));
    }
  }
  const GapClosing closing{
      .at_ms = now_ms,
      .how = result.decisions.empty() ? GapClosedHow::kCorrected : GapClosedHow::kSkipped,
      .cause = GapCause::kMissing,
      .by = r.by,
      .note = r.note};
  EVIDENT_ASSIGN_OR_RETURN(result.gaps_closed,
                           tx.CloseGaps(r.consumer, r.subject, INT64_MAX, closing));
  EVIDENT_RETURN_IF_ERROR(pipeline.DrainAfterCorrection(tx, p, now_ms, result.decisions));
  EVIDENT_RETURN_IF_ERROR(tx.InsertCorrection(result.correction));
  EVIDENT_RETURN_IF_ERROR(tx.PutProjection(p, stored));
  return result;
}

}  // namespace

Result<CorrectionResult> CorrectProjection(Pipeline& pipeline, Store& store,
                                           const CorrectionRequest& r, Clock& clock) {
  EVIDENT_RETURN_IF_ERROR(CheckTexts(r));
  const ConsumerConfig* consumer = pipeline.config().Find(r.consumer);
  if (consumer == nullptr) {
    return Status::InvalidArgument("consumer '" + r.consumer + "' is not in " +
                                   pipeline.config().path);
  }
  Prepared prepared;
  EVIDENT_ASSIGN_OR_RETURN(prepared.fields, CheckFields(*consumer, r));
  EVIDENT_ASSIGN_OR_RETURN(prepared.basis, BasisOf(store, r));
  if (prepared.basis.empty() && !r.force) {
    return Status::FailedPrecondition(r.subject + " has no open gap and no quarantined input of " +
                                      r.consumer +
                                      ": a correction needs one, or --force (recorded as forced)");
  }
  if (r.force) prepared.basis = prepared.basis.empty() ? "forced" : prepared.basis + "; forced";
  CorrectionResult result;
  EVIDENT_RETURN_IF_ERROR(
      RetryBusy(RetryingConflicts(RetryPolicy{}), clock, nullptr, [&]() -> Status {
        EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
        EVIDENT_ASSIGN_OR_RETURN(result, Correct(pipeline, *tx, r, prepared, clock.NowMs()));
        if (r.dry_run) return tx->Rollback();
        EVIDENT_RETURN_IF_ERROR(tx->Commit());
        result.committed = true;
        return Status::Ok();
      }));
  return result;
}

}  // namespace evident
