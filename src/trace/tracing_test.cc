// OtlpTracer against a local receiver started here: spans arrive as OTLP/HTTP JSON, batched,
// with their links and attributes; a full queue drops and counts; a dead collector is counted,
// never waited on.
#include "evident/tracing.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace evident {
namespace {

// Takes HTTP/1.1 POSTs, keeps each body, answers `status`.
class Receiver {
 public:
  explicit Receiver(int status = 200) : status_(status) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&address), size) != 0 || ::listen(fd_, 8) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
      ADD_FAILURE() << "cannot listen";
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Receiver() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }
  std::vector<std::string> paths() {
    std::lock_guard<std::mutex> lock(mu_);
    return paths_;
  }

 private:
  void Serve() {
    while (true) {
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buffer[65536];
      size_t body_at = std::string::npos, length = 0;
      while (true) {
        const ssize_t n = ::read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
        if (body_at == std::string::npos &&
            (body_at = request.find("\r\n\r\n")) != std::string::npos) {
          body_at += 4;
          const size_t at = request.find("Content-Length: ");
          length = at == std::string::npos ? 0 : std::stoul(request.substr(at + 16));
        }
        if (body_at != std::string::npos && request.size() >= body_at + length) break;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        paths_.push_back(request.substr(0, request.find("\r\n")));
        bodies_.push_back(body_at == std::string::npos ? "" : request.substr(body_at));
      }
      const std::string answer = "HTTP/1.1 " + std::to_string(status_) +
                                 " X\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}";
      (void)!::write(client, answer.data(), answer.size());
      ::close(client);
    }
  }

  int status_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_, paths_;
};

Span SomeSpan(const std::string& name) {
  Span span;
  span.name = name;
  span.trace_id = NewTraceId();
  span.span_id = NewSpanId();
  span.start_unix_ns = UnixNanosNow();
  span.end_unix_ns = span.start_unix_ns + 1000;
  span.attributes = {{"evident.consumer", "fulfillment"}};
  span.int_attributes = {{"evident.events", 3}};
  span.links.push_back(
      *TraceContext::Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  return span;
}

TEST(TraceContext, ParsesTheW3CFormAndRefusesTheRest) {
  const auto c = TraceContext::Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(c->span_id, "00f067aa0ba902b7");
  EXPECT_EQ(c->flags, 1);
  EXPECT_EQ(c->Traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  for (const char* bad : {"", "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                          "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x"}) {
    EXPECT_FALSE(TraceContext::Parse(bad).has_value()) << bad;
  }
  EXPECT_EQ(NewTraceId().size(), 32u);
  EXPECT_EQ(NewSpanId().size(), 16u);
  EXPECT_NE(NewSpanId(), NewSpanId());
}

TEST(OtlpTracer, SpansArriveAsOtlpJsonWithTheirLinks) {
  Receiver receiver;
  auto tracer = OtlpTracer::Open({.endpoint = receiver.url(), .service_name = "orders"});
  ASSERT_TRUE(tracer.ok()) << tracer.status().ToString();
  for (int i = 0; i < 5; ++i) (*tracer)->Record(SomeSpan("evident.decide"));
  (*tracer)->Flush();
  EXPECT_EQ((*tracer)->stats().exported, 5);
  const std::vector<std::string> bodies = receiver.bodies();
  ASSERT_EQ(bodies.size(), 1u);  // one batch
  EXPECT_EQ(receiver.paths()[0], "POST /v1/traces HTTP/1.1");
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  ASSERT_EQ(parser.parse(bodies[0]).get(root), simdjson::SUCCESS) << bodies[0];
  simdjson::dom::element resource = root["resourceSpans"].at(0);
  EXPECT_EQ(std::string_view(resource["resource"]["attributes"].at(0)["value"]["stringValue"]),
            "orders");
  simdjson::dom::array spans = resource["scopeSpans"].at(0)["spans"];
  ASSERT_EQ(spans.size(), 5u);
  simdjson::dom::element span = spans.at(0);
  EXPECT_EQ(std::string_view(span["name"]), "evident.decide");
  EXPECT_EQ(std::string_view(span["traceId"]).size(), 32u);
  EXPECT_EQ(std::string_view(span["links"].at(0)["traceId"]), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(std::string_view(span["attributes"].at(1)["value"]["intValue"]), "3");
}

TEST(OtlpTracer, AFullQueueDropsAndCountsAndADeadCollectorIsCounted) {
  int port = 0;
  {
    Receiver gone;  // a port nothing listens on once it is closed
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto tracer = OtlpTracer::Open({.endpoint = "http://127.0.0.1:" + std::to_string(port),
                                  .queue_spans_max = 3,
                                  .batch_spans_max = 100,
                                  .linger_ms = 60'000,
                                  .timeout_ms = 2000});
  ASSERT_TRUE(tracer.ok());
  for (int i = 0; i < 5; ++i) (*tracer)->Record(SomeSpan("evident.relay"));
  EXPECT_EQ((*tracer)->stats().dropped, 2);
  (*tracer)->Flush();
  const OtlpStats stats = (*tracer)->stats();
  EXPECT_EQ(stats.failed, 3);
  EXPECT_EQ(stats.exported, 0);
  EXPECT_FALSE(stats.last_error.empty());
}

TEST(OtlpTracer, ACollectorsRefusalIsCountedAsFailed) {
  Receiver receiver(503);
  auto tracer = OtlpTracer::Open({.endpoint = receiver.url() + "/v1/traces/"});
  ASSERT_TRUE(tracer.ok());
  (*tracer)->Record(SomeSpan("evident.effect"));
  (*tracer)->Flush();
  EXPECT_EQ((*tracer)->stats().failed, 1);
  EXPECT_NE((*tracer)->stats().last_error.find("503"), std::string::npos);
  EXPECT_EQ(receiver.paths()[0], "POST /v1/traces HTTP/1.1");
}

TEST(OtlpTracer, RefusesAnEndpointThatIsNotHttpAndLimitsOutOfRange) {
  EXPECT_FALSE(OtlpTracer::Open({.endpoint = "grpc://127.0.0.1:4317"}).ok());
  EXPECT_FALSE(OtlpTracer::Open({.endpoint = "http://127.0.0.1:1", .linger_ms = 0}).ok());
  EXPECT_FALSE(OtlpTracer::Open({.endpoint = "http://127.0.0.1:1", .timeout_ms = 0}).ok());
}

// A collector that takes connections and never answers holds a closing process up for
// close_ms_max at most: what is left is dropped, and counted.
TEST(OtlpTracer, CloseIsBoundedByACollectorThatNeverAnswers) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), size), 0);
  ASSERT_EQ(::listen(fd, 64), 0);  // connections complete in the backlog; nothing answers
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size), 0);
  auto tracer =
      OtlpTracer::Open({.endpoint = "http://127.0.0.1:" + std::to_string(ntohs(address.sin_port)),
                        .batch_spans_max = 100,
                        .linger_ms = 60'000,
                        .timeout_ms = 10'000,
                        .close_ms_max = 300});
  ASSERT_TRUE(tracer.ok());
  for (int i = 0; i < 600; ++i) (*tracer)->Record(SomeSpan("evident.decide"));
  const auto start = std::chrono::steady_clock::now();
  (*tracer)->Close();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0);  // 0.3 s asked; six requests of 10 s each would be a minute
  const OtlpStats stats = (*tracer)->stats();
  EXPECT_EQ(stats.exported, 0);
  EXPECT_EQ(stats.failed + stats.dropped, 600);
  (*tracer)->Record(SomeSpan("evident.decide"));  // after Close: dropped, never sent
  EXPECT_EQ((*tracer)->stats().dropped, stats.dropped + 1);
  ::close(fd);
}

}  // namespace
}  // namespace evident
