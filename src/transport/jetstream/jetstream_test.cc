// JetStream publisher and source against a real nats-server (scripts/nats.sh). Never skipped:
// a server that cannot start fails the test.
#include "evident/jetstream.h"

#include <gtest/gtest.h>
#include <nats/nats.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/shell.h"

namespace evident {
namespace {

using test_support::Shell;

class JetStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/evident-js-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    int rc = 0;
    url_ = Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh start " + dir_, &rc);
    ASSERT_EQ(rc, 0) << "nats-server did not start: " << url_;
    ASSERT_EQ(url_.rfind("nats://", 0), 0u) << url_;
    options_.url = url_;
    options_.stream = "EVENTS";
    options_.subject_prefix = "evident";
    // 3 s: a delivery and its ack are apart far less than that, on a loaded machine too.
    options_.ack_wait_ms = 3000;
    options_.fetch_batch = 4;
  }

  void TearDown() override {
    if (!dir_.empty()) {
      int rc = 0;
      Shell("bash " EVIDENT_SOURCE_DIR "/scripts/nats.sh stop " + dir_, &rc);
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  static std::vector<OutgoingMessage> Batch(int from, int n) {
    std::vector<OutgoingMessage> v;
    for (int i = from; i < from + n; ++i) {
      v.push_back({"p0.order.status.changed", "id-" + std::to_string(i),
                   R"({"id":"id-)" + std::to_string(i) + R"("})"});
    }
    return v;
  }

  // Sets the stream EVENTS' max_msg_size (the stream exists).
  void SetMaxMsgSize(int64_t size) {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    jsStreamInfo* si = nullptr;
    ASSERT_EQ(natsConnection_ConnectTo(&nc, url_.c_str()), NATS_OK);
    ASSERT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
    ASSERT_EQ(js_GetStreamInfo(&si, js, "EVENTS", nullptr, nullptr), NATS_OK);
    si->Config->MaxMsgSize = static_cast<int32_t>(size);
    jsStreamInfo* updated = nullptr;
    EXPECT_EQ(js_UpdateStream(&updated, js, si->Config, nullptr, nullptr), NATS_OK);
    if (updated != nullptr) jsStreamInfo_Destroy(updated);
    jsStreamInfo_Destroy(si);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }

  // A body of `size` bytes for the message "id-1", which with its Nats-Msg-Id header takes 31
  // bytes more: 69 fills a max_msg_size of 100 exactly.
  static std::string Body(size_t size) {
    std::string b = R"({"id":"id-1","d":")";
    b += std::string(size - b.size() - 2, 'x');
    return b + R"("})";
  }

  uint64_t StreamMessages() {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    jsStreamInfo* si = nullptr;
    uint64_t n = UINT64_MAX;
    if (natsConnection_ConnectTo(&nc, url_.c_str()) == NATS_OK &&
        natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
        js_GetStreamInfo(&si, js, options_.stream.c_str(), nullptr, nullptr) == NATS_OK) {
      n = si->State.Msgs;
      jsStreamInfo_Destroy(si);
    }
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) natsConnection_Destroy(nc);
    return n;
  }

  std::vector<Message> Drain(Source& s, int max, int wait_ms = 500) {
    std::vector<Message> got;
    for (int i = 0; i < max; ++i) {
      Message m;
      Result<Source::Fetched> f = s.Fetch(m, wait_ms);
      EXPECT_TRUE(f.ok()) << f.status().ToString();
      if (!f.ok() || f.value() != Source::Fetched::kMessage) break;
      got.push_back(m);
    }
    return got;
  }

  std::string dir_, url_;
  JetStreamOptions options_;
};

TEST_F(JetStreamTest, PublishesABatchWithIncreasingSequences) {
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto batch = Batch(0, 10);
  Result<size_t> n = p.value()->Publish(batch);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n.value(), 10u);
  const auto& acks = p.value()->acks();
  ASSERT_EQ(acks.size(), 10u);
  for (size_t i = 0; i < acks.size(); ++i) {
    EXPECT_EQ(acks[i].sequence, i + 1);
    EXPECT_FALSE(acks[i].duplicate);
  }
  EXPECT_EQ(StreamMessages(), 10u);
  EXPECT_TRUE(p.value()->Close().ok());
}

// A server that stops answering (SIGSTOP) with a batch in flight: Publish gives up after its
// timeout and counts nothing accepted, for it has no PubAck; once the server goes on, the same
// batch offered again is accepted, and the stream holds each message once.
TEST_F(JetStreamTest, WhatTheServerDidNotAcknowledgeIsNotAccepted) {
  options_.publish_timeout_ms = 1000;
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(*(*p)->Publish(Batch(0, 5)), 5u);
  std::ifstream pid_file(dir_ + "/pid");
  pid_t server = 0;
  pid_file >> server;
  ASSERT_GT(server, 0);  // kill(0, ...) would stop this test's own process group
  ASSERT_EQ(kill(server, SIGSTOP), 0);
  const Result<size_t> stalled = (*p)->Publish(Batch(5, 10));
  ASSERT_EQ(kill(server, SIGCONT), 0);
  EXPECT_FALSE(stalled.ok() && *stalled > 0)
      << "accepted " << (stalled.ok() ? *stalled : 0) << " messages the server never acknowledged";
  if (!stalled.ok()) {
    EXPECT_EQ(stalled.status().code(), Code::kUnavailable) << stalled.status().ToString();
  }
  EXPECT_TRUE((*p)->acks().empty());
  Result<size_t> again = Status::Unavailable("not yet");
  for (int i = 0; i < 10 && !(again.ok() && *again == 10); ++i) again = (*p)->Publish(Batch(5, 10));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, 10u);
  EXPECT_EQ(StreamMessages(), 15u);
}

TEST_F(JetStreamTest, SameIdsAgainAreAcceptedButStoredOnce) {
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto batch = Batch(0, 5);
  ASSERT_EQ(p.value()->Publish(batch).value(), 5u);
  Result<size_t> again = p.value()->Publish(batch);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again.value(), 5u);
  for (const PublishAck& a : p.value()->acks()) EXPECT_TRUE(a.duplicate);
  EXPECT_EQ(StreamMessages(), 5u);
}

// An existing stream that does not take the publisher's subjects is refused at open: its
// messages would have gone to whichever stream takes them, and been marked as sent to this one.
TEST_F(JetStreamTest, AStreamThatDoesNotTakeThePrefixIsRefusedAtOpen) {
  ASSERT_TRUE(OpenJetStreamPublisher(options_).ok());  // creates EVENTS on evident.>
  JetStreamOptions other = options_;
  other.stream = "OTHER";
  other.subject_prefix = "other";
  ASSERT_TRUE(OpenJetStreamPublisher(other).ok());  // creates OTHER on other.>
  other.subject_prefix = "evident";                 // EVENTS' subjects, to stream OTHER
  auto p = OpenJetStreamPublisher(other);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kInvalidArgument);
  EXPECT_NE(p.status().message().find("stream OTHER takes the subjects other.>, not evident.>"),
            std::string::npos)
      << p.status().ToString();
  other.subject_prefix = "other";
  EXPECT_TRUE(OpenJetStreamPublisher(other).ok());
  EXPECT_EQ(StreamMessages(), 0u);
}

// A message larger than the stream's max_msg_size (its header counted, as the server counts it)
// is refused for what it is (kInvalidArgument, which a relay may park by) before it is sent,
// after the messages before it are accepted, and nothing behind it reaches the stream: sent,
// the server would refuse it and store the pipelined messages behind it.
TEST_F(JetStreamTest, AMessageLargerThanTheStreamTakesIsRefusedForWhatItIs) {
  ASSERT_TRUE(OpenJetStreamPublisher(options_).ok());  // creates EVENTS, no limit
  SetMaxMsgSize(100);
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<OutgoingMessage> batch = Batch(0, 3);
  batch[1].bytes = Body(70);
  EXPECT_EQ(p.value()->Publish(batch).value(), 1u);  // the one before it
  EXPECT_EQ(StreamMessages(), 1u) << "a message behind the refused one reached the stream";
  const Result<size_t> refused = p.value()->Publish(std::span(batch).subspan(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("101 bytes with its header, larger than stream "
                                            "EVENTS's max_msg_size (100)"),
            std::string::npos)
      << refused.status().ToString();
  // The operator raises the limit: the same publisher sends it (the limit is read again before
  // a refusal).
  SetMaxMsgSize(200);
  EXPECT_EQ(p.value()->Publish(std::span(batch).subspan(1)).value(), 2u);
  EXPECT_EQ(StreamMessages(), 3u);
}

// A limit set on the stream after the publisher opened it is the server's to apply: its PubAck
// refusal (JetStream error 10054) is a refusal for what the message is too.
TEST_F(JetStreamTest, AStreamLimitSetAfterOpenIsRefusedByTheServerForWhatItIs) {
  auto p = OpenJetStreamPublisher(options_);  // creates EVENTS, no limit
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  SetMaxMsgSize(100);
  // The server counts as the publisher does (StoredSize): 101 bytes refused, 100 taken.
  std::vector<OutgoingMessage> batch = Batch(1, 1);
  batch[0].bytes = Body(70);
  const Result<size_t> refused = p.value()->Publish(batch);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("JetStream error 10054"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(StreamMessages(), 0u);
  batch[0].bytes = Body(69);
  EXPECT_EQ(p.value()->Publish(batch).value(), 1u);
  EXPECT_EQ(StreamMessages(), 1u);
}

// An existing stream whose duplicate window is under two minutes is refused: a row published
// again after a crash before its mark would land twice.
TEST_F(JetStreamTest, AStreamWithAShortDuplicateWindowIsRefused) {
  JetStreamOptions brief = options_;
  brief.stream = "BRIEF";
  brief.subject_prefix = "brief";
  brief.duplicate_window_ms = 1000;
  ASSERT_TRUE(OpenJetStreamPublisher(brief).ok());  // created so by someone else
  auto p = OpenJetStreamPublisher(brief);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(p.status().message().find("drops repeats for 1000 ms only"), std::string::npos)
      << p.status().ToString();
}

TEST_F(JetStreamTest, SourceDeliversInOrderAndAcknowledgedAreNotRedelivered) {
  {
    auto p = OpenJetStreamPublisher(options_);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    auto batch = Batch(0, 10);
    ASSERT_EQ(p.value()->Publish(batch).value(), 10u);
  }
  {
    auto s = OpenJetStreamSource(options_, "loop", "");
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s.value()->name(), "jetstream:EVENTS/loop");
    ASSERT_TRUE(s.value()->Start(std::nullopt).ok());
    EXPECT_EQ(s.value()->Start(std::string("lines=3 bytes=9 hash=1")).code(),
              Code::kFailedPrecondition);
    std::vector<Message> got = Drain(*s.value(), 6);
    ASSERT_EQ(got.size(), 6u);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].cursor.a, static_cast<int64_t>(i + 1));
      EXPECT_EQ(got[i].bytes, R"({"id":"id-)" + std::to_string(i) + R"("})");
    }
    ASSERT_TRUE(s.value()->Acknowledge(got[5].cursor).ok());
  }
  // A new source with the same durable continues after what was acknowledged; what was fetched
  // but never acknowledged (7, 8: in the old batch) comes back after the ack wait.
  auto s = OpenJetStreamSource(options_, "loop", "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s.value()->Start(std::string("stream_seq=6")).ok());  // ignored: the consumer knows
  // Each is acknowledged as it arrives: 9 and 10 come at once, 7 and 8 only after their ack
  // wait, and holding 9 and 10 that long would let their own ack wait run out (a redelivery
  // that at-least-once allows, and a slow machine makes likely).
  std::vector<int64_t> seqs;
  for (int i = 0; i < 4; ++i) {
    std::vector<Message> one = Drain(*s.value(), 1, 6000);
    ASSERT_EQ(one.size(), 1u) << "after " << i << " messages";
    seqs.push_back(one[0].cursor.a);
    ASSERT_TRUE(s.value()->Acknowledge(one[0].cursor).ok());
  }
  std::sort(seqs.begin(), seqs.end());
  EXPECT_EQ(seqs, (std::vector<int64_t>{7, 8, 9, 10}));
  // Everything acknowledged: nothing comes back, even after the ack wait.
  Message m;
  Result<Source::Fetched> f = s.value()->Fetch(m, 3500);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value(), Source::Fetched::kWouldWait) << "redelivered " << m.cursor.a;
}

TEST_F(JetStreamTest, RejectedAreRedelivered) {
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto batch = Batch(0, 3);
  ASSERT_EQ(p.value()->Publish(batch).value(), 3u);
  auto s = OpenJetStreamSource(options_, "loop", "evident.p0.>");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  std::vector<Message> got = Drain(*s.value(), 3);
  ASSERT_EQ(got.size(), 3u);
  ASSERT_TRUE(s.value()->Acknowledge(got[0].cursor).ok());
  ASSERT_TRUE(s.value()->Reject(got[2].cursor, 100).ok());
  std::vector<Message> again = Drain(*s.value(), 2, 5000);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(again[0].cursor.a, 2);
  EXPECT_EQ(again[1].cursor.a, 3);
  ASSERT_TRUE(s.value()->Acknowledge(again[1].cursor).ok());
  Message m;
  Result<Source::Fetched> f = s.value()->Fetch(m, 3500);  // past the ack wait
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value(), Source::Fetched::kWouldWait) << "redelivered " << m.cursor.a;
  s.value()->Stop();
  f = s.value()->Fetch(m, 300);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f.value(), Source::Fetched::kEnd);
}

// A durable consumer opened again with another ack wait takes the new one; with another subject
// it is refused, naming both, and left as it was.
TEST_F(JetStreamTest, ADurableTakesANewAckWaitAndRefusesANewSubject) {
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto batch = Batch(0, 1);
  ASSERT_EQ(p.value()->Publish(batch).value(), 1u);
  const auto ack_wait_ns = [this] {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    jsConsumerInfo* ci = nullptr;
    int64_t ns = -1;
    if (natsConnection_ConnectTo(&nc, url_.c_str()) == NATS_OK &&
        natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
        js_GetConsumerInfo(&ci, js, "EVENTS", "loop", nullptr, nullptr) == NATS_OK) {
      ns = ci->Config->AckWait;
      jsConsumerInfo_Destroy(ci);
    }
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) natsConnection_Destroy(nc);
    return ns;
  };
  ASSERT_TRUE(OpenJetStreamSource(options_, "loop", "evident.p0.>").ok());
  EXPECT_EQ(ack_wait_ns(), 3'000'000'000);
  JetStreamOptions longer = options_;
  longer.ack_wait_ms = 4500;
  auto again = OpenJetStreamSource(longer, "loop", "evident.p0.>");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(ack_wait_ns(), 4'500'000'000);
  std::vector<Message> got = Drain(*again.value(), 1);
  ASSERT_EQ(got.size(), 1u);
  again.value().reset();

  for (const std::string other : {"", "evident.p1.>"}) {
    auto refused = OpenJetStreamSource(options_, "loop", other);
    ASSERT_FALSE(refused.ok()) << other;
    const Status& status = refused.status();
    EXPECT_EQ(status.code(), Code::kFailedPrecondition) << status.ToString();
    EXPECT_NE(status.message().find("reads 'evident.p0.>', not '" +
                                    (other.empty() ? std::string("evident.>") : other) + "'"),
              std::string::npos)
        << status.ToString();
  }
  EXPECT_EQ(ack_wait_ns(), 4'500'000'000);
}

}  // namespace
// A subject prefix is dot-separated tokens: what could not begin a subject is refused by name,
// by the publisher too, before it connects.
// Issue 40: without a filter and a prefix, a consumer reads every subject of the stream (it used
// to read evident.> and was refused on a stream of orders.>), of one subject pattern or several.
TEST_F(JetStreamTest, WithoutAFilterOrPrefixEverySubjectOfTheStreamIsRead) {
  {
    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    ASSERT_EQ(natsConnection_ConnectTo(&nc, url_.c_str()), NATS_OK);
    ASSERT_EQ(natsConnection_JetStream(&js, nc, nullptr), NATS_OK);
    const char* subjects[] = {"orders.>", "payments.>"};
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = "MIXED";
    config.Subjects = subjects;
    config.SubjectsLen = 2;
    config.Duplicates = int64_t{120} * 1'000'000'000;
    jsStreamInfo* info = nullptr;
    ASSERT_EQ(js_AddStream(&info, js, &config, nullptr, nullptr), NATS_OK);
    jsStreamInfo_Destroy(info);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
  }
  for (const char* prefix : {"orders", "payments"}) {
    JetStreamOptions o = options_;
    o.stream = "MIXED";
    o.subject_prefix = prefix;
    auto p = OpenJetStreamPublisher(o);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    std::vector<OutgoingMessage> one = {
        {"x", std::string(prefix) + "-1", R"({"id":")" + std::string(prefix) + R"("})"}};
    ASSERT_EQ(p.value()->Publish(one).value(), 1u);
  }
  JetStreamOptions every = options_;
  every.stream = "MIXED";
  every.subject_prefix.clear();
  auto s = OpenJetStreamSource(every, "all", "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_TRUE(s.value()->Start(std::nullopt).ok());
  const std::vector<Message> got = Drain(*s.value(), 2, 3000);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].bytes, R"({"id":"orders"})");
  EXPECT_EQ(got[1].bytes, R"({"id":"payments"})");
  // A stream of one pattern: that pattern, the relay's stream included.
  auto p = OpenJetStreamPublisher(options_);
  ASSERT_TRUE(p.ok());
  auto batch = Batch(0, 3);
  ASSERT_EQ(p.value()->Publish(batch).value(), 3u);
  JetStreamOptions events = options_;
  events.subject_prefix.clear();
  auto one = OpenJetStreamSource(events, "every", "");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_TRUE(one.value()->Start(std::nullopt).ok());
  EXPECT_EQ(Drain(*one.value(), 3, 3000).size(), 3u);
}

TEST(SubjectPrefix, TokensWithoutWildcardsOrWhiteSpace) {
  for (const char* fine : {"evident", "shop.eu", "a-b_c.9"}) {
    EXPECT_TRUE(CheckSubjectPrefix(fine).ok()) << fine;
  }
  for (const char* bad : {"", ".a", "a.", "a..b", "a.*", "a.>", "a b", "a\tb"}) {
    const Status s = CheckSubjectPrefix(bad);
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("subject prefix"), std::string::npos) << s.ToString();
  }
  const auto refused = OpenJetStreamPublisher(
      {.url = "nats://127.0.0.1:1", .stream = "EVENTS", .subject_prefix = "shop.>"});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
}

}  // namespace evident
