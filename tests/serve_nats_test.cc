// `evident serve --from nats://...`: events from a JetStream stream (a real nats-server of
// scripts/nats.sh, never skipped) decided beside events over HTTP, in one store; /readyz follows
// the broker; SIGTERM ends the daemon with 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "evident/jetstream.h"
#include "evident/store_sqlite.h"
#include "run_process.h"
#include "serve/http_test_client.h"
#include "serve_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;
using serve::testing::Http;

constexpr const char* kSource = kServeSource;

std::string StatusEvent(const std::string& id) { return ServeStatusEvent(id); }

class ServeNatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/evident-serve-nats-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    store_ = (fs::path(dir_) / "s.db").string();
    int rc = 0;
    url_ = Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " + NatsDir(), &rc);
    ASSERT_EQ(rc, 0) << "nats-server did not start: " << url_;
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    int rc = 0;
    Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + NatsDir(), &rc);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string NatsDir() const { return (fs::path(dir_) / "nats").string(); }

  void Publish(const std::vector<std::string>& ids) {
    auto publisher = OpenJetStreamPublisher({.url = url_, .stream = "EVENTS"});
    ASSERT_TRUE(publisher.ok()) << publisher.status().ToString();
    std::vector<OutgoingMessage> batch;
    for (const std::string& id : ids) batch.push_back({"evident.p0.order", id, StatusEvent(id)});
    auto sent = (*publisher)->Publish(batch);
    ASSERT_TRUE(sent.ok()) << sent.status().ToString();
    ASSERT_EQ(*sent, ids.size());
    ASSERT_TRUE((*publisher)->Close().ok());
  }

  int StartDaemon() {
    return StartServe({"--config", SourcePath("examples/orders/evident.yaml"), "--store",
                       "sqlite:" + store_, "--from", url_, "--stream", "EVENTS", "--no-effects"},
                      (fs::path(dir_) / "serve.log").string(), &pid_);
  }

  bool Applied(const std::string& id) {
    auto store = OpenSqliteStore(store_, {.read_only = true});
    if (!store.ok()) return false;
    auto snapshot = (*store)->Read();
    if (!snapshot.ok()) return false;
    auto entry = (*snapshot)->FindLedger("orders-projection", kSource, id);
    return entry.ok() && entry->has_value();
  }

  // Polls `condition` for up to 20 s.
  template <typename Condition>
  bool Eventually(Condition condition) {
    for (int i = 0; i < 400; ++i) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  std::string dir_, store_, url_;
  pid_t pid_ = -1;
};

TEST_F(ServeNatsTest, BrokerAndHttpEventsShareTheStore) {
  Publish({"js-1", "js-2"});  // creates the stream, before the daemon starts
  const int port = StartDaemon();
  ASSERT_NE(port, 0);
  const auto posted =
      Http(port, "POST", "/events", {{"Content-Type", "application/cloudevents+json"}},
           StatusEvent("http-1"));
  ASSERT_EQ(posted.status, 200) << posted.body;
  EXPECT_TRUE(Applied("http-1"));
  EXPECT_TRUE(Eventually([&] { return Applied("js-1") && Applied("js-2"); }));
  Publish({"js-3"});  // while it runs
  EXPECT_TRUE(Eventually([&] { return Applied("js-3"); }));
  EXPECT_TRUE(Eventually([&] { return Http(port, "GET", "/readyz").status == 200; }));
  const auto metrics = Http(port, "GET", "/metrics");
  EXPECT_NE(
      metrics.body.find(
          R"(evident_decisions_total{consumer="orders-projection",outcome="applied",reason=""} 4)"),
      std::string::npos)
      << metrics.body;

  // The broker goes away: not ready, still serving HTTP.
  int rc = 0;
  Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + NatsDir(), &rc);
  EXPECT_TRUE(Eventually([&] { return Http(port, "GET", "/readyz").status == 503; }));
  EXPECT_EQ(Http(port, "POST", "/events", {{"Content-Type", "application/cloudevents+json"}},
                 StatusEvent("http-2"))
                .status,
            200);

  const int status = StopServe(&pid_);
  EXPECT_TRUE(Finished(status)) << status;
}

}  // namespace
}  // namespace evident::testing
