// Effects in the library: the rules that turn an answer into a state (JudgeAttempt), the runner
// against a scripted transport on a memory store under a manual clock (claims, answers recorded
// or superseded, effects no longer configured, requests never sent), resolutions, the key
// templates and conditions of the configuration, and the pipeline's refusal of an event whose
// key cannot be built. The HTTP transport itself is exercised end to end against a real local
// server in tests/effects_cli_test.cc.
#include "evident/effects.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>

#include "effects/compensation.h"
#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/fault_store.h"
#include "evident/store_memory.h"

namespace evident {
namespace {

constexpr int64_t kNow = 1'000'000;

EffectConfig Effect(bool idempotent, int attempts_max = 3) {
  EffectConfig e;
  e.name = "reserve-stock";
  e.target.url = "http://127.0.0.1:9/r";
  e.target.timeout_ms = 100;
  e.target.idempotent_target = idempotent;
  e.retry =
      RetryPolicy{.attempts_max = attempts_max, .backoff_initial_ms = 10, .backoff_max_ms = 40};
  return e;
}

CallResult Answer(int64_t status) {
  return {.outcome = CallOutcome::kAnswered, .http_status = status, .digest = "sha256:00"};
}

TEST(JudgeAttempt, EveryAnswerHasItsState) {
  const EffectConfig idempotent = Effect(true), plain = Effect(false);
  for (int64_t status : {200, 201, 204, 299}) {
    const AttemptVerdict v = JudgeAttempt(Answer(status), plain, 1, kNow);
    EXPECT_EQ(v.state, EffectState::kDone) << status;
    EXPECT_FALSE(v.next_attempt_at_ms.has_value());
    EXPECT_EQ(v.detail, "HTTP " + std::to_string(status) + ", sha256:00");
  }
  for (int64_t status : {400, 404, 409, 422, 499}) {
    const AttemptVerdict v = JudgeAttempt(Answer(status), idempotent, 1, kNow);
    EXPECT_EQ(v.state, EffectState::kFailed) << status;
    EXPECT_FALSE(v.next_attempt_at_ms.has_value());
    EXPECT_EQ(JudgeAttempt(Answer(status), plain, 2, kNow).state, EffectState::kFailed);
  }
  // 409 to a retry on a target that honours the key: the first request with that key is still
  // in progress there. Unknown, and tried again.
  AttemptVerdict in_progress = JudgeAttempt(Answer(409), idempotent, 2, kNow);
  EXPECT_EQ(in_progress.state, EffectState::kUnknown);
  EXPECT_EQ(in_progress.next_attempt_at_ms, kNow + 20);
  EXPECT_EQ(JudgeAttempt(Answer(422), idempotent, 2, kNow).state, EffectState::kFailed);
  const CallResult unknowns[] = {Answer(408),
                                 Answer(429),
                                 Answer(500),
                                 Answer(503),
                                 Answer(302),
                                 {.outcome = CallOutcome::kTimeout, .error = "no answer"},
                                 {.outcome = CallOutcome::kReset, .error = "reset by peer"}};
  for (const CallResult& r : unknowns) {
    SCOPED_TRACE(r.http_status);
    AttemptVerdict v = JudgeAttempt(r, idempotent, 1, kNow);
    EXPECT_EQ(v.state, EffectState::kUnknown);
    EXPECT_EQ(v.next_attempt_at_ms, kNow + 10);  // the same key, after the backoff
    v = JudgeAttempt(r, idempotent, 2, kNow);
    EXPECT_EQ(v.next_attempt_at_ms, kNow + 20);
    v = JudgeAttempt(r, idempotent, 3, kNow);  // the limit: waits for a person
    EXPECT_EQ(v.state, EffectState::kUnknown);
    EXPECT_FALSE(v.next_attempt_at_ms.has_value());
    EXPECT_NE(v.detail.find("retry limit (3 attempts) reached"), std::string::npos) << v.detail;
    v = JudgeAttempt(r, plain, 1, kNow);  // never retried without the declaration
    EXPECT_EQ(v.state, EffectState::kUnknown);
    EXPECT_FALSE(v.next_attempt_at_ms.has_value());
    EXPECT_NE(v.detail.find("does not declare"), std::string::npos) << v.detail;
  }
  // Never sent: nothing is unknown, so even a plain target is tried again, up to the limit.
  const CallResult refused{.outcome = CallOutcome::kNotSent, .error = "Couldn't connect"};
  AttemptVerdict v = JudgeAttempt(refused, plain, 1, kNow);
  EXPECT_EQ(v.state, EffectState::kIntended);
  EXPECT_EQ(v.next_attempt_at_ms, kNow + 10);
  v = JudgeAttempt(refused, plain, 3, kNow);
  EXPECT_EQ(v.state, EffectState::kIntended);
  EXPECT_FALSE(v.next_attempt_at_ms.has_value());
}

// A transport that answers from a script and lets a test act during a call.
class ScriptedTransport final : public EffectTransport {
 public:
  CallResult Post(const EffectCall& call) override {
    calls.push_back(call);
    if (during_call) during_call(call);
    if (script.empty()) return Answer(200);
    CallResult r = script.front();
    script.pop_front();
    return r;
  }
  std::deque<CallResult> script;
  std::vector<EffectCall> calls;
  std::function<void(const EffectCall&)> during_call;
};

class EffectRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    database_ = NewMemoryDatabase();
    store_ = OpenMemoryStore(database_).value();
    ConsumerConfig consumer;
    consumer.contract.id = "fulfillment";
    consumer.effects.push_back(Effect(true));
    EffectConfig plain = Effect(false);
    plain.name = "notify";
    consumer.effects.push_back(plain);
    config_.path = "evident.yaml";
    config_.consumers.push_back(consumer);
    clock_.Advance(kNow);
  }
  // An intent of `effect` for `subject`, due now, with a projection to hold its evidence.
  void Intend(const std::string& key, const std::string& effect = "reserve-stock",
              const std::string& subject = "order-1") {
    auto tx = store_->Begin().value();
    Projection p{.consumer = "fulfillment", .subject = subject, .version = 1, .state = "paid"};
    if (!tx->FindIntent(key).value()) {
      Projection existing;
      if (!tx->ReadProjection("fulfillment", subject, existing).value()) {
        ASSERT_TRUE(tx->PutProjection(p, std::nullopt).ok());
      }
    }
    EffectIntent intent{.key = key,
                        .effect = effect,
                        .consumer = "fulfillment",
                        .subject = subject,
                        .source = "s",
                        .event_id = "e-" + key,
                        .subject_version = 1,
                        .request = "{}",
                        .intended_at_ms = clock_.NowMs(),
                        .next_attempt_at_ms = clock_.NowMs()};
    ASSERT_EQ(tx->InsertIntent(intent).value(), Insert::kInserted);
    ASSERT_TRUE(tx->Commit().ok());
  }
  EffectRunSummary Run(int64_t until_idle_ms = 100) {
    EffectRunOptions options{.runner_id = "r1",
                             .clock = &clock_,
                             .until_idle_ms = until_idle_ms,
                             .poll_ms = 10,
                             .claim_margin_ms = 50};
    auto summary = RunEffects(config_, *store_, transport_, options);
    EXPECT_TRUE(summary.ok()) << summary.status().ToString();
    return summary.ok() ? *summary : EffectRunSummary{};
  }
  EffectIntent Find(const std::string& key) {
    return store_->Read().value()->FindIntent(key).value().value();
  }
  std::vector<EffectLogEntry> Log(const std::string& key) {
    return store_->Read().value()->IntentLogOf(key).value().rows;
  }

  std::shared_ptr<MemoryDatabase> database_;
  std::unique_ptr<Store> store_;
  Config config_;
  ManualClock clock_;
  ScriptedTransport transport_;
};

TEST_F(EffectRunner, ADoneIntentRecordsItsEvidenceAndEveryStepIsLogged) {
  Intend("reserve:order-1:v1");
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.attempts, 1);
  EXPECT_EQ(s.done, 1);
  ASSERT_EQ(transport_.calls.size(), 1u);
  EXPECT_EQ(transport_.calls[0].key, "reserve:order-1:v1");
  EXPECT_EQ(transport_.calls[0].url, "http://127.0.0.1:9/r");
  EXPECT_EQ(transport_.calls[0].body, "{}");
  EXPECT_EQ(transport_.calls[0].timeout_ms, 100);
  const EffectIntent intent = Find("reserve:order-1:v1");
  EXPECT_EQ(intent.state, EffectState::kDone);
  EXPECT_EQ(intent.attempts, 1);
  EXPECT_EQ(intent.http_status, 200);
  EXPECT_EQ(intent.response_digest, "sha256:00");
  EXPECT_EQ(intent.claimed_by, "r1");
  EXPECT_TRUE(intent.settled_at_ms.has_value());
  EXPECT_FALSE(intent.next_attempt_at_ms.has_value());
  const auto evidence = store_->Read().value()->EvidenceOf("fulfillment", "order-1").value().rows;
  ASSERT_EQ(evidence.size(), 1u);
  EXPECT_EQ(evidence[0].name, "reserve-stock");
  EXPECT_EQ(evidence[0].event_id, "e-reserve:order-1:v1");
  EXPECT_EQ(evidence[0].detail, "HTTP 200, sha256:00");
  const std::vector<EffectLogEntry> log = Log("reserve:order-1:v1");
  ASSERT_EQ(log.size(), 2u);  // the claim, then the answer
  EXPECT_EQ(log[0].state_after, EffectState::kUnknown);
  EXPECT_EQ(log[0].detail, "POST http://127.0.0.1:9/r (attempt 1)");
  EXPECT_EQ(log[1].state_after, EffectState::kDone);
  EXPECT_EQ(log[1].http_status, 200);
}

// Unknown on an idempotent target: called again with the same key after the backoff, until
// done; a plain target's unknown intent is left for a person.
TEST_F(EffectRunner, UnknownIsRetriedWithTheSameKeyOnlyOnAnIdempotentTarget) {
  Intend("reserve:order-1:v1");
  Intend("notify:order-1:v1", "notify");
  transport_.script = {{.outcome = CallOutcome::kTimeout, .error = "t"},
                       Answer(503),
                       {.outcome = CallOutcome::kReset, .error = "r"},
                       Answer(200)};
  const EffectRunSummary s = Run();
  ASSERT_EQ(transport_.calls.size(), 4u);
  EXPECT_EQ(transport_.calls[0].key, "reserve:order-1:v1");
  EXPECT_EQ(transport_.calls[1].key, "notify:order-1:v1");
  EXPECT_EQ(transport_.calls[2].key, "reserve:order-1:v1");
  EXPECT_EQ(transport_.calls[3].key, "reserve:order-1:v1");
  EXPECT_EQ(s.done, 1);
  EXPECT_EQ(s.unknown, 3);
  EXPECT_EQ(Find("reserve:order-1:v1").state, EffectState::kDone);
  EXPECT_EQ(Find("reserve:order-1:v1").attempts, 3);
  const EffectIntent notify = Find("notify:order-1:v1");
  EXPECT_EQ(notify.state, EffectState::kUnknown);
  EXPECT_EQ(notify.attempts, 1);
  EXPECT_FALSE(notify.next_attempt_at_ms.has_value());
  EXPECT_EQ(notify.http_status, 503);
}

// A person resolves the intent while its call is in flight: the answer that comes back is not
// recorded over the resolution, only logged.
TEST_F(EffectRunner, AnAnswerAfterAResolutionIsLoggedNotRecorded) {
  Intend("reserve:order-1:v1");
  auto second = OpenMemoryStore(database_).value();  // the operator's process
  transport_.script = {Answer(409)};
  transport_.during_call = [&](const EffectCall& call) {
    const auto resolved = ResolveEffect(
        *second, {.key = call.key, .outcome = EffectState::kDone, .by = "ops", .note = "seen"},
        kNow);
    ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  };
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.superseded, 1);
  const EffectIntent intent = Find("reserve:order-1:v1");
  EXPECT_EQ(intent.state, EffectState::kDone);
  const std::vector<EffectLogEntry> log = Log("reserve:order-1:v1");
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[1].action, EffectAction::kResolve);
  EXPECT_EQ(log[1].by, "ops");
  EXPECT_EQ(log[2].action, EffectAction::kAttempt);
  EXPECT_EQ(log[2].http_status, 409);
  EXPECT_NE(log[2].detail.find("answer not recorded"), std::string::npos) << log[2].detail;
}

TEST_F(EffectRunner, AnIntentOfAnEffectNoLongerConfiguredIsSetAside) {
  Intend("gone:order-1:v1", "gift-wrap");
  Intend("reserve:order-1:v1");
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.unconfigured, 1);
  EXPECT_EQ(s.done, 1);
  ASSERT_EQ(transport_.calls.size(), 1u);
  // Put off, not dropped: a runner whose configuration has the effect takes it meanwhile.
  const EffectIntent gone = Find("gone:order-1:v1");
  EXPECT_EQ(gone.state, EffectState::kIntended);
  EXPECT_EQ(gone.attempts, 0);
  ASSERT_TRUE(gone.next_attempt_at_ms.has_value());
  EXPECT_GE(*gone.next_attempt_at_ms, kNow + 60'000);
  EXPECT_NE(gone.last_error.find("is not in evident.yaml of runner r1: put off"), std::string::npos)
      << gone.last_error;
  EXPECT_EQ(Log("gone:order-1:v1").size(), 1u);
  clock_.Advance(61'000);
  EXPECT_EQ(Run().unconfigured, 1);
  EXPECT_EQ(Log("gone:order-1:v1").size(), 1u);  // said once
}

TEST_F(EffectRunner, ARequestNeverSentIsIntendedAgainThenWaitsAtTheLimit) {
  Intend("notify:order-1:v1", "notify");
  transport_.script = {{.outcome = CallOutcome::kNotSent, .error = "Couldn't connect"},
                       {.outcome = CallOutcome::kNotSent, .error = "Couldn't connect"},
                       {.outcome = CallOutcome::kNotSent, .error = "Couldn't connect"}};
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.not_sent, 3);
  EXPECT_EQ(transport_.calls.size(), 3u);
  const EffectIntent intent = Find("notify:order-1:v1");
  EXPECT_EQ(intent.state, EffectState::kIntended);
  EXPECT_EQ(intent.attempts, 3);
  EXPECT_FALSE(intent.next_attempt_at_ms.has_value());
  EXPECT_NE(intent.last_error.find("waits for a person"), std::string::npos) << intent.last_error;
}

// A claim with no answer may be a call still in flight: a person's resolution waits out the call's
// timeout plus the claim margin (in_flight_ms), so that "call again" cannot perform twice what a
// target that does not honour the key is performing right now. After the answer, or once a dead
// runner's window has passed, the resolution goes through.
TEST_F(EffectRunner, AResolutionWaitsWhileACallMayBeInFlight) {
  Intend("notify:order-1:v1", "notify");
  const EffectResolution again{.key = "notify:order-1:v1",
                               .outcome = EffectState::kIntended,
                               .by = "ops",
                               .note = "not in the other side's records",
                               .in_flight_ms = 150};
  Status during = Status::Ok();
  transport_.during_call = [&](const EffectCall&) {
    during = ResolveEffect(*store_, again, clock_.NowMs()).status();
  };
  transport_.script = {Answer(503)};
  Run();
  EXPECT_EQ(during.code(), Code::kFailedPrecondition) << during.ToString();
  EXPECT_NE(during.message().find("may still be in flight"), std::string::npos)
      << during.ToString();
  ASSERT_EQ(Find("notify:order-1:v1").state, EffectState::kUnknown);  // its answer recorded
  transport_.during_call = nullptr;
  EXPECT_TRUE(ResolveEffect(*store_, again, clock_.NowMs()).ok());  // answered: no wait

  // A runner that died after its claim: refused within the window, accepted after it.
  Intend("notify:order-2:v1", "notify", "order-2");
  {
    auto tx = store_->Begin().value();
    EffectIntent claimed = tx->FindIntent("notify:order-2:v1").value().value();
    const int64_t revision = claimed.revision;
    claimed.state = EffectState::kUnknown;
    claimed.attempts = 1;
    claimed.last_attempt_at_ms = clock_.NowMs();
    claimed.claimed_by = "r-dead";
    claimed.next_attempt_at_ms.reset();
    ASSERT_TRUE(tx->UpdateIntent(claimed, revision).ok());
    ASSERT_TRUE(tx->LogIntent({.key = claimed.key,
                               .action = EffectAction::kAttempt,
                               .by = "r-dead",
                               .state_after = EffectState::kUnknown,
                               .detail = "POST http://127.0.0.1:9/r (attempt 1)",
                               .at_ms = clock_.NowMs()})
                    .ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  EffectResolution done = again;
  done.key = "notify:order-2:v1";
  done.outcome = EffectState::kDone;
  clock_.Advance(149);
  EXPECT_EQ(ResolveEffect(*store_, done, clock_.NowMs()).status().code(),
            Code::kFailedPrecondition);
  clock_.Advance(1);
  EXPECT_TRUE(ResolveEffect(*store_, done, clock_.NowMs()).ok());
}

// The answer that ends a claim's flight is its own runner's: after another runner took an
// idempotent intent over, the first runner's late answer does not make the second claim look
// answered.
TEST_F(EffectRunner, ALateAnswerOfAnEarlierClaimDoesNotEndTheLatestOnesFlight) {
  Intend("reserve:order-1");
  const auto log = [&](const std::string& by, const std::string& detail, int64_t attempts) {
    auto tx = store_->Begin().value();
    EffectIntent intent = tx->FindIntent("reserve:order-1").value().value();
    const int64_t revision = intent.revision;
    if (attempts > intent.attempts) {  // a claim
      intent.state = EffectState::kUnknown;
      intent.attempts = attempts;
      intent.last_attempt_at_ms = clock_.NowMs();
      intent.claimed_by = by;
      ASSERT_TRUE(tx->UpdateIntent(intent, revision).ok());
    }
    ASSERT_TRUE(tx->LogIntent({.key = "reserve:order-1",
                               .action = EffectAction::kAttempt,
                               .by = by,
                               .state_after = EffectState::kUnknown,
                               .detail = detail,
                               .at_ms = clock_.NowMs()})
                    .ok());
    ASSERT_TRUE(tx->Commit().ok());
  };
  log("r1", "POST http://127.0.0.1:9/r (attempt 1)", 1);
  clock_.Advance(200);  // past r1's lease
  log("r2", "POST http://127.0.0.1:9/r (attempt 2)", 2);
  clock_.Advance(10);
  log("r1", "answer not recorded, the intent changed during the call: timeout: late", 2);
  const EffectResolution done{.key = "reserve:order-1",
                              .outcome = EffectState::kDone,
                              .by = "ops",
                              .note = "found at the stock service",
                              .in_flight_ms = 150};
  const Status during = ResolveEffect(*store_, done, clock_.NowMs()).status();
  EXPECT_EQ(during.code(), Code::kFailedPrecondition) << during.ToString();
  log("r2", "timeout: no answer", 2);  // r2's own answer
  EXPECT_TRUE(ResolveEffect(*store_, done, clock_.NowMs()).ok());
}

// A runner paused between its claim and the call (here: its claim's commit took a second) does
// not call once the claim's window has passed, on a target that does not honour the key too: a
// person may have resolved the intent since.
TEST_F(EffectRunner, ARunnerPausedPastItsClaimsWindowDoesNotCall) {
  Intend("notify:order-1:v1", "notify");
  FaultStore slow(OpenMemoryStore(database_).value(), [&](int64_t ms) { clock_.Advance(ms); });
  slow.Add({.call = StoreCall::kCommit, .nth = 1, .code = Code::kOk, .delay_ms = 1000});
  EffectRunOptions options{.runner_id = "r1",
                           .clock = &clock_,
                           .until_idle_ms = 100,
                           .poll_ms = 10,
                           .claim_margin_ms = 50};
  const auto summary = RunEffects(config_, slow, transport_, options);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_EQ(summary->superseded, 1);
  EXPECT_TRUE(transport_.calls.empty());
  const EffectIntent intent = Find("notify:order-1:v1");
  EXPECT_EQ(intent.state, EffectState::kUnknown);  // claimed, never called: a person decides
  EXPECT_EQ(intent.attempts, 1);
  EXPECT_EQ(CallWindowMs(config_, "fulfillment", "notify", 50), 150);
  EXPECT_EQ(CallWindowMs(config_, "fulfillment", "gone", 50), kEffectTimeoutMsLimit + 50);
}

// A person who found that the other side never performed it sends the intent back: a runner
// calls again at once, with the same key, and the log keeps who and why.
TEST_F(EffectRunner, AResolutionToCallAgainPutsTheIntentBackOnTheDueList) {
  Intend("notify:order-1:v1", "notify");
  transport_.script = {{.outcome = CallOutcome::kTimeout, .error = "t"}, Answer(200)};
  EXPECT_EQ(Run().unknown, 1);
  EXPECT_EQ(Find("notify:order-1:v1").state, EffectState::kUnknown);
  EXPECT_EQ(Run().attempts, 0);  // a plain target: never again by itself
  const auto again = ResolveEffect(*store_,
                                   {.key = "notify:order-1:v1",
                                    .outcome = EffectState::kIntended,
                                    .by = "ops",
                                    .note = "the mail server has no such message"},
                                   clock_.NowMs());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->state, EffectState::kIntended);
  EXPECT_EQ(again->next_attempt_at_ms, clock_.NowMs());
  EXPECT_FALSE(again->settled_at_ms.has_value());
  EXPECT_EQ(Run().done, 1);
  ASSERT_EQ(transport_.calls.size(), 2u);
  EXPECT_EQ(transport_.calls[1].key, "notify:order-1:v1");
  const EffectIntent done = Find("notify:order-1:v1");
  EXPECT_EQ(done.state, EffectState::kDone);
  EXPECT_EQ(done.attempts, 2);
  const std::vector<EffectLogEntry> log = Log("notify:order-1:v1");
  ASSERT_EQ(log.size(), 5u);  // claim, answer, resolution, claim, answer
  EXPECT_EQ(log[2].action, EffectAction::kResolve);
  EXPECT_EQ(log[2].state_after, EffectState::kIntended);
}

TEST_F(EffectRunner, ResolutionsAreCheckedAndLogged) {
  Intend("reserve:order-1:v1");
  EXPECT_EQ(ResolveEffect(*store_, {.key = "nope", .by = "a", .note = "n"}, kNow).status().code(),
            Code::kNotFound);
  EXPECT_EQ(ResolveEffect(*store_, {.key = "reserve:order-1:v1", .by = "", .note = "n"}, kNow)
                .status()
                .code(),
            Code::kInvalidArgument);
  EXPECT_EQ(
      ResolveEffect(
          *store_,
          {.key = "reserve:order-1:v1", .outcome = EffectState::kUnknown, .by = "a", .note = "n"},
          kNow)
          .status()
          .code(),
      Code::kInvalidArgument);
  const auto failed = ResolveEffect(
      *store_,
      {.key = "reserve:order-1:v1", .outcome = EffectState::kFailed, .by = "ops", .note = "gone"},
      kNow);
  ASSERT_TRUE(failed.ok()) << failed.status().ToString();
  EXPECT_EQ(failed->state, EffectState::kFailed);
  EXPECT_EQ(failed->last_error, "resolved failed by ops: gone");
  EXPECT_EQ(ResolveEffect(*store_, {.key = "reserve:order-1:v1", .by = "a", .note = "n"}, kNow)
                .status()
                .code(),
            Code::kFailedPrecondition);
  EXPECT_TRUE(store_->Read().value()->EvidenceOf("fulfillment", "order-1").value().rows.empty());
  EXPECT_EQ(Run().attempts, 0);  // settled: nothing is due
}

// --- the basis of an intent, read right before each attempt (seed 002) ---

// Sets the projection of `subject` as the pipeline would have left it.
void SetProjection(Store& store, const std::string& subject, int64_t version, int64_t owner_version,
                   const std::string& state) {
  auto tx = store.Begin().value();
  Projection p;
  const bool found = tx->ReadProjection("fulfillment", subject, p).value();
  const std::optional<int64_t> stored = found ? std::optional<int64_t>(p.version) : std::nullopt;
  p.version = version;
  p.owner_version_seen = owner_version;
  p.state = state;
  ASSERT_TRUE(tx->PutProjection(p, stored).ok());
  ASSERT_TRUE(tx->Commit().ok());
}

// A receipt of `type` applied at `version` of order-1.
void Applied(Store& store, const std::string& id, const std::string& type, int64_t version) {
  auto tx = store.Begin().value();
  LedgerEntry e{.consumer = "fulfillment",
                .source = "s",
                .event_id = id,
                .type = type,
                .subject = "order-1",
                .subject_version = version,
                .input_schema_version = 1,
                .result_version = 1,
                .projection_version = version,
                .committed_at_ms = kNow};
  ASSERT_EQ(tx->InsertLedger(e).value(), Insert::kInserted);
  ASSERT_TRUE(tx->Commit().ok());
}

// While the projection lags the owner version seen, the intent is not attempted: postponed, its
// log saying once which version it waits for; once in sync, it is performed.
TEST_F(EffectRunner, AnIntentWaitsWhileItsProjectionLagsTheOwner) {
  config_.consumers[0].contract.ordering.by_subject = true;
  Intend("reserve:order-1");
  SetProjection(*store_, "order-1", 1, 4, "awaiting-reservation");
  EffectRunSummary s = Run(2500);  // a postponed intent is looked at again every second
  EXPECT_EQ(s.attempts, 0);
  EXPECT_GE(s.postponed, 2);
  EXPECT_TRUE(transport_.calls.empty());
  EffectIntent intent = Find("reserve:order-1");
  EXPECT_EQ(intent.state, EffectState::kIntended);
  EXPECT_EQ(intent.last_error,
            "postponed: the projection of order-1 is at version 1, the owner's at 4: waits for "
            "version 2");
  std::vector<EffectLogEntry> log = Log("reserve:order-1");
  ASSERT_EQ(log.size(), 1u);  // once, however often it is looked at
  EXPECT_EQ(log[0].action, EffectAction::kPostpone);
  SetProjection(*store_, "order-1", 4, 4, "awaiting-reservation");
  clock_.Advance(1000);
  s = Run();
  EXPECT_EQ(s.done, 1);
  ASSERT_EQ(transport_.calls.size(), 1u);
  EXPECT_EQ(Find("reserve:order-1").state, EffectState::kDone);
}

// Many intents waiting on lagging projections do not hold back one that is ready, and a run that
// ends when idle does not end while it is due: postponements are not activity, but the rows
// behind them are looked at at once.
TEST_F(EffectRunner, PostponedIntentsDoNotHoldBackAReadyOne) {
  config_.consumers[0].contract.ordering.by_subject = true;
  for (int i = 0; i < 100; ++i) {
    const std::string subject = "lagging-" + std::to_string(i);
    Intend("reserve:" + subject, "reserve-stock", subject);
    SetProjection(*store_, subject, 1, 3, "paid");
  }
  clock_.Advance(1);
  Intend("reserve:order-1");  // due after all of them
  const EffectRunSummary s = Run(100);
  EXPECT_EQ(s.done, 1);
  EXPECT_GE(s.postponed, 100);
  ASSERT_EQ(transport_.calls.size(), 1u);
  EXPECT_EQ(transport_.calls[0].key, "reserve:order-1");
  // Looked at again later, the longer the older they are (a quarter of their age, at least a
  // second, at most postpone_max_ms).
  const EffectIntent lagging = Find("reserve:lagging-0");
  ASSERT_TRUE(lagging.next_attempt_at_ms.has_value());
  EXPECT_GE(*lagging.next_attempt_at_ms - lagging.intended_at_ms, 1000);
}

// The projection's state no longer one of the effect's `states`: withdrawn, never sent, with
// the reason in its last error and log.
TEST_F(EffectRunner, AnIntentWhoseStateNoLongerPermitsItIsWithdrawnNeverSent) {
  config_.consumers[0].effects[0].states = {"awaiting-reservation"};
  Intend("reserve:order-1");
  SetProjection(*store_, "order-1", 2, 2, "cancelled");
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.withdrawn, 1);
  EXPECT_EQ(s.attempts, 0);
  EXPECT_TRUE(transport_.calls.empty());
  const EffectIntent intent = Find("reserve:order-1");
  EXPECT_EQ(intent.state, EffectState::kWithdrawn);
  EXPECT_FALSE(intent.next_attempt_at_ms.has_value());
  EXPECT_TRUE(intent.settled_at_ms.has_value());
  EXPECT_EQ(intent.last_error,
            "withdrawn: the state of order-1 is now 'cancelled' (version 2), not one of: "
            "awaiting-reservation");
  const std::vector<EffectLogEntry> log = Log("reserve:order-1");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].action, EffectAction::kWithdraw);
  EXPECT_EQ(log[0].by, "r1");
  // Settled: a person cannot resolve it, no runner takes it again.
  EXPECT_EQ(ResolveEffect(*store_, {.key = "reserve:order-1", .by = "ops", .note = "n"}, kNow)
                .status()
                .code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(Run().attempts, 0);
}

// An event type listed under `withdrawn_by` applied above the intent's basis withdraws it; one
// applied at or below it (the event that intended it) does not.
TEST_F(EffectRunner, AnEventListedUnderWithdrawnByWithdrawsAnIntentMadeBeforeIt) {
  config_.consumers[0].contract.ordering.by_subject = true;
  config_.consumers[0].effects[0].withdrawn_by = {"order.cancelled"};
  Intend("reserve:order-1");                     // subject version 1: its basis
  Applied(*store_, "c1", "order.cancelled", 1);  // at the basis itself: not after it
  Applied(*store_, "p2", "order.paid", 2);       // not listed
  EffectRunSummary s = Run();
  EXPECT_EQ(s.withdrawn, 0);
  EXPECT_EQ(s.done, 1);
  Intend("reserve:order-1:v2");
  Applied(*store_, "c3", "order.cancelled", 3);
  s = Run();
  EXPECT_EQ(s.withdrawn, 1);
  EXPECT_EQ(transport_.calls.size(), 1u);
  EXPECT_EQ(Find("reserve:order-1:v2").last_error,
            "withdrawn: order.cancelled s:c3 applied at version 3, after version 1 this intent "
            "was made on");
}

// An unknown intent may have been performed: when its basis changed it is held for a person,
// not retried, even on a target that honours its key.
TEST_F(EffectRunner, AnUnknownIntentWhoseBasisChangedIsHeldForAPerson) {
  config_.consumers[0].effects[0].states = {"paid"};
  Intend("reserve:order-1");
  transport_.script = {Answer(503)};
  transport_.during_call = [&](const EffectCall&) {
    transport_.during_call = nullptr;
    SetProjection(*store_, "order-1", 2, 2, "cancelled");
  };
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.unknown, 1);
  EXPECT_EQ(s.held, 1);
  EXPECT_EQ(transport_.calls.size(), 1u);
  const EffectIntent intent = Find("reserve:order-1");
  EXPECT_EQ(intent.state, EffectState::kUnknown);
  EXPECT_FALSE(intent.next_attempt_at_ms.has_value());
  EXPECT_NE(intent.last_error.find("held: its basis changed"), std::string::npos)
      << intent.last_error;
  EXPECT_EQ(Log("reserve:order-1").back().action, EffectAction::kHold);
  EXPECT_EQ(Run().attempts, 0);
}

// --- compensations acting on facts (effects/compensation.h) ---

class CompensationRunner : public EffectRunner {
 protected:
  void SetUp() override {
    EffectRunner::SetUp();
    EffectConfig release = Effect(true);
    release.name = "release-stock";
    config_.consumers[0].effects.push_back(release);
  }
  // The consumer's compensation of order-1's reservation, as the pipeline records it.
  bool Compensate(const std::string& key = "compensation:order-1:v1") {
    auto tx = store_->Begin().value();
    CompensationRecord record{.key = key,
                              .consumer = "fulfillment",
                              .subject = "order-1",
                              .owner_source = "s",
                              .owner_version = 2,
                              .event_id = "cancel-2",
                              .type = "order.cancelled",
                              .recorded_at_ms = clock_.NowMs()};
    record.compensates = "reserve-stock";
    record.compensate_with = "release-stock";
    record.compensating_key = "release:order-1";
    record.compensating_request = R"({"id":"cancel-2"})";
    record.basis_version = 2;
    const Result<bool> inserted = RecordConsumerCompensation(*tx, record, clock_.NowMs());
    EXPECT_TRUE(inserted.ok()) << inserted.status().ToString();
    EXPECT_TRUE(tx->Commit().ok());
    return inserted.ok() && *inserted;
  }
  CompensationRecord Record(const std::string& key = "compensation:order-1:v1") {
    for (const CompensationRecord& c :
         store_->Read().value()->ListCompensations("fulfillment", "order-1").value().rows) {
      if (c.key == key) return c;
    }
    ADD_FAILURE() << "no compensation " << key;
    return {};
  }
  bool Intended(const std::string& key) {
    return store_->Read().value()->FindIntent(key).value().has_value();
  }
};

TEST_F(CompensationRunner, ADoneEffectIsCompensatedOnceByItsCompensatingEffect) {
  Intend("reserve:order-1");
  EXPECT_EQ(Run().done, 1);
  EXPECT_TRUE(Compensate());
  EXPECT_FALSE(Compensate());  // its key once: nothing more
  CompensationRecord c = Record();
  EXPECT_EQ(c.state, CompensationState::kCompensating);
  EXPECT_EQ(c.covers, "reserve:order-1");
  const EffectIntent release = Find("release:order-1");
  EXPECT_EQ(release.state, EffectState::kIntended);
  EXPECT_EQ(release.effect, "release-stock");
  EXPECT_EQ(release.request, R"({"id":"cancel-2"})");
  EXPECT_EQ(release.basis_version, 2);
  EXPECT_EQ(Run().done, 1);
  ASSERT_EQ(transport_.calls.size(), 2u);
  EXPECT_EQ(transport_.calls[1].key, "release:order-1");
  EXPECT_EQ(Record().state, CompensationState::kCompensated);
}

// The compensating effect refused for good: the compensation ends compensation-failed, for a
// person, not compensating for ever.
TEST_F(CompensationRunner, ACompensatingEffectThatFailsEndsTheCompensationFailed) {
  Intend("reserve:order-1");
  EXPECT_EQ(Run().done, 1);
  EXPECT_TRUE(Compensate());
  transport_.script = {Answer(400)};
  EXPECT_EQ(Run().failed, 1);
  EXPECT_EQ(Record().state, CompensationState::kCompensationFailed);
  EXPECT_NE(Record().detail.find("is not compensated"), std::string::npos) << Record().detail;
}

// A compensation covering an intent stops it for good: a person's "call again" on it, or a retry
// the target would honour, is withdrawn by the runner, never sent.
TEST_F(CompensationRunner, AnIntentACompensationCoversIsNeverAttemptedAgain) {
  Intend("reserve:order-1");
  const CallResult refused{.outcome = CallOutcome::kNotSent, .error = "refused"};
  transport_.script = {refused, refused, refused};
  EXPECT_EQ(Run().not_sent, 3);  // never reached the target: intended, waits for a person
  EXPECT_TRUE(Compensate());     // pending: withdrawn at once
  EXPECT_EQ(Find("reserve:order-1").state, EffectState::kWithdrawn);
  Intend("reserve:order-1:b");
  transport_.script = {Answer(503), Answer(503), Answer(503)};
  Run();  // unknown, waits for reconciliation
  EXPECT_TRUE(Compensate("compensation:order-1:b"));
  ASSERT_EQ(Record("compensation:order-1:b").state, CompensationState::kWaitsForReconciliation);
  const auto again = ResolveEffect(*store_,
                                   {.key = "reserve:order-1:b",
                                    .outcome = EffectState::kIntended,
                                    .by = "ops",
                                    .note = "call it again"},
                                   clock_.NowMs());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  const size_t calls = transport_.calls.size();
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.withdrawn, 1);
  EXPECT_EQ(transport_.calls.size(), calls);
  EXPECT_EQ(Find("reserve:order-1:b").state, EffectState::kWithdrawn);
  EXPECT_EQ(Record("compensation:order-1:b").state, CompensationState::kNothingPerformed);
}

// Found by the whole-path simulation (seed 50062): a first attempt that timed out (the target
// may have acted), then a retry that never left. The intent must stay unknown: were it intended
// again, the owner's cancellation would withdraw it as never performed, and a reservation the
// stock service made would never be released.
TEST_F(CompensationRunner, ARetryNeverSentAfterAnUnknownOutcomeStaysUnknown) {
  Intend("reserve:order-1");
  const CallResult timeout{.outcome = CallOutcome::kTimeout, .error = "acted, answer lost"};
  const CallResult refused{.outcome = CallOutcome::kNotSent, .error = "refused"};
  transport_.script = {timeout, refused, refused};
  const EffectRunSummary s = Run();
  EXPECT_EQ(s.attempts, 3);
  EXPECT_EQ(s.not_sent, 2);
  EffectIntent intent = Find("reserve:order-1");
  EXPECT_EQ(intent.state, EffectState::kUnknown);
  EXPECT_FALSE(intent.next_attempt_at_ms.has_value());  // the limit: waits for reconciliation
  EXPECT_NE(intent.last_error.find("an earlier attempt's outcome is unknown"), std::string::npos)
      << intent.last_error;
  EXPECT_TRUE(Compensate());
  EXPECT_EQ(Record().state, CompensationState::kWaitsForReconciliation);
  EXPECT_EQ(Find("reserve:order-1").state, EffectState::kUnknown);  // not withdrawn
  // A person finds it done at the stock service: the release follows.
  ASSERT_TRUE(ResolveEffect(*store_,
                            {.key = "reserve:order-1",
                             .outcome = EffectState::kDone,
                             .by = "ops",
                             .note = "reserved at the stock service"},
                            clock_.NowMs())
                  .ok());
  EXPECT_EQ(Find("release:order-1").state, EffectState::kIntended);
  // Without an earlier unknown, a call that never left is intended again.
  EXPECT_EQ(JudgeAttempt(refused, Effect(true), 2, kNow, false).state, EffectState::kIntended);
  const AttemptVerdict unknown = JudgeAttempt(refused, Effect(true), 2, kNow, true);
  EXPECT_EQ(unknown.state, EffectState::kUnknown);
  EXPECT_EQ(unknown.next_attempt_at_ms, kNow + 20);
}

TEST_F(CompensationRunner, APendingEffectIsWithdrawnAndNothingIsCompensated) {
  Intend("reserve:order-1");
  EXPECT_TRUE(Compensate());
  EXPECT_EQ(Record().state, CompensationState::kNothingPerformed);
  EXPECT_EQ(Find("reserve:order-1").state, EffectState::kWithdrawn);
  EXPECT_FALSE(Intended("release:order-1"));
  EXPECT_EQ(Run().attempts, 0);
  EXPECT_TRUE(transport_.calls.empty());
}

TEST_F(CompensationRunner, AnEffectNeverIntendedLeavesNothingToCompensate) {
  EXPECT_TRUE(Compensate());
  EXPECT_EQ(Record().state, CompensationState::kNothingToCompensate);
  EXPECT_EQ(Record().covers, "");
}

// Unknown: nothing is intended until the outcome is reconciled; done then intends the
// compensating effect in the resolution's own transaction, failed ends it with nothing.
TEST_F(CompensationRunner, AnUnknownOutcomeWaitsForReconciliationBeforeAnythingIsIntended) {
  Intend("reserve:order-1");
  Intend("reserve:order-1:x");  // a second operation of the same effect: the latest is covered
  transport_.script = {Answer(503), Answer(503), Answer(503),
                       Answer(503), Answer(503), Answer(503)};
  Run();
  ASSERT_EQ(Find("reserve:order-1:x").state, EffectState::kUnknown);
  EXPECT_TRUE(Compensate());
  EXPECT_EQ(Record().state, CompensationState::kWaitsForReconciliation);
  EXPECT_EQ(Record().covers, "reserve:order-1:x");
  EXPECT_FALSE(Intended("release:order-1"));
  const auto resolved = ResolveEffect(
      *store_,
      {.key = "reserve:order-1:x", .outcome = EffectState::kDone, .by = "ops", .note = "found"},
      clock_.NowMs());
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(Record().state, CompensationState::kCompensating);
  EXPECT_EQ(Find("release:order-1").state, EffectState::kIntended);

  // Another decision covering the same, now done, intent: its compensating key is intended
  // already, so the second trigger is a no-op on that intent's log.
  EXPECT_TRUE(Compensate("compensation:order-1:v9"));
  EXPECT_EQ(Record("compensation:order-1:v9").state, CompensationState::kCompensating);
  const std::vector<EffectLogEntry> log = Log("release:order-1");
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].action, EffectAction::kTrigger);
}

// A claim made before the cancellation committed, answered after it (the window docs/effects.md
// states): the compensation waits for the answer, and the runner's record of `done` intends the
// compensating effect in the same transaction.
TEST_F(CompensationRunner, AnAnswerRecordedAfterTheCompensationSettlesIt) {
  Intend("reserve:order-1");
  auto operators = OpenMemoryStore(database_).value();
  bool compensated = false;
  transport_.during_call = [&](const EffectCall& call) {
    if (call.key != "reserve:order-1") return;
    store_.swap(operators);  // the consumer's process writes while the call is in flight
    compensated = Compensate();
    store_.swap(operators);
  };
  EXPECT_EQ(Run().done, 2);  // the reservation, then its release
  EXPECT_TRUE(compensated);
  EXPECT_EQ(Record().state, CompensationState::kCompensated);
  ASSERT_EQ(transport_.calls.size(), 2u);
  EXPECT_EQ(transport_.calls[1].key, "release:order-1");
}

TEST_F(CompensationRunner, AFailedOutcomeMeansNothingWasPerformed) {
  Intend("reserve:order-1");
  transport_.script = {Answer(503), Answer(503), Answer(503)};
  Run();
  EXPECT_TRUE(Compensate());
  ASSERT_EQ(Record().state, CompensationState::kWaitsForReconciliation);
  const auto resolved = ResolveEffect(
      *store_,
      {.key = "reserve:order-1", .outcome = EffectState::kFailed, .by = "ops", .note = "none"},
      clock_.NowMs());
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  EXPECT_EQ(Record().state, CompensationState::kNothingPerformed);
  EXPECT_FALSE(Intended("release:order-1"));
}

TEST(KeyTemplate, PlaceholdersAreCheckedWhenTheConfigurationLoads) {
  EXPECT_TRUE(ParseKeyTemplate("reserve:{subject}:v{subject_version}").ok());
  EXPECT_TRUE(ParseKeyTemplate("{consumer}/{source}/{id}/{type}/{previous_version}/{/a~1b}").ok());
  for (const char* bad :
       {"reserve", "reserve:{subjekt}", "reserve:{subject", "reserve:}", "{/not a pointer~}", ""}) {
    const auto parsed = ParseKeyTemplate(bad);
    EXPECT_EQ(parsed.status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_NE(ParseKeyTemplate("reserve").status().message().find("no placeholder"),
            std::string::npos);
}

// The fulfillment consumer of the orders example with `extra` (effects, compensations) added.
Result<Config> OrdersConfig(const std::string& extra) {
  const std::string yaml =
      "contracts: examples/orders/contracts\nconsumers:\n  - id: fulfillment\n" + extra;
  return ConfigFromYaml(yaml, EVIDENT_SOURCE_DIR, "evident.yaml");
}

TEST(EffectsConfig, MistakesAreRefusedWithTheirLine) {
  const std::string effect =
      "    effects:\n      - name: reserve-stock\n        on: com.example.training.order.paid\n"
      "        key: \"reserve:{subject}:v{subject_version}\"\n";
  ASSERT_TRUE(OrdersConfig(effect + "        target: {url: \"http://127.0.0.1:1/r\"}\n").ok());
  const struct {
    std::string yaml, message;
  } cases[] = {
      {effect + "        target: {url: \"ftp://x\"}\n", "must start with http:// or https://"},
      {effect + "        target: {url: \"http://x\", timeout_ms: 0}\n",
       "'timeout_ms' must be from 1 to 600000"},
      {effect, "effect 'reserve-stock' needs 'target'"},
      {effect + "        target: {url: \"http://x\"}\n        retry: {attempts_max: 0}\n",
       "'attempts_max' must be from 1 to 1000"},
      {effect + "        target: {url: \"http://x\", color: red}\n", "unknown key 'color'"},
      {effect + "        target: {url: \"http://x\"}\n        colour: red\n",
       "unknown key 'colour' in effect 'reserve-stock'"},
      {effect + "        target: {url: \"${EVIDENT_TEST_UNSET_VARIABLE}/r\"}\n",
       "'EVIDENT_TEST_UNSET_VARIABLE' in '${EVIDENT_TEST_UNSET_VARIABLE}/r' is not set"},
      {"    effects:\n      - name: x\n        on: invoice.created\n        key: \"{id}\"\n"
       "        target: {url: \"http://x\"}\n",
       "effect 'x' on type 'invoice.created' that consumer 'fulfillment' does not accept"},
      {"    effects:\n      - name: x\n        on: com.example.training.order.paid\n"
       "        key: \"constant\"\n        target: {url: \"http://x\"}\n",
       "has no placeholder"},
      {"    compensations:\n      - on: com.example.training.order.cancelled\n"
       "        when: {reason: x}\n        key: \"c:{subject}\"\n",
       "'when' key 'reason' is not a JSON Pointer"},
      {"    compensations:\n      - on: com.example.training.order.cancelled\n",
       "a compensation needs 'key'"},
  };
  for (const auto& c : cases) {
    const Result<Config> config = OrdersConfig(c.yaml);
    ASSERT_FALSE(config.ok()) << c.yaml;
    EXPECT_NE(config.status().message().find(c.message), std::string::npos)
        << config.status().message();
    EXPECT_EQ(config.status().message().rfind("evident.yaml:", 0), 0u) << config.status().message();
  }
  const Result<Config> twice = OrdersConfig(
      "    effects:\n      - {name: a, on: com.example.training.order.paid, key: \"{id}\", "
      "target: {url: \"http://x\"}}\n      - {name: a, on: com.example.training.order.paid, "
      "key: \"{id}\", target: {url: \"http://x\"}}\n");
  EXPECT_FALSE(twice.ok());
}

// A key that cannot be built from the event refuses the event before it applies: payload-
// invalid with effect-key-unresolved, quarantined, nothing applied, nothing intended. A payload
// member of another kind (an object) is refused the same way; a matching event intends once.
TEST(EffectsPipeline, AnEventWhoseKeyCannotBeBuiltIsRefusedBeforeItApplies) {
  // The contract reads /warehouse (a configuration reads only what its contract declares);
  // reading a member does not make it present.
  auto config = OrdersConfig(
      "    boundary: [\"https://example.test/order-service\"]\n"
      "    accepts:\n      - {type: com.example.training.order.paid, versions: [1],\n"
      "         reads: [/orderId, /orderVersion, /warehouse]}\n"
      "    ordering: {by: subject, version_at: /data/orderVersion}\n"
      "    effects:\n      - name: reserve-stock\n        on: com.example.training.order.paid\n"
      "        key: \"reserve:{/warehouse}:{subject}\"\n"
      "        target: {url: \"http://127.0.0.1:1/r\"}\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto pipeline = Pipeline::Create(*config).value();
  auto store = OpenMemoryStore(NewMemoryDatabase()).value();
  const auto paid = [](const std::string& id, int version, const std::string& extra) {
    return R"({"specversion":"1.0","id":")" + id +
           R"(","source":"https://example.test/order-service","type":"com.example.training.order.paid","subject":"order-1","schemaversion":1,"data":{"orderId":"order-1","orderVersion":)" +
           std::to_string(version) + extra + "}}";
  };
  const auto decide = [&](const std::string& event) {
    std::vector<Decision> decisions;
    auto tx = store->Begin().value();
    EXPECT_TRUE(pipeline->Process(*tx, event, 0, kNow, decisions).ok());
    EXPECT_TRUE(tx->Commit().ok());
    EXPECT_EQ(decisions.size(), 1u);
    return decisions.empty() ? Decision{} : decisions[0];
  };
  Decision d = decide(paid("e1", 1, ""));
  EXPECT_EQ(d.outcome, Outcome::kPayloadInvalid);
  EXPECT_EQ(d.reason, "effect-key-unresolved");
  EXPECT_NE(d.message.find("no non-empty string, number or boolean at /warehouse"),
            std::string::npos)
      << d.message;
  d = decide(paid("e2", 1, R"(,"warehouse":{"id":7})"));
  EXPECT_EQ(d.reason, "effect-key-unresolved");
  d = decide(paid("e3", 1, R"(,"warehouse":7)"));
  EXPECT_EQ(d.outcome, Outcome::kApplied);
  EXPECT_EQ(decide(paid("e3", 1, R"(,"warehouse":7)")).outcome, Outcome::kDuplicate);
  auto snapshot = store->Read().value();
  const auto intents = snapshot->ListIntents({}).value().rows;
  ASSERT_EQ(intents.size(), 1u);
  EXPECT_EQ(intents[0].key, "reserve:7:order-1");
  EXPECT_EQ(intents[0].request, paid("e3", 1, R"(,"warehouse":7)"));  // the event's own bytes
  EXPECT_EQ(snapshot->QuarantineOf("order-1").value().rows.size(), 2u);
}

// Keys travel as HTTP headers: a payload member with a control character (a NUL, a CR LF that
// would add a header) cannot be part of one.
TEST(EffectsPipeline, AKeyWithAControlCharacterIsRefused) {
  auto config = OrdersConfig(
      "    effects:\n      - name: reserve-stock\n        on: com.example.training.order.paid\n"
      "        key: \"reserve:{/orderId}:v{subject_version}\"\n"
      "        target: {url: \"http://127.0.0.1:1/r\"}\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto pipeline = Pipeline::Create(*config).value();
  auto store = OpenMemoryStore(NewMemoryDatabase()).value();
  // (An empty member is refused the same way; here the schema's minLength refuses it first.)
  for (const std::string order : {"o\\r\\nX-Injected: 1", "o\\u0000b", "o\\u007f"}) {
    const std::string event =
        R"({"specversion":"1.0","id":"e","source":"https://example.test/order-service","type":"com.example.training.order.paid","subject":"order-1","schemaversion":1,"data":{"orderVersion":1,"orderId":")" +
        order + R"("}})";
    std::vector<Decision> decisions;
    auto tx = store->Begin().value();
    ASSERT_TRUE(pipeline->Process(*tx, event, 0, kNow, decisions).ok());
    ASSERT_TRUE(tx->Commit().ok());
    ASSERT_EQ(decisions.size(), 1u);
    EXPECT_EQ(decisions[0].reason, "effect-key-unresolved") << order;
  }
  EXPECT_TRUE(store->Read().value()->ListIntents({}).value().rows.empty());
}

// Two effects whose keys meet would lose one: the same template is refused when the
// configuration loads, and keys that still meet fail the batch with both names.
TEST(EffectsPipeline, EffectsWhoseKeysMeetAreRefused) {
  const std::string two =
      "    effects:\n      - {name: a, on: com.example.training.order.paid, key: \"k:{id}\", "
      "target: {url: \"http://x\"}}\n      - {name: b, on: com.example.training.order.paid, "
      "key: \"KEY\", target: {url: \"http://x\"}}\n";
  auto same = OrdersConfig(std::string(two).replace(two.find("KEY"), 3, "k:{id}"));
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.status().message().find("has the key template 'k:{id}' of effect a"),
            std::string::npos)
      << same.status().message();
  EXPECT_NE(OrdersConfig(std::string(two).replace(two.find("KEY"), 3, "{type}:{consumer}"))
                .status()
                .message()
                .find("no placeholder that differs between events"),
            std::string::npos);
  auto meet = OrdersConfig(std::string(two).replace(two.find("KEY"), 3, "k:{/orderId}"));
  ASSERT_TRUE(meet.ok()) << meet.status().ToString();
  auto pipeline = Pipeline::Create(*meet).value();
  auto store = OpenMemoryStore(NewMemoryDatabase()).value();
  const std::string event =
      R"({"specversion":"1.0","id":"o1","source":"https://example.test/order-service","type":"com.example.training.order.paid","subject":"order-1","schemaversion":1,"data":{"orderVersion":1,"orderId":"o1"}})";
  std::vector<Decision> decisions;
  auto tx = store->Begin().value();
  const Status s = pipeline->Process(*tx, event, 0, kNow, decisions);
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_NE(s.message().find("which effect a of fulfillment already holds"), std::string::npos)
      << s.message();
}

// An unordered consumer's event without a subject has no projection, but what it triggers is
// intended all the same.
TEST(EffectsPipeline, AnEventWithoutASubjectStillIntends) {
  auto config = ConfigFromYaml(
      "contracts: examples/orders/contracts\nconsumers:\n  - id: orders-projection\n"
      "    effects:\n      - name: mail\n        on: order.status.changed\n"
      "        key: \"mail:{id}\"\n        target: {url: \"http://127.0.0.1:1/m\"}\n",
      EVIDENT_SOURCE_DIR, "evident.yaml");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto pipeline = Pipeline::Create(*config).value();
  auto store = OpenMemoryStore(NewMemoryDatabase()).value();
  const std::string event =
      R"({"specversion":"1.0","id":"s1","source":"training://orders/checkout","type":"order.status.changed","data":{"schemaVersion":1,"orderId":"o","status":"paid"}})";
  std::vector<Decision> decisions;
  auto tx = store->Begin().value();
  ASSERT_TRUE(pipeline->Process(*tx, event, 0, kNow, decisions).ok());
  ASSERT_TRUE(tx->Commit().ok());
  ASSERT_EQ(decisions.size(), 1u);
  EXPECT_EQ(decisions[0].outcome, Outcome::kApplied) << decisions[0].message;
  const auto intents = store->Read().value()->ListIntents({}).value().rows;
  ASSERT_EQ(intents.size(), 1u);
  EXPECT_EQ(intents[0].key, "mail:s1");
  EXPECT_EQ(intents[0].subject, "");
}

}  // namespace
}  // namespace evident
