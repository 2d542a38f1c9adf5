#include "serve/admin.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <initializer_list>
#include <optional>

#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/effects.h"
#include "evident/evidence.h"
#include "evident/quarantine.h"
#include "json/writer.h"
#include "transport/http/intake.h"

namespace evident::serve {

using http::RefusalBody;
namespace {

using Query = std::function<const char*(const char*)>;

AdminAnswer Refusal(int status, std::string_view reason, std::string_view message) {
  return {status, RefusalBody(status, reason, message)};
}

// A failed Status as an answer: what the caller asked for (4xx) or the store (503).
AdminAnswer FromStatus(const Status& status) {
  switch (status.code()) {
    case Code::kNotFound:
      return Refusal(404, "not-found", status.message());
    case Code::kFailedPrecondition:
      return Refusal(409, "conflict", status.message());
    case Code::kInvalidArgument:
    case Code::kLimitExceeded:
      return Refusal(400, "invalid-argument", status.message());
    default:
      return Refusal(503, "store-unavailable", status.ToString());
  }
}

// {"<name>":[each row as `append` writes it],"truncated":..}
template <typename Row, typename Append>
AdminAnswer ListAnswer(std::string_view name, const Rows<Row>& rows, Append append) {
  AdminAnswer answer;
  json::Writer w(answer.body);
  w.BeginObject().Key(name).BeginArray();
  std::string one;
  for (const Row& row : rows.rows) {
    one.clear();
    append(row, one);
    w.Raw(one);
  }
  w.EndArray().Field("truncated", rows.truncated).EndObject();
  return answer;
}

AdminAnswer UnknownConsumer(std::string_view consumer) {
  return Refusal(404, "unknown-consumer",
                 "the config has no consumer '" + std::string(consumer) + "'");
}

// A decimal number written one way only: no sign, no leading zero (`/api/quarantine/01` names
// no record; a path that reads differently from the record's id would be a second name for it).
std::optional<int64_t> ParseInt(std::string_view text) {
  if (text.empty() || text[0] == '-' || text[0] == '+' || (text.size() > 1 && text[0] == '0')) {
    return std::nullopt;
  }
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

// The `limit` query parameter: 1000 when absent; a whole number from 1 to kReadRowsMaxDefault,
// else null (the caller refuses: a typo is not silently the default).
std::optional<int64_t> Limit(const Query& query) {
  const char* text = query("limit");
  if (text == nullptr) return 1000;
  const std::optional<int64_t> n = ParseInt(text);
  if (!n || *n < 1 || *n > kReadRowsMaxDefault) return std::nullopt;
  return n;
}

AdminAnswer BadLimit() {
  return Refusal(400, "invalid-argument",
                 "limit: a whole number from 1 to " + std::to_string(kReadRowsMaxDefault));
}

// The members of an action's JSON body, each one of `allowed` and a string; else the refusal.
std::optional<AdminAnswer> ReadFields(std::string_view body,
                                      std::initializer_list<std::string_view> allowed,
                                      std::map<std::string, std::string>& fields) {
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(body.data(), body.size()).get(object) != simdjson::SUCCESS) {
    return Refusal(400, "invalid-argument", "the body is not a JSON object");
  }
  for (auto [key, value] : object) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Refusal(400, "invalid-argument", "unknown member '" + std::string(key) + "'");
    }
    if (fields.count(std::string(key)) > 0) {
      return Refusal(400, "invalid-argument", "member '" + std::string(key) + "' appears twice");
    }
    std::string_view text;
    if (value.get(text) != simdjson::SUCCESS) {
      return Refusal(400, "invalid-argument", "member '" + std::string(key) + "' is not a string");
    }
    fields[std::string(key)] = std::string(text);
  }
  for (const char* required : {"by", "note"}) {
    if (fields[required].empty()) {
      return Refusal(400, "invalid-argument",
                     std::string("'") + required + "' is required: who acts, and why");
    }
  }
  return std::nullopt;
}

}  // namespace

AdminAnswer Admin::Handle(std::string_view path, std::string_view method, std::string_view body,
                          const Query& query) {
  if (reader_ == nullptr) return Refusal(503, "store-unavailable", "no store handle");
  const bool get = method == "GET" || method == "HEAD";
  constexpr std::string_view kEvidence = "/api/evidence/";
  if (path.rfind(kEvidence, 0) == 0 && get) {
    return Evidence(path.substr(kEvidence.size()), query("consumer"));
  }
  if (path == "/api/gaps" && get) return Gaps();
  if (path == "/api/quarantine" && get) return Quarantine(query);
  if (path == "/api/effects" && get) return Effects(query);
  constexpr std::string_view kQuarantine = "/api/quarantine/";
  constexpr std::string_view kEffects = "/api/effects/";
  if (get && path.rfind(kQuarantine, 0) == 0 &&
      path.find('/', kQuarantine.size()) == std::string_view::npos) {
    return QuarantineRecordOf(path.substr(kQuarantine.size()));
  }
  if (method == "POST" && path.rfind(kQuarantine, 0) == 0) {
    const std::string_view rest = path.substr(kQuarantine.size());
    const size_t slash = rest.find('/');
    if (slash != std::string_view::npos) {
      return QuarantineAction(rest.substr(0, slash), rest.substr(slash + 1), body);
    }
  }
  constexpr std::string_view kResolve = "/resolve";
  if (method == "POST" && path.rfind(kEffects, 0) == 0 &&
      path.size() > kEffects.size() + kResolve.size() &&
      path.substr(path.size() - kResolve.size()) == kResolve) {
    return ResolveEffect(
        path.substr(kEffects.size(), path.size() - kEffects.size() - kResolve.size()), body);
  }
  return Refusal(404, "not-found",
                 "no admin route " + std::string(method) + " " + std::string(path));
}

AdminAnswer Admin::Evidence(std::string_view subject, const char* consumer) {
  if (subject.empty()) return Refusal(400, "invalid-argument", "name a subject");
  if (consumer != nullptr && *consumer != '\0' && config_.Find(consumer) == nullptr) {
    return UnknownConsumer(consumer);
  }
  Result<std::unique_ptr<Snapshot>> snapshot = reader_->Read();
  if (!snapshot.ok()) return FromStatus(snapshot.status());
  Result<EvidencePacket> packet =
      ReadEvidence(**snapshot, subject, consumer != nullptr ? consumer : "");
  if (!packet.ok()) return FromStatus(packet.status());
  if (!packet->known()) {
    return Refusal(404, "unknown-subject",
                   "the store knows nothing of subject '" + std::string(subject) + "'");
  }
  AdminAnswer answer;
  AppendEvidenceJson(*packet, SystemClock().NowMs(), answer.body);
  return answer;
}

AdminAnswer Admin::Gaps() {
  Result<std::unique_ptr<Snapshot>> snapshot = reader_->Read();
  if (!snapshot.ok()) return FromStatus(snapshot.status());
  Result<evident::Gaps> gaps = ReadGaps(**snapshot);
  if (!gaps.ok()) return FromStatus(gaps.status());
  const int64_t now_ms = SystemClock().NowMs();
  AdminAnswer answer;
  json::Writer w(answer.body);
  w.BeginObject().Key("gaps").BeginArray();
  std::string one;
  for (const Gap& gap : gaps->gaps) {
    one.clear();
    AppendGapJson(gap, now_ms, one);
    w.Raw(one);
  }
  w.EndArray().Field("truncated", gaps->truncated).EndObject();
  return answer;
}

AdminAnswer Admin::Quarantine(const Query& query) {
  QuarantineFilter filter;
  if (const char* status = query("status"); status != nullptr && *status != '\0') {
    filter.status = ParseQuarantineStatus(status);
    if (!filter.status)
      return Refusal(400, "invalid-argument", "status: open, replayed or discarded");
  }
  if (const char* consumer = query("consumer"); consumer != nullptr && *consumer != '\0') {
    if (config_.Find(consumer) == nullptr) return UnknownConsumer(consumer);
    filter.consumer = consumer;
  }
  if (const char* reason = query("reason"); reason != nullptr && *reason != '\0') {
    filter.reason = reason;
  }
  const std::optional<int64_t> limit = Limit(query);
  if (!limit) return BadLimit();
  Result<std::unique_ptr<Snapshot>> snapshot = reader_->Read();
  if (!snapshot.ok()) return FromStatus(snapshot.status());
  Result<Rows<QuarantineRecord>> rows = (*snapshot)->ListQuarantine(filter, {}, *limit);
  if (!rows.ok()) return FromStatus(rows.status());
  return ListAnswer("records", *rows, [](const QuarantineRecord& record, std::string& out) {
    AppendQuarantineJson(record, true, out);
  });
}

// One record with its bytes and its audit: {"record":{...},"audit":[...]}.
AdminAnswer Admin::QuarantineRecordOf(std::string_view id_text) {
  const std::optional<int64_t> id = ParseInt(id_text);
  if (!id || *id < 1) return Refusal(400, "invalid-argument", "a quarantine id is a number");
  Result<std::unique_ptr<Snapshot>> snapshot = reader_->Read();
  if (!snapshot.ok()) return FromStatus(snapshot.status());
  Result<std::optional<QuarantineRecord>> record = (*snapshot)->FindQuarantine(*id);
  if (!record.ok()) return FromStatus(record.status());
  if (!record->has_value()) {
    return Refusal(404, "not-found", "no quarantine record " + std::to_string(*id));
  }
  Result<Rows<QuarantineAudit>> audit = (*snapshot)->AuditOf(*id);
  if (!audit.ok()) return FromStatus(audit.status());
  AdminAnswer answer;
  json::Writer w(answer.body);
  std::string one;
  AppendQuarantineJson(**record, true, one);
  w.BeginObject().Key("record").Raw(one).Key("audit").BeginArray();
  for (const QuarantineAudit& a : audit->rows) {
    w.BeginObject().Key("seq").Int(a.seq).Field("action", QuarantineActionName(a.action));
    w.Field("by", a.by).Field("note", a.note).Field("outcome", a.outcome).Key("reason");
    a.reason.empty() ? w.Null() : w.String(a.reason);
    w.Field("status_after", QuarantineStatusName(a.status_after));
    w.Field("at", rfc3339::FormatMs(a.at_ms)).EndObject();
  }
  w.EndArray().EndObject();
  return answer;
}

Status Admin::OpenWriter() {
  if (writer_ == nullptr) {
    EVIDENT_ASSIGN_OR_RETURN(writer_, options_.open_store(false));
  }
  if (pipeline_ == nullptr) {
    EVIDENT_ASSIGN_OR_RETURN(pipeline_, Pipeline::Create(config_));
  }
  return Status::Ok();
}

AdminAnswer Admin::QuarantineAction(std::string_view id_text, std::string_view action,
                                    std::string_view body) {
  const std::optional<int64_t> id = ParseInt(id_text);
  if (!id || *id < 1) return Refusal(400, "invalid-argument", "a quarantine id is a number");
  if (action != "replay" && action != "discard") {
    return Refusal(404, "not-found", "a quarantine record takes replay or discard");
  }
  std::map<std::string, std::string> fields;
  if (auto refused = ReadFields(body, {"by", "note"}, fields)) return *refused;
  if (Status opened = OpenWriter(); !opened.ok()) return FromStatus(opened);
  if (action == "discard") {
    Result<int64_t> discarded =
        DiscardQuarantine(*writer_, {*id}, fields["by"], fields["note"], SystemClock().NowMs());
    if (!discarded.ok()) return FromStatus(discarded.status());
    return {200, "{\"id\":" + std::to_string(*id) +
                     ",\"action\":\"discard\",\"discarded\":" + std::to_string(*discarded) + "}"};
  }
  // The replay's lines, collected in a file in memory.
  const std::unique_ptr<Env> memory = NewMemoryEnv();
  Result<std::unique_ptr<WritableFile>> outcomes = memory->NewWritableFile("outcomes");
  if (!outcomes.ok()) return Refusal(503, "internal", "cannot collect the outcomes");
  ReplayOptions replay{.select = {.ids = {*id}}, .by = fields["by"], .note = fields["note"]};
  replay.outcomes = outcomes->get();
  Result<ReplaySummary> summary = ReplayQuarantine(*pipeline_, *writer_, replay);
  if (!summary.ok()) return FromStatus(summary.status());
  Status closed = (*outcomes)->Close();
  Result<std::string> read = closed.ok() ? ReadWholeFile(*memory, "outcomes", SIZE_MAX) : closed;
  if (!read.ok()) return Refusal(503, "internal", "cannot collect the outcomes");
  const std::string& lines = *read;
  AdminAnswer answer;
  json::Writer w(answer.body);
  w.BeginObject().Key("id").Int(*id).Field("action", "replay");
  w.Key("replayed").Int(summary->replayed).Key("duplicates").Int(summary->duplicates);
  w.Key("refused").Int(summary->refused).Key("decisions").BeginArray();
  size_t start = 0;
  while (start < lines.size()) {
    const size_t end = lines.find('\n', start);
    const std::string_view line(lines.data() + start,
                                (end == std::string::npos ? lines.size() : end) - start);
    if (!line.empty()) w.Raw(line);
    start = end == std::string::npos ? lines.size() : end + 1;
  }
  w.EndArray().EndObject();
  return answer;
}

AdminAnswer Admin::Effects(const Query& query) {
  EffectFilter filter;
  if (const char* state = query("state"); state != nullptr && *state != '\0') {
    filter.state = ParseEffectState(state);
    if (!filter.state) {
      return Refusal(400, "invalid-argument", "state: intended, done, failed or unknown");
    }
  }
  if (const char* consumer = query("consumer"); consumer != nullptr && *consumer != '\0') {
    if (config_.Find(consumer) == nullptr) return UnknownConsumer(consumer);
    filter.consumer = consumer;
  }
  if (const char* subject = query("subject"); subject != nullptr && *subject != '\0') {
    filter.subject = subject;
  }
  const std::optional<int64_t> limit = Limit(query);
  if (!limit) return BadLimit();
  Result<std::unique_ptr<Snapshot>> snapshot = reader_->Read();
  if (!snapshot.ok()) return FromStatus(snapshot.status());
  Result<Rows<EffectIntent>> rows = (*snapshot)->ListIntents(filter, 0, *limit);
  if (!rows.ok()) return FromStatus(rows.status());
  return ListAnswer("effects", *rows, [](const EffectIntent& intent, std::string& out) {
    AppendEffectJson(intent, nullptr, out);
  });
}

AdminAnswer Admin::ResolveEffect(std::string_view key, std::string_view body) {
  std::map<std::string, std::string> fields;
  if (auto refused = ReadFields(body, {"outcome", "by", "note"}, fields)) return *refused;
  const std::optional<EffectState> outcome = ParseEffectState(fields["outcome"]);
  if (!outcome || *outcome == EffectState::kUnknown) {
    return Refusal(400, "invalid-argument", "outcome: done, failed or intended");
  }
  if (Status opened = OpenWriter(); !opened.ok()) return FromStatus(opened);
  // A claim with no answer may be a call in flight (serve's runner or another's): the window is
  // the intent's effect's timeout plus the runners' default claim margin.
  const int64_t margin_ms = EffectRunOptions{}.claim_margin_ms;
  int64_t in_flight_ms = kEffectTimeoutMsLimit + margin_ms;  // when the store cannot say
  if (reader_ != nullptr) {
    if (Result<std::unique_ptr<Snapshot>> snapshot = reader_->Read(); snapshot.ok()) {
      const Result<int64_t> window = CallWindowOfIntent(**snapshot, &config_, key, margin_ms);
      if (window.ok()) in_flight_ms = *window;
    }
  }
  Result<EffectIntent> resolved = evident::ResolveEffect(*writer_,
                                                         {.key = std::string(key),
                                                          .outcome = *outcome,
                                                          .by = fields["by"],
                                                          .note = fields["note"],
                                                          .in_flight_ms = in_flight_ms},
                                                         SystemClock().NowMs());
  if (!resolved.ok()) return FromStatus(resolved.status());
  AdminAnswer answer;
  AppendEffectJson(*resolved, nullptr, answer.body);
  return answer;
}

}  // namespace evident::serve
