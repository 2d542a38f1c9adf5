// Performing effect intents (evident/effects.h): claim, call, record; and a person's resolution.
#include "evident/effects.h"

#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

#include "core/rfc3339.h"
#include "effects/compensation.h"
#include "json/writer.h"

namespace evident {
namespace {

// The triggering event's trace context, read from the request (the event's JSON).
std::pair<std::string, std::string> EventTrace(const std::string& request) {
  simdjson::dom::parser parser;
  simdjson::dom::element event;
  std::string_view traceparent, tracestate;
  if (parser.parse(request).get(event) != simdjson::SUCCESS) return {};
  if (event["traceparent"].get(traceparent) != simdjson::SUCCESS) return {};
  if (event["tracestate"].get(tracestate) != simdjson::SUCCESS ||
      tracestate.size() > kTracestateBytesMax ||
      !std::all_of(tracestate.begin(), tracestate.end(),
                   [](char c) { return c >= 0x20 && c <= 0x7e; })) {
    tracestate = {};
  }
  return {std::string(traceparent), std::string(tracestate)};
}

// The host (and port) of `url`: never its user info, path or query, where secrets may be.
std::string ServerAddress(std::string_view url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string_view::npos) return {};
  std::string_view rest = url.substr(scheme + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  const size_t at = rest.rfind('@');
  return std::string(at == std::string_view::npos ? rest : rest.substr(at + 1));
}

// The attempt's span and the call's trace headers: with a tracer, a child of the event's span
// whose id goes out as the call's traceparent (a new trace for an event without one); without,
// the event's own traceparent passed on as it came.
Span AttemptSpan(const Tracer* tracer, const EffectIntent& intent, const EffectConfig& effect,
                 EffectCall& call) {
  auto [traceparent, tracestate] = EventTrace(intent.request);
  const std::optional<TraceContext> event = TraceContext::Parse(traceparent);
  call.tracestate = event ? tracestate : std::string();
  Span span;
  if (tracer == nullptr) {
    if (event) call.traceparent = traceparent;
    return span;
  }
  span.name = "evident.effect";
  span.trace_id = event ? event->trace_id : NewTraceId();
  span.parent_span_id = event ? event->span_id : std::string();
  span.span_id = NewSpanId();
  span.start_unix_ns = UnixNanosNow();
  call.traceparent =
      TraceContext{span.trace_id, span.span_id, event ? event->flags : uint8_t{1}}.Traceparent();
  span.attributes = {{"evident.effect", effect.name},
                     {"evident.key", intent.key},
                     {"evident.consumer", intent.consumer},
                     {"evident.subject", intent.subject},
                     {"server.address", ServerAddress(effect.target.url)}};
  span.int_attributes = {{"evident.attempt", intent.attempts}};
  return span;
}

// How many due intents one claim looks at: enough to step over those whose effect the
// configuration no longer has.
constexpr int64_t kDueRowsMax = 32;
// How long an intent of an effect this runner's configuration lacks is put off: a runner with
// the configuration that has it (a rolling deploy) takes it in the meantime.
constexpr int64_t kUnconfiguredPutOffMs = 60'000;
// Recording an answer the target gave is worth waiting for: a store busy with a long batch must
// not turn a known outcome into an unknown one. About a minute in all.
const RetryPolicy kRecordRetry{
    .attempts_max = 40, .backoff_initial_ms = 10, .backoff_max_ms = 2000};

std::string AnswerText(const CallResult& r) {
  switch (r.outcome) {
    case CallOutcome::kAnswered:
      return "HTTP " + std::to_string(r.http_status) + (r.digest.empty() ? "" : ", " + r.digest);
    case CallOutcome::kTimeout:
      return "timeout: " + r.error;
    case CallOutcome::kReset:
      return "connection broken: " + r.error;
    case CallOutcome::kNotSent:
      return "not sent: " + r.error;
  }
  return r.error;
}

// The evidence a done intent records: the effect's name, for the event that intended it.
EvidenceRecord EvidenceOfDone(const EffectIntent& intent, int64_t now_ms, std::string detail) {
  return {.consumer = intent.consumer,
          .subject = intent.subject,
          .name = intent.effect,
          .source = intent.source,
          .event_id = intent.event_id,
          .subject_version = intent.subject_version,
          .recorded_at_ms = now_ms,
          .detail = std::move(detail)};
}

// How a claim's log entry begins: "POST <url> (attempt N)".
constexpr const char* kClaimDetailPrefix = "POST ";

struct Claim {
  EffectIntent intent;  // as claimed (its revision is the claim's)
  const EffectConfig* effect = nullptr;
  // The intent was unknown before this claim: an earlier attempt may have reached the target,
  // so a call that never leaves this time does not make it `intended` again.
  bool earlier_attempt_unknown = false;
};

// Whether an intent's basis holds right before an attempt (docs/effects.md): the subject's
// present projection, read in the claiming transaction.
enum class Basis : uint8_t {
  kHolds,    // attempt it
  kBehind,   // the projection lags its owner: postpone, do not attempt
  kChanged,  // its state no longer permits it, or a later event withdrew it
};
struct BasisCheck {
  Basis basis = Basis::kHolds;
  std::string why;
};

// The version an intent was intended on: its own record, or (an intent an older layout wrote)
// its event's subject version for an ordered consumer.
std::optional<int64_t> BasisVersionOf(const EffectIntent& intent, bool ordered) {
  if (intent.basis_version) return intent.basis_version;
  return ordered ? intent.subject_version : std::nullopt;
}

Result<BasisCheck> CheckBasis(Transaction& tx, const ConsumerConfig& consumer,
                              const EffectConfig& effect, const EffectIntent& intent) {
  if (intent.subject.empty()) return BasisCheck{};  // nothing to read it against
  const std::string& id = consumer.contract.id;
  const bool ordered = consumer.contract.ordering.by_subject;
  const std::optional<int64_t> basis = BasisVersionOf(intent, ordered);
  // Its operation is being compensated: it must not be attempted any more.
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<CompensationRecord> covering,
                           CompensationCovering(tx, intent));
  if (covering) {
    return BasisCheck{Basis::kChanged, "compensation " + covering->key + " (" +
                                           std::string(CompensationStateName(covering->state)) +
                                           ") covers it"};
  }
  if (!effect.withdrawn_by.empty() && basis) {
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<LedgerEntry> later,
                             tx.AppliedAfter(id, intent.subject, *basis, effect.withdrawn_by));
    if (later) {
      const int64_t version = later->subject_version.value_or(*later->projection_version);
      return BasisCheck{Basis::kChanged, later->type + " " + later->source + ":" + later->event_id +
                                             " applied at version " + std::to_string(version) +
                                             ", after version " + std::to_string(*basis) +
                                             " this intent was made on"};
    }
  }
  // Locked where several processes share the store: the decision that changes it commits before
  // this read or after this claim, never in between.
  Projection present;
  EVIDENT_ASSIGN_OR_RETURN(const bool found, tx.ReadProjectionLocked(id, intent.subject, present));
  if (!found) return BasisCheck{};
  if (ordered && present.owner_version_seen > present.version) {
    return BasisCheck{Basis::kBehind, "the projection of " + intent.subject + " is at version " +
                                          std::to_string(present.version) + ", the owner's at " +
                                          std::to_string(present.owner_version_seen) +
                                          ": waits for version " +
                                          std::to_string(present.version + 1)};
  }
  if (!effect.states.empty() &&
      std::find(effect.states.begin(), effect.states.end(), present.state) == effect.states.end()) {
    std::string allowed;
    for (const std::string& state : effect.states) allowed += (allowed.empty() ? "" : ", ") + state;
    return BasisCheck{Basis::kChanged, "the state of " + intent.subject + " is now '" +
                                           present.state + "' (version " +
                                           std::to_string(present.version) +
                                           "), not one of: " + allowed};
  }
  return BasisCheck{};
}

class Runner {
 public:
  Runner(const Config& config, Store& store, EffectTransport& transport,
         const EffectRunOptions& options, Clock& clock)
      : config_(config), store_(store), transport_(transport), options_(options), clock_(clock) {
    id_ = options.runner_id.empty() ? "runner-" + std::to_string(getpid()) : options.runner_id;
  }

  Result<EffectRunSummary> Run();

 private:
  Result<std::optional<Claim>> ClaimNext(Transaction& tx, int64_t now_ms);
  Result<std::optional<Claim>> TakeRow(Transaction& tx, const EffectIntent& intent, int64_t now_ms);
  // The basis did not hold: the intent is postponed, withdrawn or held for a person.
  Status OnBasis(Transaction& tx, EffectIntent intent, const BasisCheck& check, int64_t now_ms);
  Status Postpone(EffectWrites& tx, EffectIntent intent, const std::string& why, int64_t now_ms);
  Status Hold(EffectWrites& tx, EffectIntent intent, const std::string& why, int64_t now_ms);
  Status Record(Transaction& tx, const Claim& claim, const CallResult& result, int64_t now_ms,
                EffectIntent& after, AttemptVerdict& verdict);
  Status SetAside(EffectWrites& tx, EffectIntent intent, int64_t now_ms);
  // Runs `op` in a transaction of its own, committed; retried while the store is busy.
  Status Transact(const RetryPolicy& policy, const std::function<Status(Transaction&)>& op);

  const Config& config_;
  Store& store_;
  EffectTransport& transport_;
  const EffectRunOptions& options_;
  Clock& clock_;
  std::string id_;
  EffectRunSummary summary_;
  // What the claim's transaction did to intents whose basis did not hold, reported once it
  // commits (a retried transaction starts the list again).
  std::vector<std::pair<EffectIntent, EffectAction>> basis_events_;
  bool acted_ = false;  // the claim's transaction acted on a due intent without claiming it
};

Status Runner::Transact(const RetryPolicy& policy, const std::function<Status(Transaction&)>& op) {
  return RetryBusy(policy, clock_, nullptr, [&]() -> Status {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store_.Begin());
    EVIDENT_RETURN_IF_ERROR(op(*tx));
    return tx->Commit();
  });
}

// An intent whose effect this runner's configuration lacks cannot be performed here: it is put
// off (not dropped), so that it neither crowds the due list nor waits for a person when a runner
// with the right configuration shares the store. Its log says so once.
Status Runner::SetAside(EffectWrites& tx, EffectIntent intent, int64_t now_ms) {
  const int64_t revision = intent.revision;
  const std::string reason = "effect " + intent.effect + " of consumer " + intent.consumer +
                             " is not in " + config_.path + " of runner " + id_ + ": put off";
  const bool logged = intent.last_error == reason;
  intent.next_attempt_at_ms = now_ms + kUnconfiguredPutOffMs;
  intent.last_error = reason;
  EVIDENT_RETURN_IF_ERROR(tx.UpdateIntent(intent, revision));
  ++summary_.unconfigured;
  if (logged) return Status::Ok();
  return tx.LogIntent({.key = intent.key,
                       .action = EffectAction::kAttempt,
                       .by = id_,
                       .state_after = intent.state,
                       .detail = intent.last_error,
                       .at_ms = now_ms});
}

// A projection behind its owner gives no permission to act: the intent waits, and is looked at
// again after postpone_ms, longer the longer it has waited (a quarter of its age, at most
// postpone_max_ms), so that many lagging subjects do not crowd the runner. Its log says once
// what it waits for.
Status Runner::Postpone(EffectWrites& tx, EffectIntent intent, const std::string& why,
                        int64_t now_ms) {
  const int64_t revision = intent.revision;
  const std::string reason = "postponed: " + why;
  const bool logged = intent.last_error == reason;
  const int64_t delay_ms =
      std::clamp<int64_t>((now_ms - intent.intended_at_ms) / 4, options_.postpone_ms,
                          std::max(options_.postpone_ms, options_.postpone_max_ms));
  intent.next_attempt_at_ms = now_ms + delay_ms;
  intent.last_error = reason;
  EVIDENT_RETURN_IF_ERROR(tx.UpdateIntent(intent, revision));
  intent.revision = revision + 1;
  ++summary_.postponed;
  if (logged) return Status::Ok();
  basis_events_.emplace_back(intent, EffectAction::kPostpone);
  return tx.LogIntent({.key = intent.key,
                       .action = EffectAction::kPostpone,
                       .by = id_,
                       .state_after = intent.state,
                       .detail = reason,
                       .at_ms = now_ms});
}

// An unknown intent may have been performed: when its basis changed it is not retried, even on
// a target that honours its key; it waits for a person (ResolveEffect).
Status Runner::Hold(EffectWrites& tx, EffectIntent intent, const std::string& why, int64_t now_ms) {
  const int64_t revision = intent.revision;
  intent.next_attempt_at_ms = std::nullopt;
  intent.last_error = "held: its basis changed (" + why +
                      "); it may have been performed, so it is not retried: waits for a person";
  EVIDENT_RETURN_IF_ERROR(tx.UpdateIntent(intent, revision));
  intent.revision = revision + 1;
  ++summary_.held;
  basis_events_.emplace_back(intent, EffectAction::kHold);
  return tx.LogIntent({.key = intent.key,
                       .action = EffectAction::kHold,
                       .by = id_,
                       .state_after = intent.state,
                       .detail = intent.last_error,
                       .at_ms = now_ms});
}

Status Runner::OnBasis(Transaction& tx, EffectIntent intent, const BasisCheck& check,
                       int64_t now_ms) {
  assert(check.basis != Basis::kHolds);
  if (check.basis == Basis::kBehind) return Postpone(tx, std::move(intent), check.why, now_ms);
  if (intent.state == EffectState::kUnknown) return Hold(tx, std::move(intent), check.why, now_ms);
  assert(intent.state == EffectState::kIntended);
  EVIDENT_RETURN_IF_ERROR(WithdrawIntent(tx, intent, id_, "withdrawn: " + check.why, now_ms));
  ++summary_.withdrawn;
  basis_events_.emplace_back(intent, EffectAction::kWithdraw);
  return Status::Ok();
}

// The first due intent of a configured effect whose basis holds, committed as an unknown attempt
// of this runner before the call (a crash during the call leaves exactly that). Due intents
// whose basis does not hold are postponed, withdrawn or held on the way.
Result<std::optional<Claim>> Runner::ClaimNext(Transaction& tx, int64_t now_ms) {
  EVIDENT_ASSIGN_OR_RETURN(const Rows<EffectIntent> due, tx.DueIntents(now_ms, kDueRowsMax));
  for (const EffectIntent& intent : due.rows) {
    Result<std::optional<Claim>> taken = TakeRow(tx, intent, now_ms);
    // Another runner, a person or a compensation changed this intent since it was listed (a
    // store that processes share): it is theirs now; the next row is looked at.
    if (!taken.ok() && taken.status().code() == Code::kAborted) continue;
    EVIDENT_RETURN_IF_ERROR(taken.status());
    if (*taken) return taken;
    acted_ = true;  // put off, postponed, withdrawn or held: more may be due behind it
  }
  return std::optional<Claim>();
}

// One due intent: set aside, postponed, withdrawn or held (nullopt), or claimed.
Result<std::optional<Claim>> Runner::TakeRow(Transaction& tx, const EffectIntent& intent,
                                             int64_t now_ms) {
  const ConsumerConfig* consumer = config_.Find(intent.consumer);
  const EffectConfig* effect = consumer == nullptr ? nullptr : consumer->FindEffect(intent.effect);
  if (effect == nullptr) {
    EVIDENT_RETURN_IF_ERROR(SetAside(tx, intent, now_ms));
    return std::optional<Claim>();
  }
  assert(intent.state == EffectState::kIntended || intent.state == EffectState::kUnknown);
  EVIDENT_ASSIGN_OR_RETURN(const BasisCheck check, CheckBasis(tx, *consumer, *effect, intent));
  if (check.basis != Basis::kHolds) {
    EVIDENT_RETURN_IF_ERROR(OnBasis(tx, intent, check, now_ms));
    return std::optional<Claim>();
  }
  Claim claim{intent, effect, intent.state == EffectState::kUnknown};
  EffectIntent& c = claim.intent;
  c.state = EffectState::kUnknown;
  c.attempts += 1;
  c.last_attempt_at_ms = now_ms;
  c.claimed_by = id_;
  // Only a target that honours the key may be called again after a lost runner.
  const bool retakable =
      effect->target.idempotent_target && c.attempts < effect->retry.attempts_max;
  c.next_attempt_at_ms =
      retakable
          ? std::optional<int64_t>(now_ms + effect->target.timeout_ms + options_.claim_margin_ms)
          : std::nullopt;
  EVIDENT_RETURN_IF_ERROR(tx.UpdateIntent(c, intent.revision));
  c.revision = intent.revision + 1;
  EVIDENT_RETURN_IF_ERROR(tx.LogIntent({.key = c.key,
                                        .action = EffectAction::kAttempt,
                                        .by = id_,
                                        .state_after = EffectState::kUnknown,
                                        .detail = kClaimDetailPrefix + effect->target.url +
                                                  " (attempt " + std::to_string(c.attempts) + ")",
                                        .at_ms = now_ms}));
  return std::optional<Claim>(std::move(claim));
}

// Records the answer, unless the intent changed since the claim (a person resolved it, or
// another runner took it over after the lease): then only its log says what came back.
Status Runner::Record(Transaction& tx, const Claim& claim, const CallResult& result, int64_t now_ms,
                      EffectIntent& after, AttemptVerdict& verdict) {
  const EffectIntent& c = claim.intent;
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> current, tx.FindIntent(c.key));
  if (!current || current->retained) {
    return Status::Internal("effect intent " + c.key + " vanished during its call");
  }
  verdict = JudgeAttempt(result, *claim.effect, c.attempts, now_ms, claim.earlier_attempt_unknown);
  if (current->revision != c.revision) {
    ++summary_.superseded;
    after = *current;
    return tx.LogIntent(
        {.key = c.key,
         .action = EffectAction::kAttempt,
         .by = id_,
         .state_after = current->state,
         .http_status = result.outcome == CallOutcome::kAnswered
                            ? std::optional<int64_t>(result.http_status)
                            : std::nullopt,
         .detail = "answer not recorded, the intent changed during the call: " + verdict.detail,
         .at_ms = now_ms});
  }
  after = c;
  after.state = verdict.state;
  after.next_attempt_at_ms = verdict.next_attempt_at_ms;
  after.last_error = verdict.state == EffectState::kDone ? std::string() : verdict.detail;
  after.http_status = result.outcome == CallOutcome::kAnswered
                          ? std::optional<int64_t>(result.http_status)
                          : std::nullopt;
  after.response_digest = result.digest;
  const bool settled = verdict.state == EffectState::kDone || verdict.state == EffectState::kFailed;
  after.settled_at_ms = settled ? std::optional<int64_t>(now_ms) : std::nullopt;
  EVIDENT_RETURN_IF_ERROR(tx.UpdateIntent(after, c.revision));
  after.revision = c.revision + 1;
  if (verdict.state == EffectState::kDone) {
    EVIDENT_RETURN_IF_ERROR(tx.PutEvidence(EvidenceOfDone(c, now_ms, verdict.detail)));
  }
  EVIDENT_RETURN_IF_ERROR(tx.LogIntent({.key = c.key,
                                        .action = EffectAction::kAttempt,
                                        .by = id_,
                                        .state_after = verdict.state,
                                        .http_status = after.http_status,
                                        .detail = verdict.detail,
                                        .at_ms = now_ms}));
  // A compensation that waited for this outcome acts now (a claim made before the cancel
  // committed, answered after it: the window docs/effects.md states).
  return SettleCompensations(tx, after, now_ms).status();
}

void Count(const AttemptVerdict& verdict, const CallResult& result, EffectRunSummary& summary) {
  ++summary.attempts;
  if (result.outcome == CallOutcome::kNotSent) ++summary.not_sent;
  switch (verdict.state) {
    case EffectState::kDone:
      ++summary.done;
      break;
    case EffectState::kFailed:
      ++summary.failed;
      break;
    case EffectState::kUnknown:
      ++summary.unknown;
      break;
    case EffectState::kIntended:
    case EffectState::kWithdrawn:
      break;
  }
}

Result<EffectRunSummary> Runner::Run() {
  const int64_t start_ms = clock_.NowMs();
  int64_t active_ms = start_ms;  // the last time an intent was due
  while (options_.cancel == nullptr || !options_.cancel->cancelled()) {
    std::optional<Claim> claim;
    const int64_t unconfigured = summary_.unconfigured;
    const EffectRunSummary before = summary_;
    EVIDENT_RETURN_IF_ERROR(
        Transact(RetryingConflicts(options_.busy_retry), [&](Transaction& tx) -> Status {
          summary_ = before;  // a retried transaction counts once
          summary_.unconfigured = unconfigured;
          basis_events_.clear();
          acted_ = false;
          EVIDENT_ASSIGN_OR_RETURN(claim, ClaimNext(tx, clock_.NowMs()));
          return Status::Ok();
        }));
    if (options_.on_basis) {
      for (const auto& [intent, action] : basis_events_) options_.on_basis(intent, action);
    }
    basis_events_.clear();
    if (summary_.withdrawn != before.withdrawn || summary_.held != before.held) {
      active_ms = clock_.NowMs();  // a decision about an intent; a postponement is none
    }
    if (!claim) {
      // Due intents behind the ones just put off or postponed are looked at at once.
      if (acted_) continue;
      const int64_t now_ms = clock_.NowMs();
      if (options_.until_idle_ms >= 0 && now_ms - active_ms >= options_.until_idle_ms) break;
      SleepUnlessCancelled(clock_, options_.poll_ms, options_.cancel);
      continue;
    }
    const EffectConfig& effect = *claim->effect;
    // A runner paused between its claim and the call (a stopped process, a suspended machine)
    // may have lost the claim to another runner, or a person may have resolved it once its
    // window passed (ResolveEffect's in_flight_ms): it does not call after the window, whatever
    // the target.
    const int64_t lease_end_ms =
        *claim->intent.last_attempt_at_ms + effect.target.timeout_ms + options_.claim_margin_ms;
    if (clock_.NowMs() > lease_end_ms) {
      ++summary_.superseded;
      continue;
    }
    EffectCall call{effect.target.url, claim->intent.key, claim->intent.request,
                    effect.target.timeout_ms, options_.abandon};
    Span span = AttemptSpan(options_.tracer, claim->intent, effect, call);
    const CallResult result = transport_.Post(call);
    if (options_.tracer != nullptr) {
      span.end_unix_ns = UnixNanosNow();
      span.int_attributes.emplace_back("http.response.status_code", result.http_status);
      const bool answered_2xx = result.outcome == CallOutcome::kAnswered &&
                                result.http_status >= 200 && result.http_status <= 299;
      span.error = !answered_2xx;
      if (span.error) span.status_message = AnswerText(result);
      options_.tracer->Record(std::move(span));
    }
    EffectIntent after;
    AttemptVerdict verdict;
    EVIDENT_RETURN_IF_ERROR(Transact(kRecordRetry, [&](Transaction& tx) {
      return Record(tx, *claim, result, clock_.NowMs(), after, verdict);
    }));
    Count(verdict, result, summary_);
    if (options_.on_attempt) options_.on_attempt(after, verdict);
    active_ms = clock_.NowMs();
  }
  summary_.stopped = options_.cancel != nullptr && options_.cancel->cancelled();
  summary_.seconds = static_cast<double>(clock_.NowMs() - start_ms) / 1000.0;
  return summary_;
}

}  // namespace

AttemptVerdict JudgeAttempt(const CallResult& result, const EffectConfig& effect, int64_t attempts,
                            int64_t now_ms, bool earlier_attempt_unknown) {
  AttemptVerdict v;
  v.detail = AnswerText(result);
  const bool more = attempts < effect.retry.attempts_max;
  const int64_t later_ms = now_ms + RetryBackoffMs(effect.retry, static_cast<int>(attempts));
  const int64_t status = result.http_status;
  if (result.outcome == CallOutcome::kAnswered && status >= 200 && status <= 299) {
    v.state = EffectState::kDone;
    return v;
  }
  // 409 to a retry of a key the target honours: the draft standard of Idempotency-Key (and
  // Stripe) answer so while the first request with that key is still in progress. Not a refusal.
  const bool key_in_progress = status == 409 && attempts > 1 && effect.target.idempotent_target;
  if (result.outcome == CallOutcome::kAnswered && status >= 400 && status <= 499 && status != 408 &&
      status != 429 && !key_in_progress) {
    v.state = EffectState::kFailed;
    return v;
  }
  if (result.outcome == CallOutcome::kNotSent && earlier_attempt_unknown) {
    // This call never left, but an earlier one may have acted: still unknown, never `intended`
    // (which would let a compensation withdraw, as never performed, what may have been done).
    v.state = EffectState::kUnknown;
    v.detail += "; an earlier attempt's outcome is unknown: it stays unknown";
    if (more) {
      v.next_attempt_at_ms = later_ms;
    } else {
      v.detail += "; retry limit (" + std::to_string(effect.retry.attempts_max) +
                  " attempts) reached: waits for reconciliation";
    }
    return v;
  }
  if (result.outcome == CallOutcome::kNotSent) {
    v.state = EffectState::kIntended;  // it never reached the target: nothing is unknown
    if (more) {
      v.next_attempt_at_ms = later_ms;
    } else {
      v.detail += "; not sent after " + std::to_string(attempts) + " attempts: waits for a person";
    }
    return v;
  }
  v.state = EffectState::kUnknown;
  if (effect.target.idempotent_target && more) {
    v.next_attempt_at_ms = later_ms;
  } else {
    v.detail += effect.target.idempotent_target
                    ? "; retry limit (" + std::to_string(effect.retry.attempts_max) +
                          " attempts) reached: waits for reconciliation"
                    : "; the target does not declare that it honours Idempotency-Key: waits "
                      "for reconciliation";
  }
  return v;
}

int64_t CallWindowMs(const Config& config, std::string_view consumer, std::string_view effect,
                     int64_t claim_margin_ms) {
  const ConsumerConfig* c = config.Find(consumer);
  const EffectConfig* e = c == nullptr ? nullptr : c->FindEffect(effect);
  return (e == nullptr ? kEffectTimeoutMsLimit : e->target.timeout_ms) + claim_margin_ms;
}

Result<int64_t> CallWindowOfIntent(Snapshot& snapshot, const Config* config, std::string_view key,
                                   int64_t claim_margin_ms) {
  if (config == nullptr) return kEffectTimeoutMsLimit + claim_margin_ms;
  EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> intent, snapshot.FindIntent(key));
  if (!intent) return kEffectTimeoutMsLimit + claim_margin_ms;  // the resolution says "no such"
  return CallWindowMs(*config, intent->consumer, intent->effect, claim_margin_ms);
}

Result<EffectRunSummary> RunEffects(const Config& config, Store& store, EffectTransport& transport,
                                    const EffectRunOptions& options) {
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  if (options.poll_ms < 1) return Status::InvalidArgument("poll_ms must be at least 1");
  Runner runner(config, store, transport, options, clock);
  return runner.Run();
}

namespace {

// A claim's log entry, as TakeRow writes it ("POST <url> (attempt N)"), apart from the answer's.
bool IsClaimEntry(const EffectLogEntry& e) {
  return e.action == EffectAction::kAttempt && !e.http_status &&
         e.detail.rfind(kClaimDetailPrefix, 0) == 0 && e.detail.back() == ')';
}

// Whether `intent`'s last claim may still be in flight: its runner logged no answer after it (in
// `snapshot_log`, read before the resolving transaction; a late answer of an earlier claim, by
// another runner, is not this claim's), or it is newer than that log, and it began less than
// `in_flight_ms` before `now_ms`.
bool ClaimMayBeInFlight(const EffectIntent& intent, const std::vector<EffectLogEntry>& snapshot_log,
                        int64_t in_flight_ms, int64_t now_ms) {
  if (in_flight_ms <= 0 || !intent.last_attempt_at_ms) return false;
  if (*intent.last_attempt_at_ms + in_flight_ms <= now_ms) return false;
  int64_t claims = 0;
  bool answered = true;
  std::string_view claimed_by;  // the runner of the last claim
  for (const EffectLogEntry& e : snapshot_log) {
    if (e.action != EffectAction::kAttempt) continue;
    if (IsClaimEntry(e)) {
      ++claims;
      answered = false;
      claimed_by = e.by;
    } else if (e.by == claimed_by) {
      answered = true;
    }
  }
  return intent.attempts > claims || !answered;
}

}  // namespace

Result<EffectIntent> ResolveEffect(Store& store, const EffectResolution& r, int64_t now_ms) {
  if (r.outcome == EffectState::kUnknown) {
    return Status::InvalidArgument(
        "an effect is resolved as done, failed or intended (call again)");
  }
  if (r.by.empty() || r.note.empty()) {
    return Status::InvalidArgument("a resolution names who checked (by) and what they saw (note)");
  }
  if (r.by.size() > kResolutionByBytesMax || r.note.size() > kResolutionNoteBytesMax) {
    return Status::InvalidArgument("a resolution's by is at most " +
                                   std::to_string(kResolutionByBytesMax) + " bytes, its note " +
                                   std::to_string(kResolutionNoteBytesMax));
  }
  std::vector<EffectLogEntry> log;  // read first: the claims it answers
  if (r.in_flight_ms > 0) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store.Read());
    EVIDENT_ASSIGN_OR_RETURN(Rows<EffectLogEntry> rows,
                             snapshot->IntentLogOf(r.key, kReadRowsMaxDefault));
    log = std::move(rows.rows);
  }
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store.Begin());
  EVIDENT_ASSIGN_OR_RETURN(std::optional<EffectIntent> found, tx->FindIntent(r.key));
  if (!found) return Status::NotFound("no effect intent with key " + r.key);
  EffectIntent intent = std::move(*found);
  if (Settled(intent.state)) {
    return Status::FailedPrecondition(
        "effect intent " + r.key + " is already " + std::string(EffectStateName(intent.state)) +
        (intent.retained ? " (removed by retention; its key is kept as a digest)" : ""));
  }
  if (ClaimMayBeInFlight(intent, log, r.in_flight_ms, now_ms)) {
    return Status::FailedPrecondition(
        "effect intent " + r.key + ": attempt " + std::to_string(intent.attempts) + " by " +
        intent.claimed_by + " began at " + rfc3339::FormatMs(*intent.last_attempt_at_ms) +
        " and has no answer recorded: its call may still be in flight, and the other side may "
        "still act; resolve it after " +
        rfc3339::FormatMs(*intent.last_attempt_at_ms + r.in_flight_ms) +
        " (no runner calls on that claim after then)");
  }
  const int64_t revision = intent.revision;
  const std::string detail = (r.outcome == EffectState::kIntended
                                  ? std::string("to be called again")
                                  : "resolved " + std::string(EffectStateName(r.outcome))) +
                             " by " + r.by + ": " + r.note;
  intent.state = r.outcome;
  // Intended: the person found that the other side never performed it; a runner calls again,
  // with the same key, now (and checks its basis first). Otherwise the intent is settled.
  const bool again = r.outcome == EffectState::kIntended;
  intent.next_attempt_at_ms = again ? std::optional<int64_t>(now_ms) : std::nullopt;
  intent.settled_at_ms = again ? std::nullopt : std::optional<int64_t>(now_ms);
  intent.last_error = r.outcome == EffectState::kDone ? std::string() : detail;
  EVIDENT_RETURN_IF_ERROR(tx->UpdateIntent(intent, revision));
  intent.revision = revision + 1;
  if (r.outcome == EffectState::kDone) {
    EVIDENT_RETURN_IF_ERROR(tx->PutEvidence(EvidenceOfDone(intent, now_ms, detail)));
  }
  EVIDENT_RETURN_IF_ERROR(tx->LogIntent({.key = intent.key,
                                         .action = EffectAction::kResolve,
                                         .by = r.by,
                                         .state_after = r.outcome,
                                         .detail = r.note,
                                         .at_ms = now_ms}));
  // A compensation that waited for this reconciliation acts in the same transaction.
  EVIDENT_RETURN_IF_ERROR(SettleCompensations(*tx, intent, now_ms).status());
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  return intent;
}

namespace {

void OptionalTime(json::Writer& w, std::string_view name, const std::optional<int64_t>& at_ms) {
  w.Key(name);
  at_ms ? w.String(rfc3339::FormatMs(*at_ms)) : w.Null();
}

void OptionalInt(json::Writer& w, std::string_view name, const std::optional<int64_t>& value) {
  w.Key(name);
  value ? w.Int(*value) : w.Null();
}

}  // namespace

void AppendEffectJson(const EffectIntent& e, const std::vector<EffectLogEntry>* log,
                      std::string& out) {
  json::Writer w(out);
  w.BeginObject().Field("key", e.key).Field("effect", e.effect).Field("consumer", e.consumer);
  if (e.retained) {  // only what its key's digest keeps
    w.Field("state", EffectStateName(e.state));
    OptionalTime(w, "settled_at", e.settled_at_ms);
    w.Field("retained", true).EndObject();
    return;
  }
  w.Field("subject", e.subject).Field("source", e.source).Field("id", e.event_id);
  OptionalInt(w, "subject_version", e.subject_version);
  w.Field("state", EffectStateName(e.state)).Field("attempts", e.attempts).Key("last_error");
  e.last_error.empty() ? w.Null() : w.String(e.last_error);
  OptionalInt(w, "http_status", e.http_status);
  w.Key("response_digest");
  e.response_digest.empty() ? w.Null() : w.String(e.response_digest);
  w.Field("intended_at", rfc3339::FormatMs(e.intended_at_ms));
  OptionalTime(w, "last_attempt_at", e.last_attempt_at_ms);
  OptionalTime(w, "next_attempt_at", e.next_attempt_at_ms);
  OptionalTime(w, "settled_at", e.settled_at_ms);
  w.Field("waits_for_reconciliation", !e.next_attempt_at_ms && !Settled(e.state));
  OptionalInt(w, "basis_version", e.basis_version);
  w.Key("claimed_by");
  e.claimed_by.empty() ? w.Null() : w.String(e.claimed_by);
  if (log != nullptr) {
    w.Key("log").BeginArray();
    for (const EffectLogEntry& l : *log) {
      w.BeginObject().Field("action", EffectActionName(l.action)).Field("by", l.by);
      w.Field("state_after", EffectStateName(l.state_after));
      OptionalInt(w, "http_status", l.http_status);
      w.Field("detail", l.detail).Field("at", rfc3339::FormatMs(l.at_ms)).EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

void AppendCompensationJson(const CompensationRecord& c, std::string& out) {
  json::Writer w(out);
  w.BeginObject().Field("key", c.key).Field("recorded_by", CompensationByName(c.recorded_by));
  w.Key("consumer");
  c.consumer.empty() ? w.Null() : w.String(c.consumer);
  w.Field("subject", c.subject).Field("owner_source", c.owner_source);
  OptionalInt(w, "owner_version", c.owner_version);
  const auto optional_text = [&](std::string_view name, const std::string& value) {
    w.Key(name);
    value.empty() ? w.Null() : w.String(value);
  };
  optional_text("decision", c.decision);
  optional_text("id", c.event_id);
  optional_text("type", c.type);
  optional_text("compensates", c.compensates);
  w.Key("covers").BeginArray();
  if (!c.covers.empty()) w.String(c.covers);
  w.EndArray();
  optional_text("compensate_with", c.compensate_with);
  optional_text("compensating_key", c.compensating_key);
  w.Field("state", CompensationStateName(c.state));
  optional_text("detail", c.detail);
  w.Field("recorded_at", rfc3339::FormatMs(c.recorded_at_ms)).EndObject();
}

}  // namespace evident
