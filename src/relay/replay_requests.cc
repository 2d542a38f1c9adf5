// The owner's answers to replay requests (evident/replay_requests.h).
#include "evident/replay_requests.h"

#include <simdjson.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>

#include "core/rfc3339.h"
#include "evident/gaps.h"
#include "evident/retry.h"
#include "json/writer.h"

namespace evident {
namespace {

// A request naming more missing versions than this is refused: it cannot come from a gap a
// consumer could hold, and its `gone` list must stay bounded.
constexpr int64_t kMissingVersionsMax = 100'000;
// A request is one small event; a larger input is not one.
constexpr size_t kRequestBytesMax = 64 << 10;

std::string TextOf(simdjson::dom::element data, const char* name) {
  std::string_view text;
  return data[name].get(text) == simdjson::SUCCESS ? std::string(text) : std::string();
}

int64_t IntOf(simdjson::dom::element data, const char* name) {
  int64_t value = 0;
  return data[name].get(value) == simdjson::SUCCESS ? value : 0;
}

// Reads what a request asks into `answer`; false (with answer.error) when it is not one.
bool ReadRequest(std::string_view bytes, ReplayAnswer& answer) {
  if (bytes.size() > kRequestBytesMax) {
    answer.error = "larger than " + std::to_string(kRequestBytesMax) + " bytes";
    return false;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element event;
  if (parser.parse(bytes).get(event) != simdjson::SUCCESS || !event.is_object()) {
    answer.error = "not a JSON object";
    return false;
  }
  answer.request_id = TextOf(event, "id");
  if (const std::string type = TextOf(event, "type"); type != kReplayRequestedType) {
    answer.error = "not a replay request (type " + (type.empty() ? "none" : type) + ")";
    return false;
  }
  simdjson::dom::element data;
  if (event["data"].get(data) != simdjson::SUCCESS || !data.is_object()) {
    answer.error = "no data object";
    return false;
  }
  answer.consumer = TextOf(data, "consumer");
  answer.subject = TextOf(data, "subject");
  answer.owner_source = TextOf(data, "owner_source");
  answer.missing_from = IntOf(data, "missing_from");
  answer.missing_to = IntOf(data, "missing_to");
  answer.gap_from = IntOf(data, "gap_from");
  if (answer.gap_from == 0) answer.gap_from = answer.missing_from;
  if (answer.request_id.empty() || answer.consumer.empty() || answer.subject.empty() ||
      answer.owner_source.empty()) {
    answer.error = "an id, and in its data a consumer, a subject and an owner_source, are needed";
    return false;
  }
  if (answer.missing_from < 1 || answer.missing_to < answer.missing_from ||
      answer.missing_to - answer.missing_from >= kMissingVersionsMax) {
    answer.error = "missing_from and missing_to are not a range of at most " +
                   std::to_string(kMissingVersionsMax) + " versions from 1";
    return false;
  }
  return true;
}

// The answer event the consumer records on its gap.
OutgoingMessage AnswerMessage(const ReplayAnswer& a, int64_t partition, int64_t now_ms) {
  const std::string id = "replay-answer:" + a.request_id;
  std::string bytes;
  json::Writer w(bytes);
  w.BeginObject().Field("specversion", "1.0").Field("id", id);
  w.Field("source", "evident://owners/" + a.owner_source).Field("type", kReplayAnsweredType);
  w.Field("subject", a.subject).Field("time", rfc3339::FormatMs(now_ms));
  w.Field("datacontenttype", "application/json").Key("data").BeginObject();
  w.Field("request_id", a.request_id).Field("consumer", a.consumer).Field("subject", a.subject);
  w.Field("owner_source", a.owner_source).Key("missing_from").Int(a.missing_from);
  w.Key("missing_to").Int(a.missing_to).Key("gap_from").Int(a.gap_from);
  w.Field("answer", ReplayAnswerKindName(a.kind));
  for (const auto& [name, versions] :
       {std::pair{"republished", &a.republished}, std::pair{"gone", &a.gone}}) {
    w.Key(name).BeginArray();
    for (const int64_t v : *versions) w.Int(v);
    w.EndArray();
  }
  w.Field("truncated", a.truncated).EndObject().EndObject();
  return OutgoingMessage{RelayDestination(partition, kReplayAnsweredType), id, std::move(bytes)};
}

}  // namespace

std::string_view ReplayAnswerKindName(ReplayAnswer::Kind kind) {
  switch (kind) {
    case ReplayAnswer::Kind::kRepublished:
      return "republished";
    case ReplayAnswer::Kind::kPartlyGone:
      return "partly-gone";
    case ReplayAnswer::Kind::kGone:
      return "gone";
    case ReplayAnswer::Kind::kNotOurs:
      return "not-ours";
    case ReplayAnswer::Kind::kRefused:
      return "refused";
  }
  return "refused";
}

Result<ReplayPlan> PlanReplay(Snapshot& snapshot, std::string_view request_bytes,
                              const ReplayServeOptions& options, int64_t now_ms) {
  ReplayPlan plan;
  ReplayAnswer& a = plan.answer;
  if (!ReadRequest(request_bytes, a)) return plan;  // kRefused
  const auto& owned = options.owner_sources;
  if (std::find(owned.begin(), owned.end(), a.owner_source) == owned.end()) {
    a.kind = ReplayAnswer::Kind::kNotOurs;
    return plan;
  }
  EVIDENT_ASSIGN_OR_RETURN(
      const Rows<OutboxRow> rows,
      snapshot.OutboxOfSubject(a.owner_source, a.subject, a.missing_from, options.rows_max));
  a.truncated = rows.truncated;
  std::vector<int64_t> kept;
  for (const OutboxRow& row : rows.rows) {
    assert(row.subject_version && *row.subject_version >= a.missing_from);
    plan.messages.push_back({RelayDestination(row.partition, row.type),
                             "replay:" + a.request_id + ":" + std::to_string(row.seq), row.bytes});
    a.republished.push_back(*row.subject_version);
    kept.push_back(*row.subject_version);
  }
  std::sort(kept.begin(), kept.end());
  for (int64_t v = a.missing_from; v <= a.missing_to; ++v) {
    if (!std::binary_search(kept.begin(), kept.end(), v)) a.gone.push_back(v);
  }
  const int64_t missing = a.missing_to - a.missing_from + 1;
  a.kind = a.gone.empty()                                  ? ReplayAnswer::Kind::kRepublished
           : static_cast<int64_t>(a.gone.size()) < missing ? ReplayAnswer::Kind::kPartlyGone
                                                           : ReplayAnswer::Kind::kGone;
  const int64_t partition = rows.rows.empty() ? 0 : rows.rows.front().partition;
  plan.messages.push_back(AnswerMessage(a, partition, now_ms));
  return plan;
}

namespace {

class Server {
 public:
  Server(Store& store, Source& source, const PublisherFactory& open,
         const ReplayServeOptions& options, Clock& clock)
      : store_(store), source_(source), open_(open), options_(options), clock_(clock) {}

  Result<ReplayServeSummary> Run();

 private:
  Status Answer(const Message& message);
  Status Publish(const std::vector<OutgoingMessage>& messages);
  Status Commit(const Cursor& cursor);
  void Log(const ReplayAnswer& a) const;

  Store& store_;
  Source& source_;
  const PublisherFactory& open_;
  const ReplayServeOptions& options_;
  Clock& clock_;
  std::unique_ptr<Publisher> publisher_;
  ReplayServeSummary summary_;
};

Result<ReplayServeSummary> Server::Run() {
  {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_.Read());
    std::optional<std::string> position;
    if (options_.resume) {
      EVIDENT_ASSIGN_OR_RETURN(position, snapshot->GetPosition(source_.name()));
    }
    EVIDENT_RETURN_IF_ERROR(source_.Start(position));
  }
  int64_t active_ms = clock_.NowMs();
  Message message;
  while (options_.cancel == nullptr || !options_.cancel->cancelled()) {
    EVIDENT_ASSIGN_OR_RETURN(const Source::Fetched fetched, source_.Fetch(message, 200));
    if (fetched == Source::Fetched::kEnd) break;
    if (fetched == Source::Fetched::kWouldWait) {
      const bool idle = options_.until_idle_ms >= 0 && !source_.unreachable() &&
                        clock_.NowMs() - active_ms >= options_.until_idle_ms;
      if (idle) break;
      continue;
    }
    EVIDENT_RETURN_IF_ERROR(Answer(message));
    EVIDENT_RETURN_IF_ERROR(Commit(message.cursor));
    active_ms = clock_.NowMs();
  }
  summary_.stopped = options_.cancel != nullptr && options_.cancel->cancelled();
  if (publisher_ != nullptr) EVIDENT_RETURN_IF_ERROR(publisher_->Close());
  EVIDENT_RETURN_IF_ERROR(source_.FlushAcknowledgements(5000));
  return summary_;
}

// Publishes `messages` whole, in order: what the destination accepted is not offered again;
// a failure reopens the publisher after a backoff, at most publish_attempts_max times.
Status Server::Publish(const std::vector<OutgoingMessage>& messages) {
  size_t done = 0;
  Status last;
  for (int64_t attempt = 1; done < messages.size(); ++attempt) {
    if (attempt > options_.publish_attempts_max) {
      return Status::Unavailable("the destination did not accept a replay answer after " +
                                 std::to_string(options_.publish_attempts_max) +
                                 " attempts: " + last.ToString());
    }
    if (publisher_ == nullptr) {
      Result<std::unique_ptr<Publisher>> opened = open_();
      if (opened.ok()) {
        publisher_ = std::move(opened).value();
      } else {
        last = opened.status();
      }
    }
    if (publisher_ != nullptr) {
      const std::span<const OutgoingMessage> rest(messages.data() + done, messages.size() - done);
      Result<size_t> accepted = publisher_->Publish(rest);
      if (accepted.ok()) done += *accepted;
      if (!accepted.ok() || done < messages.size()) {
        last = accepted.ok() ? Status::Unavailable("part of the batch not accepted")
                             : accepted.status();
        (void)publisher_->Close();
        publisher_.reset();
      }
    }
    if (done < messages.size()) {
      SleepUnlessCancelled(clock_, std::min<int64_t>(100 << std::min<int64_t>(attempt, 6), 5000),
                           options_.cancel);
    }
  }
  return Status::Ok();
}

Status Server::Answer(const Message& message) {
  ++summary_.requests;
  ReplayPlan plan;
  if (message.rejection) {  // the source found no event there (a broken batch array)
    plan.answer.kind = ReplayAnswer::Kind::kRefused;
    plan.answer.error =
        std::string(ReasonCode(message.rejection->reason)) + ": " + message.rejection->message;
  } else {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_.Read());
    EVIDENT_ASSIGN_OR_RETURN(plan, PlanReplay(*snapshot, message.bytes, options_, clock_.NowMs()));
  }
  switch (plan.answer.kind) {
    case ReplayAnswer::Kind::kNotOurs:
      ++summary_.not_ours;
      break;
    case ReplayAnswer::Kind::kRefused:
      ++summary_.refused;
      break;
    case ReplayAnswer::Kind::kRepublished:
      ++summary_.republished;
      break;
    case ReplayAnswer::Kind::kPartlyGone:
    case ReplayAnswer::Kind::kGone:
      ++summary_.gone;
      break;
  }
  if (!plan.messages.empty()) {
    EVIDENT_RETURN_IF_ERROR(Publish(plan.messages));
    summary_.messages += static_cast<int64_t>(plan.messages.size()) - 1;  // the answer aside
  }
  Log(plan.answer);
  return Status::Ok();
}

// The request is answered: its position committed, then acknowledged.
Status Server::Commit(const Cursor& cursor) {
  EVIDENT_RETURN_IF_ERROR(RetryBusy(RetryPolicy{}, clock_, options_.cancel, [&]() -> Status {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store_.Begin());
    EVIDENT_RETURN_IF_ERROR(tx->SetPosition(source_.name(), source_.EncodePosition(cursor)));
    return tx->Commit();
  }));
  return source_.Acknowledge(cursor);
}

void Server::Log(const ReplayAnswer& a) const {
  if (options_.log == nullptr) return;
  if (a.kind == ReplayAnswer::Kind::kRefused || a.kind == ReplayAnswer::Kind::kNotOurs) {
    std::fprintf(options_.log, "%s  %s  %s\n", a.request_id.empty() ? "-" : a.request_id.c_str(),
                 std::string(ReplayAnswerKindName(a.kind)).c_str(),
                 a.kind == ReplayAnswer::Kind::kNotOurs
                     ? ("for " + a.owner_source + ", not an owner served here").c_str()
                     : a.error.c_str());
    std::fflush(options_.log);
    return;
  }
  std::string versions;
  for (const int64_t v : a.republished)
    versions += (versions.empty() ? "v" : ", v") + std::to_string(v);
  std::string gone;
  for (const int64_t v : a.gone) gone += (gone.empty() ? "v" : ", v") + std::to_string(v);
  std::fprintf(options_.log, "%s  %s  %s for %s: %s%s%s%s\n", a.request_id.c_str(),
               std::string(ReplayAnswerKindName(a.kind)).c_str(), a.subject.c_str(),
               a.consumer.c_str(), versions.empty() ? "nothing published" : versions.c_str(),
               gone.empty() ? "" : "; gone: ", gone.c_str(),
               a.error.empty() ? "" : ("; " + a.error).c_str());
  std::fflush(options_.log);
}

}  // namespace

Result<ReplayServeSummary> ServeReplayRequests(Store& store, Source& source,
                                               const PublisherFactory& open_publisher,
                                               const ReplayServeOptions& options) {
  if (options.owner_sources.empty()) {
    return Status::InvalidArgument("name the sources this owner answers for (--owner-source)");
  }
  if (options.rows_max < 1 || options.publish_attempts_max < 1) {
    return Status::InvalidArgument("rows_max and publish_attempts_max must be at least 1");
  }
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  Server server(store, source, open_publisher, options, clock);
  return server.Run();
}

}  // namespace evident
