// The NDJSON publisher over the memory, POSIX and fault-injecting Envs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "evident/publisher.h"

namespace evident {
namespace {

std::vector<OutgoingMessage> Batch(std::initializer_list<const char*> ids) {
  std::vector<OutgoingMessage> out;
  for (const char* id : ids) out.push_back({"orders", id, std::string(R"({"id":")") + id + "\"}"});
  return out;
}

TEST(NdjsonPublisher, AcceptsAWholeBatchOnceItIsOnDisk) {
  auto env = NewMemoryEnv();
  auto publisher = OpenNdjsonPublisher(*env, "/out/events.ndjson").value();
  EXPECT_EQ(publisher->Publish(Batch({"a", "b"})).value(), 2u);
  EXPECT_EQ(publisher->Publish(Batch({"c"})).value(), 1u);
  EXPECT_EQ(publisher->Publish({}).value(), 0u);
  ASSERT_TRUE(publisher->Close().ok());
  EXPECT_EQ(ReadWholeFile(*env, "/out/events.ndjson", 1 << 20).value(),
            "{\"id\":\"a\"}\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n");
}

TEST(NdjsonPublisher, AcceptedMeansSynced) {
  FaultInjectionEnv env(NewMemoryEnv());
  auto publisher = OpenNdjsonPublisher(env, "/out/events.ndjson").value();
  ASSERT_EQ(publisher->Publish(Batch({"a"})).value(), 1u);
  ASSERT_TRUE(env.SimulatePowerLoss().ok());
  EXPECT_EQ(ReadWholeFile(env, "/out/events.ndjson", 1 << 20).value(), "{\"id\":\"a\"}\n");
}

TEST(NdjsonPublisher, AFailedSyncAcceptsNothing) {
  FaultInjectionEnv env(NewMemoryEnv());
  auto publisher = OpenNdjsonPublisher(env, "/out/events.ndjson").value();
  env.FailNth(FileOperation::kSync, 1);
  const Result<size_t> published = publisher->Publish(Batch({"a", "b"}));
  EXPECT_FALSE(published.ok());
  ASSERT_TRUE(env.DropUnsyncedData().ok());
  EXPECT_EQ(ReadWholeFile(env, "/out/events.ndjson", 1 << 20).value(), "");
}

// A refused batch writes nothing, not even its valid messages before the bad one.
// A batch whose sync failed was not accepted, so the next accepted batch must not make it
// durable along with its own lines: after a power loss the file holds only what was accepted.
// After a failed sync the refused batch's bytes may still be in the file; a later batch's sync
// must not make them durable, so the publisher refuses further batches.
TEST(NdjsonPublisher, ABatchAfterAFailedSyncDoesNotCarryTheRefusedLines) {
  FaultInjectionEnv env(NewMemoryEnv());
  auto publisher = OpenNdjsonPublisher(env, "/out/events.ndjson").value();
  env.FailNth(FileOperation::kSync, 1);
  EXPECT_FALSE(publisher->Publish(Batch({"a", "b"})).ok());
  const Result<size_t> next = publisher->Publish(Batch({"c"}));
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.status().code(), Code::kFailedPrecondition) << next.status().ToString();
  ASSERT_TRUE(publisher->Close().ok());
  ASSERT_TRUE(env.SimulatePowerLoss().ok());
  EXPECT_EQ(ReadWholeFile(env, "/out/events.ndjson", 1 << 20).value(), "");
}

// A file that ends inside a line (a write torn by a full disk, or someone else's fragment): the
// next publisher starts a new line, so its first message is not glued onto the fragment.
TEST(NdjsonPublisher, AFileEndingInsideALineGetsANewLineFirst) {
  auto env = NewMemoryEnv();
  {
    auto file = env->NewWritableFile("/events.ndjson").value();
    ASSERT_TRUE(file->Append("{\"id\":\"a\"}\n{\"id\":\"b\",\"da").ok());
    ASSERT_TRUE(file->Close().ok());
  }
  for (const char* id : {"b", "c"}) {  // the second publisher finds a whole last line
    auto publisher = OpenNdjsonPublisher(*env, "/events.ndjson").value();
    ASSERT_EQ(publisher->Publish(Batch({id})).value(), 1u);
    ASSERT_TRUE(publisher->Close().ok());
  }
  EXPECT_EQ(ReadWholeFile(*env, "/events.ndjson", 1 << 20).value(),
            "{\"id\":\"a\"}\n{\"id\":\"b\",\"da\n{\"id\":\"b\"}\n{\"id\":\"c\"}\n");
}

// A message holding a newline is refused for what it is (kInvalidArgument), and the refusal
// names the first message not accepted: the messages before it are accepted, then it is
// refused on its own (the relay parks by that refusal, so it must not fall on another).
TEST(NdjsonPublisher, RefusesAMessageHoldingANewlineAfterAcceptingTheOnesBeforeIt) {
  auto env = NewMemoryEnv();
  auto publisher = OpenNdjsonPublisher(*env, "/events.ndjson").value();
  const std::vector<OutgoingMessage> batch = {
      {"orders", "a", R"({"id":"a"})"}, {"orders", "x", "{\n}"}, {"orders", "b", R"({"id":"b"})"}};
  EXPECT_EQ(publisher->Publish(batch).value(), 1u);
  const Result<size_t> refused = publisher->Publish(std::span(batch).subspan(1));
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("message x holds a newline"), std::string::npos)
      << refused.status().ToString();
  EXPECT_EQ(publisher->Publish(std::span(batch).subspan(2)).value(), 1u);
  ASSERT_TRUE(publisher->Close().ok());
  EXPECT_EQ(ReadWholeFile(*env, "/events.ndjson", 1 << 20).value(),
            "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
}

TEST(NdjsonPublisher, AppendsToAnExistingFileOnDisk) {
  const std::string path = ::testing::TempDir() + "evident-publisher-" + std::to_string(getpid());
  std::filesystem::remove(path);
  for (const char* id : {"a", "b"}) {
    auto publisher = OpenNdjsonPublisher(PosixEnv(), path).value();
    ASSERT_EQ(publisher->Publish(Batch({id})).value(), 1u);
    ASSERT_TRUE(publisher->Close().ok());
  }
  EXPECT_EQ(ReadWholeFile(PosixEnv(), path, 1 << 20).value(), "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
  std::filesystem::remove(path);
}

// The descriptor publisher (`relay --to -`) draws the same line: the messages before one holding
// a newline are written and accepted, then that one is refused on its own.
TEST(FdPublisher, RefusesAMessageHoldingANewlineAfterWritingTheOnesBeforeIt) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  auto publisher = OpenFdPublisher(fds[1], "the pipe").value();
  const std::vector<OutgoingMessage> batch = {
      {"orders", "a", R"({"id":"a"})"}, {"orders", "x", "{\n}"}, {"orders", "b", R"({"id":"b"})"}};
  EXPECT_EQ(publisher->Publish(batch).value(), 1u);
  const Result<size_t> refused = publisher->Publish(std::span(batch).subspan(1));
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument) << refused.status().ToString();
  EXPECT_EQ(publisher->Publish(std::span(batch).subspan(2)).value(), 1u);
  ASSERT_TRUE(publisher->Close().ok());
  ASSERT_EQ(close(fds[1]), 0);
  std::string got(64, '\0');
  ssize_t n = 0;
  size_t total = 0;
  while ((n = read(fds[0], got.data() + total, got.size() - total)) > 0) {
    total += static_cast<size_t>(n);
  }
  close(fds[0]);
  got.resize(total);
  EXPECT_EQ(got, "{\"id\":\"a\"}\n{\"id\":\"b\"}\n");
}

}  // namespace
}  // namespace evident
