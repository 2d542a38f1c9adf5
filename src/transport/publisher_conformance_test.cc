// The Publisher conformance suite: every implementation of evident/publisher.h passes it
// unchanged, the cases each backend claims (transport_backends.h) checked and the rest checked
// to behave as the contract says a destination without them does.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "evident/publisher.h"
#include "transport/transport_backends.h"

namespace evident {
namespace {

namespace fs = std::filesystem;

class PublisherConformance : public ::testing::TestWithParam<PublisherBackend> {
 protected:
  void SetUp() override {
    const std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    dir_ = fs::temp_directory_path() / ("evident-publisher-" + std::to_string(getpid()) + "-" +
                                        test.substr(0, test.find('/')) + "-" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Publisher> Open() {
    Result<std::unique_ptr<Publisher>> publisher = GetParam().open(dir_);
    EXPECT_TRUE(publisher.ok()) << publisher.status().ToString();
    return publisher.ok() ? std::move(publisher).value() : nullptr;
  }
  std::vector<std::string> Held() { return GetParam().held(dir_); }

  static std::vector<OutgoingMessage> Batch(int from, int n) {
    std::vector<OutgoingMessage> batch;
    for (int i = from; i < from + n; ++i) {
      const std::string id = "id-" + std::to_string(i);
      batch.push_back({"p0.order.paid", id, R"({"id":")" + id + R"("})"});
    }
    return batch;
  }
  // How many the destination accepted; the test fails on an error (0 then).
  static size_t Accepted(const Result<size_t>& accepted) {
    EXPECT_TRUE(accepted.ok()) << accepted.status().ToString();
    return accepted.ok() ? *accepted : 0;
  }
  static std::vector<std::string> Bytes(const std::vector<OutgoingMessage>& batch) {
    std::vector<std::string> bytes;
    for (const OutgoingMessage& m : batch) bytes.push_back(m.bytes);
    return bytes;
  }

  fs::path dir_;
};

TEST_P(PublisherConformance, ABatchIsAcceptedWholeAndHeldInOrder) {
  auto publisher = Open();
  ASSERT_NE(publisher, nullptr);
  const auto batch = Batch(0, 5);
  const Result<size_t> accepted = publisher->Publish(batch);
  ASSERT_TRUE(accepted.ok()) << accepted.status().ToString();
  EXPECT_EQ(*accepted, batch.size());
  // Accepted means held: read back while the publisher is still open.
  EXPECT_EQ(Held(), Bytes(batch));
  EXPECT_TRUE(publisher->Close().ok());
}

TEST_P(PublisherConformance, BatchesFollowEachOtherAndAnEmptyOneIsNothing) {
  auto publisher = Open();
  ASSERT_NE(publisher, nullptr);
  ASSERT_EQ(Accepted(publisher->Publish(Batch(0, 2))), 2u);
  EXPECT_EQ(Accepted(publisher->Publish(std::span<const OutgoingMessage>())), 0u);
  ASSERT_EQ(Accepted(publisher->Publish(Batch(2, 3))), 3u);
  EXPECT_EQ(Held(), Bytes(Batch(0, 5)));
  EXPECT_TRUE(publisher->Close().ok());
}

// What one publisher accepted outlives it: a new one (a restarted relay) adds after it.
TEST_P(PublisherConformance, ANewPublisherAddsAfterWhatAnEarlierOneAccepted) {
  {
    auto first = Open();
    ASSERT_NE(first, nullptr);
    ASSERT_EQ(Accepted(first->Publish(Batch(0, 3))), 3u);
    EXPECT_TRUE(first->Close().ok());
  }
  {
    auto dropped = Open();  // destroyed without Close, as a crashed relay's
    ASSERT_NE(dropped, nullptr);
    ASSERT_EQ(Accepted(dropped->Publish(Batch(3, 1))), 1u);
  }
  auto second = Open();
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(Accepted(second->Publish(Batch(4, 2))), 2u);
  EXPECT_EQ(Held(), Bytes(Batch(0, 6)));
  EXPECT_TRUE(second->Close().ok());
}

// A message offered again (a relay that crashed between acceptance and marking it sent): a
// destination that deduplicates holds it once and says so; one that does not holds it twice,
// and the consumers' ledger answers the second copy duplicate.
TEST_P(PublisherConformance, AMessageOfferedAgainIsHeldOnceOrTwiceAsClaimed) {
  auto publisher = Open();
  ASSERT_NE(publisher, nullptr);
  const auto batch = Batch(0, 3);
  ASSERT_EQ(Accepted(publisher->Publish(batch)), 3u);
  const std::vector<PublishAck> first = publisher->acks();
  ASSERT_EQ(Accepted(publisher->Publish(std::span(batch).subspan(1))), 2u);
  std::vector<std::string> expected = Bytes(batch);
  if (GetParam().can.deduplicates) {
    ASSERT_EQ(publisher->acks().size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(publisher->acks()[i].duplicate);
      EXPECT_EQ(publisher->acks()[i].sequence, first[i + 1].sequence);  // the first copy's
    }
  } else {
    const std::vector<std::string> again = Bytes(Batch(1, 2));
    expected.insert(expected.end(), again.begin(), again.end());
  }
  EXPECT_EQ(Held(), expected);
  EXPECT_TRUE(publisher->Close().ok());
}

TEST_P(PublisherConformance, AcksNumberTheAcceptedInOrderOrAreEmpty) {
  auto publisher = Open();
  ASSERT_NE(publisher, nullptr);
  ASSERT_EQ(Accepted(publisher->Publish(Batch(0, 4))), 4u);
  const std::vector<PublishAck>& acks = publisher->acks();
  if (!GetParam().can.numbers_messages) {
    EXPECT_TRUE(acks.empty());
    return;
  }
  ASSERT_EQ(acks.size(), 4u);
  for (size_t i = 0; i < acks.size(); ++i) {
    EXPECT_FALSE(acks[i].duplicate);
    if (i > 0) {
      EXPECT_EQ(acks[i].sequence, acks[i - 1].sequence + 1);
    }
  }
  EXPECT_TRUE(publisher->Close().ok());
}

// A message the destination refuses for what it is: first in a batch, kInvalidArgument saying
// why and nothing accepted; behind others, the prefix before it is accepted and nothing after
// it reaches the destination. The publisher goes on with other messages.
TEST_P(PublisherConformance, AMessageRefusedForWhatItIsStopsTheBatchAtItself) {
  auto publisher = Open();
  ASSERT_NE(publisher, nullptr);
  std::vector<OutgoingMessage> batch = Batch(0, 3);
  batch.insert(batch.begin() + 1, GetParam().unacceptable());
  const Result<size_t> prefix = publisher->Publish(batch);
  ASSERT_TRUE(prefix.ok()) << prefix.status().ToString();
  EXPECT_EQ(*prefix, 1u);
  EXPECT_EQ(Held(), Bytes(Batch(0, 1)));
  const Result<size_t> refused = publisher->Publish(std::span(batch).subspan(1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_FALSE(refused.status().message().empty());
  EXPECT_EQ(Held(), Bytes(Batch(0, 1)));
  ASSERT_EQ(Accepted(publisher->Publish(Batch(1, 2))), 2u);
  EXPECT_EQ(Held(), Bytes(Batch(0, 3)));
  EXPECT_TRUE(publisher->Close().ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, PublisherConformance, ::testing::ValuesIn(PublisherBackends()),
                         [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace evident
