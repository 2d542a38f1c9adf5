// Spans over OTLP/HTTP JSON (evident/tracing.h). Written here because Debian 12 packages no
// OpenTelemetry C++ SDK; the protocol's JSON encoding is small and stable (the OTLP
// specification, ExportTraceServiceRequest), and libcurl, already the effects' HTTP client,
// sends it.
#include "evident/tracing.h"

#include <curl/curl.h>
#include <sys/random.h>

#include <atomic>
#include <cassert>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "json/writer.h"

namespace evident {
namespace {

bool IsLowerHex(std::string_view text) {
  return text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string RandomHex(size_t bytes) {
  unsigned char raw[16] = {};
  assert(bytes <= sizeof raw);
  size_t got = 0;
  while (got < bytes) {
    const ssize_t n = getrandom(raw + got, bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  bool zero = true;
  for (size_t i = 0; i < bytes; ++i) {
    out.push_back(kHex[raw[i] >> 4]);
    out.push_back(kHex[raw[i] & 15]);
    zero = zero && raw[i] == 0;
  }
  if (zero) out.back() = '1';  // all zero is invalid
  return out;
}

void KeyValue(json::Writer& w, std::string_view key, std::string_view value) {
  w.BeginObject().Field("key", key).Key("value").BeginObject().Field("stringValue", value);
  w.EndObject().EndObject();
}

void SpanJson(json::Writer& w, const Span& span) {
  w.BeginObject()
      .Field("traceId", span.trace_id)
      .Field("spanId", span.span_id)
      .Field("name", span.name)
      .Key("kind")
      .Int(1)  // SPAN_KIND_INTERNAL
      .Field("startTimeUnixNano", std::to_string(span.start_unix_ns))
      .Field("endTimeUnixNano", std::to_string(span.end_unix_ns));
  if (!span.parent_span_id.empty()) w.Field("parentSpanId", span.parent_span_id);
  w.Key("attributes").BeginArray();
  for (const auto& [key, value] : span.attributes) KeyValue(w, key, value);
  for (const auto& [key, value] : span.int_attributes) {
    // OTLP/JSON writes 64-bit integers as strings.
    w.BeginObject().Field("key", key).Key("value").BeginObject();
    w.Field("intValue", std::to_string(value)).EndObject().EndObject();
  }
  w.EndArray().Key("links").BeginArray();
  for (const TraceContext& link : span.links) {
    w.BeginObject().Field("traceId", link.trace_id).Field("spanId", link.span_id).EndObject();
  }
  w.EndArray().Key("status").BeginObject().Key("code").Int(span.error ? 2 : 1);
  if (span.error) w.Field("message", span.status_message);
  w.EndObject().EndObject();
}

size_t DiscardBody(char* /*data*/, size_t size, size_t count, void* /*user*/) {
  return size * count;
}

// libcurl's progress callback (about once a second, or sooner): a request still running when
// Close's time is up is given up.
int AbortWhenClosed(void* stop_by_ns, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const int64_t deadline = static_cast<std::atomic<int64_t>*>(stop_by_ns)->load();
  return deadline != 0 && std::chrono::steady_clock::now().time_since_epoch().count() >= deadline
             ? 1
             : 0;
}

}  // namespace

std::optional<TraceContext> TraceContext::Parse(std::string_view t) {
  if (t.size() != 55 || t.substr(0, 3) != "00-" || t[35] != '-' || t[52] != '-') {
    return std::nullopt;
  }
  TraceContext c{std::string(t.substr(3, 32)), std::string(t.substr(36, 16)), 0};
  const std::string_view flags = t.substr(53, 2);
  if (!IsLowerHex(c.trace_id) || !IsLowerHex(c.span_id) || !IsLowerHex(flags) ||
      c.trace_id == std::string(32, '0') || c.span_id == std::string(16, '0')) {
    return std::nullopt;
  }
  c.flags = static_cast<uint8_t>(std::stoi(std::string(flags), nullptr, 16));
  return c;
}

std::string TraceContext::Traceparent() const {
  static constexpr char kHex[] = "0123456789abcdef";
  return "00-" + trace_id + "-" + span_id + "-" + kHex[flags >> 4] + kHex[flags & 15];
}

std::string NewTraceId() { return RandomHex(16); }
std::string NewSpanId() { return RandomHex(8); }

int64_t UnixNanosNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string OtlpJson(const std::vector<Span>& spans, std::string_view service_name) {
  std::string text;
  json::Writer w(text);
  w.BeginObject().Key("resourceSpans").BeginArray().BeginObject();
  w.Key("resource").BeginObject().Key("attributes").BeginArray();
  KeyValue(w, "service.name", service_name);
  w.EndArray().EndObject();
  w.Key("scopeSpans").BeginArray().BeginObject();
  w.Key("scope").BeginObject().Field("name", "evident").EndObject();
  w.Key("spans").BeginArray();
  for (const Span& span : spans) SpanJson(w, span);
  w.EndArray().EndObject().EndArray();
  w.EndObject().EndArray().EndObject();
  return text;
}

struct OtlpTracer::Impl {
  OtlpOptions options;
  std::string url;
  mutable std::mutex mu;
  std::condition_variable wake;     // the sender: spans, a flush or the stop
  std::condition_variable settled;  // Flush: the queue is empty and nothing in flight
  std::deque<Span> queue;
  bool stopping = false;
  bool closed = false;
  std::chrono::steady_clock::time_point stop_by;  // once stopping: when what is left is dropped
  std::atomic<int64_t> stop_by_ticks{0};  // the same, for libcurl's callback; 0 until stopping
  int64_t flushes_asked = 0, flushes_done = 0;
  bool sending = false;
  OtlpStats stats;
  std::thread sender;

  // One request of `batch`, within `timeout_ms`; the outcome counted.
  void Send(const std::vector<Span>& batch, int64_t timeout_ms) {
    const std::string body = OtlpJson(batch, options.service_name);
    std::string error;
    std::unique_ptr<CURL, void (*)(CURL*)> h(curl_easy_init(), &curl_easy_cleanup);
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    long status = 0;
    if (!h || headers == nullptr) {
      error = "cannot set up an HTTP request (out of memory)";
    } else {
      curl_easy_setopt(h.get(), CURLOPT_URL, url.c_str());
      curl_easy_setopt(h.get(), CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(h.get(), CURLOPT_POSTFIELDS, body.data());
      curl_easy_setopt(h.get(), CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      curl_easy_setopt(h.get(), CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
      curl_easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, &DiscardBody);
      curl_easy_setopt(h.get(), CURLOPT_PROTOCOLS_STR, "http,https");
      curl_easy_setopt(h.get(), CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(h.get(), CURLOPT_XFERINFOFUNCTION, &AbortWhenClosed);
      curl_easy_setopt(h.get(), CURLOPT_XFERINFODATA, static_cast<void*>(&stop_by_ticks));
      const CURLcode rc = curl_easy_perform(h.get());
      if (rc != CURLE_OK) {
        error = curl_easy_strerror(rc);
      } else {
        curl_easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &status);
        if (status < 200 || status > 299)
          error = "the collector answered HTTP " + std::to_string(status);
      }
    }
    curl_slist_free_all(headers);
    std::lock_guard<std::mutex> lock(mu);
    if (error.empty()) {
      stats.exported += static_cast<int64_t>(batch.size());
    } else {
      stats.failed += static_cast<int64_t>(batch.size());
      stats.last_error = error;
    }
  }

  void Run() {
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      const auto due =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(options.linger_ms);
      wake.wait_until(lock, due, [&] {
        return stopping || flushes_asked > flushes_done || queue.size() >= options.batch_spans_max;
      });
      const auto now = std::chrono::steady_clock::now();
      if (stopping && now >= stop_by) {
        stats.dropped += static_cast<int64_t>(queue.size());  // out of time to close
        queue.clear();
      }
      if (queue.empty()) {
        flushes_done = flushes_asked;
        settled.notify_all();
        if (stopping) return;
        continue;
      }
      int64_t timeout_ms = options.timeout_ms;
      if (stopping) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(stop_by - now).count();
        timeout_ms = std::max<int64_t>(1, std::min<int64_t>(timeout_ms, left));
      }
      const size_t n = std::min(queue.size(), options.batch_spans_max);
      std::vector<Span> batch(std::make_move_iterator(queue.begin()),
                              std::make_move_iterator(queue.begin() + static_cast<long>(n)));
      queue.erase(queue.begin(), queue.begin() + static_cast<long>(n));
      sending = true;
      lock.unlock();
      Send(batch, timeout_ms);
      lock.lock();
      sending = false;
    }
  }
};

OtlpTracer::OtlpTracer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<OtlpTracer>> OtlpTracer::Open(OtlpOptions options) {
  const std::string& e = options.endpoint;
  if (e.rfind("http://", 0) != 0 && e.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("the OTLP endpoint must be an http:// or https:// URL: '" + e +
                                   "'");
  }
  if (options.batch_spans_max == 0 || options.queue_spans_max == 0 || options.linger_ms < 1 ||
      options.linger_ms > 60'000 || options.timeout_ms < 1 || options.timeout_ms > 60'000 ||
      options.close_ms_max < 0) {
    return Status::InvalidArgument(
        "OTLP batch and queue sizes must be positive, linger and timeout from 1 to 60000 ms");
  }
  curl_global_init(CURL_GLOBAL_DEFAULT);  // thread-safe in Debian 12's libcurl 7.88
  auto impl = std::make_unique<Impl>();
  std::string base = e;
  while (!base.empty() && base.back() == '/') base.pop_back();
  impl->url = base.ends_with("/v1/traces") ? base : base + "/v1/traces";
  impl->options = std::move(options);
  Impl* raw = impl.get();
  impl->sender = std::thread([raw] { raw->Run(); });
  return std::unique_ptr<OtlpTracer>(new OtlpTracer(std::move(impl)));
}

OtlpTracer::~OtlpTracer() { Close(); }

void OtlpTracer::Close() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->closed) return;
    impl_->closed = true;
    impl_->stopping = true;
    impl_->stop_by =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(impl_->options.close_ms_max);
    impl_->stop_by_ticks = std::max<int64_t>(1, impl_->stop_by.time_since_epoch().count());
  }
  impl_->wake.notify_all();
  impl_->sender.join();
}

void OtlpTracer::Record(Span span) {
  if (span.links.size() > kSpanLinksMax) span.links.resize(kSpanLinksMax);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopping || impl_->queue.size() >= impl_->options.queue_spans_max) {
      ++impl_->stats.dropped;
      return;
    }
    impl_->queue.push_back(std::move(span));
    if (impl_->queue.size() < impl_->options.batch_spans_max) return;
  }
  impl_->wake.notify_one();
}

void OtlpTracer::Flush() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  const int64_t ticket = ++impl_->flushes_asked;
  impl_->wake.notify_one();
  impl_->settled.wait(lock, [&] { return impl_->flushes_done >= ticket || impl_->stopping; });
}

OtlpStats OtlpTracer::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace evident
