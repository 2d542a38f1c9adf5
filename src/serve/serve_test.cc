// The daemon end to end, in process: a real listening socket, the SQLite store, requests over
// loopback (serve/http_test_client.h).
#include "evident/serve.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "evident/profile.h"
#include "evident/store_sqlite.h"
#include "serve/http_test_client.h"
#include "serve/metrics.h"
#include "serve/signature.h"

namespace evident {
namespace {

using serve::testing::Http;
using serve::testing::HttpAnswer;
using serve::testing::SendRaw;
namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

constexpr const char* kSource = "training://orders/checkout";
const std::vector<std::pair<std::string, std::string>> kStructured = {
    {"Content-Type", "application/cloudevents+json"}};
const std::vector<std::pair<std::string, std::string>> kBatch = {
    {"Content-Type", "application/cloudevents-batch+json"}};

// An order.status.changed event the orders-projection consumer applies.
std::string StatusEvent(const std::string& id, const std::string& subject,
                        const std::string& source = kSource) {
  return R"({"specversion":"1.0","id":")" + id + R"(","source":")" + source +
         R"(","type":"order.status.changed","subject":")" + subject +
         R"(","data":{"schemaVersion":1,"orderId":")" + subject + R"(","status":"paid"}})";
}

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-serve-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "s.db").string();
  }
  void TearDown() override {
    if (server_.joinable()) Stop();
    fs::remove_all(dir_);
  }

  void Start() {
    auto config = LoadConfig(std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/evident.yaml");
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    config->linger_ms = linger_ms_;
    if (adjust_config_) adjust_config_(*config);
    if (!profile_.empty()) config->profile = Profile::Named(profile_).value();
    auto pipeline = Pipeline::Create(*config);
    ASSERT_TRUE(pipeline.ok());
    pipeline_ = std::move(pipeline).value();
    auto store = OpenSqliteStore(path_, {.busy_timeout_ms = busy_timeout_ms_});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    options_.open_store = [this](bool read_only) -> Result<std::unique_ptr<Store>> {
      return OpenSqliteStore(path_, {.busy_timeout_ms = busy_timeout_ms_, .read_only = read_only});
    };
    options_.consume.busy_retry.attempts_max = 1;
    options_.cancel = &cancel_;
    std::promise<int> listening;
    options_.on_listening = [&listening](int port) { listening.set_value(port); };
    server_ = std::thread([this] { result_ = Serve(*pipeline_, *store_, options_); });
    auto port = listening.get_future();
    ASSERT_EQ(port.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    port_ = port.get();
  }

  void Stop() {
    cancel_.Cancel();
    server_.join();
    ASSERT_TRUE(result_.ok()) << result_.status().ToString();
  }

  // The ledger entry of orders-projection for `id`, read from a fresh read-only handle.
  bool Applied(const std::string& id, const std::string& source = kSource) {
    auto store = OpenSqliteStore(path_, {.read_only = true});
    if (!store.ok()) return false;
    auto snapshot = (*store)->Read();
    if (!snapshot.ok()) return false;
    auto entry = (*snapshot)->FindLedger("orders-projection", source, id);
    return entry.ok() && entry->has_value();
  }

  // The bytes of every quarantined input, read from a fresh read-only handle.
  std::vector<std::string> QuarantinedBytes() {
    std::vector<std::string> raws;
    auto store = OpenSqliteStore(path_, {.read_only = true});
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return raws;
    auto snapshot = (*store)->Read();
    EXPECT_TRUE(snapshot.ok());
    if (!snapshot.ok()) return raws;
    auto kept = (*snapshot)->ListQuarantine({}, {}, 10);
    EXPECT_TRUE(kept.ok());
    if (kept.ok()) {
      for (const auto& row : kept->rows) raws.push_back(row.raw);
    }
    return raws;
  }

  HttpAnswer Post(const std::string& body,
                  const std::vector<std::pair<std::string, std::string>>& headers = kStructured) {
    return Http(port_, "POST", "/events", headers, body);
  }

  fs::path dir_;
  std::string path_;
  int64_t linger_ms_ = 5;
  std::string profile_;                         // the config's own when empty
  std::function<void(Config&)> adjust_config_;  // applied to the loaded config, when set
  int64_t busy_timeout_ms_ = 5000;
  ServeOptions options_;
  CancelToken cancel_;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<Store> store_;
  std::thread server_;
  Result<ServeSummary> result_ = Status::Internal("not run");
  int port_ = 0;
};

TEST_F(ServeTest, EachModeIsDecidedAndCommittedBeforeTheAnswer) {
  Start();
  HttpAnswer structured = Post(StatusEvent("s-1", "order-1"));
  ASSERT_EQ(structured.status, 200) << structured.body;
  EXPECT_NE(structured.body.find(R"("events":1)"), std::string::npos) << structured.body;
  EXPECT_NE(structured.body.find(R"("outcome":"applied")"), std::string::npos);
  EXPECT_TRUE(Applied("s-1"));  // committed when the answer came

  HttpAnswer batch =
      Post("[" + StatusEvent("b-1", "order-2") + "," + StatusEvent("b-2", "order-3") + "," +
               StatusEvent("s-1", "order-1") + "]",
           kBatch);
  ASSERT_EQ(batch.status, 200) << batch.body;
  EXPECT_NE(batch.body.find(R"("events":3)"), std::string::npos);
  EXPECT_NE(batch.body.find(R"("index":2,"consumer":"orders-projection","outcome":"duplicate")"),
            std::string::npos)
      << batch.body;
  EXPECT_TRUE(Applied("b-1"));
  EXPECT_TRUE(Applied("b-2"));

  HttpAnswer binary = Post(R"({"schemaVersion":1,"orderId":"order-4","status":"paid"})",
                           {{"Content-Type", "application/json"},
                            {"ce-specversion", "1.0"},
                            {"ce-id", "bin-1"},
                            {"ce-source", kSource},
                            {"ce-type", "order.status.changed"},
                            {"ce-subject", "order-4"}});
  ASSERT_EQ(binary.status, 200) << binary.body;
  EXPECT_NE(binary.body.find(R"("outcome":"applied")"), std::string::npos) << binary.body;
  EXPECT_TRUE(Applied("bin-1"));
}

TEST_F(ServeTest, ABadEventIsADecisionKeptWithItsBytes) {
  Start();
  const HttpAnswer broken = Post(R"({"specversion":"1.0","id":"x", "source":)");
  ASSERT_EQ(broken.status, 200);
  EXPECT_NE(broken.body.find(R"("outcome":"rejected","reason":"malformed-json")"),
            std::string::npos)
      << broken.body;
  EXPECT_EQ(QuarantinedBytes(), Strings{R"({"specversion":"1.0","id":"x", "source":)"});
}

// One bad element of a batch is one rejected decision, kept with its bytes; its neighbours are
// decided as usual.
TEST_F(ServeTest, ABadBatchElementIsKeptAndItsNeighboursApplied) {
  Start();
  const std::string bad = "{\"specversion\":\"1.0\",\"id\":\"u\",\"x\":\"\xc3\"}";
  const HttpAnswer answer = Post(
      "[" + StatusEvent("ok-1", "order-b") + "," + bad + "," + StatusEvent("ok-2", "order-b") + "]",
      kBatch);
  ASSERT_EQ(answer.status, 200) << answer.body;
  EXPECT_NE(
      answer.body.find(R"("index":1,"consumer":null,"outcome":"rejected","reason":"invalid-utf8")"),
      std::string::npos)
      << answer.body;
  EXPECT_TRUE(Applied("ok-1"));
  EXPECT_TRUE(Applied("ok-2"));
  EXPECT_EQ(QuarantinedBytes(), Strings{bad});
}

TEST_F(ServeTest, RefusalsCarryAStatusAndAReason) {
  options_.body_bytes_max = 4096;
  Start();
  HttpAnswer empty = Post("");
  EXPECT_EQ(empty.status, 400);
  EXPECT_NE(empty.body.find(R"("reason":"no-event")"), std::string::npos);
  EXPECT_EQ(Post("[]", kBatch).status, 400);
  EXPECT_EQ(Post("{}", {{"Content-Type", "application/json"}}).status, 415);
  HttpAnswer large = Post(std::string(5000, ' ') + "{}");
  EXPECT_EQ(large.status, 413);
  EXPECT_NE(large.body.find(R"("reason":"body-too-large")"), std::string::npos);
  // Chunked, with no length to refuse it by up front.
  std::string chunked =
      "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/cloudevents+json\r\n"
      "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
  for (int i = 0; i < 6; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";
  chunked += "0\r\n\r\n";
  const HttpAnswer chunked_large = SendRaw(port_, chunked);
  EXPECT_EQ(chunked_large.status, 413);
  EXPECT_NE(chunked_large.body.find(R"("reason":"body-too-large")"), std::string::npos);
  EXPECT_EQ(Http(port_, "GET", "/events").status, 405);
  EXPECT_EQ(Http(port_, "GET", "/nothing").status, 404);
  EXPECT_EQ(Post(StatusEvent("after", "order-9")).status, 200);  // and it still serves
}

TEST_F(ServeTest, ConcurrentRequestsShareCommits) {
  linger_ms_ = 200;  // clients on a loaded machine come back at the batch within it
  Start();
  constexpr int kThreads = 16, kEach = 10;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string id = "c-" + std::to_string(t) + "-" + std::to_string(i);
        if (Post(StatusEvent(id, "order-c" + std::to_string(t))).status == 200) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  Stop();
  EXPECT_EQ(ok.load(), kThreads * kEach);
  EXPECT_EQ(result_->events, kThreads * kEach);
  // Sixteen clients waiting on one another's commits: far fewer transactions than requests.
  EXPECT_LT(result_->consume.batches, kThreads * kEach / 2) << result_->consume.batches;
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(Applied("c-" + std::to_string(t) + "-9"));
}

// Issue 40's forged owner, replayed against the daemon with signatures on: a sibling of the
// signed owner (a path, query or fragment under it) cannot send unsigned, and a sibling that signs
// with its own key is rejected as owner-mismatch, nothing written but the quarantine record.
std::string OrderPaid(const std::string& id, const std::string& source, int version) {
  return R"({"specversion":"1.0","id":")" + id + R"(","source":")" + source +
         R"(","type":"com.example.training.order.paid","subject":"order-417","schemaversion":1,)" +
         R"("data":{"orderId":"order-417","orderVersion":)" + std::to_string(version) + "}}";
}

TEST_F(ServeTest, AForgedOwnerIsRefusedWithNothingWrittenButItsRecord) {
  const std::string owner = "https://example.test/order-service";
  const std::string evil = owner + "/evil";
  const std::string owner_key = "0123456789abcdef0123456789abcdef";
  const std::string evil_key = "fedcba9876543210fedcba9876543210";
  options_.webhook_secrets[owner] = {owner_key};
  options_.webhook_secrets[evil] = {evil_key};  // the longest signed source a source is under
  Start();
  const std::string now = std::to_string(std::time(nullptr));
  auto signed_by = [&](const std::string& key, const std::string& body) {
    auto h = kStructured;
    h.emplace_back("webhook-id", "msg-" + std::to_string(body.size()));
    h.emplace_back("webhook-timestamp", now);
    h.emplace_back("webhook-signature",
                   serve::SignV1(key, "msg-" + std::to_string(body.size()), now, body));
    return h;
  };
  const std::string v1 = OrderPaid("a1", owner, 1);
  ASSERT_EQ(Post(v1, signed_by(owner_key, v1)).status, 200);
  auto counts = [&] {
    auto store = OpenSqliteStore(path_, {.read_only = true}).value();
    return store->Read().value()->Counts().value();
  };
  const auto before = counts();
  // Unsigned, or signed with the owner's key by someone who lacks it: refused before intake.
  for (const std::string& source : {evil, owner + "?x=1", owner + "#f", owner + "/eu"}) {
    const std::string forged = OrderPaid("f2", source, 2);
    EXPECT_EQ(Post(forged).status, 401) << source;
    EXPECT_EQ(Post(forged, signed_by(evil_key, forged)).status, source == evil ? 200 : 401)
        << source;
  }
  // The one that passed its own signature was rejected: the owner of order-417 stays.
  const auto after = counts();
  ASSERT_EQ(after.size(), before.size());
  ASSERT_TRUE(std::any_of(after.begin(), after.end(), [](const auto& table) {
    return table.first == "quarantine";
  })) << "no quarantine count to check";
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].second - before[i].second, after[i].first == "quarantine" ? 1 : 0)
        << after[i].first;
  }
  auto store = OpenSqliteStore(path_, {.read_only = true}).value();
  auto snapshot = store->Read().value();
  const Projection p = snapshot->FindProjection("fulfillment", "order-417").value().value();
  EXPECT_EQ(p.version, 1);
  EXPECT_EQ(p.owner_source, owner);
  const auto kept = snapshot->QuarantineOf("order-417").value().rows;
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].reason, "owner-mismatch");
  EXPECT_EQ(kept[0].source, evil);
  EXPECT_NE(kept[0].message.find(owner + " (the source"), std::string::npos) << kept[0].message;
  // The owner's next version applies.
  const std::string v2 = OrderPaid("a2", owner, 2);
  const HttpAnswer next = Post(v2, signed_by(owner_key, v2));
  EXPECT_NE(next.body.find(R"("outcome":"applied")"), std::string::npos) << next.body;
}

TEST_F(ServeTest, SignedSourcesNeedAValidFreshSignature) {
  const std::string key = "0123456789abcdef0123456789abcdef";
  options_.webhook_secrets["urn:signed"] = {key};
  Start();
  const std::string body = StatusEvent("sig-1", "order-s", "urn:signed");
  const std::string now = std::to_string(std::time(nullptr));
  auto headers = [&](const std::string& timestamp, const std::string& signature) {
    auto h = kStructured;
    h.emplace_back("webhook-id", "msg-1");
    h.emplace_back("webhook-timestamp", timestamp);
    h.emplace_back("webhook-signature", signature);
    return h;
  };
  const HttpAnswer unsigned_answer = Post(body);
  EXPECT_EQ(unsigned_answer.status, 401);
  EXPECT_NE(unsigned_answer.body.find("missing-signature"), std::string::npos);
  const HttpAnswer bad = Post(body, headers(now, serve::SignV1("wrong", "msg-1", now, body)));
  EXPECT_EQ(bad.status, 401);
  EXPECT_NE(bad.body.find("bad-signature"), std::string::npos);
  const std::string old = std::to_string(std::time(nullptr) - 3600);
  const HttpAnswer stale = Post(body, headers(old, serve::SignV1(key, "msg-1", old, body)));
  EXPECT_EQ(stale.status, 401);
  EXPECT_NE(stale.body.find("stale-signature"), std::string::npos);
  EXPECT_FALSE(Applied("sig-1", "urn:signed"));
  const HttpAnswer good = Post(body, headers(now, serve::SignV1(key, "msg-1", now, body)));
  EXPECT_EQ(good.status, 200) << good.body;
  // A source under the signed one is signed with its key too: an unsigned sibling is refused.
  for (const char* sibling : {"urn:signed/evil", "urn:signed?x=1", "urn:signed#f"}) {
    const std::string forged = StatusEvent("forged-1", "order-s", sibling);
    const HttpAnswer refused = Post(forged);
    EXPECT_EQ(refused.status, 401) << sibling << ": " << refused.body;
    EXPECT_NE(refused.body.find("missing-signature"), std::string::npos) << refused.body;
    EXPECT_EQ(Post(forged, headers(now, serve::SignV1(key, "msg-2", now, forged))).status, 401)
        << "the webhook-id is part of what is signed";
  }
  EXPECT_EQ(Post(StatusEvent("urn-signed-ish", "order-p", "urn:signedish")).status, 200);
  // Sources without a secret need no signature.
  EXPECT_EQ(Post(StatusEvent("plain-1", "order-p")).status, 200);
  // The source read as the envelope reads it: an escaped member name is still "source".
  std::string escaped = body;
  escaped.replace(escaped.find("\"source\""), 8, "\"sour\\u0063e\"");
  EXPECT_EQ(Post(escaped).status, 401) << escaped;
  // Binary mode carries the attributes in headers no signature covers.
  const HttpAnswer binary = Post(
      R"({"schemaVersion":1,"orderId":"o","status":"paid"})",
      {{"Content-Type", "application/json"},
       {"ce-specversion", "1.0"},
       {"ce-id", "sig-bin"},
       {"ce-source", "urn:signed"},
       {"ce-type", "order.status.changed"},
       {"ce-subject", "order-s"},
       {"webhook-id", "msg-1"},
       {"webhook-timestamp", now},
       {"webhook-signature",
        serve::SignV1(key, "msg-1", now, R"({"schemaVersion":1,"orderId":"o","status":"paid"})")}});
  EXPECT_EQ(binary.status, 401);
  EXPECT_NE(binary.body.find("unsigned-attributes"), std::string::npos) << binary.body;
  // Also when the event it makes would not parse (kept bytes naming the signed source).
  EXPECT_EQ(Post("{broken", {{"Content-Type", "application/json"},
                             {"ce-specversion", "1.0"},
                             {"ce-id", "sig-bin-2"},
                             {"ce-source", "urn%3Asigned"}})
                .status,
            401);
  const HttpAnswer metrics = Http(port_, "GET", "/metrics");
  EXPECT_NE(
      metrics.body.find(R"(evident_webhook_signature_failures_total{reason="bad-signature"} 4)"),
      std::string::npos)
      << metrics.body;
}

TEST_F(ServeTest, WebhookHandshakeAnswersAllowedOrigins) {
  options_.allowed_origins = {"sender.example"};
  Start();
  HttpAnswer allowed =
      Http(port_, "OPTIONS", "/events", {{"WebHook-Request-Origin", "sender.example"}});
  EXPECT_EQ(allowed.status, 200);
  EXPECT_EQ(allowed.headers["webhook-allowed-origin"], "sender.example");
  EXPECT_EQ(allowed.headers["webhook-allowed-rate"], "*");
  const HttpAnswer other =
      Http(port_, "OPTIONS", "/events", {{"WebHook-Request-Origin", "evil.example"}});
  EXPECT_EQ(other.status, 403);
  EXPECT_EQ(other.headers.count("webhook-allowed-origin"), 0u);
}

// The signed source is read as the config's profile reads it: under the flat layout it is
// producer.id, in structured and in binary mode (where ce-producer.id carries it).
TEST_F(ServeTest, SignaturesFollowTheProfilesSource) {
  options_.webhook_secrets["urn:signed"] = {"0123456789abcdef0123456789abcdef"};
  profile_ = "flat";
  Start();
  const std::string flat =
      R"({"event.id":"fl-1","event.name":"order.status.changed","producer.id":"urn:signed",)"
      R"("aggregate.id":"fl","payload":{"schemaVersion":1,"orderId":"o","status":"forged"}})";
  const HttpAnswer structured = Post(flat);
  EXPECT_EQ(structured.status, 401) << structured.body;
  EXPECT_NE(structured.body.find("missing-signature"), std::string::npos) << structured.body;
  EXPECT_EQ(Post("[" + flat + "]", kBatch).status, 401);
  const HttpAnswer binary = Post(R"({"schemaVersion":1,"orderId":"o","status":"forged"})",
                                 {{"Content-Type", "application/json"},
                                  {"ce-event.id", "fl-2"},
                                  {"ce-event.name", "order.status.changed"},
                                  {"ce-producer.id", "urn:signed"}});
  EXPECT_NE(binary.status, 200) << binary.body;
  EXPECT_FALSE(Applied("fl-1", "urn:signed"));
  EXPECT_FALSE(Applied("fl-2", "urn:signed"));
  // A top-level "source" means nothing to this layout, signed or not.
  const std::string other =
      R"({"event.id":"fl-3","event.name":"order.status.changed","producer.id":"urn:plain",)"
      R"("source":"urn:signed","aggregate.id":"fl","payload":{"schemaVersion":1,"orderId":"o",)"
      R"("status":"paid"}})";
  EXPECT_EQ(Post(other).status, 200);
}

// What an admin request's body counted against queue_bytes_max is given back when it ends,
// although the admin worker took the body away: many such requests never starve /events.
TEST_F(ServeTest, AdminBodiesGiveBackTheirBytes) {
  options_.admin_token = "s3cret-token-of-enough-length";
  options_.queue_bytes_max = size_t{1} << 20;
  Start();
  const std::string note = R"({"by":"x","note":")" + std::string(60000, 'a') + R"("})";
  for (int i = 0; i < 40; ++i) {  // 2.4 MB in all, one request at a time
    const HttpAnswer answer = Http(port_, "POST", "/api/quarantine/999999/discard",
                                   {{"Authorization", "Bearer s3cret-token-of-enough-length"},
                                    {"Content-Type", "application/json"}},
                                   note);
    ASSERT_NE(answer.status, 503) << i << " " << answer.body;
  }
  const HttpAnswer events = Post(StatusEvent("after-admin", "order-aa"));
  EXPECT_EQ(events.status, 200) << events.body;
}

// The admin route resolves as `effects resolve --config` does: an intent whose last claim has no
// answer and began within its effect's timeout plus the claim margin may have a call in flight
// (409); once its runner's answer is logged, the resolution goes through.
TEST_F(ServeTest, AResolutionWaitsWhileTheIntentsCallMayBeInFlight) {
  options_.admin_token = "s3cret-token-of-enough-length";
  Start();
  const int64_t now_ms = SystemClock().NowMs();
  const auto write = [&](bool claim) {
    auto store = OpenSqliteStore(path_, {.busy_timeout_ms = 5000}).value();
    auto tx = store->Begin().value();
    if (claim) {
      const EffectIntent intent{.key = "reserve:order-z",
                                .effect = "reserve-stock",
                                .consumer = "fulfillment",
                                .subject = "order-z",
                                .source = "s",
                                .event_id = "e-z",
                                .subject_version = 1,
                                .request = "{}",
                                .state = EffectState::kUnknown,
                                .attempts = 1,
                                .intended_at_ms = now_ms,
                                .last_attempt_at_ms = now_ms,
                                .claimed_by = "r-elsewhere"};
      ASSERT_EQ(tx->InsertIntent(intent).value(), Insert::kInserted);
    }
    ASSERT_TRUE(
        tx->LogIntent({.key = "reserve:order-z",
                       .action = EffectAction::kAttempt,
                       .by = "r-elsewhere",
                       .state_after = EffectState::kUnknown,
                       .detail = claim ? "POST http://127.0.0.1:8417/reservations (attempt 1)"
                                       : "timeout: no answer",
                       .at_ms = now_ms})
            .ok());
    ASSERT_TRUE(tx->Commit().ok());
  };
  write(true);
  const auto resolve = [&] {
    return Http(port_, "POST", "/api/effects/reserve:order-z/resolve",
                {{"Authorization", "Bearer s3cret-token-of-enough-length"},
                 {"Content-Type", "application/json"}},
                R"({"outcome":"intended","by":"ops","note":"not in the stock service"})");
  };
  const HttpAnswer in_flight = resolve();
  EXPECT_EQ(in_flight.status, 409) << in_flight.body;
  EXPECT_NE(in_flight.body.find("may still be in flight"), std::string::npos) << in_flight.body;
  write(false);  // its runner's answer
  const HttpAnswer resolved = resolve();
  EXPECT_EQ(resolved.status, 200) << resolved.body;
  EXPECT_NE(resolved.body.find(R"("state":"intended")"), std::string::npos) << resolved.body;
}

TEST_F(ServeTest, AdminRoutesAreDisabledWithoutAToken) {
  Start();
  EXPECT_EQ(Http(port_, "GET", "/api/gaps").status, 403);
  EXPECT_EQ(Http(port_, "GET", "/api/gaps", {{"Authorization", "Bearer anything"}}).status, 403);
}

TEST_F(ServeTest, AdminRoutesNeedTheRightToken) {
  options_.admin_token = "s3cret-token-of-enough-length";
  Start();
  ASSERT_EQ(Post(StatusEvent("a-1", "order-a")).status, 200);
  EXPECT_EQ(Http(port_, "GET", "/api/evidence/order-a").status, 401);
  EXPECT_EQ(Http(port_, "GET", "/api/evidence/order-a", {{"Authorization", "Bearer wrong"}}).status,
            401);
  EXPECT_EQ(Http(port_, "GET", "/api/evidence/order-a",
                 {{"Authorization", "Basic s3cret-token-of-enough-length"}})
                .status,
            401);
  // Two Authorization headers are refused, whichever holds the token (issue 40).
  for (const auto& [first, second] :
       {std::pair<std::string, std::string>{"Bearer s3cret-token-of-enough-length", "Bearer x"},
        {"Bearer x", "Bearer s3cret-token-of-enough-length"},
        {"Bearer s3cret-token-of-enough-length", "Bearer s3cret-token-of-enough-length"}}) {
    EXPECT_EQ(Http(port_, "GET", "/api/evidence/order-a",
                   {{"Authorization", first}, {"authorization", second}})
                  .status,
              401)
        << first << " / " << second;
  }
  EXPECT_EQ(Http(port_, "GET", "/api/evidence/order-a?consumer=nobody",
                 {{"Authorization", "Bearer s3cret-token-of-enough-length"}})
                .status,
            404);
  const HttpAnswer evidence = Http(port_, "GET", "/api/evidence/order-a",
                                   {{"Authorization", "Bearer s3cret-token-of-enough-length"}});
  EXPECT_EQ(evidence.status, 200);
  EXPECT_NE(evidence.body.find(R"("subject":"order-a")"), std::string::npos) << evidence.body;
  EXPECT_EQ(Http(port_, "GET", "/api/evidence/nobody",
                 {{"Authorization", "Bearer s3cret-token-of-enough-length"}})
                .status,
            404);
}

TEST_F(ServeTest, OperationsEndpoints) {
  Start();
  EXPECT_EQ(Http(port_, "GET", "/healthz").status, 200);
  // Ready once the consume loop runs, which starts beside the listener: awaited, not assumed.
  int ready = 0;
  for (int i = 0; i < 500 && (ready = Http(port_, "GET", "/readyz").status) != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ready, 200);
  ASSERT_EQ(Post(StatusEvent("m-1", "order-m")).status, 200);
  const HttpAnswer metrics = Http(port_, "GET", "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(
      metrics.body.find(
          R"(evident_decisions_total{consumer="orders-projection",outcome="applied",reason=""} 1)"),
      std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(R"(evident_http_requests_total{status="200"})"), std::string::npos);
  EXPECT_NE(metrics.body.find("evident_commit_seconds_count 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("evident_store_up 1"), std::string::npos);
  EXPECT_NE(metrics.body.find("evident_outbox_parked 0"), std::string::npos) << metrics.body;
  HttpAnswer page = Http(port_, "GET", "/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.headers["content-security-policy"].find("default-src 'self'"), std::string::npos);
}

// Issue 40: a scrape never reads the store (with 100,000 quarantine records one took 0.2 s on
// the only HTTP thread, and 32 scrapers held intake up for seconds). The store gauges are read
// on a thread of their own, at most once per interval; a scrape serves the last reading.
TEST_F(ServeTest, AScrapeServesTheLastStoreReadingNotTheStore) {
  options_.metrics_interval_ms = 3'600'000;
  Start();
  ASSERT_EQ(Post(R"({"specversion":"1.0","id":"x", "source":)").status, 200);
  ASSERT_EQ(QuarantinedBytes().size(), 1u);
  for (int scrape = 0; scrape < 3; ++scrape) {
    const HttpAnswer metrics = Http(port_, "GET", "/metrics");
    ASSERT_EQ(metrics.status, 200);
    // The reading taken before the daemon listened: no record yet, and its age.
    EXPECT_NE(metrics.body.find(R"(evident_quarantine_records{status="open"} 0)"),
              std::string::npos)
        << metrics.body;
    EXPECT_NE(metrics.body.find("evident_store_gauges_age_seconds "), std::string::npos);
    EXPECT_NE(metrics.body.find("evident_store_up 1"), std::string::npos);
  }
}

TEST_F(ServeTest, TheStoreReadingFollowsTheStoreEachInterval) {
  options_.metrics_interval_ms = 100;
  Start();
  ASSERT_EQ(Post(R"({"specversion":"1.0","id":"x", "source":)").status, 200);
  bool seen = false;
  for (int i = 0; i < 100 && !seen; ++i) {
    seen = Http(port_, "GET", "/metrics")
               .body.find(R"(evident_quarantine_records{status="open"} 1)") != std::string::npos;
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(seen);
}

// The operator page's charts: a point per store reading with the decisions of its interval by
// outcome and the store's figures then; bounded (metrics.h).
TEST_F(ServeTest, TheHistoryHasAPointPerReadingWithItsIntervalsDecisions) {
  options_.metrics_interval_ms = 100;
  Start();
  ASSERT_EQ(Post(StatusEvent("h-1", "order-h")).status, 200);
  ASSERT_EQ(Post(StatusEvent("h-2", "order-h")).status, 200);
  ASSERT_EQ(Post(R"({"specversion":"1.0","id":"x", "source":)").status, 200);
  int64_t applied = 0;
  int64_t quarantine_open = -1;
  size_t points = 0;
  for (int i = 0; i < 100 && (applied < 2 || quarantine_open != 1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const HttpAnswer history = Http(port_, "GET", "/metrics/history");
    ASSERT_EQ(history.status, 200);
    simdjson::dom::parser parser;
    simdjson::dom::element root;
    ASSERT_EQ(parser.parse(history.body).get(root), simdjson::SUCCESS) << history.body;
    EXPECT_EQ(int64_t(root["points_max"]), static_cast<int64_t>(serve::kHistoryPointsMax));
    simdjson::dom::array list = root["points"];
    points = list.size();
    applied = 0;
    int64_t previous_at = -1;
    for (simdjson::dom::element point : list) {
      int64_t n = 0;
      if (point["decisions"]["applied"].get(n) == simdjson::SUCCESS) applied += n;
      quarantine_open = int64_t(point["quarantine_open"]);
      const int64_t at = int64_t(point["at_ms"]);
      EXPECT_GT(at, previous_at);  // oldest first
      previous_at = at;
    }
  }
  // Each event counted once, in the interval it was decided in, however many points followed.
  EXPECT_EQ(applied, 2);
  EXPECT_EQ(quarantine_open, 1);
  EXPECT_GE(points, 2u);
  EXPECT_LE(points, serve::kHistoryPointsMax);
}

// A stock service that takes connections and never answers.
class SilentServer {
 public:
  SilentServer() {
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
    thread_ = std::thread([this] {
      while (true) {
        const int client = ::accept(fd_, nullptr, nullptr);
        if (client < 0) return;  // the socket was shut down
        accepted_ += 1;
        clients_.push_back(client);  // held open, never answered
      }
    });
  }
  ~SilentServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
    for (const int client : clients_) ::close(client);
  }
  int port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<int> accepted_{0};
  std::vector<int> clients_;
  std::thread thread_;
};

// Issue 40: SIGTERM of serve ends within its drain bound whatever an effect call's timeout_ms
// (60 s were seen against a 30 s bound): the call in flight at the deadline is abandoned, and
// its intent is unknown, never done.
TEST_F(ServeTest, AStopEndsWithinItsDrainBoundWhateverAnEffectCallTakes) {
  SilentServer stock;
  ::setenv("STOCK_SERVICE_URL",
           ("http://127.0.0.1:" + std::to_string(stock.port()) + "/reservations").c_str(), 1);
  adjust_config_ = [](Config& config) {
    for (ConsumerConfig& consumer : config.consumers) {
      for (EffectConfig& effect : consumer.effects) effect.target.timeout_ms = 60'000;
    }
  };
  options_.drain_ms_max = 1000;
  Start();
  ::unsetenv("STOCK_SERVICE_URL");
  const std::string paid = OrderPaid("a1", "https://example.test/order-service", 1);
  ASSERT_EQ(Post(paid).status, 200);
  for (int i = 0; i < 200 && stock.accepted() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(stock.accepted(), 1) << "the runner never called the stock service";
  const auto begun = std::chrono::steady_clock::now();
  Stop();
  const auto took = std::chrono::steady_clock::now() - begun;
  // The bound (1 s) plus libcurl's progress interval (about 1 s) and the recording, far below
  // the call's 60 s.
  EXPECT_LT(took, std::chrono::seconds(10));
  auto store = OpenSqliteStore(path_, {.read_only = true}).value();
  const auto intents = store->Read().value()->ListIntents({}, 0, 10).value();
  ASSERT_EQ(intents.rows.size(), 1u);
  EXPECT_EQ(intents.rows[0].key, "reserve:order-417");
  EXPECT_EQ(intents.rows[0].state, EffectState::kUnknown);
  EXPECT_NE(intents.rows[0].last_error.find("abandoned"), std::string::npos)
      << intents.rows[0].last_error;
}

// Another process holds the store's write lock: requests are answered 503 (not taken) and
// readyz says so; once the lock is gone the loop starts again and takes them.
TEST_F(ServeTest, AStoreThatFailsIsA503UntilItAnswersAgain) {
  busy_timeout_ms_ = 100;
  options_.restart_ms = 100;
  Start();
  ASSERT_EQ(Post(StatusEvent("before", "order-l")).status, 200);
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &locker), SQLITE_OK);
  sqlite3_busy_timeout(locker, 5000);  // the daemon's own reads may hold the lock a moment
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  const HttpAnswer refused = Post(StatusEvent("during", "order-l"));
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.body.find("store-unavailable"), std::string::npos) << refused.body;
  EXPECT_FALSE(Applied("during"));
  ASSERT_EQ(sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(locker);
  HttpAnswer again;
  for (int i = 0; i < 50 && again.status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    again = Post(StatusEvent("during", "order-l"));
  }
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_TRUE(Applied("during"));
  Stop();
  EXPECT_GE(result_->restarts, 1);
}

// While it drains, the daemon no longer listens: a new connection is refused at once rather
// than queued by the kernel and left unanswered until the drain ends.
TEST_F(ServeTest, ANewConnectionDuringTheDrainIsRefusedAtOnce) {
  busy_timeout_ms_ = 5000;
  Start();
  ASSERT_EQ(Post(StatusEvent("before", "order-d")).status, 200);
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &locker), SQLITE_OK);
  sqlite3_busy_timeout(locker, 5000);  // the daemon's own reads may hold the lock a moment
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::thread in_flight([this] { Post(StatusEvent("held", "order-d")); });
  // Until the daemon has taken the request (it waits for its commit behind the lock): 10 s at
  // most. Not fatal: the thread must be joined.
  bool taken = false;
  for (int i = 0; i < 200 && !taken; ++i) {
    taken = Http(port_, "GET", "/metrics").body.find("evident_requests_waiting 1\n") !=
            std::string::npos;
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(taken) << "the daemon never took the held request";
  cancel_.Cancel();
  // Asked until the drain has begun (the daemon sees the cancel within 50 ms on a quiet
  // machine): the first refused connection is refused at once, not queued until the drain ends
  // (the held request keeps it going for 5 s).
  HttpAnswer late;
  std::chrono::steady_clock::duration waited{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  do {
    const auto asked = std::chrono::steady_clock::now();
    late = Http(port_, "GET", "/healthz", {}, {}, 5000);
    waited = std::chrono::steady_clock::now() - asked;
    if (late.status == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(late.status, 0) << late.body;  // no connection
  EXPECT_LT(waited, std::chrono::milliseconds(1000));
  ASSERT_EQ(sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(locker);
  in_flight.join();
  server_.join();
  ASSERT_TRUE(result_.ok()) << result_.status().ToString();
}

TEST_F(ServeTest, StopUnderLoadCommitsEveryAnsweredEvent) {
  Start();
  constexpr int kThreads = 8;
  std::mutex mu;
  std::vector<std::string> answered;
  std::atomic<int> refused{0}, other{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; !done.load(); ++i) {
        const std::string id = "l-" + std::to_string(t) + "-" + std::to_string(i);
        const HttpAnswer answer = Post(StatusEvent(id, "order-l" + std::to_string(t)));
        if (answer.status == 200) {
          std::lock_guard<std::mutex> lock(mu);
          answered.push_back(id);
        } else if (answer.status == 503 || answer.status == 0) {
          ++refused;  // stopping, or the listener is gone
          if (answer.status == 0) break;
        } else {
          ++other;
        }
      }
    });
  }
  for (int i = 0; i < 300; ++i) {  // under load for a while: more than 10 answered (30 s cap)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const std::lock_guard<std::mutex> lock(mu);
    if (i >= 4 && answered.size() > 10) break;
  }
  cancel_.Cancel();
  server_.join();
  done = true;
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(result_.ok()) << result_.status().ToString();
  EXPECT_EQ(other.load(), 0);
  ASSERT_GT(answered.size(), 10u);
  for (const std::string& id : answered) EXPECT_TRUE(Applied(id)) << id;
}

TEST_F(ServeTest, SlowAndHostileClientsDoNotHoldTheServer) {
  options_.read_timeout_s = 1;
  options_.header_bytes_max = 8192;
  Start();
  // A client that sends half a request line and stops.
  const int slow = serve::testing::Connect(port_, 5000);
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(serve::testing::SendAll(slow, "POST /events HTTP/1.1\r\nHo"));
  EXPECT_EQ(Post(StatusEvent("while-slow", "order-h")).status, 200);
  const auto waited_from = std::chrono::steady_clock::now();
  serve::testing::ReadAll(slow);  // returns when the server closes it
  const auto waited = std::chrono::steady_clock::now() - waited_from;
  EXPECT_LT(waited, std::chrono::milliseconds(4000));
  ::close(slow);
  // Headers over the bound.
  const HttpAnswer big = SendRaw(
      port_, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_TRUE(big.status == 431 || big.status == 413 || big.status == 0) << big.status;
  // Malformed chunked encoding.
  const HttpAnswer chunked =
      SendRaw(port_,
              "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/cloudevents+json\r\n"
              "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n");
  EXPECT_TRUE(chunked.status == 400 || chunked.status == 0) << chunked.status;
  // Many connections at once, all answered.
  std::vector<std::thread> many;
  std::atomic<int> healthy{0};
  for (int i = 0; i < 64; ++i) {
    many.emplace_back([&] {
      if (Http(port_, "GET", "/healthz").status == 200) ++healthy;
    });
  }
  for (std::thread& t : many) t.join();
  EXPECT_EQ(healthy.load(), 64);
  EXPECT_EQ(Post(StatusEvent("after-hostile", "order-h")).status, 200);
}

// Requests whose framing is ambiguous, and other protocol misuse, are refused and the server
// goes on.
TEST_F(ServeTest, AmbiguousRequestsAreRefused) {
  options_.body_bytes_max = 4096;
  Start();
  const std::string event = StatusEvent("amb-1", "order-amb");
  const std::string head =
      "POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/cloudevents+json\r\n";
  const HttpAnswer two_lengths =
      SendRaw(port_, head + "Content-Length: " + std::to_string(event.size()) +
                         "\r\nContent-Length: " + std::to_string(event.size() + 5) + "\r\n\r\n" +
                         event + "xxxxx");
  EXPECT_EQ(two_lengths.status, 400) << two_lengths.body;
  const HttpAnswer length_and_chunked =
      SendRaw(port_, head + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(length_and_chunked.status, 400);
  EXPECT_EQ(SendRaw(port_, "GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n").status, 400);
  EXPECT_EQ(
      SendRaw(port_, "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n")
          .status,
      400);
  EXPECT_EQ(SendRaw(port_, head + "Transfer-Encoding: gzip, chunked\r\n\r\n").status, 501);
  EXPECT_FALSE(Applied("amb-1"));
  EXPECT_EQ(Http(port_, "POST", "/nothing").status, 404);
  EXPECT_EQ(Http(port_, "POST", "/events%00x", kStructured, event).status, 404);
  HttpAnswer wrong_method = Http(port_, "POST", "/healthz");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.headers["allow"], "GET, HEAD");
  // A body declared a little over the bound is read to its end, then refused.
  const HttpAnswer over = Post(std::string(5000, ' ') + event);
  EXPECT_EQ(over.status, 413);
  EXPECT_EQ(Post(event).status, 200);
}

// Headers trickled a byte at a time: shut down at the header deadline, whatever the trickle.
TEST_F(ServeTest, HeadersMustArriveInTime) {
  options_.header_ms_max = 600;
  Start();
  const int slow = serve::testing::Connect(port_, 5000);
  ASSERT_GE(slow, 0);
  const std::string request = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
  const auto started = std::chrono::steady_clock::now();
  bool cut = false;
  for (size_t i = 0; i < 60 && !cut; ++i) {  // a byte every 100 ms: never silent for a second
    cut = !serve::testing::SendAll(slow, std::string(1, request[i % request.size()]));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    char byte = 0;
    const ssize_t n = ::recv(slow, &byte, 1, MSG_DONTWAIT);
    if (n == 0) cut = true;
  }
  ::close(slow);
  EXPECT_TRUE(cut);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(3000));
  EXPECT_EQ(Http(port_, "GET", "/healthz").status, 200);
}

// An admin action waiting for the store's write lock does not hold the other requests up, and
// readyz says when the store failed and when it answers again.
TEST_F(ServeTest, AdminActionsWaitOffTheHttpThread) {
  options_.admin_token = "s3cret-token-of-enough-length";
  busy_timeout_ms_ = 4000;
  options_.restart_ms = 100;
  Start();
  ASSERT_EQ(Post(R"({"specversion":"1.0","id":"q", "source":)").status, 200);  // quarantined
  HttpAnswer record = Http(port_, "GET", "/api/quarantine/1",
                           {{"Authorization", "Bearer s3cret-token-of-enough-length"}});
  EXPECT_EQ(record.status, 200);
  EXPECT_NE(record.body.find(R"("audit":[])"), std::string::npos) << record.body;
  for (const char* other_name :
       {"/api/quarantine/01", "/api/quarantine/+1", "/api/quarantine/-1"}) {
    const HttpAnswer refused =
        Http(port_, "GET", other_name, {{"Authorization", "Bearer s3cret-token-of-enough-length"}});
    EXPECT_EQ(refused.status, 400) << other_name << ": " << refused.body;
  }
  // A list's limit is a whole number in range, or the request is refused (not the default).
  for (const char* limit : {"abc", "-1", "0", "1e3"}) {
    for (const std::string route : {"/api/quarantine?limit=", "/api/effects?limit="}) {
      const HttpAnswer refused = Http(port_, "GET", route + limit,
                                      {{"Authorization", "Bearer s3cret-token-of-enough-length"}});
      EXPECT_EQ(refused.status, 400) << route << limit << ": " << refused.body;
    }
  }
  EXPECT_EQ(Http(port_, "GET", "/api/quarantine?limit=5",
                 {{"Authorization", "Bearer s3cret-token-of-enough-length"}})
                .status,
            200);
  sqlite3* locker = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &locker), SQLITE_OK);
  sqlite3_busy_timeout(locker, 5000);  // the daemon's own reads may hold the lock a moment
  ASSERT_EQ(sqlite3_exec(locker, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  HttpAnswer discard;
  std::thread admin([&] {
    discard = Http(port_, "POST", "/api/quarantine/1/discard",
                   {{"Authorization", "Bearer s3cret-token-of-enough-length"}},
                   R"({"by":"ann","note":"junk"})");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_EQ(Http(port_, "GET", "/healthz").status, 200);
  // Well within the admin action's wait for the lock (4 s), on a loaded machine too.
  EXPECT_LT(std::chrono::steady_clock::now() - asked, std::chrono::milliseconds(2000));
  EXPECT_EQ(Post(StatusEvent("locked", "order-k")).status, 503);  // the loop fails on the lock
  EXPECT_EQ(Http(port_, "GET", "/readyz").status, 503);
  admin.join();
  EXPECT_EQ(discard.status, 503) << discard.body;  // the store was busy past its timeout
  ASSERT_EQ(sqlite3_exec(locker, "ROLLBACK", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(locker);
  HttpAnswer ready;
  for (int i = 0; i < 60 && ready.status != 200; ++i) {  // the probe finds it again, idle
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ready = Http(port_, "GET", "/readyz");
  }
  EXPECT_EQ(ready.status, 200) << ready.body;
  discard = Http(port_, "POST", "/api/quarantine/1/discard",
                 {{"Authorization", "Bearer s3cret-token-of-enough-length"}},
                 R"({"by":"ann","note":"junk","extra":1})");
  EXPECT_EQ(discard.status, 400);
  EXPECT_NE(discard.body.find("unknown member 'extra'"), std::string::npos) << discard.body;
  discard = Http(port_, "POST", "/api/quarantine/1/discard",
                 {{"Authorization", "Bearer s3cret-token-of-enough-length"}},
                 R"({"by":"ann","by":"mallory","note":"junk"})");
  EXPECT_EQ(discard.status, 400) << discard.body;
  discard = Http(port_, "POST", "/api/quarantine/1/discard",
                 {{"Authorization", "Bearer s3cret-token-of-enough-length"}},
                 R"({"by":"ann","note":"junk"})");
  EXPECT_EQ(discard.status, 200) << discard.body;
}

}  // namespace
}  // namespace evident
