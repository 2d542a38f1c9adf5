// kill -9 of `evident serve` under concurrent load: clients post events over HTTP (structured
// and batch requests, sixteen at a time) while the daemon is killed, at the fault points around
// its commits and answers (src/core/fault_point.h) and then at random times, and started again
// on the same store. Every event that was answered 200 must be in the store afterwards; events
// whose answer never came may be or not (a client sends them again, and the ledger answers
// duplicate), and a final pass sends every event sent once more to check just that: an answered
// one is a duplicate, and afterwards every one is in the store.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "evident/store_sqlite.h"
#include "run_process.h"
#include "serve/http_test_client.h"
#include "serve_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;
using serve::testing::Http;
using serve::testing::HttpAnswer;

constexpr const char* kSource = kServeSource;
constexpr int kClients = 16;

std::string StatusEvent(const std::string& id) { return ServeStatusEvent(id); }

class ServeCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("evident-serve-crash-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = (dir_ / "s.db").string();
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    fs::remove_all(dir_);
  }

  // Starts the daemon (with `fault` armed, "" none) and returns its port, 0 when it did not
  // listen within 20 s.
  int StartDaemon(const std::string& fault) {
    const std::string log = (dir_ / ("serve-" + std::to_string(++runs_) + ".log")).string();
    return StartServe({"--config", SourcePath("examples/orders/evident.yaml"), "--store",
                       "sqlite:" + store_, "--linger-ms", "2"},
                      log, &pid_,
                      {{"EVIDENT_FAULT_POINT",
                        fault.empty() ? std::nullopt : std::optional<std::string>(fault)}});
  }

  // Clients post until the daemon dies (a request that gets no answer ends a client); the ids
  // answered 200 are collected.
  void Load(int port, int round) {
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([this, port, round, c] {
        for (int i = 0;; ++i) {
          const std::string base =
              std::to_string(round) + "-" + std::to_string(c) + "-" + std::to_string(i);
          std::vector<std::string> ids = {base};
          std::string body = StatusEvent(base);
          std::string type = "application/cloudevents+json";
          if (i % 3 == 2) {  // a batch of three
            ids = {base + "a", base + "b", base + "c"};
            body = "[" + StatusEvent(ids[0]) + "," + StatusEvent(ids[1]) + "," +
                   StatusEvent(ids[2]) + "]";
            type = "application/cloudevents-batch+json";
          }
          {
            std::lock_guard<std::mutex> lock(mu_);
            sent_.insert(sent_.end(), ids.begin(), ids.end());
          }
          const HttpAnswer answer = Http(port, "POST", "/events", {{"Content-Type", type}}, body);
          if (answer.status == 0) return;
          ASSERT_EQ(answer.status, 200) << answer.body;
          std::lock_guard<std::mutex> lock(mu_);
          answered_.insert(answered_.end(), ids.begin(), ids.end());
        }
      });
    }
    for (std::thread& t : clients) t.join();
  }

  // One run: the daemon under load until it dies (at its fault point, or killed after
  // `kill_after_ms`); false when it did not start or exited another way.
  bool Round(const std::string& fault, int kill_after_ms, int round) {
    const auto started = std::chrono::steady_clock::now();
    const size_t answered_before = answered_.size();
    const int port = StartDaemon(fault);
    if (port == 0) return false;
    std::atomic<bool> loaded{false};
    std::thread killer([&] {
      const auto at = std::chrono::steady_clock::now() + std::chrono::milliseconds(kill_after_ms);
      while (!loaded.load() && std::chrono::steady_clock::now() < at) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      ::kill(pid_, SIGKILL);  // a daemon that died at its fault point is a zombie until waited
    });
    Load(port, round);
    loaded = true;
    killer.join();
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    std::printf("round %d (%s): %zu events answered in %lld ms\n", round,
                fault.empty() ? ("killed after " + std::to_string(kill_after_ms) + " ms").c_str()
                              : fault.c_str(),
                answered_.size() - answered_before,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::steady_clock::now() - started)
                                           .count()));
    return Killed(status);
  }

  int64_t InStore(const std::vector<std::string>& ids, std::vector<std::string>* missing) {
    auto store = OpenSqliteStore(store_, {.read_only = true});
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return -1;
    auto snapshot = (*store)->Read();
    EXPECT_TRUE(snapshot.ok());
    int64_t found = 0;
    for (const std::string& id : ids) {
      auto entry = (*snapshot)->FindLedger("orders-projection", kSource, id);
      if (entry.ok() && entry->has_value()) {
        ++found;
      } else if (missing != nullptr) {
        missing->push_back(id);
      }
    }
    return found;
  }

  fs::path dir_;
  std::string store_;
  pid_t pid_ = -1;
  int runs_ = 0;
  std::mutex mu_;
  std::vector<std::string> sent_, answered_;
};

TEST_F(ServeCrashTest, EveryAnsweredEventSurvivesKill9) {
  int round = 0;
  // Around the commit of a batch and the answers (the 5th hit: some answers went out before).
  for (const char* fault : {"before-commit:5", "after-commit:5", "before-ack:5", "after-ack:5"}) {
    ASSERT_TRUE(Round(fault, 20'000, round++)) << "the daemon did not die at " << fault;
  }
  std::mt19937 random(20261202);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(Round("", std::uniform_int_distribution<int>(50, 600)(random), round++));
  }
  std::vector<std::string> missing;
  const int64_t found = InStore(answered_, &missing);
  EXPECT_EQ(found, static_cast<int64_t>(answered_.size()))
      << missing.size() << " answered 200 but not in the store, e.g. "
      << (missing.empty() ? "" : missing.front());
  EXPECT_GT(answered_.size(), 200u);          // the kills landed under load, not before it
  EXPECT_LT(answered_.size(), sent_.size());  // and some requests were cut off

  // Every event sent, answered or not, once more: each gets its decision (none lost); each
  // answered 200 before is a duplicate now (its answer came after its commit); one whose answer
  // never came is applied now or a duplicate; and then every event sent is in the store.
  const int port = StartDaemon("");
  ASSERT_NE(port, 0);
  const std::set<std::string> answered(answered_.begin(), answered_.end());
  ASSERT_EQ(answered.size(), answered_.size());
  int64_t decided = 0, answered_again = 0;
  simdjson::dom::parser parser;
  constexpr size_t kBatch = 250;
  for (size_t from = 0; from < sent_.size(); from += kBatch) {
    const size_t to = std::min(sent_.size(), from + kBatch);
    std::string body = "[";
    for (size_t i = from; i < to; ++i) body += (i > from ? "," : "") + StatusEvent(sent_[i]);
    body += "]";
    const HttpAnswer again = Http(port, "POST", "/events",
                                  {{"Content-Type", "application/cloudevents-batch+json"}}, body);
    ASSERT_EQ(again.status, 200) << again.body;
    simdjson::dom::element answer;
    ASSERT_EQ(parser.parse(again.body).get(answer), simdjson::SUCCESS) << again.body;
    for (simdjson::dom::element decision : answer["decisions"].get_array()) {
      std::string_view consumer, outcome;
      int64_t index = -1;
      ASSERT_EQ(decision["consumer"].get(consumer), simdjson::SUCCESS);
      ASSERT_EQ(decision["outcome"].get(outcome), simdjson::SUCCESS);
      ASSERT_EQ(decision["index"].get(index), simdjson::SUCCESS);
      if (consumer != "orders-projection") continue;
      ASSERT_TRUE(index >= 0 && from + static_cast<size_t>(index) < to) << index;
      const std::string& id = sent_[from + static_cast<size_t>(index)];
      ++decided;
      if (answered.count(id) > 0) {
        ++answered_again;
        EXPECT_EQ(outcome, "duplicate") << id << " was answered 200 before its commit";
      } else {
        EXPECT_TRUE(outcome == "applied" || outcome == "duplicate") << id << ": " << outcome;
      }
    }
  }
  EXPECT_EQ(decided, static_cast<int64_t>(sent_.size()));
  EXPECT_EQ(answered_again, static_cast<int64_t>(answered_.size()));
  std::vector<std::string> lost;
  EXPECT_EQ(InStore(sent_, &lost), static_cast<int64_t>(sent_.size()))
      << lost.size() << " sent events not in the store after sending them all again";
  const int status = StopServe(&pid_);
  EXPECT_TRUE(Finished(status)) << status;
}

}  // namespace
}  // namespace evident::testing
