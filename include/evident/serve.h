// evident/serve.h — the daemon: the consumers of a config on events received over HTTP.
//
// Serve listens on HOST:PORT and runs one consume loop (consumer.h) whose Source is what the
// HTTP requests hand in. A request's events wait in a bounded queue; the loop decides them in
// batches shared by every request that arrived meanwhile (group commit), commits, and only then
// is each request answered, with one decision per event and consumer. Routes:
//
//   POST /events         CloudEvents HTTP binding: structured, binary and batch mode
//                        (serve/binding.h). 200: every event got a decision (a rejected or
//                        quarantined one too); 400: the body holds no event; 401: a bad, stale
//                        or missing webhook signature; 413: over body_bytes_max or events_max;
//                        415: not a CloudEvent; 503: shutting down, the queue is full, or the
//                        store failed (the events were not taken: send them again, a duplicate
//                        is answered as such).
//   OPTIONS /events      the CloudEvents webhook abuse-protection handshake.
//   GET /healthz         200 while the process runs.
//   GET /readyz          200 when the store answers, the loop runs and (with a broker) the
//                        broker answers; else 503.
//   GET /metrics         Prometheus text format.
//
// Every refusal is a JSON body {"status":N,"reason":"code","message":"..."}; reasons are stable.
//
// Thread-safety: Serve blocks until options.cancel is cancelled (then it stops accepting,
// finishes and answers what is in flight, and returns) or the server cannot run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "evident/cancel.h"
#include "evident/consumer.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: a free port, told to on_listening
  // Bounds on what a request may take.
  size_t body_bytes_max = size_t{16} << 20;  // 413 above it
  size_t events_max = 10'000;                // events in one request; 413 above it
  size_t header_bytes_max = 32 << 10;        // request line and headers; 431 above it
  unsigned connections_max = 1024;           // open connections; more are refused at accept
  unsigned read_timeout_s = 10;              // a connection silent this long is closed
  // A connection must deliver a request's headers within this long of opening (or of its last
  // answer); else it is shut down, however steadily it trickles bytes.
  int64_t header_ms_max = 10'000;
  int64_t request_ms_max = 30'000;  // a request whose body takes longer is dropped
  // The queue between the requests and the loop; a request that does not fit is 503.
  size_t queue_events_max = 100'000;
  size_t queue_bytes_max = size_t{256} << 20;
  // On stop: how long to wait for the events in flight to be decided and answered.
  int64_t drain_ms_max = 30'000;
  // A failed run of the loop (a store that went away) is started again after this long.
  int64_t restart_ms = 1000;
  // The store's gauges of GET /metrics are read on a thread of their own, at most this often
  // (ms); a scrape serves the last reading and its age, never reads the store itself.
  int64_t metrics_interval_ms = 5000;
  // The webhook handshake: origins allowed to send (WebHook-Request-Origin); "*" any. Empty:
  // the handshake is refused.
  std::vector<std::string> allowed_origins;
  // Standard Webhooks signatures: event source -> secrets (raw key bytes; any one verifies).
  // A request whose events come from a source listed here must be signed with its secret.
  // By signed source; a source under a signed one (SourceUnder, envelope.h) must be signed with
  // its keys too: a boundary that admits ".../order-service/x" admits no unsigned sibling of a
  // signed ".../order-service".
  std::map<std::string, std::vector<std::string>> webhook_secrets;
  int64_t signature_tolerance_s = 300;
  // The bearer token of the admin API; empty: the admin routes are disabled (403).
  std::string admin_token;
  // Opens another handle on the store: read-only for metrics, readiness and the admin reads,
  // writable for the admin actions. Required.
  std::function<Result<std::unique_ptr<Store>>(bool read_only)> open_store;
  // With a broker (`--from nats://...`): opens the source of a second consume loop that runs
  // beside the HTTP one, on a store handle and pipeline of its own; null: HTTP only. A source
  // that cannot be opened (the broker is down) is tried again every restart_ms.
  std::function<Result<std::unique_ptr<Source>>()> open_broker_source;
  // Whether the broker answers, for /readyz (with open_broker_source).
  std::function<Status()> probe_broker;
  // The broker's position lives in the store (SourceTraits::resumes_from_store: Kafka): its loop
  // begins at the stored position, as a --resume run does.
  bool broker_resumes = false;
  // Perform the effect intents of the config's consumers (effects.h RunEffects) on a thread of
  // the daemon; their claims make it safe beside other runners. Ignored when no consumer has
  // effects.
  bool run_effects = true;
  // For the loop: outcomes, clock, retries, gap checks (cancel and on_committed are Serve's).
  ConsumeOptions consume;
  const CancelToken* cancel = nullptr;
  std::function<void(int port)> on_listening;  // once the socket listens
  std::FILE* log = nullptr;                    // one line per failure of the loop; may be null
};

struct ServeSummary {
  int64_t requests = 0;       // HTTP requests answered
  int64_t events = 0;         // events decided (over HTTP and from the broker)
  int64_t broker_events = 0;  // of which from the broker
  int64_t restarts = 0;       // runs of the loop that failed and were started again
  ConsumeSummary consume;     // summed over the loop's runs (counts, batches)
};

// Fills allowed_origins, webhook_secrets and signature_tolerance_s from the config's `http:`:
// each secret read from its file or variable ("whsec_<base64>"). An unreadable or malformed
// secret is refused, naming its source.
Status ApplyHttpConfig(const HttpConfig& http, ServeOptions& options);

// Runs the daemon on `store` (the loop's own; the daemon opens others through open_store).
Result<ServeSummary> Serve(Pipeline& pipeline, Store& store, const ServeOptions& options);

}  // namespace evident
