// The daemon (evident/serve.h): libmicrohttpd serves the routes on one internal polling thread
// (epoll); the consume loop runs on its own thread with the Intake as its source. A POST's
// connection is suspended once its events are queued and resumed when the loop answers it.
#include "evident/serve.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <strings.h>
#include <unistd.h>

#include <atomic>
#include <cassert>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "evident/clock.h"
#include "evident/effects.h"
#include "evident/profile.h"
#include "evident/retry.h"
#include "json/files.h"
#include "serve/admin_worker.h"
#include "serve/binding.h"
#include "serve/metrics.h"
#include "serve/routes.h"
#include "serve/signature.h"
#include "serve/watch.h"
#include "transport/http/intake.h"

namespace evident {
namespace {

using http::Exchange;
using http::Intake;

// One request on a connection (libmicrohttpd's con_cls), from its first call to its completion.
struct Call {
  // kDiscarding: the body went over its bound; the rest is read and dropped, then 413.
  enum class Phase : uint8_t { kReading, kDiscarding, kWaiting, kAnswered };
  Phase phase = Phase::kReading;
  std::string body;
  // What this call added to the daemon's body_bytes_, taken back when it completes: the body's
  // capacity as it grew (an admin task takes the body away, and its moved-from capacity would
  // give back less than was counted).
  int64_t body_counted = 0;
  int64_t started_ms = 0;  // the daemon clock's MonotonicMs at the call's first look
  std::shared_ptr<Exchange> exchange;
  std::string version;        // HTTP/1.0 or HTTP/1.1
  bool headers_seen = false;  // the first call (headers only) is behind
  int discard_status = 0;     // kDiscarding: the refusal's status (413, 503)
  bool suspended = false;
};

using Headers = std::vector<std::pair<std::string, std::string>>;

MHD_Result CollectHeader(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  auto* headers = static_cast<Headers*>(cls);
  std::string name(key != nullptr ? key : "");
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  headers->emplace_back(std::move(name), value != nullptr ? value : "");
  return MHD_YES;
}

std::string_view HeaderOf(const Headers& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return {};
}

class Daemon final : public serve::Responder {
 public:
  Daemon(Pipeline& pipeline, Store& store, const ServeOptions& options)
      : pipeline_(pipeline),
        store_(store),
        options_(options),
        intake_(options.queue_events_max, options.queue_bytes_max),
        routes_(*this, metrics_, options),
        admin_(pipeline.config(), options),
        clock_(options.consume.clock != nullptr ? *options.consume.clock : SystemClock()),
        watch_(clock_),
        outcomes_(options.consume.outcomes != nullptr
                      ? SharedWritableFile(*options.consume.outcomes)
                      : nullptr) {}

  Result<ServeSummary> Run();

  // serve::Responder
  MHD_Result Respond(MHD_Connection* connection, int status, std::string_view body,
                     std::string_view content_type, const Headers& extra) override;
  bool LoopRunning() const override { return loop_running_.load(); }
  std::string StoreTrouble() const override;
  std::string BrokerTrouble() const override;
  bool Stopping() const override { return stopping_.load(); }

 private:
  static MHD_Result OnAccess(void* cls, MHD_Connection* connection, const char* url,
                             const char* method, const char* version, const char* upload,
                             size_t* upload_size, void** con_cls);
  static void OnCompleted(void* cls, MHD_Connection* connection, void** con_cls,
                          MHD_RequestTerminationCode code);
  static void OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                           MHD_ConnectionNotificationCode code);
  static size_t Unescape(void* cls, MHD_Connection* connection, char* text);
  MHD_Result Access(MHD_Connection* connection, std::string_view url, std::string_view method,
                    const char* upload, size_t* upload_size, Call& call);
  MHD_Result FirstLook(MHD_Connection* connection, std::string_view url, std::string_view version,
                       Call& call);
  MHD_Result Wait(MHD_Connection* connection, Call& call, std::shared_ptr<Exchange> exchange);
  MHD_Result DeferAdmin(MHD_Connection* connection, std::string_view url, std::string_view method,
                        Call& call);
  void ProbeThread();
  void GaugesThread(std::unique_ptr<Store> reader);
  void SetTrouble(std::string why);
  MHD_Result Read(MHD_Connection* connection, std::string_view url, const char* upload,
                  size_t* upload_size, Call& call);
  MHD_Result PostEvents(MHD_Connection* connection, Call& call);
  const std::vector<std::string>* SecretsFor(std::string_view source) const;
  serve::SignatureVerdict CheckSignatures(const Headers& headers, std::string_view body,
                                          const serve::BoundEvents& bound) const;
  size_t BodyBytesMax(std::string_view url) const;
  Status StartHttp();
  void Drain();
  void LoopThread();
  // Runs `work` until the daemon stops; a failure is logged, counted, and `work` runs again
  // after restart_ms.
  void KeepRunning(std::string_view what, const std::function<Status()>& work);
  Status BrokerRun();
  Status EffectsRun();

  Pipeline& pipeline_;
  Store& store_;
  const ServeOptions& options_;
  serve::Metrics metrics_;
  Intake intake_;
  serve::Routes routes_;
  serve::AdminWorker admin_;
  // Every deadline and wait of the daemon (requests, drain, sweeps, restarts, gauges): the
  // loop's clock (ServeOptions::consume.clock), the real one by default.
  Clock& clock_;
  serve::ConnectionWatch watch_;
  // ServeOptions::consume.outcomes, shared by the HTTP loop and the broker's (two threads).
  std::unique_ptr<WritableFile> outcomes_;
  mutable std::mutex trouble_mu_;
  std::string store_trouble_;  // the loop's last store failure, until a commit or probe succeeds
  MHD_Daemon* http_ = nullptr;
  std::thread loop_, broker_, effects_, probe_, gauges_;
  std::atomic<bool> broker_running_{false};
  std::atomic<int64_t> broker_events_{0};
  CancelToken loop_stop_;
  // Cancelled at the drain deadline: an effect call still in flight is given up (its intent
  // stays unknown), so that a stop ends within drain_ms_max whatever the call's timeout_ms.
  CancelToken effects_abandon_;
  std::atomic<bool> effects_ended_{false};
  std::atomic<bool> loop_running_{false}, stopping_{false};
  std::atomic<int64_t> waiting_calls_{0}, body_bytes_{0}, requests_{0}, events_{0};
  std::mutex summary_mu_;
  ServeSummary summary_;
  int port_ = 0;
};

MHD_Result Daemon::OnAccess(void* cls, MHD_Connection* connection, const char* url,
                            const char* method, const char* version, const char* upload,
                            size_t* upload_size, void** con_cls) {
  auto* self = static_cast<Daemon*>(cls);
  auto* call = static_cast<Call*>(*con_cls);
  if (call == nullptr) {
    call = new Call();
    call->started_ms = self->clock_.MonotonicMs();
    *con_cls = call;
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (info != nullptr && info->socket_context != nullptr) {
      self->watch_.Started(static_cast<serve::ConnectionWatch::Link*>(info->socket_context));
    }
    call->version = version != nullptr ? version : "";
  }
  return self->Access(connection, url, method, upload, upload_size, *call);
}

void Daemon::OnConnection(void* cls, MHD_Connection* connection, void** socket_context,
                          MHD_ConnectionNotificationCode code) {
  auto* self = static_cast<Daemon*>(cls);
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const MHD_ConnectionInfo* info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_context = self->watch_.Opened(info != nullptr ? info->connect_fd : -1);
  } else if (*socket_context != nullptr) {
    self->watch_.Closed(static_cast<serve::ConnectionWatch::Link*>(*socket_context));
    *socket_context = nullptr;
  }
}

// Percent-decodes in place as libmicrohttpd would, except %00: a NUL would cut the C string it
// hands on ("/events%00x" would be "/events"), so it stays as written.
size_t Daemon::Unescape(void* /*cls*/, MHD_Connection* /*connection*/, char* text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  size_t out = 0;
  for (size_t in = 0; text[in] != '\0'; ++in) {
    if (text[in] == '%' && text[in + 1] != '\0' && text[in + 2] != '\0' && hex(text[in + 1]) >= 0 &&
        hex(text[in + 2]) >= 0) {
      const int byte = hex(text[in + 1]) * 16 + hex(text[in + 2]);
      if (byte != 0) {
        text[out++] = static_cast<char>(byte);
        in += 2;
        continue;
      }
    }
    text[out++] = text[in];
  }
  text[out] = '\0';
  return out;
}

void Daemon::OnCompleted(void* cls, MHD_Connection* connection, void** con_cls,
                         MHD_RequestTerminationCode /*code*/) {
  auto* self = static_cast<Daemon*>(cls);
  auto* call = static_cast<Call*>(*con_cls);
  const MHD_ConnectionInfo* info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  if (info != nullptr && info->socket_context != nullptr) {
    self->watch_.Answered(static_cast<serve::ConnectionWatch::Link*>(info->socket_context));
  }
  if (call == nullptr) return;
  self->body_bytes_ -= call->body_counted;
  assert(self->body_bytes_.load() >= 0);  // each call gives back exactly what it counted
  if (call->suspended) --self->waiting_calls_;
  delete call;
  *con_cls = nullptr;
}

size_t Daemon::BodyBytesMax(std::string_view url) const {
  return url == "/events" ? options_.body_bytes_max : serve::kAdminBodyBytesMax;
}

MHD_Result Daemon::Access(MHD_Connection* connection, std::string_view url, std::string_view method,
                          const char* upload, size_t* upload_size, Call& call) {
  switch (call.phase) {
    case Call::Phase::kWaiting:  // resumed: the loop answered
      call.phase = Call::Phase::kAnswered;
      return Respond(connection, call.exchange->status(), call.exchange->body(), "application/json",
                     {});
    case Call::Phase::kAnswered:  // a refusal is queued: the rest of the body is not kept
      *upload_size = 0;
      return MHD_YES;
    case Call::Phase::kDiscarding:
      if (clock_.MonotonicMs() - call.started_ms > options_.request_ms_max) {
        return MHD_NO;
      }
      if (*upload_size > 0) {
        *upload_size = 0;
        return MHD_YES;
      }
      call.phase = Call::Phase::kAnswered;
      if (call.discard_status == 503) {
        return routes_.Refuse(connection, 503, "busy",
                              "the daemon holds as many request bodies as it may; try again");
      }
      return routes_.Refuse(connection, 413, "body-too-large",
                            "the body is over " + std::to_string(BodyBytesMax(url)) + " bytes");
    case Call::Phase::kReading:
      break;
  }
  if (!call.headers_seen) {
    call.headers_seen = true;
    return FirstLook(connection, url, call.version, call);
  }
  if (*upload_size > 0) return Read(connection, url, upload, upload_size, call);
  // The whole request is here.
  call.phase = Call::Phase::kAnswered;
  if (method == "POST" && url == "/events") return PostEvents(connection, call);
  if (url.rfind("/api/", 0) == 0) return DeferAdmin(connection, url, method, call);
  return routes_.Dispatch(connection, url, method, call.body);
}

// The headers are here, the body not yet. Requests whose framing is ambiguous are refused and
// the connection closed (a second Content-Length, or one beside Transfer-Encoding, would let a
// request hide in another's body: RFC 9112 6.3); so are HTTP/1.1 requests without Host. A body
// declared over its bound is refused: at once when far over, else once read and dropped (a
// client that writes its whole body before reading would see a broken pipe otherwise).
MHD_Result Daemon::FirstLook(MHD_Connection* connection, std::string_view url,
                             std::string_view version, Call& call) {
  Headers headers;
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &CollectHeader, &headers);
  int lengths = 0, hosts = 0;
  for (const auto& [name, value] : headers) {
    lengths += name == "content-length" ? 1 : 0;
    hosts += name == "host" ? 1 : 0;
  }
  const std::string_view encoding = HeaderOf(headers, "transfer-encoding");
  std::string why;
  if (lengths > 1 || (lengths == 1 && !encoding.empty())) {
    why = "the request's length is given twice (Content-Length, Transfer-Encoding)";
  } else if ((version == MHD_HTTP_VERSION_1_1 && hosts == 0) || hosts > 1) {
    why = "an HTTP/1.1 request names its Host, once";
  }
  if (!why.empty()) {
    call.phase = Call::Phase::kAnswered;
    return routes_.Refuse(connection, 400, "bad-request", why);
  }
  if (!encoding.empty() && ::strcasecmp(std::string(encoding).c_str(), "chunked") != 0) {
    call.phase = Call::Phase::kAnswered;
    return routes_.Refuse(connection, 501, "unsupported-transfer-encoding",
                          "only the chunked transfer encoding is taken");
  }
  const size_t limit = BodyBytesMax(url);
  const std::string_view length = HeaderOf(headers, "content-length");
  if (length.empty()) return MHD_YES;
  uint64_t declared = 0;
  auto [ptr, ec] = std::from_chars(length.data(), length.data() + length.size(), declared);
  if (ec == std::errc() && ptr == length.data() + length.size() && declared <= limit) {
    return MHD_YES;
  }
  constexpr uint64_t kDrainBytesMax = uint64_t{64} << 20;
  if (ec == std::errc() && declared - limit <= kDrainBytesMax) {
    call.phase = Call::Phase::kDiscarding;
    call.discard_status = 413;
    return MHD_YES;
  }
  call.phase = Call::Phase::kAnswered;
  return routes_.Refuse(connection, 413, "body-too-large",
                        "the body is over " + std::to_string(limit) + " bytes");
}

// Takes a piece of the body, within its bounds.
MHD_Result Daemon::Read(MHD_Connection* connection, std::string_view url, const char* upload,
                        size_t* upload_size, Call& call) {
  const size_t limit = BodyBytesMax(url);
  if (clock_.MonotonicMs() - call.started_ms > options_.request_ms_max) {
    return MHD_NO;  // too slow a body: the connection is closed
  }
  // Over a bound (chunked: no length to judge by before): the rest is read and dropped, and
  // the refusal answers once the body has ended (a refusal queued mid-body cannot be sent).
  const bool too_large = call.body.size() + *upload_size > limit;
  if (too_large || body_bytes_.load() + static_cast<int64_t>(*upload_size) >
                       static_cast<int64_t>(options_.queue_bytes_max)) {
    *upload_size = 0;
    body_bytes_ -= call.body_counted;
    call.body_counted = 0;
    std::string().swap(call.body);
    call.phase = Call::Phase::kDiscarding;
    call.discard_status = too_large ? 413 : 503;
    return MHD_YES;
  }
  call.body.append(upload, *upload_size);
  const auto held = static_cast<int64_t>(call.body.capacity());
  body_bytes_ += held - call.body_counted;
  call.body_counted = held;
  *upload_size = 0;
  return MHD_YES;
}

// The sources an event names, read as the envelope reads them through `profile`: the value at
// the profile's pointer for source, else (passthrough) every top-level "source" member (the DOM
// decodes escaped names: "sour\u0063e" is "source"; a repeated member is rejected later, but
// each must be signed), else the profile's constant. Empty for an event without a readable one.
std::vector<std::string> EventSources(simdjson::dom::parser& parser, const std::string& event,
                                      const Profile& profile) {
  std::vector<std::string> sources;
  simdjson::dom::element root;
  if (parser.parse(event).get(root) != simdjson::SUCCESS) return sources;
  std::string_view source;
  if (const std::string pointer = profile.PointerFor("source"); !pointer.empty()) {
    simdjson::dom::element value;
    if (root.at_pointer(pointer).get(value) == simdjson::SUCCESS && !value.is_null() &&
        value.get(source) == simdjson::SUCCESS) {
      sources.emplace_back(source);
    }
  } else if (simdjson::dom::object object;
             profile.passthrough && root.get(object) == simdjson::SUCCESS) {
    for (auto [key, value] : object) {
      if (key == "source" && value.get(source) == simdjson::SUCCESS) sources.emplace_back(source);
    }
  }
  if (!sources.empty()) return sources;
  for (const auto& [name, value] : profile.constants) {
    if (name == "source") sources.push_back(value);
  }
  return sources;
}

// The keys of the signed source `source` is, or lies under (SourceUnder: ".../order-service"
// covers ".../order-service/evil", "...?x=1" and "...#f", which a boundary may admit): the
// longest such signed source's. Null for a source no signature covers.
const std::vector<std::string>* Daemon::SecretsFor(std::string_view source) const {
  const std::vector<std::string>* keys = nullptr;
  size_t longest = 0;
  for (const auto& [signed_source, secrets] : options_.webhook_secrets) {
    if (signed_source.size() >= longest && SourceUnder(source, signed_source)) {
      keys = &secrets;
      longest = signed_source.size();
    }
  }
  return keys;
}

// A signed source's events must come in a body the signature covers: structured or batch mode
// (binary mode keeps the attributes in headers that Standard Webhooks does not sign).
serve::SignatureVerdict Daemon::CheckSignatures(const Headers& headers, std::string_view body,
                                                const serve::BoundEvents& bound) const {
  std::vector<const std::vector<std::string>*> secrets;
  if (bound.mode == serve::BodyMode::kBinary) {  // whether or not the event it makes parses
    for (const auto& [name, value] : headers) {
      if (name == "ce-source" && SecretsFor(serve::PercentDecode(value)) != nullptr) {
        return serve::SignatureVerdict::kUnsigned;
      }
    }
  }
  simdjson::dom::parser parser;
  for (const std::string& event : bound.events) {
    for (const std::string& source : EventSources(parser, event, pipeline_.config().profile)) {
      const std::vector<std::string>* keys = SecretsFor(source);
      if (keys == nullptr) continue;
      if (bound.mode == serve::BodyMode::kBinary) return serve::SignatureVerdict::kUnsigned;
      if (std::find(secrets.begin(), secrets.end(), keys) == secrets.end()) {
        secrets.push_back(keys);
      }
    }
  }
  const serve::SignedRequest request{.id = HeaderOf(headers, "webhook-id"),
                                     .timestamp = HeaderOf(headers, "webhook-timestamp"),
                                     .signature = HeaderOf(headers, "webhook-signature"),
                                     .body = body};
  const int64_t now_s = SystemClock().NowMs() / 1000;
  for (const std::vector<std::string>* keys : secrets) {
    const serve::SignatureVerdict verdict =
        serve::VerifySignature(request, *keys, now_s, options_.signature_tolerance_s);
    if (verdict != serve::SignatureVerdict::kValid) return verdict;
  }
  return serve::SignatureVerdict::kValid;
}

MHD_Result Daemon::PostEvents(MHD_Connection* connection, Call& call) {
  Headers headers;
  MHD_get_connection_values(connection, MHD_HEADER_KIND, &CollectHeader, &headers);
  serve::BoundEvents bound = serve::BindRequest(HeaderOf(headers, "content-type"), headers,
                                                call.body, {.events_max = options_.events_max});
  if (bound.refusal.status != 0) {
    return routes_.Refuse(connection, bound.refusal.status, bound.refusal.reason,
                          bound.refusal.message);
  }
  if (!options_.webhook_secrets.empty()) {
    const serve::SignatureVerdict verdict = CheckSignatures(headers, call.body, bound);
    if (verdict != serve::SignatureVerdict::kValid) {
      metrics_.CountSignatureFailure(serve::SignatureReason(verdict));
      return routes_.Refuse(connection, 401, serve::SignatureReason(verdict),
                            verdict == serve::SignatureVerdict::kUnsigned
                                ? "a signed source sends in structured or batch mode: binary "
                                  "mode keeps attributes in headers no signature covers"
                                : "the request's webhook signature does not hold for the source "
                                  "of its events (Standard Webhooks v1)");
    }
  }
  auto exchange = std::make_shared<Exchange>([connection] { MHD_resume_connection(connection); });
  switch (intake_.Submit(exchange, std::move(bound.events))) {
    case Intake::Taken::kTaken:
      break;
    case Intake::Taken::kFull:
      return routes_.Refuse(connection, 503, "queue-full",
                            "the daemon's queue is full; the events were not taken");
    case Intake::Taken::kClosed:
      return routes_.Refuse(connection, 503, "shutting-down",
                            "the daemon is stopping; the events were not taken");
    case Intake::Taken::kDown:
      return routes_.Refuse(connection, 503, "store-unavailable",
                            "the store is not reachable; the events were not taken");
  }
  return Wait(connection, call, std::move(exchange));
}

// The connection waits (suspended) until `exchange` is answered.
MHD_Result Daemon::Wait(MHD_Connection* connection, Call& call,
                        std::shared_ptr<Exchange> exchange) {
  call.exchange = std::move(exchange);
  call.phase = Call::Phase::kWaiting;
  if (call.exchange->Suspend([&] { MHD_suspend_connection(connection); })) {
    call.suspended = true;
    ++waiting_calls_;
    return MHD_YES;
  }
  call.phase = Call::Phase::kAnswered;  // answered before it could wait
  return Respond(connection, call.exchange->status(), call.exchange->body(), "application/json",
                 {});
}

MHD_Result CollectArgument(void* cls, MHD_ValueKind /*kind*/, const char* key, const char* value) {
  auto* query = static_cast<std::map<std::string, std::string>*>(cls);
  if (key != nullptr) query->emplace(key, value != nullptr ? value : "");
  return MHD_YES;
}

// An admin request, past its gate, goes to the admin worker; the connection waits for it.
MHD_Result Daemon::DeferAdmin(MHD_Connection* connection, std::string_view url,
                              std::string_view method, Call& call) {
  MHD_Result refused = MHD_NO;
  if (!routes_.AdminGate(connection, refused)) return refused;
  serve::AdminWorker::Task task{
      std::string(url), std::string(method), std::move(call.body), {}, nullptr};
  MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, &CollectArgument, &task.query);
  task.exchange = std::make_shared<Exchange>([connection] { MHD_resume_connection(connection); });
  std::shared_ptr<Exchange> exchange = task.exchange;
  if (!admin_.Submit(std::move(task))) {
    return routes_.Refuse(connection, 503, "busy", "the admin API has too much queued; try again");
  }
  return Wait(connection, call, std::move(exchange));
}

MHD_Result Daemon::Respond(MHD_Connection* connection, int status, std::string_view body,
                           std::string_view content_type, const Headers& extra) {
  MHD_Response* response = MHD_create_response_from_buffer(
      body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE,
                          std::string(content_type).c_str());
  for (const auto& [name, value] : extra) {
    MHD_add_response_header(response, name.c_str(), value.c_str());
  }
  if (stopping_.load()) MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
  const MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(status), response);
  MHD_destroy_response(response);
  if (queued == MHD_YES) {
    metrics_.CountRequest(status);
    ++requests_;
  }
  return queued;
}

Status Daemon::StartHttp() {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(options_.port));
  if (inet_pton(AF_INET, options_.host.c_str(), &address.sin_addr) != 1) {
    return Status::InvalidArgument("--listen: '" + options_.host +
                                   "' is not an IPv4 address (e.g. 127.0.0.1)");
  }
  const unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC;
  http_ = MHD_start_daemon(
      flags, static_cast<uint16_t>(options_.port), nullptr, nullptr, &Daemon::OnAccess, this,
      MHD_OPTION_SOCK_ADDR, reinterpret_cast<sockaddr*>(&address), MHD_OPTION_CONNECTION_LIMIT,
      options_.connections_max, MHD_OPTION_CONNECTION_TIMEOUT, options_.read_timeout_s,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, options_.header_bytes_max, MHD_OPTION_NOTIFY_COMPLETED,
      &Daemon::OnCompleted, this, MHD_OPTION_NOTIFY_CONNECTION, &Daemon::OnConnection, this,
      MHD_OPTION_UNESCAPE_CALLBACK, &Daemon::Unescape, this, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
      MHD_OPTION_END);
  if (http_ == nullptr) {
    return Status::Unavailable("cannot listen on " + options_.host + ":" +
                               std::to_string(options_.port) + ": " + std::strerror(errno));
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(http_, MHD_DAEMON_INFO_BIND_PORT);
  port_ = info != nullptr ? info->port : options_.port;
  return Status::Ok();
}

// Stops accepting, lets the loop decide and answer what is queued (at most drain_ms_max), and
// waits for the answers to be written before the server stops.
void Daemon::Drain() {
  stopping_ = true;
  intake_.Close();
  // The listening socket is ours once quiesced: closed at once, so a new connection is refused
  // instead of waiting in the kernel's queue, never accepted, for the whole drain.
  if (const MHD_socket listener = MHD_quiesce_daemon(http_); listener != MHD_INVALID_SOCKET) {
    ::close(listener);
  }
  const int64_t deadline_ms = clock_.MonotonicMs() + options_.drain_ms_max;
  while (intake_.outstanding() > 0 && loop_running_.load() && clock_.MonotonicMs() < deadline_ms) {
    clock_.SleepMs(5);
  }
  loop_stop_.Cancel();
  // The effects runner ends after its call in flight, or gives the call up at the deadline.
  while (effects_.joinable() && !effects_ended_.load() && clock_.MonotonicMs() < deadline_ms) {
    clock_.SleepMs(5);
  }
  effects_abandon_.Cancel();
  for (std::thread* worker : {&loop_, &broker_, &effects_, &probe_, &gauges_}) {
    if (worker->joinable()) worker->join();
  }
  intake_.FailOutstanding(503, "shutting-down",
                          "the daemon stopped before these events were decided; send them again");
  admin_.Stop();
  const int64_t written_by_ms = clock_.MonotonicMs() + 5000;
  while (waiting_calls_.load() > 0 && clock_.MonotonicMs() < written_by_ms) {
    clock_.SleepMs(5);
  }
  MHD_stop_daemon(http_);
  http_ = nullptr;
}

void Daemon::LoopThread() {
  while (!loop_stop_.cancelled()) {
    ConsumeOptions consume = options_.consume;
    consume.outcomes = outcomes_.get();
    consume.cancel = &loop_stop_;
    consume.on_committed = [this](const CommittedBatch& batch) {
      metrics_.CountBatch(batch);
      events_ += static_cast<int64_t>(batch.events);
      SetTrouble("");
      return intake_.OnCommitted(batch);
    };
    intake_.Rearm();
    intake_.SetDown(false);
    loop_running_ = true;
    Result<ConsumeSummary> run = Consume(pipeline_, store_, intake_, consume);
    loop_running_ = false;
    if (run.ok()) {
      std::lock_guard<std::mutex> lock(summary_mu_);
      for (const auto& [consumer, counts] : run->counts) {
        for (size_t i = 0; i < counts.size(); ++i)
          summary_.consume.counts[consumer][i] += counts[i];
      }
      summary_.consume.batches += run->batches;
      summary_.consume.events += run->events;
      continue;  // ended by loop_stop_ (the while checks it)
    }
    intake_.SetDown(true);
    const std::string why = run.status().ToString();
    SetTrouble(why);
    intake_.FailOutstanding(503, "store-unavailable",
                            "the store failed and these events were not committed: " + why);
    metrics_.CountRestart();
    {
      std::lock_guard<std::mutex> lock(summary_mu_);
      ++summary_.restarts;
    }
    if (options_.log != nullptr) {
      std::fprintf(options_.log, "evident serve: the consume loop failed (%s); again in %lld ms\n",
                   why.c_str(), static_cast<long long>(options_.restart_ms));
      std::fflush(options_.log);
    }
    SleepUnlessCancelled(clock_, options_.restart_ms, &loop_stop_);
  }
}

void Daemon::KeepRunning(std::string_view what, const std::function<Status()>& work) {
  while (!loop_stop_.cancelled()) {
    const Status status = work();
    if (loop_stop_.cancelled()) break;
    if (status.ok()) continue;
    metrics_.CountRestart();
    {
      std::lock_guard<std::mutex> lock(summary_mu_);
      ++summary_.restarts;
    }
    if (options_.log != nullptr) {
      std::fprintf(options_.log, "evident serve: %.*s failed (%s); again in %lld ms\n",
                   static_cast<int>(what.size()), what.data(), status.ToString().c_str(),
                   static_cast<long long>(options_.restart_ms));
      std::fflush(options_.log);
    }
    SleepUnlessCancelled(clock_, options_.restart_ms, &loop_stop_);
  }
}

// The broker's events through a consume loop of their own (store handle, pipeline, source).
Status Daemon::BrokerRun() {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, options_.open_broker_source());
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, options_.open_store(false));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> pipeline,
                           Pipeline::Create(pipeline_.config()));
  ConsumeOptions consume = options_.consume;
  consume.outcomes = outcomes_.get();
  consume.cancel = &loop_stop_;
  consume.resume = options_.broker_resumes;
  consume.on_committed = [this](const CommittedBatch& batch) {
    metrics_.CountBatch(batch);
    events_ += static_cast<int64_t>(batch.events);
    broker_events_ += static_cast<int64_t>(batch.events);
    return Status::Ok();
  };
  broker_running_ = true;
  Result<ConsumeSummary> run = Consume(*pipeline, *store, *source, consume);
  broker_running_ = false;
  return run.status();
}

Status Daemon::EffectsRun() {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, options_.open_store(false));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<EffectTransport> transport, NewHttpTransport());
  EffectRunOptions run{.runner_id = "serve-" + std::to_string(::getpid()),
                       .cancel = &loop_stop_,
                       .abandon = &effects_abandon_};
  run.busy_retry = options_.consume.busy_retry;
  run.tracer = options_.consume.tracer;
  return RunEffects(pipeline_.config(), *store, *transport, run).status();
}

void Daemon::SetTrouble(std::string why) {
  std::lock_guard<std::mutex> lock(trouble_mu_);
  store_trouble_ = std::move(why);
}

std::string Daemon::StoreTrouble() const {
  std::lock_guard<std::mutex> lock(trouble_mu_);
  return store_trouble_;
}

// While the loop's last run failed on the store and no commit came since, a write transaction
// is begun and rolled back on a handle of this thread's: once that works, the store is ready
// again (an idle daemon would otherwise stay "not ready" until traffic it is not sent).
// On a thread of its own (a probe may wait for the store's busy timeout): about once a second,
// while the loop's last run failed on the store and no commit came since, commits a real write
// (the position "evident-serve:readiness", the time) on a handle of its own: once that works, the
// store is ready again (a full disk fails it, where a transaction only begun would not). An idle
// daemon would otherwise stay "not ready" until traffic that is not sent to it.
void Daemon::ProbeThread() {
  std::unique_ptr<Store> probe;
  while (SleepUnlessCancelled(clock_, 1000, &loop_stop_)) {
    if (StoreTrouble().empty()) continue;
    if (probe == nullptr) {
      Result<std::unique_ptr<Store>> opened = options_.open_store(false);
      if (!opened.ok()) continue;
      probe = std::move(opened).value();
    }
    Result<std::unique_ptr<Transaction>> begun = probe->Begin();
    if (!begun.ok()) continue;
    Status wrote = (*begun)->SetPosition("evident-serve:readiness", std::to_string(clock_.NowMs()));
    if (wrote.ok()) wrote = (*begun)->Commit();
    if (!wrote.ok()) {
      (void)(*begun)->Rollback();
      continue;
    }
    SetTrouble("");
  }
}

// The store's gauges of GET /metrics, read on a handle of this thread's own at most once per
// metrics_interval_ms: a scrape serves the last reading (metrics.h) and never waits on the
// store, so scrapers cannot hold up the HTTP thread that takes events in.
// `reader` made the first reading before the daemon listened (null: it could not be opened).
void Daemon::GaugesThread(std::unique_ptr<Store> reader) {
  while (SleepUnlessCancelled(clock_, options_.metrics_interval_ms, &loop_stop_)) {
    if (reader == nullptr) {
      Result<std::unique_ptr<Store>> opened = options_.open_store(true);
      if (opened.ok()) reader = std::move(opened).value();
    }
    // A failed read drops the handle: the next interval opens another.
    if (!metrics_.ReadStoreGauges(reader.get(), clock_.NowMs())) reader.reset();
  }
}

// Why the broker is not ready, empty when it is (or there is none).
std::string Daemon::BrokerTrouble() const {
  if (!options_.open_broker_source) return {};
  if (!broker_running_.load()) return "the broker's consume loop is not running";
  if (options_.probe_broker) {
    if (Status probed = options_.probe_broker(); !probed.ok()) {
      return "the broker does not answer: " + probed.ToString();
    }
  }
  return {};
}

Result<ServeSummary> Daemon::Run() {
  if (!options_.open_store) return Status::InvalidArgument("ServeOptions::open_store is required");
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> reader, options_.open_store(true));
  routes_.SetReader(std::move(reader));
  EVIDENT_RETURN_IF_ERROR(admin_.Start());
  loop_ = std::thread([this] { LoopThread(); });
  probe_ = std::thread([this] { ProbeThread(); });
  {
    // The first reading before the daemon listens: every scrape has store gauges.
    Result<std::unique_ptr<Store>> opened = options_.open_store(true);
    std::unique_ptr<Store> gauge_reader = opened.ok() ? std::move(opened).value() : nullptr;
    if (!metrics_.ReadStoreGauges(gauge_reader.get(), clock_.NowMs())) gauge_reader.reset();
    gauges_ = std::thread(
        [this, reader = std::move(gauge_reader)]() mutable { GaugesThread(std::move(reader)); });
  }
  if (options_.open_broker_source) {
    broker_ = std::thread(
        [this] { KeepRunning("the broker's consume loop", [this] { return BrokerRun(); }); });
  }
  const bool any_effects =
      std::any_of(pipeline_.config().consumers.begin(), pipeline_.config().consumers.end(),
                  [](const ConsumerConfig& c) { return !c.effects.empty(); });
  if (options_.run_effects && any_effects) {
    effects_ = std::thread([this] {
      KeepRunning("the effects runner", [this] { return EffectsRun(); });
      effects_ended_ = true;
    });
  }
  if (Status started = StartHttp(); !started.ok()) {
    loop_stop_.Cancel();
    for (std::thread* worker : {&loop_, &broker_, &effects_, &probe_, &gauges_}) {
      if (worker->joinable()) worker->join();
    }
    return started;
  }
  if (options_.on_listening) options_.on_listening(port_);
  while (options_.cancel == nullptr || !options_.cancel->cancelled()) {
    metrics_.SetQueue(intake_.backlog().value_or(0), static_cast<int64_t>(intake_.outstanding()));
    watch_.Sweep(
        options_.header_ms_max,
        std::max<int64_t>(options_.header_ms_max, int64_t{options_.read_timeout_s} * 1000));
    clock_.SleepMs(50);
  }
  Drain();
  std::lock_guard<std::mutex> lock(summary_mu_);
  summary_.requests = requests_.load();
  summary_.events = events_.load();
  summary_.broker_events = broker_events_.load();
  return summary_;
}

}  // namespace

Status ApplyHttpConfig(const HttpConfig& http, ServeOptions& options) {
  options.allowed_origins = http.webhook_origins;
  options.signature_tolerance_s = http.signature_tolerance_s;
  for (const WebhookSecretConfig& entry : http.webhook_secrets) {
    std::string text;
    if (!entry.secret_env.empty()) {
      const char* value = std::getenv(entry.secret_env.c_str());
      if (value == nullptr) {
        return Status::InvalidArgument("the webhook secret of " + entry.source + ": $" +
                                       entry.secret_env + " is not set");
      }
      text = value;
    } else {
      Result<std::string> read = ReadFileToString(entry.secret_file, 4096);
      if (!read.ok()) {
        return read.status().Annotate("the webhook secret of " + entry.source);
      }
      text = *std::move(read);
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
      text.pop_back();
    }
    Result<std::string> key = serve::DecodeWebhookSecret(text);
    if (!key.ok()) return key.status().Annotate("the webhook secret of " + entry.source);
    options.webhook_secrets[entry.source].push_back(*std::move(key));
  }
  return Status::Ok();
}

Result<ServeSummary> Serve(Pipeline& pipeline, Store& store, const ServeOptions& options) {
  Daemon daemon(pipeline, store, options);
  return daemon.Run();
}

}  // namespace evident
