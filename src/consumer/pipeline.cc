#include <algorithm>
#include <array>
#include <cassert>
#include <map>
#include <optional>

#include "consumer/intents.h"
#include "consumer/set_aside.h"
#include "core/digest.h"
#include "core/fnv1a.h"
#include "core/rfc3339.h"
#include "effects/compensation.h"
#include "evident/adapter.h"
#include "evident/consumer.h"
#include "evident/envelope.h"
#include "evident/schema.h"
#include "json/pointer.h"
#include "json/writer.h"
#include "payload/payload.h"

namespace evident {
namespace {

// Payload errors kept per decision; the first few explain the failure, more would bloat the
// store and the output.
constexpr size_t kPayloadErrorsMax = 8;

// Evaluates a JSON Pointer into the event's payload.
simdjson::simdjson_result<simdjson::dom::element> DataAt(const EventView& event,
                                                         std::string_view pointer) {
  if (!event.data) return simdjson::NO_SUCH_FIELD;
  if (pointer.empty()) return simdjson::dom::element(*event.data);
  return event.data->at_pointer(pointer);
}

// Writes a JSON value taken from a parsed document. Scalars are written directly; only arrays,
// objects and non-integral numbers go through simdjson's serializer.
void WriteElement(json::Writer& w, simdjson::dom::element value) {
  std::string_view text;
  int64_t integer = 0;
  bool flag = false;
  if (value.get(text) == simdjson::SUCCESS) {
    w.String(text);
  } else if (value.type() == simdjson::dom::element_type::INT64 &&
             value.get(integer) == simdjson::SUCCESS) {
    w.Int(integer);
  } else if (value.get(flag) == simdjson::SUCCESS) {
    w.Bool(flag);
  } else if (value.is_null()) {
    w.Null();
  } else {
    w.Raw(simdjson::to_string(value));
  }
}

// The last token of a JSON Pointer, unescaped: "/customer/id" -> "id". The pointers come from
// a checked configuration.
std::string LastToken(std::string_view pointer) {
  std::vector<std::string> tokens;
  if (!json::SplitPointer(pointer, tokens) || tokens.empty()) return std::string();
  return tokens.back();
}

// What the store quarantines of an input that was not applied: the decision's reason and message
// (with the payload errors), the event's coordinates and its original bytes.
QuarantineRecord RecordFrom(const Decision& d, std::string_view source, std::string_view event_id,
                            std::string_view type, std::optional<int64_t> subject_version,
                            std::optional<int64_t> schema_version, std::string_view raw,
                            int64_t now_ms) {
  QuarantineRecord record;
  record.consumer = d.consumer;
  record.outcome = d.outcome;
  record.reason = d.reason;
  record.message = d.message;
  for (const std::string& e : d.errors) record.message += "\n" + e;
  record.source = std::string(source);
  record.event_id = std::string(event_id);
  record.type = std::string(type);
  record.subject = d.subject;
  record.subject_version = subject_version;
  record.schema_version = schema_version;
  record.raw = std::string(raw);
  record.last_seen_ms = now_ms;
  record.input_index = d.index;
  return record;
}

// A copied member's default (config.h, MemberDefault), its value parsed once.
struct PreparedDefault {
  bool refuses = false;
  std::optional<simdjson::dom::element> value;  // an element of `holder`'s document
  std::shared_ptr<simdjson::dom::parser> holder;
};

// A projection step with its copied fields' names and defaults worked out once.
struct PreparedStep {
  const ProjectionStep* step;
  std::vector<std::pair<std::string, std::string>> copy;  // (pointer into data, field name)
  std::vector<PreparedDefault> copy_default;              // one per copy entry; no value: left out
  PreparedDefault state_default;                          // for state_from
};

// A schema version read through version adapters: the chain, and the schemas the payload is
// checked against before (its own version's) and after (the accepted version's).
struct AdapterRoute {
  std::vector<const Adapter*> chain;
  std::string name;  // "a" or "a,b"
  std::shared_ptr<const schema::Schema> source_schema, target_schema;
  int64_t target_version = 0;
};

struct ConsumerState {
  const ConsumerConfig* config;
  // type -> version -> compiled payload schema. Transparent comparison: looking a type up does
  // not copy it.
  std::map<std::string, std::map<int64_t, std::shared_ptr<const schema::Schema>>, std::less<>>
      schemas;
  std::map<std::string, PreparedStep, std::less<>> steps;  // by event type
  // type -> version read via_adapter -> its route.
  std::map<std::string, std::map<int64_t, AdapterRoute>, std::less<>> routes;
};

// The payload an adapter route produced, parsed; kept with the verdict that used it.
struct AdaptedPayload {
  std::string json;
  std::unique_ptr<simdjson::dom::parser> parser;
  std::optional<simdjson::dom::element> data;
  const AdapterRoute* route = nullptr;
};

// The adapter route by which `consumer` reads `type` at `version`, or nullptr.
const AdapterRoute* RouteOf(const ConsumerState& consumer, std::string_view type, int64_t version) {
  const auto routes = consumer.routes.find(type);
  if (routes == consumer.routes.end()) return nullptr;
  const auto route = routes->second.find(version);
  return route == routes->second.end() ? nullptr : &route->second;
}

// What one consumer's store-free checks (steps 1-3) made of an event: an early outcome to keep,
// or the schema version to go on with.
struct Verdict {
  bool routed = false;  // the consumer subscribes to the event's type
  bool keep = false;
  Outcome outcome = Outcome::kRejected;
  std::string reason, message;
  std::vector<std::string> errors;  // payload-invalid: "instanceLocation: error (keyword)"
  int64_t schema_version = 0;
  bool schema_version_read = false;       // schema_version holds the event's
  bool schema_version_defaulted = false;  // .. its accepts entry's default_schema_version
  AdaptedPayload adapted;                 // route set when the payload was read through adapters

  void Keep(Outcome o, std::string r, std::string m) {
    keep = true;
    outcome = o;
    reason = std::move(r);
    message = std::move(m);
  }
};

// "sha256:<hex>" of an event's payload as the consumer's owner wrote it (its `data`, minified as
// parsed; or its data_base64), for a same-version conflict's report; empty without a payload.
std::string PayloadDigest(const EventView& event) {
  if (event.data) return Sha256Digest(simdjson::to_string(*event.data));
  if (event.data_base64) return Sha256Digest(*event.data_base64);
  return {};
}

// One of the two events a same-version conflict is about.
struct Claimant {
  std::string source, event_id, digest;
};

// The report of a same-version conflict to the subject's owner (gaps.h): an outbox row of the
// deciding consumer, so that it reaches the owner through the relay like any event.
OutboxRow ConflictReport(std::string_view consumer, std::string_view subject, int64_t version,
                         std::string_view owner_source, std::string_view reason,
                         const Claimant& held, const Claimant& conflicting, int64_t now_ms,
                         int64_t partition_count) {
  OutboxRow row;
  row.source = ReplayRequestSource(consumer);
  row.event_id =
      ConflictReportId(consumer, subject, version, conflicting.source, conflicting.event_id);
  row.type = kConflictDetectedType;
  row.subject = std::string(subject);
  row.partition = static_cast<int64_t>(
      Fnv1a(kFnv1aOffset, subject) % static_cast<uint64_t>(std::max<int64_t>(partition_count, 1)));
  row.created_at_ms = now_ms;
  json::Writer w(row.bytes);
  w.BeginObject().Field("specversion", "1.0").Field("id", row.event_id);
  w.Field("source", row.source).Field("type", row.type).Field("subject", row.subject);
  w.Field("time", rfc3339::FormatMs(now_ms)).Field("datacontenttype", "application/json");
  w.Key("data").BeginObject().Field("consumer", consumer).Field("subject", subject);
  w.Key("version").Int(version).Field("owner_source", owner_source).Field("reason", reason);
  for (const auto& [name, who] :
       {std::pair{"held_by", &held}, std::pair{"conflicting", &conflicting}}) {
    w.Key(name).BeginObject().Field("source", who->source).Field("id", who->event_id);
    w.Key("payload_digest");
    who->digest.empty() ? w.Null() : w.String(who->digest);
    w.EndObject();
  }
  w.EndObject().EndObject();
  return row;
}

// Whether `source` may write the ordered projection whose owner is `owner` (empty: none yet):
// the owner itself, or two sources the contract lists as sharing ownership.
bool MayOwn(const ConsumerContract& contract, std::string_view owner, std::string_view source) {
  if (owner.empty() || owner == source) return true;
  const auto listed = [&](std::string_view s) {
    return std::find(contract.owners.begin(), contract.owners.end(), s) != contract.owners.end();
  };
  return listed(owner) && listed(source);
}

std::string OwnerMismatch(std::string_view subject, std::string_view owner,
                          std::string_view source) {
  return "the owner of " + std::string(subject) + " is " + std::string(owner) +
         " (the source of its first applied event or baseline); this event comes from " +
         std::string(source);
}

}  // namespace

// An input event as Prepare leaves it: its bytes, its own parser and parse, and one verdict per
// consumer.
struct PreparedEvent::Impl {
  std::string bytes;
  std::unique_ptr<EnvelopeParser> parser;
  EnvelopeParser::Outcome parsed;
  std::vector<Verdict> verdicts;  // one per consumer, in configuration order
};

PreparedEvent::PreparedEvent(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreparedEvent::~PreparedEvent() = default;
size_t PreparedEvent::size() const { return impl_->bytes.capacity(); }
std::string_view PreparedEvent::bytes() const { return impl_->bytes; }
const Rejection* PreparedEvent::rejection() const {
  return impl_->parsed.ok() ? nullptr : &*impl_->parsed.rejection;
}

void AppendDecisionJson(const Decision& d, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Key("index").Int(d.index).Key("consumer");
  d.consumer.empty() ? w.Null() : w.String(d.consumer);
  w.Field("outcome", OutcomeName(d.outcome)).Key("reason");
  d.reason.empty() ? w.Null() : w.String(d.reason);
  if (!d.message.empty()) w.Field("message", d.message);
  w.Key("key");
  d.key.empty() ? w.Null() : w.String(d.key);
  w.Key("subject");
  d.subject.empty() ? w.Null() : w.String(d.subject);
  const auto optional_int = [&](std::string_view name, const std::optional<int64_t>& v) {
    w.Key(name);
    v ? w.Int(*v) : w.Null();
  };
  optional_int("subject_version", d.subject_version);
  optional_int("projection_version", d.projection_version);
  optional_int("expected_version", d.expected_version);
  w.Field("drained", d.drained);
  if (!d.adapter.empty()) w.Field("adapter", d.adapter);
  if (d.schema_version_defaulted) w.Field("schema_version_defaulted", true);
  if (!d.errors.empty()) {
    w.Key("errors").BeginArray();
    for (const std::string& e : d.errors) w.String(e);
    w.EndArray();
  }
  w.EndObject();
}

namespace {

// What a projection step sets from one event: the state (when it sets one) and each copied
// member it has a value for, the default's where the payload lacks it (named in `defaulted`).
struct StepWrites {
  bool sets_state = false;
  std::string state;
  std::vector<std::pair<std::string_view, simdjson::dom::element>> fields;  // (name, value)
  std::vector<std::string_view> defaulted;                                  // field names
};

using Fields = std::vector<std::pair<std::string_view, simdjson::dom::element>>;

// A projection's fields after a step wrote `written`, into `out`: a pure function of
// `existing_json` and `written` (the parser and `merged` are scratch space, reused across
// events so that the hot path allocates nothing).
void MergeFields(std::string_view existing_json, const Fields& written,
                 simdjson::dom::parser& parser, Fields& merged, std::string& out) {
  // Merge: copied fields replace fields of the same name, others stay; names sorted. The
  // existing fields are the writer's own output, so they are already one per name.
  merged.clear();
  simdjson::dom::object existing;
  if (existing_json != "{}" && parser.parse(existing_json).get(existing) == simdjson::SUCCESS) {
    for (auto field : existing) merged.emplace_back(field.key, field.value);
  }
  const size_t existing_count = merged.size();
  for (const auto& [name, value] : written) {
    bool replaced = false;
    for (size_t i = 0; i < existing_count; ++i) {
      if (merged[i].first == name) {
        merged[i].second = value;
        replaced = true;
        break;
      }
    }
    if (!replaced) merged.emplace_back(name, value);
  }
  // Stable insertion sort: a handful of fields, and std::stable_sort would allocate a buffer.
  for (size_t i = 1; i < merged.size(); ++i) {
    for (size_t j = i; j > 0 && merged[j].first < merged[j - 1].first; --j) {
      std::swap(merged[j], merged[j - 1]);
    }
  }
  out.clear();
  json::Writer w(out);
  w.BeginObject();
  for (size_t i = 0; i < merged.size(); ++i) {
    // Two copied pointers may end in the same name: the later one wins.
    if (i + 1 < merged.size() && merged[i + 1].first == merged[i].first) {
      continue;
    }
    w.Key(merged[i].first);
    WriteElement(w, merged[i].second);
  }
  w.EndObject();
}

// A value as a projection state: a string as it is, anything else as its JSON text.
void AssignState(simdjson::dom::element value, std::string& state) {
  std::string_view text;
  if (value.get(text) == simdjson::SUCCESS) {
    state.assign(text);
  } else {
    state = simdjson::to_string(value);
  }
}

void CollectWrites(const PreparedStep& prepared, const EventView& event, StepWrites& out) {
  const ProjectionStep& step = *prepared.step;
  out.sets_state = false;
  out.fields.clear();
  out.defaulted.clear();
  if (!step.state.empty()) {
    out.sets_state = true;
    out.state.assign(step.state);
  } else if (!step.state_from.empty()) {
    simdjson::dom::element value;
    if (DataAt(event, step.state_from).get(value) == simdjson::SUCCESS) {
      out.sets_state = true;
      AssignState(value, out.state);
    } else if (prepared.state_default.value) {
      out.sets_state = true;
      AssignState(*prepared.state_default.value, out.state);
    }
  }
  for (size_t i = 0; i < prepared.copy.size(); ++i) {
    const std::string& pointer = prepared.copy[i].first;
    const std::string& name = prepared.copy[i].second;  // captured below: no structured binding
    simdjson::dom::element value;
    bool defaulted = false;
    if (DataAt(event, pointer).get(value) != simdjson::SUCCESS) {
      if (!prepared.copy_default[i].value) continue;
      value = *prepared.copy_default[i].value;
      defaulted = true;
    }
    // Two copied pointers may end in the same name: the later one wins, in the projection and
    // here alike.
    const auto same = std::find_if(out.fields.begin(), out.fields.end(),
                                   [&](const auto& field) { return field.first == name; });
    if (same != out.fields.end()) {
      same->second = value;
      std::erase(out.defaulted, std::string_view(name));
    } else {
      out.fields.emplace_back(name, value);
    }
    if (defaulted) out.defaulted.push_back(name);
  }
}

// Adds `"schema_version_defaulted":N` to a receipt's record of what its event wrote (an empty
// record becomes an object of that alone): the event carried no schema version and was read as
// its contract's default_schema_version.
void NoteDefaultedSchemaVersion(int64_t version, std::string& wrote_json) {
  const std::string member = "\"schema_version_defaulted\":" + std::to_string(version);
  if (wrote_json.empty()) {
    wrote_json = "{" + member + "}";
    return;
  }
  assert(wrote_json.back() == '}');
  wrote_json.insert(wrote_json.size() - 1, (wrote_json.size() > 2 ? "," : "") + member);
}

// The receipt's record of what the event set (store.h, LedgerEntry::wrote_json), bounded by
// kReceiptWroteBytesMax: past it, the members' names stand for their values.
void WroteJson(const StepWrites& writes, std::string& out) {
  out.clear();
  json::Writer w(out);
  w.BeginObject();
  if (writes.sets_state) w.Field("state", writes.state);
  w.Key("fields").BeginObject();
  for (const auto& [name, value] : writes.fields) {
    w.Key(name);
    WriteElement(w, value);
  }
  w.EndObject();
  if (!writes.defaulted.empty()) {
    w.Key("defaulted").BeginArray();
    for (const std::string_view name : writes.defaulted) w.String(name);
    w.EndArray();
  }
  w.EndObject();
  if (out.size() <= kReceiptWroteBytesMax) return;
  const size_t full_bytes = out.size();
  out.clear();
  json::Writer cut(out);
  cut.BeginObject();
  if (writes.sets_state) {
    cut.Field("state", json::Utf8Prefix(writes.state, kReceiptWroteBytesMax / 8));
  }
  cut.Key("members").BeginArray();
  for (const auto& field : writes.fields) {
    if (out.size() > kReceiptWroteBytesMax * 3 / 4) break;
    cut.String(field.first);
  }
  cut.EndArray().Key("truncated_bytes").Int(static_cast<int64_t>(full_bytes)).EndObject();
  if (out.size() <= kReceiptWroteBytesMax) return;
  // Escaped control characters can make even the cut state six times its bytes.
  out.clear();
  json::Writer least(out);
  least.BeginObject().Key("truncated_bytes").Int(static_cast<int64_t>(full_bytes)).EndObject();
}

// The parsed event `at` with the member at `path` (the profile's payload pointer, from `depth`
// on) written as `payload` (JSON text). Members keep their order and their bytes; only those on
// the path are rewritten. Written by hand rather than through adapter's JSON tree
// (compat::JsonValue), which writes numbers again in their shortest form.
void WriteReplaced(json::Writer& w, simdjson::dom::element at, const std::vector<std::string>& path,
                   size_t depth, std::string_view payload) {
  simdjson::dom::object object;
  if (depth == path.size() || at.get(object) != simdjson::SUCCESS) {
    w.Raw(depth == path.size() ? payload : simdjson::to_string(at));
    return;
  }
  w.BeginObject();
  bool found = false;
  for (const auto field : object) {
    w.Key(field.key);
    const bool on_path = field.key == path[depth];
    found = found || on_path;
    on_path ? WriteReplaced(w, field.value, path, depth + 1, payload)
            : void(w.Raw(simdjson::to_string(field.value)));
  }
  if (!found && depth + 1 == path.size()) w.Key(path[depth]).Raw(payload);
  w.EndObject();
}

// A projection step's explicit defaults (null or a constant: a refusal never gets this far), as
// a tree of pointer tokens.
struct DefaultsTree {
  std::optional<std::string> value_json;
  std::map<std::string, DefaultsTree, std::less<>> children;
};

DefaultsTree DefaultsOf(const ProjectionStep* step) {
  DefaultsTree root;
  if (step == nullptr) return root;
  std::vector<std::string> tokens;
  for (const auto& [pointer, value] : step->defaults) {
    if (value.kind == MemberDefault::Kind::kRefuse || !json::SplitPointer(pointer, tokens)) {
      continue;
    }
    DefaultsTree* node = &root;
    for (const std::string& token : tokens) node = &node->children[token];
    node->value_json = value.kind == MemberDefault::Kind::kNull ? "null" : value.value_json;
  }
  return root;
}

// Whether `at` lacks a member a default fills (depth bounded by the envelope's nesting limit).
bool Lacks(simdjson::dom::element at, const DefaultsTree& tree) {
  simdjson::dom::object object;
  if (tree.children.empty() || at.get(object) != simdjson::SUCCESS) return false;
  for (const auto& [key, child] : tree.children) {
    simdjson::dom::element member;
    if (object.at_key(key).get(member) != simdjson::SUCCESS || Lacks(member, child)) return true;
  }
  return false;
}

void WriteMissing(json::Writer& w, const DefaultsTree& tree) {
  if (tree.value_json) {
    w.Raw(*tree.value_json);
    return;
  }
  w.BeginObject();
  for (const auto& [key, child] : tree.children) WriteMissing(w.Key(key), child);
  w.EndObject();
}

// `at` with every member a default fills and it lacks written in, after its own members.
void WriteFilled(json::Writer& w, simdjson::dom::element at, const DefaultsTree& tree) {
  simdjson::dom::object object;
  if (tree.children.empty() || at.get(object) != simdjson::SUCCESS) {
    w.Raw(simdjson::to_string(at));
    return;
  }
  w.BeginObject();
  size_t present = 0;
  for (const auto field : object) {
    w.Key(field.key);
    const auto child = tree.children.find(field.key);
    if (child == tree.children.end()) {
      w.Raw(simdjson::to_string(field.value));
      continue;
    }
    ++present;
    WriteFilled(w, field.value, child->second);
  }
  if (present < tree.children.size()) {
    for (const auto& [key, child] : tree.children) {
      simdjson::dom::element member;
      if (object.at_key(key).get(member) != simdjson::SUCCESS) WriteMissing(w.Key(key), child);
    }
  }
  w.EndObject();
}

// The event as a consumer reads it: `raw` with its payload replaced by `adapted` (the adapters'
// output; empty when it was not read through adapters) and the explicit defaults of its
// projection step (`step`, may be null) filled in; `raw` itself when neither changes it.
std::string ReadEvent(std::string_view raw, std::string_view data_pointer,
                      const ProjectionStep* step, std::string_view adapted) {
  const DefaultsTree defaults = DefaultsOf(step);
  if (adapted.empty() && defaults.children.empty()) return std::string(raw);
  std::vector<std::string> path;
  simdjson::dom::parser parser, adapted_parser;
  simdjson::dom::element root, payload;
  // A parsed event always parses again, and the profile's pointer holds.
  if (!json::SplitPointer(data_pointer, path) || parser.parse(raw.data(), raw.size()).get(root)) {
    return std::string(raw);
  }
  const bool parsed = adapted.empty()
                          ? root.at_pointer(data_pointer).get(payload)
                          : adapted_parser.parse(adapted.data(), adapted.size()).get(payload);
  std::string filled;
  if (parsed == simdjson::SUCCESS && Lacks(payload, defaults)) {
    json::Writer fill(filled);
    WriteFilled(fill, payload, defaults);
  } else if (adapted.empty()) {
    return std::string(raw);
  } else {
    filled.assign(adapted);
  }
  std::string out;
  json::Writer w(out);
  WriteReplaced(w, root, path, 0, filled);
  return out;
}

// One (event, consumer) decision in the making: what the ordered, unordered, defer and duplicate
// paths share.
// An event as one application reads it: as the consumer reads it (adapted, when it reads
// through adapters), as it was published (what an effect's request and the digests carry: the
// fact, not the consumer's reading of it, docs/effects.md), and whether the projection step's
// writes are already collected for it (the receipt's record of them, ProcessForConsumer).
struct Reading {
  const EventView& event;
  const EventView& published;
  bool writes_collected = false;
};

// One event decided for one consumer: what every step of the decision reads and writes.
struct Delivery {
  Transaction& tx;
  ConsumerState& consumer;
  const ConsumerContract& contract;
  const EventView& event;      // as the consumer reads it
  const EventView& published;  // as published (the same event unless read through adapters)
  bool writes_collected;       // the step's writes for `event` are in writes_scratch
  int64_t now_ms;
  std::vector<Decision>& decisions;
  Decision d;
  std::optional<int64_t> subject_version;
  std::optional<int64_t> schema_version;  // when it was read
};

Reading ReadingOf(const Delivery& delivery) {
  return Reading{delivery.event, delivery.published, delivery.writes_collected};
}

}  // namespace

struct Pipeline::Impl {
  Config config;
  EnvelopeOptions envelope_options;
  std::unique_ptr<PreparedEvent> own_slot;       // Process: prepared and decided in one call
  std::unique_ptr<EnvelopeParser> drain_parser;  // deferred successors, re-read from the store
  std::vector<ConsumerState> consumers;
  simdjson::dom::parser fields_parser;  // projection fields, merged on apply
  // Scratch space reused across events, so that the hot path does not allocate per event.
  std::vector<std::pair<std::string_view, simdjson::dom::element>> merged_fields;
  std::string fields_out;
  LedgerEntry receipt_scratch;
  StepWrites writes_scratch;
  Verdict drain_verdict;  // a deferred event read through adapters again
  EvidenceRecord evidence_scratch;
  Projection projection_scratch;
  int64_t outbox_partition_count = 1;  // of the reports a decision appends (conflicts)
  bool reading = false;                // DecideReading: drained decisions carry their events

  void Check(const ConsumerState& consumer, const EventView& event, Verdict& v) const;
  static void CheckAdapted(const ConsumerState& consumer, const AdapterRoute& route,
                           const EventView& event, Verdict& v);
  static void CheckDefaults(const ConsumerState& consumer, const EventView& event, Verdict& v);
  Status ProcessForConsumer(Transaction& tx, ConsumerState& consumer, Verdict& verdict,
                            const EventView& event, int64_t index, int64_t now_ms,
                            std::vector<Decision>& decisions);
  Status Keep(Delivery& delivery, Outcome outcome, std::string reason, std::string message);
  Result<bool> RefuseUnkeyed(Delivery& delivery);
  Status Duplicate(Delivery& delivery, std::optional<LedgerEntry> seen);
  Result<bool> AnsweredByLedger(Delivery& delivery);
  Result<bool> InsertReceipt(Delivery& delivery);
  Status Ordered(Delivery& delivery);
  Status FirstSeenBaseline(Delivery& delivery, Projection& projection);
  Status Defer(Delivery& delivery, Projection& projection, std::optional<int64_t> stored_version,
               bool owner_advanced);
  Status ApplyNext(Delivery& delivery, Projection& projection,
                   std::optional<int64_t> stored_version);
  Status Unordered(Delivery& delivery);
  Status Apply(Transaction& tx, const ConsumerState& consumer, const Reading& applying,
               Projection& projection, std::optional<int64_t> subject_version, int64_t now_ms);
  Status Intend(Transaction& tx, const ConsumerConfig& consumer, const Reading& applying,
                const Projection& projection, std::optional<int64_t> subject_version,
                int64_t now_ms);
  Status Compensate(Transaction& tx, const ConsumerConfig& consumer,
                    const CompensationConfig& compensation, const Reading& applying,
                    const Projection& projection, std::optional<int64_t> subject_version,
                    int64_t now_ms);
  static std::optional<int64_t> BasisOf(const Projection& projection);
  static std::string TriggerDetail(const EventView& event, std::optional<int64_t> subject_version);
  Status Drain(Transaction& tx, ConsumerState& consumer, Projection& projection, int64_t now_ms,
               std::vector<Decision>& decisions);
  Status Conflict(Delivery& delivery, const Projection& projection, std::string_view reason,
                  const Claimant& held);
  Status RefuseForeignDeferred(Transaction& store, const DeferredEvent& d,
                               const Projection& projection, int64_t now_ms,
                               std::vector<Decision>& decisions);
  Status CloseDrainedGap(Transaction& tx, ConsumerState& consumer, Projection& projection,
                         int64_t now_ms, std::vector<Decision>& decisions);
  static Status ReopenGap(Transaction& tx, const ConsumerContract& contract,
                          const Projection& projection, int64_t now_ms);
  static Status OpenGap(Transaction& tx, const ConsumerContract& contract,
                        const Projection& projection, int64_t missing_to,
                        std::vector<int64_t> waiting, int64_t now_ms);
  std::string SubjectOf(const ConsumerContract& contract, const EventView& event) const;
  Result<bool> RecordReplayAnswer(Transaction& tx, const EventView& event, std::string_view only,
                                  int64_t index, int64_t now_ms, std::vector<Decision>& decisions);
};

namespace {

// "republished v2, v3; gone v5", from an answer's data (its kind when it lists nothing).
std::string AnswerText(simdjson::dom::element data) {
  std::string out;
  for (const char* name : {"republished", "gone"}) {
    simdjson::dom::array versions;
    if (data[name].get(versions) != simdjson::SUCCESS || versions.size() == 0) continue;
    std::string list;
    for (simdjson::dom::element v : versions) {
      int64_t version = 0;
      if (v.get(version) == simdjson::SUCCESS) {
        list += (list.empty() ? "v" : ", v") + std::to_string(version);
      }
    }
    out += std::string(out.empty() ? "" : "; ") + name + " " + list;
  }
  std::string_view answer = "an answer";
  if (out.empty() && data["answer"].get(answer) == simdjson::SUCCESS) out = answer;
  return out.empty() ? std::string(answer) : out;
}

}  // namespace

// The owner's answer to a replay request (replay_requests.h), for a consumer this pipeline
// decides for: recorded on the gap record it answers (consumer, subject, first missing version),
// so that the gap's evidence says what the owner did. False when no consumer here is named: the
// event is then routed as any other (unrouted, quarantined).
Result<bool> Pipeline::Impl::RecordReplayAnswer(Transaction& tx, const EventView& event,
                                                std::string_view only, int64_t index,
                                                int64_t now_ms, std::vector<Decision>& decisions) {
  simdjson::dom::element data;
  std::string_view consumer, subject;
  int64_t missing_from = 0;
  if (!event.data || event.data->get(data) != simdjson::SUCCESS ||
      data["consumer"].get(consumer) != simdjson::SUCCESS ||
      data["subject"].get(subject) != simdjson::SUCCESS ||
      data["missing_from"].get(missing_from) != simdjson::SUCCESS) {
    return false;
  }
  // The gap's record is keyed by its first missing version when it opened (the request's
  // gap_from, echoed back); missing_from is what was missing when it was asked.
  int64_t gap_from = 0;
  if (data["gap_from"].get(gap_from) == simdjson::SUCCESS && gap_from > 0) missing_from = gap_from;
  const bool ours = std::any_of(consumers.begin(), consumers.end(), [&](const ConsumerState& c) {
    return c.config->contract.id == consumer && (only.empty() || only == consumer);
  });
  if (!ours) return false;
  Decision d;
  d.index = index;
  d.consumer = std::string(consumer);
  d.outcome = Outcome::kApplied;
  d.reason = "replay-answer";
  d.key = LedgerKeyText(consumer, event.source, event.id);
  d.subject = std::string(subject);
  // The gap is read and written under the subject's lock, as a decision of the subject is.
  EVIDENT_RETURN_IF_ERROR(tx.WillDecideSubject(consumer, subject));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<GapRecord> gap,
                           tx.FindGap(consumer, subject, missing_from));
  const std::string answer = AnswerText(data);
  if (gap) {
    gap->answer = answer;
    gap->answered_at_ms = now_ms;
    EVIDENT_RETURN_IF_ERROR(tx.UpdateGap(*gap));
    d.message = "the owner's answer, recorded on the gap from v" + std::to_string(missing_from) +
                ": " + answer;
  } else {
    d.message = "the owner's answer names no gap from v" + std::to_string(missing_from) +
                " of this consumer: nothing recorded (" + answer + ")";
  }
  decisions.push_back(std::move(d));
  return true;
}

std::string Pipeline::Impl::SubjectOf(const ConsumerContract& contract,
                                      const EventView& event) const {
  if (contract.ordering.subject_at.empty()) {
    return event.subject ? std::string(*event.subject) : std::string();
  }
  std::string_view subject;
  if (event.At(contract.ordering.subject_at).get(subject) == simdjson::SUCCESS) {
    return std::string(subject);
  }
  return {};
}

// What an applied event triggers beyond its projection (consumer/intents.h): an intent per
// effect and a record per compensation, each inserted once per key in this transaction, so that
// however often the event is delivered, a key is intended at most once. Keys were checked to
// expand before the event was applied (ProcessForConsumer).
Status Pipeline::Impl::Intend(Transaction& store, const ConsumerConfig& consumer,
                              const Reading& applying, const Projection& projection,
                              std::optional<int64_t> subject_version, int64_t now_ms) {
  const EventView& event = applying.event;
  const KeyInputs in{consumer.contract.id, projection.subject, subject_version, &event};
  std::string why;
  for (const EffectConfig& effect : consumer.effects) {
    if (std::find(effect.on.begin(), effect.on.end(), event.type) == effect.on.end()) continue;
    if (!effect.states.empty() && std::find(effect.states.begin(), effect.states.end(),
                                            projection.state) == effect.states.end()) {
      continue;
    }
    if (!ConditionsHold(effect.when, event)) continue;
    std::optional<std::string> key = ExpandKey(effect.key, in, why);
    if (!key) {  // the config changed since the event was checked (a deferred event)
      return Status::FailedPrecondition("event " + std::string(event.source) + ":" +
                                        std::string(event.id) + " cannot key effect " +
                                        effect.name + ": " + why);
    }
    EffectIntent intent;
    intent.key = std::move(*key);
    intent.effect = effect.name;
    intent.consumer = consumer.contract.id;
    intent.subject = projection.subject;
    intent.source = std::string(event.source);
    intent.event_id = std::string(event.id);
    intent.subject_version = subject_version;
    intent.request = CloudEventJson(applying.published);
    intent.intended_at_ms = now_ms;
    intent.next_attempt_at_ms = now_ms;
    intent.basis_version = BasisOf(projection);
    // A key already there from another event of the same effect (a redelivery is a duplicate
    // and never gets here) is the same business operation triggered again: a no-op its log
    // records. Another effect's key is a configuration that loses an effect.
    EVIDENT_RETURN_IF_ERROR(store.IntendOnce(intent, TriggerDetail(event, subject_version)));
  }
  for (const CompensationConfig& compensation : consumer.compensations) {
    if (std::find(compensation.on.begin(), compensation.on.end(), event.type) ==
            compensation.on.end() ||
        !ConditionsHold(compensation.when, event)) {
      continue;
    }
    EVIDENT_RETURN_IF_ERROR(
        Compensate(store, consumer, compensation, applying, projection, subject_version, now_ms));
  }
  return Status::Ok();
}

// The version an intent is made on: the projection's right after the event applied; none without
// a subject (no projection to read it against).
std::optional<int64_t> Pipeline::Impl::BasisOf(const Projection& projection) {
  if (projection.subject.empty()) return std::nullopt;
  return projection.version;
}

std::string Pipeline::Impl::TriggerDetail(const EventView& event,
                                          std::optional<int64_t> subject_version) {
  return "triggered again by " + std::string(event.source) + ":" + std::string(event.id) +
         (subject_version ? " (version " + std::to_string(*subject_version) + ")" : "") +
         ": the key is intended already, nothing more";
}

// One compensation the event's decision requires: the record, once per key; when the
// declaration names the effect it compensates, it acts on facts (effects/compensation.h), with
// the compensating effect's key and request prepared here from the deciding event.
Status Pipeline::Impl::Compensate(Transaction& store, const ConsumerConfig& consumer,
                                  const CompensationConfig& compensation, const Reading& applying,
                                  const Projection& projection,
                                  std::optional<int64_t> subject_version, int64_t now_ms) {
  const EventView& event = applying.event;
  const KeyInputs in{consumer.contract.id, projection.subject, subject_version, &event};
  std::string why;
  std::optional<std::string> key = ExpandKey(compensation.key, in, why);
  if (!key) {
    return Status::FailedPrecondition("event " + std::string(event.source) + ":" +
                                      std::string(event.id) + " cannot key compensation " +
                                      compensation.key.text + ": " + why);
  }
  CompensationRecord record{.key = std::move(*key),
                            .consumer = consumer.contract.id,
                            .subject = projection.subject,
                            .owner_source = std::string(event.source),
                            .owner_version = subject_version,
                            .event_id = std::string(event.id),
                            .type = std::string(event.type),
                            .recorded_at_ms = now_ms};
  record.updated_at_ms = now_ms;
  if (compensation.compensates.empty()) return store.RecordCompensation(record);
  record.compensates = compensation.compensates;
  if (!compensation.compensate_with.empty()) {
    const EffectConfig* with = consumer.FindEffect(compensation.compensate_with);
    assert(with != nullptr);  // LoadConfig checked it
    std::optional<std::string> compensating = ExpandKey(with->key, in, why);
    if (!compensating) {
      return Status::FailedPrecondition("event " + std::string(event.source) + ":" +
                                        std::string(event.id) + " cannot key effect " + with->name +
                                        ": " + why);
    }
    record.compensate_with = with->name;
    record.compensating_key = std::move(*compensating);
    record.compensating_request = CloudEventJson(applying.published);
    record.basis_version = BasisOf(projection);
  }
  return RecordConsumerCompensation(store, std::move(record), now_ms).status();
}

Status Pipeline::Impl::Apply(Transaction& store, const ConsumerState& consumer,
                             const Reading& applying, Projection& projection,
                             std::optional<int64_t> subject_version, int64_t now_ms) {
  const EventView& event = applying.event;
  const ConsumerConfig& consumer_config = *consumer.config;
  // An ordered projection keeps the owner its first applied event set (MayOwn).
  if (!consumer_config.contract.ordering.by_subject || projection.owner_source.empty()) {
    projection.owner_source.assign(event.source);
  }
  projection.updated_at_ms = now_ms;
  const auto step_it = consumer.steps.find(event.type);
  const bool intends = !consumer_config.effects.empty() || !consumer_config.compensations.empty();
  if (step_it == consumer.steps.end()) {
    return intends ? Intend(store, consumer_config, applying, projection, subject_version, now_ms)
                   : Status::Ok();
  }
  const ProjectionStep& step = *step_it->second.step;
  StepWrites& writes = writes_scratch;
  // The receipt's record of this very event (ProcessForConsumer) is what it applies now.
  if (!applying.writes_collected) CollectWrites(step_it->second, event, writes);
  if (writes.sets_state) projection.state.assign(writes.state);
  if (!writes.fields.empty()) {
    MergeFields(projection.fields_json, writes.fields, fields_parser, merged_fields, fields_out);
    projection.fields_json.swap(fields_out);
  }
  // One scratch record, assigned field by field: its strings keep their capacity across events.
  EvidenceRecord& record = evidence_scratch;
  for (const std::string& name : step.evidence) {
    record.consumer.assign(consumer_config.contract.id);
    record.subject.assign(projection.subject);
    record.name.assign(name);
    record.source.assign(event.source);
    record.event_id.assign(event.id);
    record.subject_version = projection.version;
    record.recorded_at_ms = now_ms;
    EVIDENT_RETURN_IF_ERROR(store.PutEvidence(record));
  }
  return intends ? Intend(store, consumer_config, applying, projection, subject_version, now_ms)
                 : Status::Ok();
}

// A deferred event from a source that turned out not to own the subject (deferred before its
// first applied event set the owner): its receipt goes, it is quarantined as owner-mismatch with
// its bytes, and the version it held is missing again.
Status Pipeline::Impl::RefuseForeignDeferred(Transaction& store, const DeferredEvent& d,
                                             const Projection& projection, int64_t now_ms,
                                             std::vector<Decision>& decisions) {
  return SetAsideDeferred(store, d,
                          {.outcome = Outcome::kRejected,
                           .reason = "owner-mismatch",
                           .message = OwnerMismatch(d.subject, projection.owner_source, d.source),
                           .projection_version = projection.version},
                          now_ms, decisions);
}

Status Pipeline::Impl::Drain(Transaction& store, ConsumerState& consumer, Projection& projection,
                             int64_t now_ms, std::vector<Decision>& decisions) {
  const ConsumerContract& contract = consumer.config->contract;
  // Bounded by the number of deferred rows of this subject: each pass removes one. Every
  // deferred event raised owner_version_seen, so once the projection reaches it nothing waits.
  while (projection.owner_version_seen > projection.version) {
    EVIDENT_ASSIGN_OR_RETURN(
        std::optional<DeferredEvent> next,
        store.FindDeferred(contract.id, projection.subject, projection.version + 1));
    if (!next) return Status::Ok();
    if (!MayOwn(contract, projection.owner_source, next->source)) {
      // Deferred before the subject had an owner, from another source: never applied.
      return RefuseForeignDeferred(store, *next, projection, now_ms, decisions);
    }
    const EnvelopeParser::Outcome reread = drain_parser->Parse(next->raw);
    if (!reread.ok()) {
      return Status::Corruption("deferred event " + next->source + ":" + next->event_id +
                                " no longer parses: " + reread.rejection->message);
    }
    EventView event = reread.event;
    const AdapterRoute* route = RouteOf(consumer, event.type, next->schema_version);
    if (route != nullptr) {
      // Read through its adapters again, as when it was deferred.
      Verdict& again = drain_verdict;
      std::unique_ptr<simdjson::dom::parser> parser = std::move(again.adapted.parser);
      again = Verdict{};
      again.adapted.parser = std::move(parser);
      again.schema_version = next->schema_version;
      CheckAdapted(consumer, *route, event, again);
      if (again.keep) {
        return Status::Corruption("deferred event " + next->source + ":" + next->event_id +
                                  " no longer adapts: " + again.message);
      }
      event.data = again.adapted.data;
    }
    assert(next->subject_version == projection.version + 1);  // drained in order, one by one
    projection.version = next->subject_version;
    projection.applied_digest = PayloadDigest(reread.event);
    EVIDENT_RETURN_IF_ERROR(Apply(store, consumer, Reading{event, reread.event}, projection,
                                  next->subject_version, now_ms));
    EVIDENT_RETURN_IF_ERROR(
        store.MarkApplied(contract.id, next->source, next->event_id, projection.version, now_ms));
    EVIDENT_RETURN_IF_ERROR(
        store.DeleteDeferred(contract.id, projection.subject, next->subject_version));
    Decision d;
    d.index = next->input_index;
    d.consumer = contract.id;
    d.outcome = Outcome::kApplied;
    d.key = LedgerKeyText(contract.id, next->source, next->event_id);
    d.subject = projection.subject;
    d.subject_version = next->subject_version;
    d.projection_version = projection.version;
    d.drained = true;
    if (route != nullptr) d.adapter = route->name;
    d.traceparent.assign(reread.event.traceparent.value_or(std::string_view()));
    if (reading) {
      const auto step = consumer.steps.find(reread.event.type);
      d.read_event = ReadEvent(next->raw, envelope_options.profile.data_pointer,
                               step == consumer.steps.end() ? nullptr : step->second.step,
                               route == nullptr ? std::string_view() : drain_verdict.adapted.json);
      d.read_schema_version = route == nullptr ? next->schema_version : route->target_version;
    }
    decisions.push_back(std::move(d));
  }
  return Status::Ok();
}

// Steps 1-3 of DESIGN.md's order, which need no store: boundary, schema version, contract
// choice, payload. Const, and the compiled schemas are immutable: safe to run on one event while
// another thread decides earlier ones.
// The versions a contract accepts of a type, for a refusal: "1, 2, 3 via adapter v3-to-v2".
static std::string AcceptedVersionsText(const AcceptedType& entry) {
  std::string accepted;
  for (int64_t version : entry.versions) {
    accepted += (accepted.empty() ? "" : ", ") + std::to_string(version);
  }
  for (const auto& [version, chain] : entry.via_adapter) {
    accepted += ", " + std::to_string(version) + " via adapter " + ChainName(chain);
  }
  return accepted;
}

void Pipeline::Impl::Check(const ConsumerState& consumer, const EventView& event,
                           Verdict& v) const {
  const ConsumerContract& contract = consumer.config->contract;
  std::unique_ptr<simdjson::dom::parser> adapted_parser = std::move(v.adapted.parser);
  v = Verdict{};
  v.adapted.parser = std::move(adapted_parser);  // its buffers serve the next adapted event
  v.routed = true;
  // 1. Boundary, then the schema version this consumer reads.
  if (!SourceInsideBoundary(event.source, contract.boundary)) {
    return v.Keep(
        Outcome::kRejected, "source-outside-boundary",
        "source '" + std::string(event.source) + "' is outside the boundary of " + contract.id);
  }
  int64_t& schema_version = v.schema_version;
  const AcceptedType* entry = contract.Find(event.type);
  assert(entry != nullptr);  // the consumer subscribes to the type
  simdjson::dom::element value;
  const bool carried = contract.schema_version_at.empty()
                           ? event.schemaversion.has_value()
                           : event.At(contract.schema_version_at).get(value) == simdjson::SUCCESS;
  if (!carried && entry->default_schema_version) {
    // Seed 000's explicit default: declared by the contract, named in the receipt.
    schema_version = *entry->default_schema_version;
    v.schema_version_defaulted = true;
  } else if (!carried) {
    return v.Keep(Outcome::kRejected, "missing-schema-version",
                  contract.schema_version_at.empty()
                      ? "no schemaversion attribute"
                      : "no schema version at " + contract.schema_version_at);
  } else if (contract.schema_version_at.empty()) {
    schema_version = *event.schemaversion;
  } else {
    if (!ReadVersion(value, schema_version)) {
      return v.Keep(
          Outcome::kRejected, "invalid-schema-version",
          "the schema version at " + contract.schema_version_at + " is not a non-negative integer");
    }
  }

  v.schema_version_read = true;

  // 2. Contract choice: the version as it is, or through the adapters the contract declares.
  const schema::Schema* payload_schema = nullptr;
  if (const auto type_it = consumer.schemas.find(event.type); type_it != consumer.schemas.end()) {
    const auto version_it = type_it->second.find(schema_version);
    if (version_it != type_it->second.end()) payload_schema = version_it->second.get();
  }
  if (payload_schema == nullptr) {
    if (const AdapterRoute* route = RouteOf(consumer, event.type, schema_version)) {
      return CheckAdapted(consumer, *route, event, v);
    }
    const std::string accepted = AcceptedVersionsText(*entry);
    return v.Keep(Outcome::kContractUpdateRequired,
                  contract.unknown_version == UnknownVersionOutcome::kManual
                      ? "manual-review"
                      : "unaccepted-schema-version",
                  contract.id + "@" + std::to_string(contract.result_version) + " accepts " +
                      std::string(event.type) + " versions [" + accepted + "], not " +
                      std::to_string(schema_version));
  }

  // 3. Payload.
  PayloadVerdict payload = CheckPayload(*payload_schema, event, schema_version, kPayloadErrorsMax);
  if (payload.valid) return CheckDefaults(consumer, event, v);
  v.errors = std::move(payload.errors);
  v.Keep(Outcome::kPayloadInvalid, std::move(payload.reason), std::move(payload.message));
}

// 2-3 through a version adapter route: the payload is checked against its own version's schema,
// rewritten by each adapter of the chain in turn, and the result checked against the accepted
// version's schema (seed 000's "adapter with a separate check"); a result that fails it is
// payload-invalid, adapter-output-invalid. The consumer reads the result from here on.
void Pipeline::Impl::CheckAdapted(const ConsumerState& consumer, const AdapterRoute& route,
                                  const EventView& event, Verdict& v) {
  PayloadVerdict payload =
      CheckPayload(*route.source_schema, event, v.schema_version, kPayloadErrorsMax);
  if (!payload.valid) {
    v.errors = std::move(payload.errors);
    return v.Keep(Outcome::kPayloadInvalid, std::move(payload.reason), std::move(payload.message));
  }
  AdaptedPayload& out = v.adapted;
  out.route = &route;  // named by the decision, whatever it is
  out.json = simdjson::to_string(*event.data);
  for (const Adapter* adapter : route.chain) {
    Result<std::string> adapted = ApplyAdapter(*adapter, out.json);
    if (!adapted.ok()) {
      // The message names the adapter, the step and the pointer.
      return v.Keep(Outcome::kPayloadInvalid, "adapter-step-failed", adapted.status().message());
    }
    out.json = std::move(adapted).value();
  }
  if (!out.parser) out.parser = std::make_unique<simdjson::dom::parser>();
  simdjson::dom::element data;
  if (out.parser->parse(out.json).get(data) != simdjson::SUCCESS) {
    return v.Keep(Outcome::kPayloadInvalid, "adapter-output-invalid",
                  "adapter '" + route.name + "' wrote a payload that does not parse");
  }
  out.data = data;
  EventView adapted_view = event;
  adapted_view.data = data;
  payload =
      CheckPayload(*route.target_schema, adapted_view, route.target_version, kPayloadErrorsMax);
  if (!payload.valid) {
    v.errors = std::move(payload.errors);
    return v.Keep(Outcome::kPayloadInvalid,
                  payload.reason == "schema-violation" ? "adapter-output-invalid" : payload.reason,
                  "adapter '" + route.name + "' turned " + std::string(event.type) + " v" +
                      std::to_string(v.schema_version) + " into a payload that v" +
                      std::to_string(route.target_version) + "'s schema refuses");
  }
  CheckDefaults(consumer, adapted_view, v);
}

// A member the projection step refuses to do without (defaults: {POINTER: refuse}) must be
// there: its absence is payload-invalid, missing-member.
void Pipeline::Impl::CheckDefaults(const ConsumerState& consumer, const EventView& event,
                                   Verdict& v) {
  const auto step_it = consumer.steps.find(event.type);
  if (step_it == consumer.steps.end()) return;
  const PreparedStep& step = step_it->second;
  simdjson::dom::element value;
  const auto refuse = [&](const std::string& pointer) {
    v.Keep(Outcome::kPayloadInvalid, "missing-member",
           "the payload has no " + pointer + ", and " + consumer.config->contract.id +
               "'s projection of " + std::string(event.type) + " refuses its absence");
  };
  if (step.state_default.refuses && DataAt(event, step.step->state_from).get(value)) {
    return refuse(step.step->state_from);
  }
  for (size_t i = 0; i < step.copy.size(); ++i) {
    if (step.copy_default[i].refuses && DataAt(event, step.copy[i].first).get(value)) {
      return refuse(step.copy[i].first);
    }
  }
}

// The subject's version an event carries where its contract says (ordering.version_at), or its
// subjectversion attribute; nullopt when it carries none that reads as one.
static std::optional<int64_t> SubjectVersionOf(const ConsumerContract& contract,
                                               const EventView& event) {
  if (contract.ordering.version_at.empty()) return event.subjectversion;
  simdjson::dom::element value;
  int64_t version = 0;
  if (event.At(contract.ordering.version_at).get(value) == simdjson::SUCCESS &&
      ReadVersion(value, version)) {
    return version;
  }
  return std::nullopt;
}

// The receipt of an applied event, every field assigned (its strings keep their capacity from
// the previous event); what the step wrote is added by the caller.
static void AssignReceipt(const ConsumerContract& contract, const EventView& event,
                          const Decision& d, std::optional<int64_t> subject_version,
                          int64_t schema_version, int64_t now_ms, LedgerEntry& receipt) {
  receipt.consumer.assign(contract.id);
  receipt.source.assign(event.source);
  receipt.event_id.assign(event.id);
  receipt.state = LedgerState::kApplied;
  receipt.type.assign(event.type);
  receipt.subject.assign(d.subject);
  receipt.subject_version = subject_version;
  receipt.input_schema_version = schema_version;
  receipt.result_version = contract.result_version;
  receipt.projection_version.reset();
  receipt.committed_at_ms = now_ms;
  receipt.duplicates = 0;
  receipt.last_duplicate_at_ms.reset();
  receipt.adapter.assign(d.adapter);
  receipt.wrote_json.clear();
  receipt.traceparent.assign(event.traceparent.value_or(std::string_view()));
  receipt.tracestate.assign(TracestateOf(event));
}

Status Pipeline::Impl::ProcessForConsumer(Transaction& tx, ConsumerState& consumer,
                                          Verdict& verdict, const EventView& original,
                                          int64_t index, int64_t now_ms,
                                          std::vector<Decision>& decisions) {
  const ConsumerContract& contract = consumer.config->contract;
  // Read through adapters, the consumer sees the adapted payload and nothing else.
  EventView adapted_view;
  const bool adapted = verdict.adapted.route != nullptr && verdict.adapted.data.has_value();
  if (adapted) {
    adapted_view = original;
    adapted_view.data = verdict.adapted.data;
  }
  const EventView& event = adapted ? adapted_view : original;
  Delivery delivery{tx,     consumer,  contract,   event,        original,    false,
                    now_ms, decisions, Decision{}, std::nullopt, std::nullopt};
  Decision& d = delivery.d;
  d.index = index;
  d.consumer = contract.id;
  if (verdict.adapted.route != nullptr) d.adapter = verdict.adapted.route->name;
  d.key = LedgerKeyText(contract.id, event.source, event.id);
  d.subject = SubjectOf(contract, event);
  d.traceparent.assign(event.traceparent.value_or(std::string_view()));

  const std::optional<int64_t> subject_version = SubjectVersionOf(contract, event);
  delivery.subject_version = subject_version;
  if (contract.ordering.by_subject) d.subject_version = subject_version;

  // Deciders inside application transactions lock the subject, not the consumer.
  EVIDENT_RETURN_IF_ERROR(tx.WillDecideSubject(contract.id, d.subject.empty() ? d.key : d.subject));

  // Steps 1-3 ran in Check (Prepare): an early outcome is quarantined here, with its reason,
  // unless the ledger says this input was applied (or deferred) before: the ledger answers
  // first, whatever today's contract says of the event (a receipt is never taken back).
  if (verdict.keep) {
    EVIDENT_ASSIGN_OR_RETURN(const bool answered, AnsweredByLedger(delivery));
    if (answered) return Status::Ok();
    if (verdict.schema_version_read) delivery.schema_version = verdict.schema_version;
    d.errors = std::move(verdict.errors);
    return Keep(delivery, verdict.outcome, std::move(verdict.reason), std::move(verdict.message));
  }

  // Every field is assigned (the strings keep their capacity from the previous event).
  LedgerEntry& receipt = receipt_scratch;
  AssignReceipt(contract, event, d, subject_version, verdict.schema_version, now_ms, receipt);
  if (const auto step = consumer.steps.find(event.type); step != consumer.steps.end()) {
    CollectWrites(step->second, event, writes_scratch);
    WroteJson(writes_scratch, receipt.wrote_json);
    delivery.writes_collected = true;
  }
  if (verdict.schema_version_defaulted) {
    NoteDefaultedSchemaVersion(verdict.schema_version, receipt.wrote_json);
    d.schema_version_defaulted = true;
  }

  // 4. Ledger, 5. ordering, 6. the projection step.
  return contract.ordering.by_subject ? Ordered(delivery) : Unordered(delivery);
}

// The keys of what the event triggers (effects, compensations) must expand before it may apply:
// an effect without its key could not be intended once. True when the delivery was decided
// here: a duplicate, or refused as payload-invalid (effect-key-unresolved).
Result<bool> Pipeline::Impl::RefuseUnkeyed(Delivery& delivery) {
  const ConsumerConfig& consumer = *delivery.consumer.config;
  if (consumer.effects.empty() && consumer.compensations.empty()) return false;
  std::string unresolved =
      UnresolvedKey(consumer, KeyInputs{consumer.contract.id, delivery.d.subject,
                                        delivery.subject_version, &delivery.event});
  if (unresolved.empty()) return false;
  EVIDENT_ASSIGN_OR_RETURN(const bool answered, AnsweredByLedger(delivery));
  if (answered) return true;
  delivery.schema_version = receipt_scratch.input_schema_version;  // ProcessForConsumer's
  EVIDENT_RETURN_IF_ERROR(
      Keep(delivery, Outcome::kPayloadInvalid, "effect-key-unresolved", std::move(unresolved)));
  return true;
}

// Everything not applied is quarantined with its reason and original bytes.
Status Pipeline::Impl::Keep(Delivery& delivery, Outcome outcome, std::string reason,
                            std::string message) {
  Decision& d = delivery.d;
  d.outcome = outcome;
  d.reason = std::move(reason);
  d.message = std::move(message);
  const EventView& event = delivery.event;
  const QuarantineRecord record =
      RecordFrom(d, event.source, event.id, event.type, delivery.subject_version,
                 delivery.schema_version, event.raw, delivery.now_ms);
  EVIDENT_RETURN_IF_ERROR(delivery.tx.Quarantine(record).status());
  delivery.decisions.push_back(std::move(d));
  return Status::Ok();
}

// 4. Ledger. The receipt insert itself detects a duplicate (the ledger key is unique), so the
// common path asks the store once; only paths that end without an insert (stale, conflict) look
// the key up first, because a redelivery there must still read as a duplicate. `seen` is the
// ledger row when the caller already read it; otherwise it is read here.
Status Pipeline::Impl::Duplicate(Delivery& delivery, std::optional<LedgerEntry> seen) {
  Decision& d = delivery.d;
  const EventView& event = delivery.event;
  const std::string& consumer = delivery.contract.id;
  if (!seen) {
    EVIDENT_ASSIGN_OR_RETURN(seen, delivery.tx.FindLedger(consumer, event.source, event.id));
  }
  if (!seen) return Status::Internal("ledger key conflicts but no row: " + d.key);
  EVIDENT_RETURN_IF_ERROR(
      delivery.tx.CountDuplicate(consumer, event.source, event.id, delivery.now_ms));
  EVIDENT_RETURN_IF_ERROR(delivery.tx.Journal(
      {0, consumer, Outcome::kDuplicate, std::string(event.source), std::string(event.id),
       d.subject, delivery.subject_version, delivery.now_ms}));
  d.outcome = Outcome::kDuplicate;
  d.projection_version = seen->projection_version;
  d.message = seen->state == LedgerState::kDeferred ? "already deferred" : "already applied";
  delivery.decisions.push_back(std::move(d));
  return Status::Ok();
}

// 4. Ledger, on the paths that end without an insert (an early refusal, an unresolved effect key,
// a version at or below the projection's, a version already deferred): an input applied or
// deferred before reads as a duplicate, whatever else would be said of it now. True when the
// ledger answered (the decision is made).
Result<bool> Pipeline::Impl::AnsweredByLedger(Delivery& delivery) {
  EVIDENT_ASSIGN_OR_RETURN(
      std::optional<LedgerEntry> seen,
      delivery.tx.FindLedger(delivery.contract.id, delivery.event.source, delivery.event.id));
  if (!seen) return false;
  EVIDENT_RETURN_IF_ERROR(Duplicate(delivery, std::move(seen)));
  return true;
}

// Inserts the receipt; false when the key was already there (nothing else was written yet).
Result<bool> Pipeline::Impl::InsertReceipt(Delivery& delivery) {
  EVIDENT_ASSIGN_OR_RETURN(const Insert inserted, delivery.tx.InsertLedger(receipt_scratch));
#ifdef EVIDENT_PLANTED_LEDGER_BUG
  // Only in the test library evident_consumer_planted: the receipt's answer is ignored, as a
  // broken idempotency check would. The deterministic simulation must catch it
  // (src/consumer/simulation_test.cc).
  if (delivery.contract.ordering.by_subject == false) return true;
#endif
  return inserted == Insert::kInserted;
}

// 5. Ordering by subject: below the projection's version is stale, at it a conflict, past the
// next version deferred, the next version applied (and its waiting successors drained).
Status Pipeline::Impl::Ordered(Delivery& delivery) {
  const ConsumerContract& contract = delivery.contract;
  Decision& d = delivery.d;
  if (d.subject.empty()) {
    return Keep(delivery, Outcome::kRejected, "missing-subject",
                contract.ordering.subject_at.empty()
                    ? "ordered consumer needs the subject attribute"
                    : "ordered consumer needs a subject at " + contract.ordering.subject_at);
  }
  if (!delivery.subject_version) {
    return Keep(delivery, Outcome::kRejected, "missing-subject-version",
                contract.ordering.version_at.empty()
                    ? "ordered consumer needs the subjectversion attribute"
                    : "ordered consumer needs a version at " + contract.ordering.version_at);
  }
  const int64_t version = *delivery.subject_version;
  if (version < 1) {  // 0 would read as "already applied" against a subject never seen
    return Keep(
        delivery, Outcome::kRejected, "invalid-subject-version",
        "subject versions start at 1; this event carries version " + std::to_string(version));
  }
  EVIDENT_ASSIGN_OR_RETURN(const bool decided, RefuseUnkeyed(delivery));
  if (decided) return Status::Ok();
  Projection& projection = projection_scratch;
  EVIDENT_ASSIGN_OR_RETURN(const bool found,
                           delivery.tx.ReadProjection(contract.id, d.subject, projection));
  const std::optional<int64_t> stored_version =
      found ? std::optional<int64_t>(projection.version) : std::nullopt;
  if (!found && contract.ordering.start == Ordering::Start::kFirstSeen) {
    EVIDENT_RETURN_IF_ERROR(FirstSeenBaseline(delivery, projection));
  }
  // The owner is fixed by the subject's first applied event (or baseline): another source
  // inside the boundary cannot take the subject over.
  if (!MayOwn(contract, projection.owner_source, delivery.event.source)) {
    return Keep(delivery, Outcome::kRejected, "owner-mismatch",
                OwnerMismatch(d.subject, projection.owner_source, delivery.event.source));
  }
  const bool owner_advanced = version > projection.owner_version_seen;
  d.projection_version = projection.version;
  if (version <= projection.version) {
    EVIDENT_ASSIGN_OR_RETURN(const bool answered, AnsweredByLedger(delivery));
    if (answered) return Status::Ok();
  }
  if (version < projection.version) {
    return Keep(delivery, Outcome::kStale, "stale-version",
                "version " + std::to_string(version) + " is below the projection version " +
                    std::to_string(projection.version));
  }
  if (version == projection.version) {
    // The event that applied it, from its receipt (the version's lowest applied receipt).
    EVIDENT_ASSIGN_OR_RETURN(
        const std::optional<LedgerEntry> holder,
        delivery.tx.AppliedAfter(contract.id, d.subject, version - 1, std::vector<std::string>{}));
    Claimant held;
    if (holder) held = {holder->source, holder->event_id, projection.applied_digest};
    return Conflict(delivery, projection, "version-already-applied", held);
  }
  if (version > projection.version + 1) {
    return Defer(delivery, projection, stored_version, owner_advanced);
  }
  return ApplyNext(delivery, projection, stored_version);
}

// A same-version conflict never overwrites: the input is quarantined, and a report naming both
// events goes to the subject's owner through the consumer's outbox, in this transaction. It is
// routed once a relay has published that row: the kept message says what was recorded, the
// evidence packet whether it was routed.
Status Pipeline::Impl::Conflict(Delivery& delivery, const Projection& projection,
                                std::string_view reason, const Claimant& held) {
  const EventView& event = delivery.published;
  const int64_t version = *delivery.subject_version;
  const Claimant conflicting{std::string(event.source), std::string(event.id),
                             PayloadDigest(event)};
  const std::string owner = projection.owner_source.empty() ? held.source : projection.owner_source;
  const OutboxRow report =
      ConflictReport(delivery.contract.id, delivery.d.subject, version, owner, reason, held,
                     conflicting, delivery.now_ms, outbox_partition_count);
  EVIDENT_RETURN_IF_ERROR(delivery.tx.AppendOutbox(report).status());
  const std::string holder =
      held.event_id.empty() ? std::string("another event") : held.source + ":" + held.event_id;
  const std::string what = reason == "version-already-applied" ? " already applied version "
                                                               : " already waits with version ";
  return Keep(delivery, Outcome::kSameVersionConflict, std::string(reason),
              holder + what + std::to_string(version) + "; reported to the owner " + owner + " (" +
                  report.event_id + ", routed once a relay sends it)");
}

// `start: first-seen`: a subject this consumer has never seen starts just below the version it
// first sees, so that version applies; the baseline is recorded as evidence `baseline` (its
// subject_version is the baseline version), which commits with the projection ApplyNext puts.
Status Pipeline::Impl::FirstSeenBaseline(Delivery& delivery, Projection& projection) {
  const int64_t version = *delivery.subject_version;
  projection.version = version - 1;
  projection.owner_version_seen = version - 1;
  if (version == 1) return Status::Ok();  // the same as start: 1
  EvidenceRecord& record = evidence_scratch;
  record.consumer.assign(delivery.contract.id);
  record.subject.assign(projection.subject);
  record.name.assign("baseline");
  record.source.assign(delivery.event.source);
  record.event_id.assign(delivery.event.id);
  record.subject_version = version - 1;
  record.recorded_at_ms = delivery.now_ms;
  return delivery.tx.PutEvidence(record);
}

// A version past the next one waits for the gap to close: a deferred ledger row, the event's
// bytes in the deferred set, and the owner's highest version seen raised.
Status Pipeline::Impl::Defer(Delivery& delivery, Projection& projection,
                             std::optional<int64_t> stored_version, bool owner_advanced) {
  const ConsumerContract& contract = delivery.contract;
  Decision& d = delivery.d;
  const int64_t version = *delivery.subject_version;
  assert(version > projection.version + 1);
  // Every deferred event raised owner_version_seen, so a version above it cannot be waiting
  // already; only a version at or below it needs the look-up.
  std::optional<DeferredEvent> occupied;
  if (!owner_advanced) {
    EVIDENT_ASSIGN_OR_RETURN(occupied, delivery.tx.FindDeferred(contract.id, d.subject, version));
  }
  if (occupied) {
    EVIDENT_ASSIGN_OR_RETURN(const bool answered, AnsweredByLedger(delivery));
    if (answered) return Status::Ok();
    Claimant held{occupied->source, occupied->event_id, {}};
    const EnvelopeParser::Outcome waiting = drain_parser->Parse(occupied->raw);
    if (waiting.ok()) held.digest = PayloadDigest(waiting.event);
    return Conflict(delivery, projection, "version-already-deferred", held);
  }
  LedgerEntry& receipt = receipt_scratch;
  receipt.state = LedgerState::kDeferred;
  EVIDENT_ASSIGN_OR_RETURN(const bool inserted, InsertReceipt(delivery));
  if (!inserted) return Duplicate(delivery, std::nullopt);
  // Built only now: a duplicate needs no copy of the bytes.
  const int64_t now_ms = delivery.now_ms;
  const DeferredEvent deferred{contract.id,
                               d.subject,
                               version,
                               receipt.source,
                               receipt.event_id,
                               receipt.type,
                               receipt.input_schema_version,
                               projection.version + 1,
                               std::string(delivery.event.raw),
                               now_ms,
                               now_ms + contract.gap.deadline_seconds * 1000,
                               contract.gap.route,
                               d.index};
  EVIDENT_ASSIGN_OR_RETURN(const Insert waiting, delivery.tx.InsertDeferred(deferred));
  if (waiting != Insert::kInserted) {
    // The look-up above (or owner_version_seen) said the version was free.
    return Status::Internal("deferred version taken after it was found free: " + d.key);
  }
  // Every deferred event raised owner_version_seen: when it does not exceed the projection's
  // version, nothing waited, and this deferral opens a gap (its record, kept after it closes).
  if (projection.owner_version_seen <= projection.version) {
    EVIDENT_RETURN_IF_ERROR(
        OpenGap(delivery.tx, contract, projection, version - 1, {version}, now_ms));
  }
  projection.owner_version_seen = std::max(projection.owner_version_seen, version);
  assert(!stored_version || projection.version == *stored_version);  // a deferral leaves it
  if (owner_advanced || !stored_version) {
    EVIDENT_RETURN_IF_ERROR(delivery.tx.PutProjection(projection, stored_version));
  }
  EVIDENT_RETURN_IF_ERROR(delivery.tx.Journal({0, contract.id, Outcome::kDeferred, receipt.source,
                                               receipt.event_id, d.subject, version, now_ms}));
  d.outcome = Outcome::kDeferred;
  d.expected_version = projection.version + 1;
  delivery.decisions.push_back(std::move(d));
  return Status::Ok();
}

// Exactly the next version: apply, then drain the deferred successors in order.
Status Pipeline::Impl::ApplyNext(Delivery& delivery, Projection& projection,
                                 std::optional<int64_t> stored_version) {
  const int64_t version = *delivery.subject_version;
  assert(version == projection.version + 1);
  receipt_scratch.projection_version = version;
  EVIDENT_ASSIGN_OR_RETURN(const bool inserted, InsertReceipt(delivery));
  if (!inserted) return Duplicate(delivery, std::nullopt);
  projection.owner_version_seen = std::max(projection.owner_version_seen, version);
  projection.version = version;
  // The receipt and the projection are written together, and name the same version.
  assert(receipt_scratch.projection_version == projection.version);
  projection.applied_digest = PayloadDigest(delivery.published);
  EVIDENT_RETURN_IF_ERROR(Apply(delivery.tx, delivery.consumer, ReadingOf(delivery), projection,
                                version, delivery.now_ms));
  Decision& d = delivery.d;
  d.outcome = Outcome::kApplied;
  d.projection_version = projection.version;
  delivery.decisions.push_back(std::move(d));
  // Every deferred event raised owner_version_seen; when it does not exceed the projection,
  // nothing waits and the store need not be asked.
  if (projection.owner_version_seen > projection.version) {
    EVIDENT_RETURN_IF_ERROR(CloseDrainedGap(delivery.tx, delivery.consumer, projection,
                                            delivery.now_ms, delivery.decisions));
  }
  assert(!stored_version || projection.version > *stored_version);  // an apply raises it
  return delivery.tx.PutProjection(projection, stored_version);
}

// The missing version arrived: the waiting successors drain, and the gap's record closes as
// drained, caused by events out of order. When another hole remains behind the drained ones, a
// new gap opens at the next missing version.
Status Pipeline::Impl::CloseDrainedGap(Transaction& tx, ConsumerState& consumer,
                                       Projection& projection, int64_t now_ms,
                                       std::vector<Decision>& decisions) {
  const ConsumerContract& contract = consumer.config->contract;
  const size_t decided = decisions.size();
  EVIDENT_RETURN_IF_ERROR(Drain(tx, consumer, projection, now_ms, decisions));
  GapClosing closing{.at_ms = now_ms,
                     .how = GapClosedHow::kDrained,
                     .cause = GapCause::kOutOfOrder,
                     .by = "arrival",
                     .note = ""};
  for (size_t i = decided; i < decisions.size(); ++i) {
    if (decisions[i].drained && decisions[i].subject_version) {
      closing.waiting_versions.push_back(*decisions[i].subject_version);
    }
  }
  EVIDENT_ASSIGN_OR_RETURN(const int64_t closed, tx.CloseGaps(contract.id, projection.subject,
                                                              projection.version, closing));
  if (closed == 0) return Status::Ok();
  return ReopenGap(tx, contract, projection, now_ms);
}

// Rare: versions still wait past another missing one once a gap closed. A gap opens at the next
// missing version, with the waiting versions read from the store.
Status Pipeline::Impl::ReopenGap(Transaction& tx, const ConsumerContract& contract,
                                 const Projection& projection, int64_t now_ms) {
  if (projection.owner_version_seen <= projection.version) return Status::Ok();
  EVIDENT_ASSIGN_OR_RETURN(const BatchRows rows,
                           tx.Load(BatchKeys{{}, {SubjectKey{contract.id, projection.subject}}}));
  std::vector<int64_t> waiting;
  for (const DeferredEvent& d : rows.deferred) {
    if (d.subject_version > projection.version) waiting.push_back(d.subject_version);
  }
  if (waiting.empty()) return Status::Ok();
  std::sort(waiting.begin(), waiting.end());
  const int64_t missing_to = waiting.front() - 1;  // before `waiting` moves
  return OpenGap(tx, contract, projection, missing_to, std::move(waiting), now_ms);
}

// A gap's record from its first deferral (gaps.h): open, with the deadline and route its
// contract gives, the missing range and the versions waiting for it.
Status Pipeline::Impl::OpenGap(Transaction& tx, const ConsumerContract& contract,
                               const Projection& projection, int64_t missing_to,
                               std::vector<int64_t> waiting, int64_t now_ms) {
  assert(missing_to > projection.version);
  GapRecord g{.consumer = contract.id,
              .subject = projection.subject,
              .expected_version = projection.version + 1,
              .missing_to = missing_to,
              .route = contract.gap.route,
              .state = GapState::kOpen,
              .deadline_at_ms = now_ms + contract.gap.deadline_seconds * 1000};
  g.opened_at_ms = now_ms;
  g.waiting_versions = std::move(waiting);
  // A record of that key there already (closed by a person while its events still wait) stays.
  return tx.RecordGap(g);
}

namespace {
void FreshSubjectless(std::string_view consumer, Projection& out) {
  out = Projection{};
  out.consumer.assign(consumer);
}
}  // namespace

// 6. Unordered: every applied event advances the subject's projection by one.
Status Pipeline::Impl::Unordered(Delivery& delivery) {
  EVIDENT_ASSIGN_OR_RETURN(const bool decided, RefuseUnkeyed(delivery));
  if (decided) return Status::Ok();
  Decision& d = delivery.d;
  if (d.subject.empty()) {
    receipt_scratch.wrote_json.clear();  // no subject, no projection: nothing is written
    EVIDENT_ASSIGN_OR_RETURN(const bool inserted, InsertReceipt(delivery));
    if (!inserted) return Duplicate(delivery, std::nullopt);
    // No subject, no projection: what the event triggers is still intended (with no subject,
    // its evidence has nowhere to go and no guard can ask for it).
    const ConsumerConfig& consumer = *delivery.consumer.config;
    if (!consumer.effects.empty() || !consumer.compensations.empty()) {
      Projection& none = projection_scratch;
      FreshSubjectless(consumer.contract.id, none);
      EVIDENT_RETURN_IF_ERROR(Intend(delivery.tx, consumer, ReadingOf(delivery), none,
                                     delivery.subject_version, delivery.now_ms));
    }
  } else {
    Projection& projection = projection_scratch;
    EVIDENT_ASSIGN_OR_RETURN(
        const bool found, delivery.tx.ReadProjection(delivery.contract.id, d.subject, projection));
    const std::optional<int64_t> stored_version =
        found ? std::optional<int64_t>(projection.version) : std::nullopt;
    receipt_scratch.projection_version = projection.version + 1;
    EVIDENT_ASSIGN_OR_RETURN(const bool inserted, InsertReceipt(delivery));
    if (!inserted) return Duplicate(delivery, std::nullopt);
    projection.version += 1;
    // The receipt and the projection are written together, and name the same version; an
    // apply raises the version by one.
    assert(receipt_scratch.projection_version == projection.version);
    assert(!stored_version || projection.version == *stored_version + 1);
    projection.owner_version_seen = std::max(projection.owner_version_seen,
                                             delivery.subject_version.value_or(projection.version));
    EVIDENT_RETURN_IF_ERROR(Apply(delivery.tx, delivery.consumer, ReadingOf(delivery), projection,
                                  delivery.subject_version, delivery.now_ms));
    EVIDENT_RETURN_IF_ERROR(delivery.tx.PutProjection(projection, stored_version));
    d.projection_version = projection.version;
  }
  d.outcome = Outcome::kApplied;
  delivery.decisions.push_back(std::move(d));
  return Status::Ok();
}

Pipeline::Pipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Pipeline::~Pipeline() = default;

const Config& Pipeline::config() const { return impl_->config; }

Status Pipeline::DrainAfterCorrection(Transaction& tx, Projection& projection, int64_t now_ms,
                                      std::vector<Decision>& decisions) {
  for (ConsumerState& consumer : impl_->consumers) {
    if (consumer.config->contract.id != projection.consumer) continue;
    if (!consumer.config->contract.ordering.by_subject) return Status::Ok();
    if (projection.owner_version_seen <= projection.version) return Status::Ok();
    EVIDENT_RETURN_IF_ERROR(impl_->Drain(tx, consumer, projection, now_ms, decisions));
    return Impl::ReopenGap(tx, consumer.config->contract, projection, now_ms);
  }
  return Status::InvalidArgument("consumer " + projection.consumer + " is not configured");
}

void Pipeline::SetOutboxPartitionCount(int64_t partition_count) {
  assert(partition_count >= 1);
  impl_->outbox_partition_count = partition_count;
}

QuarantineRecord Pipeline::Identify(std::string_view bytes) {
  QuarantineRecord record;
  record.raw = std::string(bytes);
  const EnvelopeParser::Outcome parsed = impl_->drain_parser->Parse(bytes);
  if (parsed.ok()) {
    const EventView& e = parsed.event;
    record.source = std::string(e.source);
    record.event_id = std::string(e.id);
    record.type = std::string(e.type);
    if (e.subject) record.subject = std::string(*e.subject);
  } else {
    record.source = parsed.rejection->source;
    record.event_id = parsed.rejection->id;
    record.subject = parsed.rejection->subject;
  }
  return record;
}

namespace {

Result<PreparedDefault> PrepareDefault(const ProjectionStep& step, const std::string& pointer) {
  PreparedDefault out;
  const auto it = step.defaults.find(pointer);
  if (it == step.defaults.end()) return out;
  const MemberDefault& d = it->second;
  if (d.kind == MemberDefault::Kind::kRefuse) {
    out.refuses = true;
    return out;
  }
  out.holder = std::make_shared<simdjson::dom::parser>();
  simdjson::dom::element value;
  const std::string text = d.kind == MemberDefault::Kind::kNull ? "null" : d.value_json;
  if (out.holder->parse(text).get(value) != simdjson::SUCCESS) {
    return Status::InvalidArgument("the default of " + pointer + " is not JSON: " + text);
  }
  out.value = value;
  return out;
}

// A projection step with its copied members' names and defaults worked out once.
Result<PreparedStep> PrepareStep(const ProjectionStep& step) {
  PreparedStep prepared{&step, {}, {}, {}};
  for (const std::string& pointer : step.copy) {
    prepared.copy.emplace_back(pointer, LastToken(pointer));
    EVIDENT_ASSIGN_OR_RETURN(PreparedDefault d, PrepareDefault(step, pointer));
    prepared.copy_default.push_back(std::move(d));
  }
  if (!step.state_from.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(prepared.state_default, PrepareDefault(step, step.state_from));
  }
  return prepared;
}

// The versions the consumer reads via_adapter: each one's chain (LoadConfig resolved and checked
// it) and the two schemas its payload is checked against.
Status AddRoutes(const Config& config, const ConsumerConfig& consumer, ContractSchemas& schemas,
                 ConsumerState& state) {
  for (const AcceptedType& accepted : consumer.contract.accepts) {
    for (const auto& [version, chain] : accepted.via_adapter) {
      AdapterRoute route;
      route.name = ChainName(chain);
      for (const std::string& id : chain) {
        const Adapter* adapter = FindAdapter(config.adapters, id);
        if (adapter == nullptr) return Status::InvalidArgument("no adapter '" + id + "'");
        route.chain.push_back(adapter);
      }
      if (route.chain.empty()) return Status::InvalidArgument("an empty adapter chain");
      route.target_version = route.chain.back()->to;
      EVIDENT_ASSIGN_OR_RETURN(route.source_schema,
                               schemas.Get(config.contracts.SchemaPath(accepted.type, version)));
      EVIDENT_ASSIGN_OR_RETURN(route.target_schema, schemas.Get(config.contracts.SchemaPath(
                                                        accepted.type, route.target_version)));
      state.routes[accepted.type][version] = std::move(route);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Pipeline>> Pipeline::Create(const Config& config) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  EnvelopeOptions options{.event_bytes_max = config.event_bytes_max, .profile = config.profile};
  impl->envelope_options = options;
  EVIDENT_ASSIGN_OR_RETURN(impl->drain_parser, EnvelopeParser::Create(options));

  EVIDENT_ASSIGN_OR_RETURN(ContractSchemas schemas,
                           ContractSchemas::Open(config.contracts_dir, config.contracts.env));
  // Every file is read here: the pipeline keeps no Env it would outlive (a stored set's files
  // live in memory only while it is built).
  impl->config.contracts.env = nullptr;
  for (const ConsumerConfig& consumer : impl->config.consumers) {
    ConsumerState state{&consumer, {}};
    for (const AcceptedType& accepted : consumer.contract.accepts) {
      for (int64_t version : accepted.versions) {
        EVIDENT_ASSIGN_OR_RETURN(state.schemas[accepted.type][version],
                                 schemas.Get(config.contracts.SchemaPath(accepted.type, version)));
      }
    }
    EVIDENT_RETURN_IF_ERROR(AddRoutes(impl->config, consumer, schemas, state));
    for (const auto& [type, step] : consumer.projection) {
      EVIDENT_ASSIGN_OR_RETURN(PreparedStep prepared, PrepareStep(step));
      state.steps.emplace(type, std::move(prepared));
    }
    impl->consumers.push_back(std::move(state));
  }
  return std::unique_ptr<Pipeline>(new Pipeline(std::move(impl)));
}

std::vector<std::string> Pipeline::ConsumerIds() const {
  std::vector<std::string> ids;
  for (const ConsumerConfig& consumer : config().consumers) ids.push_back(consumer.contract.id);
  return ids;
}

Result<std::unique_ptr<PreparedEvent>> Pipeline::NewPreparedEvent() const {
  auto impl = std::make_unique<PreparedEvent::Impl>();
  EVIDENT_ASSIGN_OR_RETURN(impl->parser, EnvelopeParser::Create(impl_->envelope_options));
  impl->verdicts.resize(impl_->consumers.size());
  return std::unique_ptr<PreparedEvent>(new PreparedEvent(std::move(impl)));
}

void Pipeline::Prepare(PreparedEvent& slot, std::string_view bytes,
                       const Rejection* refused) const {
  PreparedEvent::Impl& p = *slot.impl_;
  p.bytes.assign(bytes);
  if (refused != nullptr) {
    p.parsed = EnvelopeParser::Outcome{*refused, {}};
    return;
  }
  p.parsed = p.parser->Parse(p.bytes);
  if (!p.parsed.ok()) return;
  for (size_t i = 0; i < impl_->consumers.size(); ++i) {
    const ConsumerState& consumer = impl_->consumers[i];
    if (consumer.config->contract.Find(p.parsed.event.type) == nullptr) {
      p.verdicts[i].routed = false;
      continue;
    }
    impl_->Check(consumer, p.parsed.event, p.verdicts[i]);
  }
}

Status Pipeline::Process(Transaction& store, std::string_view bytes, int64_t index, int64_t now_ms,
                         std::vector<Decision>& decisions, const Rejection* refused) {
  if (!impl_->own_slot) {
    EVIDENT_ASSIGN_OR_RETURN(impl_->own_slot, NewPreparedEvent());
  }
  Prepare(*impl_->own_slot, bytes, refused);
  return Decide(store, *impl_->own_slot, index, now_ms, decisions);
}

Status Pipeline::Decide(Transaction& store, PreparedEvent& slot, int64_t index, int64_t now_ms,
                        std::vector<Decision>& decisions) {
  return DecideFor(store, slot, std::string_view(), index, now_ms, decisions);
}

void Pipeline::AddKeys(const PreparedEvent& slot, BatchKeys& keys) const {
  const Impl& impl = *impl_;
  const PreparedEvent::Impl& p = *slot.impl_;
  if (!p.parsed.ok()) return;
  const EventView& event = p.parsed.event;
  for (size_t i = 0; i < impl.consumers.size(); ++i) {
    if (!p.verdicts[i].routed) continue;
    const std::string& consumer = impl.consumers[i].config->contract.id;
    keys.ledger.push_back(LedgerKey{consumer, std::string(event.source), std::string(event.id)});
    if (event.subject) keys.subjects.push_back(SubjectKey{consumer, std::string(*event.subject)});
  }
}

Status Pipeline::DecideReading(Transaction& store, PreparedEvent& slot, std::string_view consumer,
                               int64_t index, int64_t now_ms, std::vector<Decision>& decisions) {
  assert(!consumer.empty());
  Impl& impl = *impl_;
  const size_t first = decisions.size();
  impl.reading = true;
  const Status decided = DecideFor(store, slot, consumer, index, now_ms, decisions);
  impl.reading = false;
  EVIDENT_RETURN_IF_ERROR(decided);
  if (decisions.size() == first) return Status::Ok();
  const PreparedEvent::Impl& p = *slot.impl_;
  Decision& own = decisions[first];
  own.read_event.assign(p.bytes);
  for (size_t i = 0; i < impl.consumers.size(); ++i) {
    const ConsumerState& state = impl.consumers[i];
    if (state.config->contract.id != consumer || !p.verdicts[i].routed) continue;
    const Verdict& verdict = p.verdicts[i];
    if (verdict.schema_version_read) own.read_schema_version = verdict.schema_version;
    const bool adapted = verdict.adapted.route != nullptr && verdict.adapted.data.has_value();
    if (adapted) own.read_schema_version = verdict.adapted.route->target_version;
    if (verdict.keep || !p.parsed.ok()) break;  // refused: its bytes as they came
    const auto step = state.steps.find(p.parsed.event.type);
    own.read_event =
        ReadEvent(p.bytes, impl.envelope_options.profile.data_pointer,
                  step == state.steps.end() ? nullptr : step->second.step,
                  adapted ? std::string_view(verdict.adapted.json) : std::string_view());
  }
  return Status::Ok();
}

Status Pipeline::DecideFor(Transaction& store, PreparedEvent& slot, std::string_view only,
                           int64_t index, int64_t now_ms, std::vector<Decision>& decisions) {
  Impl& impl = *impl_;
  PreparedEvent::Impl& p = *slot.impl_;
  const std::string_view bytes = p.bytes;
  const EnvelopeParser::Outcome& parsed = p.parsed;
  if (!parsed.ok()) {
    const Rejection& r = *parsed.rejection;
    Decision d;
    d.index = index;
    d.consumer = std::string(only);  // a replay for one consumer: the refusal is that consumer's
    d.outcome = Outcome::kRejected;
    d.reason = std::string(ReasonCode(r.reason));
    d.message = r.message;
    if (!r.id.empty() && !r.source.empty()) d.key = r.source + ":" + r.id;
    d.subject = r.subject;
    const QuarantineRecord record =
        RecordFrom(d, r.source, r.id, "", std::nullopt, std::nullopt, bytes, now_ms);
    EVIDENT_RETURN_IF_ERROR(store.Quarantine(record).status());
    decisions.push_back(std::move(d));
    return Status::Ok();
  }
  const EventView& event = parsed.event;
  if (event.type == kReplayAnsweredType) {
    EVIDENT_ASSIGN_OR_RETURN(const bool recorded,
                             impl.RecordReplayAnswer(store, event, only, index, now_ms, decisions));
    if (recorded) return Status::Ok();
  }
  bool routed = false;
  for (size_t i = 0; i < impl.consumers.size(); ++i) {
    if (!p.verdicts[i].routed) continue;
    if (!only.empty() && impl.consumers[i].config->contract.id != only) continue;
    routed = true;
    EVIDENT_RETURN_IF_ERROR(impl.ProcessForConsumer(store, impl.consumers[i], p.verdicts[i], event,
                                                    index, now_ms, decisions));
  }
  if (!routed) {
    Decision d;
    d.index = index;
    d.consumer = std::string(only);
    d.outcome = Outcome::kUnrouted;
    d.reason = "no-subscriber";
    d.message = only.empty() ? "no consumer subscribes to type " + std::string(event.type)
                             : "consumer " + std::string(only) +
                                   " is not configured or does not subscribe to type " +
                                   std::string(event.type);
    d.subject = event.subject ? std::string(*event.subject) : std::string();
    // A service deciding for one consumer (DecideReading) reads every event of its stream: one
    // of a type it does not subscribe to is answered, not kept.
    if (!impl.reading) {
      const QuarantineRecord record = RecordFrom(d, event.source, event.id, event.type,
                                                 std::nullopt, std::nullopt, bytes, now_ms);
      EVIDENT_RETURN_IF_ERROR(store.Quarantine(record).status());
    }
    decisions.push_back(std::move(d));
  }
  return Status::Ok();
}

}  // namespace evident
