// evident/tracing.h — spans of evident's own work, exported over OTLP/HTTP JSON.
//
// An event's W3C Trace Context (the CloudEvents distributed-tracing extension: `traceparent`,
// `tracestate`) travels in its bytes from `outbox append` through the relay and the broker, is
// kept with the consumer's receipt (LedgerEntry::traceparent) and shown in its evidence. With a
// Tracer (`--otlp-endpoint URL`, or `tracing.otlp_endpoint` in evident.yaml) evident adds spans
// of its own: one per decision batch (linked to each event's trace), per relay batch (linked
// likewise) and per effect attempt (a child of the triggering event's span; the call carries
// the attempt's `traceparent`, so the target's spans join the trace).
//
// Thread-safety: Record may be called from any thread, and never blocks on the network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/status.h"

namespace evident {

// A W3C traceparent, parsed: "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>".
struct TraceContext {
  std::string trace_id;  // 32 lowercase hex digits, not all zero
  std::string span_id;   // 16 lowercase hex digits, not all zero
  uint8_t flags = 0;     // bit 0: sampled

  // Nullopt for anything but a valid version-00 traceparent.
  static std::optional<TraceContext> Parse(std::string_view traceparent);
  std::string Traceparent() const;
};

// Random identifiers, as W3C Trace Context asks (not all zero).
std::string NewTraceId();  // 32 hex digits
std::string NewSpanId();   // 16 hex digits

struct Span {
  std::string name;  // "evident.decide", "evident.relay", "evident.effect"
  std::string trace_id, span_id;
  std::string parent_span_id;  // empty: a root span
  int64_t start_unix_ns = 0, end_unix_ns = 0;
  std::vector<std::pair<std::string, std::string>> attributes;  // string-valued
  std::vector<std::pair<std::string, int64_t>> int_attributes;
  // Other traces this span worked for (the events of a batch), at most kSpanLinksMax.
  std::vector<TraceContext> links;
  bool error = false;
  std::string status_message;  // why, when `error`
};
inline constexpr size_t kSpanLinksMax = 128;

class Tracer {
 public:
  virtual ~Tracer() = default;
  // Queues the span for export; a full queue drops it (counted), never waits.
  virtual void Record(Span span) = 0;
};

struct OtlpOptions {
  // The collector's base URL (http:// or https://); spans go to <endpoint>/v1/traces unless it
  // already ends so.
  std::string endpoint;
  std::string service_name = "evident";
  size_t queue_spans_max = 4096;  // beyond it new spans are dropped and counted
  size_t batch_spans_max = 512;   // spans per request
  int64_t linger_ms = 1000;       // a partial batch is sent after this long (1 .. 60,000)
  int64_t timeout_ms = 5000;      // per request (1 .. 60,000)
  // Close sends what is queued for at most this long; what is left then is dropped (counted),
  // so a stopping process is never held up by a collector that does not answer.
  int64_t close_ms_max = 5000;
};

struct OtlpStats {
  int64_t exported = 0;  // spans the collector accepted (2xx)
  int64_t dropped = 0;   // spans a full queue refused
  int64_t failed = 0;    // spans in requests that failed (no retry: traces are best effort)
  std::string last_error;
};

class OtlpTracer final : public Tracer {
 public:
  // kInvalidArgument for an endpoint that is not an http(s) URL.
  static Result<std::unique_ptr<OtlpTracer>> Open(OtlpOptions options);
  // Close, unless done.
  ~OtlpTracer() override;
  OtlpTracer(const OtlpTracer&) = delete;
  OtlpTracer& operator=(const OtlpTracer&) = delete;

  void Record(Span span) override;
  // Sends every queued span now and waits for it (at most the request timeout per batch).
  void Flush();
  // Sends what is queued, for at most close_ms_max, and stops; later spans are dropped.
  void Close();
  OtlpStats stats() const;

 private:
  struct Impl;
  explicit OtlpTracer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The spans' body as OTLP/HTTP JSON (ExportTraceServiceRequest), for `service_name`.
std::string OtlpJson(const std::vector<Span>& spans, std::string_view service_name);

// The current time in the spans' unit.
int64_t UnixNanosNow();

}  // namespace evident
