// The registry's own logic beyond dispatch: waiting for a source's broker, and URIs fit for a
// message.
#include "evident/registry.h"

#include <gtest/gtest.h>

#include <string>

namespace evident {
namespace {

// Nothing listens on port 1 of loopback: every connect is refused at once (kUnavailable).
constexpr std::string_view kNobody = "nats://127.0.0.1:1";

SourceOptions Stream() { return {.stream = "ORDERS", .consumer = "d"}; }

TEST(OpenSourceWaiting, TriesAgainWithBackoffUntilItsWaitHasPassedThenSaysHowLong) {
  ManualClock clock;
  const auto opened = OpenSourceWaiting(kNobody, Stream(), 5000, clock, nullptr);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Code::kUnavailable) << opened.status().ToString();
  // Waits of 250, 500, 1000 and 2000 ms, then the 1250 left: six tries in 5000 ms.
  EXPECT_EQ(clock.slept_ms(), 5000);
  EXPECT_NE(opened.status().message().find("unavailable for 5000 ms, 6 tries"), std::string::npos)
      << opened.status().ToString();
}

TEST(OpenSourceWaiting, ANoWaitTriesOnceAndARefusalIsNotWaitedOut) {
  ManualClock clock;
  const auto once = OpenSourceWaiting(kNobody, Stream(), 0, clock, nullptr);
  EXPECT_EQ(once.status().code(), Code::kUnavailable);
  EXPECT_NE(once.status().message().find("1 try"), std::string::npos) << once.status().ToString();
  EXPECT_EQ(clock.slept_ms(), 0);
  SourceOptions wrong = Stream();
  wrong.properties = {"passwd=x"};
  const auto refused = OpenSourceWaiting(kNobody, wrong, 60'000, clock, nullptr);
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_EQ(clock.slept_ms(), 0);
}

TEST(OpenSourceWaiting, AStopEndsTheWait) {
  ManualClock clock;
  CancelToken stop;
  stop.Cancel();
  const auto stopped = OpenSourceWaiting(kNobody, Stream(), 60'000, clock, &stop);
  EXPECT_EQ(stopped.status().code(), Code::kUnavailable);
  EXPECT_NE(stopped.status().message().find("stopped while waiting"), std::string::npos)
      << stopped.status().ToString();
  EXPECT_LT(clock.slept_ms(), 60'000);
}

TEST(RedactUri, UserInformationIsNeverShown) {
  EXPECT_EQ(RedactUri("nats://u:secret@127.0.0.1:4222,nats://127.0.0.1:4223"),
            "nats://***@127.0.0.1:4222,nats://127.0.0.1:4223");
  EXPECT_EQ(RedactUri("sqlite:/tmp/a.db"), "sqlite:/tmp/a.db");
  const auto opened = OpenSource("nats://u:secret-9@127.0.0.1:1", Stream());
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().message().find("secret-9"), std::string::npos)
      << opened.status().ToString();
  // Nor in the refusal of a scheme no backend has, of a source or a destination.
  const auto unknown = OpenSource("amqp://u:secret-7@127.0.0.1:5672", Stream());
  EXPECT_EQ(unknown.status().code(), Code::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("amqp://***@127.0.0.1:5672"), std::string::npos)
      << unknown.status().ToString();
  const auto to = ResolvePublisher("amqp://u:secret-6@127.0.0.1:5672", PublisherOptions{});
  EXPECT_EQ(to.status().message().find("secret-6"), std::string::npos) << to.status().ToString();
}

}  // namespace
}  // namespace evident
