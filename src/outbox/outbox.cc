// The Outbox of evident/outbox.h: the checks of `evident validate` and of the consumer
// pipeline's payload step, then an append to the store's outbox in the caller's transaction.
#include "evident/outbox.h"

#include <simdjson.h>

#include <algorithm>
#include <cassert>
#include <map>

#include "contract/schema_file.h"
#include "core/fnv1a.h"
#include "core/join.h"
#include "evident/contract.h"
#include "evident/envelope.h"
#include "evident/schema.h"
#include "evident/store.h"
#include "json/writer.h"
#include "payload/payload.h"

namespace evident {

std::string_view OutboxDecisionName(OutboxDecisionOutcome outcome) {
  switch (outcome) {
    case OutboxDecisionOutcome::kAppended:
      return "appended";
    case OutboxDecisionOutcome::kDuplicate:
      return "duplicate";
    case OutboxDecisionOutcome::kRejected:
      return "rejected";
    case OutboxDecisionOutcome::kPayloadInvalid:
      return "payload-invalid";
    case OutboxDecisionOutcome::kConflict:
      return "conflict";
  }
  return "unknown";
}

namespace {

using SchemaByVersion = std::map<int64_t, std::shared_ptr<const schema::Schema>>;
using SchemaByType = std::map<std::string, SchemaByVersion, std::less<>>;

// Compiles every payload schema of the contracts directory.
Result<SchemaByType> CompileSchemas(const ContractsDir& contracts) {
  EVIDENT_ASSIGN_OR_RETURN(ContractSchemas schemas,
                           ContractSchemas::Open(contracts.path, contracts.env));
  SchemaByType out;
  for (const auto& [type, versions] : contracts.schemas) {
    for (const auto& [version, path] : versions) {
      EVIDENT_ASSIGN_OR_RETURN(out[type][version], schemas.Get(path));
    }
  }
  return out;
}

// The base URI of a stored set's files: a $ref between them resolves as between the files of a
// directory, and never reaches a file on this machine.
constexpr std::string_view kStoredContractsBase = "evident-store:/contracts/";

// Compiles every payload schema among a stored set's files (<type>/v<N>.schema.json); each
// .json file of the set may be the target of a $ref.
Result<SchemaByType> CompileStoredSchemas(const std::map<std::string, std::string>& files) {
  schema::Registry registry;
  for (const auto& [path, text] : files) {
    if (path.ends_with(".json")) {
      EVIDENT_RETURN_IF_ERROR(registry.Add(std::string(kStoredContractsBase) + path, text));
    }
  }
  SchemaByType out;
  for (const auto& [path, text] : files) {
    const std::optional<SchemaFile> schema_file = SchemaFileOf(path);
    if (!schema_file) continue;
    auto compiled =
        schema::Schema::Compile(text, registry, {}, std::string(kStoredContractsBase) + path);
    if (!compiled.ok()) return compiled.status().Annotate(path);
    out[schema_file->type][schema_file->version] = std::move(compiled).value();
  }
  return out;
}

OutboxDecision Refused(OutboxDecisionOutcome outcome, std::string reason, std::string message) {
  return OutboxDecision{.outcome = outcome,
                        .seq = std::nullopt,
                        .reason = std::move(reason),
                        .message = std::move(message)};
}

// The payload errors a refusal's message lists at most.
constexpr size_t kPayloadErrorsMax = 4;

}  // namespace

struct Outbox::Impl {
  OutboxOptions options;
  std::unique_ptr<EnvelopeParser> parser;
  SchemaByType schemas;

  // The schema the event names, or the refusal when the contracts directory has none.
  const schema::Schema* SchemaOf(const EventView& event, OutboxDecision& refusal) const {
    const int64_t version = *event.schemaversion;  // the parser requires it
    const auto type = schemas.find(event.type);
    if (type == schemas.end()) {
      refusal = Refused(
          OutboxDecisionOutcome::kRejected, "unknown-type",
          "the contracts directory has no schema for type '" + std::string(event.type) + "'");
      return nullptr;
    }
    const auto it = type->second.find(version);
    if (it != type->second.end()) return it->second.get();
    const std::string known =
        JoinEach(type->second, [](const auto& entry) { return std::to_string(entry.first); });
    refusal = Refused(OutboxDecisionOutcome::kRejected, "unaccepted-schema-version",
                      std::string(event.type) + " has schema versions [" + known + "], not " +
                          std::to_string(version));
    return nullptr;
  }

  // The payload step of the consumer pipeline: nullopt when the payload matches its schema.
  static std::optional<OutboxDecision> Payload(const schema::Schema& payload_schema,
                                               const EventView& event) {
    PayloadVerdict verdict =
        CheckPayload(payload_schema, event, *event.schemaversion, kPayloadErrorsMax);
    if (verdict.valid) return std::nullopt;
    for (const std::string& error : verdict.errors) verdict.message += "; " + error;
    return Refused(OutboxDecisionOutcome::kPayloadInvalid, std::move(verdict.reason),
                   std::move(verdict.message));
  }
};

Outbox::Outbox(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Outbox::~Outbox() = default;

Result<std::unique_ptr<Outbox>> Outbox::Create(const OutboxOptions& options) {
  if (options.partition_count < 1) {
    return Status::InvalidArgument("partition_count must be at least 1");
  }
  if (options.event_bytes_max < 1) return Status::InvalidArgument("event_bytes_max must be >= 1");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  EVIDENT_ASSIGN_OR_RETURN(
      impl->parser,
      EnvelopeParser::Create({.event_bytes_max = static_cast<size_t>(options.event_bytes_max),
                              .require_schema_version = true,
                              .profile = options.profile}));
  if (!options.contracts_files.empty()) {
    EVIDENT_ASSIGN_OR_RETURN(impl->schemas, CompileStoredSchemas(options.contracts_files));
  } else {
    EVIDENT_ASSIGN_OR_RETURN(const ContractsDir contracts, LoadContractsDir(options.contracts_dir));
    EVIDENT_ASSIGN_OR_RETURN(impl->schemas, CompileSchemas(contracts));
  }
  return std::unique_ptr<Outbox>(new Outbox(std::move(impl)));
}

namespace {

Status CheckCompensation(const OwnerCompensation& c) {
  if (c.key.empty() || c.subject.empty() || c.owner_source.empty()) {
    return Status::InvalidArgument("a compensation needs a key, a subject and an owner source");
  }
  if (c.key.size() > kCompensationKeyBytesMax) {
    return Status::InvalidArgument("a compensation key is at most " +
                                   std::to_string(kCompensationKeyBytesMax) + " bytes");
  }
  if (std::any_of(c.key.begin(), c.key.end(), [](char ch) {
        const auto byte = static_cast<unsigned char>(ch);
        return byte < 0x20 || byte == 0x7F;
      })) {
    return Status::InvalidArgument("a compensation key holds no control character");
  }
  for (const std::string* text : {&c.key, &c.subject, &c.owner_source, &c.decision}) {
    if (!simdjson::validate_utf8(text->data(), text->size())) {
      return Status::InvalidArgument("a compensation's texts are UTF-8");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<bool> RecordOwnerCompensation(Transaction& transaction, const OwnerCompensation& c,
                                     int64_t now_ms) {
  EVIDENT_RETURN_IF_ERROR(CheckCompensation(c));
  CompensationRecord record{.key = c.key,
                            .subject = c.subject,
                            .owner_source = c.owner_source,
                            .owner_version = c.owner_version,
                            .recorded_at_ms = now_ms,
                            .recorded_by = CompensationBy::kOwner,
                            .decision = c.decision};
  record.updated_at_ms = now_ms;
  EVIDENT_ASSIGN_OR_RETURN(const Insert inserted, transaction.InsertCompensation(record));
  return inserted == Insert::kInserted;
}

int64_t Outbox::PartitionOf(std::string_view subject) const {
  const uint64_t hash = Fnv1a(kFnv1aOffset, subject);
  const auto count = static_cast<uint64_t>(impl_->options.partition_count);
  return static_cast<int64_t>(hash % count);
}

Result<OutboxDecision> Outbox::Append(Transaction& transaction, std::string_view bytes,
                                      int64_t now_ms) {
  const EnvelopeParser::Outcome parsed = impl_->parser->Parse(bytes);
  if (parsed.rejection) {
    return Refused(OutboxDecisionOutcome::kRejected,
                   std::string(ReasonCode(parsed.rejection->reason)), parsed.rejection->message);
  }
  const EventView& event = parsed.event;
  assert(event.schemaversion.has_value());
  OutboxDecision refusal;
  const schema::Schema* payload_schema = impl_->SchemaOf(event, refusal);
  if (payload_schema == nullptr) return refusal;
  if (auto invalid = Impl::Payload(*payload_schema, event)) return *std::move(invalid);

  const std::string subject(event.subject.value_or(std::string_view()));
  const OutboxRow row{.source = std::string(event.source),
                      .event_id = std::string(event.id),
                      .type = std::string(event.type),
                      .subject = subject,
                      .subject_version = event.subjectversion,
                      .partition = PartitionOf(subject),
                      .bytes = std::string(bytes),
                      .created_at_ms = now_ms};
  EVIDENT_ASSIGN_OR_RETURN(const OutboxAppend appended, transaction.AppendOutbox(row));
  switch (appended.outcome) {
    case OutboxOutcome::kAppended:
      return OutboxDecision{.outcome = OutboxDecisionOutcome::kAppended, .seq = appended.seq};
    case OutboxOutcome::kDuplicate:
      return OutboxDecision{.outcome = OutboxDecisionOutcome::kDuplicate,
                            .seq = appended.seq,
                            .reason = "duplicate",
                            .message = "the outbox holds this event already, with the same bytes"};
    case OutboxOutcome::kConflict:
      break;
  }
  return OutboxDecision{.outcome = OutboxDecisionOutcome::kConflict,
                        .seq = appended.seq,
                        .reason = "id-conflict",
                        .message = "the outbox holds another event with source '" + row.source +
                                   "' and id '" + row.event_id + "' (other bytes)"};
}

void AppendOutboxRowJson(const OutboxRow& r, std::string& out) {
  json::Writer w(out);
  const auto optional_int = [&](std::string_view key, const std::optional<int64_t>& v) {
    w.Key(key);
    v ? w.Int(*v) : w.Null();
  };
  w.BeginObject().Key("seq").Int(r.seq).Field("source", r.source).Field("id", r.event_id);
  w.Field("type", r.type).Field("subject", r.subject);
  optional_int("subject_version", r.subject_version);
  w.Key("partition").Int(r.partition).Key("created_at_ms").Int(r.created_at_ms);
  w.Key("attempts").Int(r.attempts).Field("last_error", r.last_error);
  optional_int("last_attempt_at_ms", r.last_attempt_at_ms);
  optional_int("sent_at_ms", r.sent_at_ms);
  w.Field("stream", r.stream);
  optional_int("stream_sequence", r.stream_sequence);
  optional_int("parked_at_ms", r.parked_at_ms);
  w.Field("parked_reason", r.parked_reason);
  w.Field("bytes", r.bytes).EndObject();
  out.push_back('\n');
}

}  // namespace evident
