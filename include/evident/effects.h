// evident/effects.h — performing the external effects that consumers intend (config.h's
// `effects`), and reconciling the ones whose outcome is unknown.
//
// An applied event writes an intent per effect it triggers, in the transaction of its decision
// (the pipeline; one intent per key, however often the event is delivered). A runner performs
// intents: it claims one (committing it as `unknown`, attempt counted, before the call, so that
// a crash during the call leaves it unknown: never done, never forgotten, never re-keyed), POSTs
// the event with `Idempotency-Key: <key>`, and records what came back:
//
//   2xx                                   -> done, the effect's evidence recorded (name = effect)
//   4xx but 408 and 429                   -> failed (the target refused it for good)
//   timeout, 5xx, 408, 429, reset, crash  -> unknown: retried with the same key and backoff when
//                                            the target honours the key (idempotent_target),
//                                            up to the retry limit; otherwise, and after it,
//                                            it waits for a person (ResolveEffect)
//   the request never left (no connection) -> intended again, retried with backoff, up to the
//                                            limit, then waits for a person; unknown still when
//                                            an earlier attempt's outcome was unknown (it may
//                                            have acted), retried the same way
//
// Before each attempt, in the claiming transaction, the runner reads the subject's present
// projection for the intent's consumer (the intent's basis): while an ordered projection lags
// the owner version seen (a deferred later version), the intent is postponed, not attempted;
// when the projection's state is no longer one of the effect's `states`, or an event type the
// effect lists under `withdrawn_by` applied after the intent's basis version, an intended
// intent is withdrawn (never sent) and an unknown one is held for a person (it may have been
// performed: never retried automatically once its basis changed). A compensation waiting for an
// intent's outcome acts in the transaction that records it (effects/compensation.h).
//
// An intent covered by a compensation (its operation is being compensated) is never attempted
// again either: withdrawn when intended, held when unknown.
//
// Several runners may share a store: a claim is a committed write guarded by the intent's
// revision, and the answer is recorded only if the intent is still at the claimed revision (a
// person's resolution, or another runner's claim after the claim's lease ran out, wins). The
// lease of a claim on an idempotent target is the call's timeout plus `claim_margin_ms`; a
// claim on any other target is never taken over (it waits for a person if its runner dies).
//
// Thread-safety: RunEffects uses its store on the calling thread; ResolveEffect likewise.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/config.h"
#include "evident/retry.h"
#include "evident/status.h"
#include "evident/store.h"
#include "evident/tracing.h"

namespace evident {

// One call of a target.
struct EffectCall {
  std::string url;
  std::string key;   // sent as Idempotency-Key
  std::string body;  // the event, CloudEvents structured JSON
  int64_t timeout_ms = 5000;
  // Once cancelled, the call is given up within about a second (a daemon stopping within its
  // drain bound): kNotSent when the request never left, else kReset (the target may have acted).
  const CancelToken* abandon = nullptr;
  // W3C Trace Context headers of the call (`traceparent`, `tracestate`), empty: none. The
  // triggering event's, or, with a Tracer, the attempt's own span under the event's trace.
  std::string traceparent, tracestate;
};

// What the transport saw.
enum class CallOutcome : uint8_t {
  kAnswered,  // an HTTP status came back
  kTimeout,   // no complete answer within the timeout (the target may have acted)
  kReset,     // the connection broke after the request was (perhaps) sent
  kNotSent,   // no connection: the request certainly never reached the target
};
struct CallResult {
  CallOutcome outcome = CallOutcome::kNotSent;
  int64_t http_status = 0;
  std::string digest;  // "sha256:<hex>" of the answer's body (kAnswered)
  std::string error;   // for people
};

// Performs calls. The HTTP transport (NewHttpTransport) is the one a user runs; tests may wrap
// it to count calls.
class EffectTransport {
 public:
  virtual ~EffectTransport() = default;
  virtual CallResult Post(const EffectCall& call) = 0;
};
// libcurl over HTTP/1.1 (https too); a response body is read up to `response_bytes_max` (the
// rest is discarded, the digest covers what was read).
Result<std::unique_ptr<EffectTransport>> NewHttpTransport(int64_t response_bytes_max = 1 << 20);

// What one attempt made of an intent: the state it records, and when it may be tried again.
struct AttemptVerdict {
  EffectState state = EffectState::kUnknown;
  std::optional<int64_t> next_attempt_at_ms;  // nullopt: settled, or waits for a person
  std::string detail;                         // for the log and the intent's last error
};
// The rules above, as one pure function: `attempts` counts this attempt;
// `earlier_attempt_unknown`: the intent was unknown when this attempt claimed it.
AttemptVerdict JudgeAttempt(const CallResult& result, const EffectConfig& effect, int64_t attempts,
                            int64_t now_ms, bool earlier_attempt_unknown = false);

struct EffectRunOptions {
  std::string runner_id;  // recorded with each claim; empty: "runner-<pid>"
  // When set, a span per attempt ("evident.effect"), a child of the triggering event's span
  // (evident/tracing.h); its id goes to the target as the call's traceparent.
  Tracer* tracer = nullptr;
  Clock* clock = nullptr;               // null: the system clock
  const CancelToken* cancel = nullptr;  // set to stop after the call in flight
  // Set to give up the call in flight too (EffectCall::abandon): its intent records unknown
  // (never done), or stays intended when the request never left.
  const CancelToken* abandon = nullptr;
  // End the run once no intent was due for this long (ms); -1: run until cancelled.
  int64_t until_idle_ms = -1;
  int64_t poll_ms = 200;           // how often to look for due intents while none is due
  int64_t claim_margin_ms = 5000;  // a claim's lease beyond the call's timeout
  RetryPolicy busy_retry;          // a busy store, at each claim and record
  // How long an intent whose subject's projection lags its owner waits before it is looked at
  // again (ms): at least postpone_ms, a quarter of its age, at most postpone_max_ms.
  int64_t postpone_ms = 1000;
  int64_t postpone_max_ms = 30'000;
  // Called after each attempt is recorded (the CLI prints it); may be empty.
  std::function<void(const EffectIntent& after, const AttemptVerdict& verdict)> on_attempt;
  // Called once an intent whose basis did not hold is postponed (the first time for a reason),
  // withdrawn or held for a person, after that commits; may be empty.
  std::function<void(const EffectIntent& after, EffectAction action)> on_basis;
};

struct EffectRunSummary {
  int64_t attempts = 0;
  int64_t done = 0, failed = 0, unknown = 0, not_sent = 0;
  int64_t superseded = 0;    // answers not recorded: the intent changed during the call
  int64_t unconfigured = 0;  // due intents of an effect the config no longer has, set aside
  int64_t postponed = 0;     // looks at intents whose projection lagged its owner
  int64_t withdrawn = 0;     // intended intents whose basis no longer held: never sent
  int64_t held = 0;          // unknown intents whose basis changed: left for a person
  bool stopped = false;
  double seconds = 0;
};

Result<EffectRunSummary> RunEffects(const Config& config, Store& store, EffectTransport& transport,
                                    const EffectRunOptions& options);

// A person's record of what happened at the other side: an intended or unknown intent becomes
// done (its evidence recorded) or failed, or intended again when the other side certainly never
// performed it (a runner calls again at once, with the same key, once its basis holds); audited
// in the intent's log. A compensation waiting for this intent acts in the same transaction
// (done: its compensating effect is intended). kNotFound for an unknown key;
// kFailedPrecondition for an intent already done, failed or withdrawn, and for one whose last
// claim has no answer from its runner recorded and began less than `in_flight_ms` ago: its call
// may still be in flight, and the other side may still act after a person looked (a "call
// again" then performs it twice on a target that does not honour the key). Such a claim looks,
// in `effects list`, like an intent that waits for reconciliation. After the window no runner
// calls on that claim (a runner checks it before calling), and a late answer is only logged; a
// target that goes on acting after its client gave up, past the margin, is not covered.
inline constexpr size_t kResolutionByBytesMax = 256;
inline constexpr size_t kResolutionNoteBytesMax = 4096;
struct EffectResolution {
  std::string key;
  EffectState outcome = EffectState::kDone;  // kDone, kFailed or kIntended (call again)
  std::string by, note;
  // The call's timeout plus the claim margin of the intent's effect (CallWindowMs); 0: not
  // checked.
  int64_t in_flight_ms = 0;
};

// How long a claim of `consumer`'s `effect` may stay in flight: the effect's call timeout in
// `config` plus `claim_margin_ms` (the runners' EffectRunOptions::claim_margin_ms); for an
// effect `config` does not have, the longest timeout a configuration may give
// (kEffectTimeoutMsLimit) plus the margin. No runner calls on a claim older than that.
int64_t CallWindowMs(const Config& config, std::string_view consumer, std::string_view effect,
                     int64_t claim_margin_ms);
// The same for the intent `key` as `snapshot` holds it (what a resolution passes as
// in_flight_ms); without a configuration, or for a key it does not hold, the longest timeout a
// configuration may give plus the margin.
Result<int64_t> CallWindowOfIntent(Snapshot& snapshot, const Config* config, std::string_view key,
                                   int64_t claim_margin_ms);
Result<EffectIntent> ResolveEffect(Store& store, const EffectResolution& resolution,
                                   int64_t now_ms);

// One JSON object each (no newline), for `evident effects`, `compensations` and the evidence
// packet: key, effect, consumer, subject, event, state, attempts, last error, HTTP status,
// digest and times (RFC 3339); the log when `log` is given. An intent retention kept only as its
// key's digest (EffectIntent::retained): key, effect, consumer, state, settled_at (a whole
// second) and "retained": true.
void AppendEffectJson(const EffectIntent& intent, const std::vector<EffectLogEntry>* log,
                      std::string& out);
void AppendCompensationJson(const CompensationRecord& record, std::string& out);

}  // namespace evident
