// FaultInjectionEnv: what a simulated power loss keeps, and failures on exactly the chosen call.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "evident/env.h"

namespace evident {
namespace {

class FaultInjection : public ::testing::Test {
 protected:
  std::string Read(const std::string& path) {
    auto contents = ReadWholeFile(*base_, path, 1 << 20);
    return contents.ok() ? *contents : contents.status().ToString();
  }
  bool Exists(const std::string& path) { return base_->FileExists(path).value(); }

  // Writes `synced` and syncs, then appends `unsynced` and closes without a sync.
  void WriteSyncedThenUnsynced(const std::string& path, std::string_view synced,
                               std::string_view unsynced) {
    auto file = env_.NewWritableFile(path);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append(synced).ok());
    ASSERT_TRUE((*file)->Sync().ok());
    ASSERT_TRUE((*file)->Append(unsynced).ok());
    ASSERT_TRUE((*file)->Flush().ok());
    ASSERT_TRUE((*file)->Close().ok());
  }

  std::unique_ptr<Env> base_ = NewMemoryEnv();
  FaultInjectionEnv env_{*base_};
};

TEST_F(FaultInjection, UnsyncedDataIsDroppedAndSyncedDataKept) {
  WriteSyncedThenUnsynced("d/a", "synced\n", "lost\n");
  WriteSyncedThenUnsynced("d/b", "all synced\n", "");
  EXPECT_EQ(Read("d/a"), "synced\nlost\n");  // before the power loss, everything is there
  ASSERT_TRUE(env_.DropUnsyncedData().ok());
  EXPECT_EQ(Read("d/a"), "synced\n");
  EXPECT_EQ(Read("d/b"), "all synced\n");
}

TEST_F(FaultInjection, AFileNeverSyncedIsEmptied) {
  WriteSyncedThenUnsynced("d/a", "", "never synced\n");
  ASSERT_TRUE(env_.DropUnsyncedData().ok());
  EXPECT_EQ(Read("d/a"), "");
}

TEST_F(FaultInjection, AppendingToAnEarlierFileKeepsItsEarlierBytes) {
  auto before = base_->NewWritableFile("d/log");  // written around the wrapper: durable
  ASSERT_TRUE(before.ok() && (*before)->Append("earlier\n").ok() && (*before)->Close().ok());
  auto file = env_.NewAppendableFile("d/log");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("later\n").ok());
  ASSERT_TRUE((*file)->Close().ok());
  ASSERT_TRUE(env_.SimulatePowerLoss().ok());
  EXPECT_EQ(Read("d/log"), "earlier\n");
}

TEST_F(FaultInjection, AFileCreatedWithoutADirectorySyncIsLost) {
  WriteSyncedThenUnsynced("d/a", "synced\n", "");
  WriteSyncedThenUnsynced("e/b", "synced\n", "");
  ASSERT_TRUE(env_.SyncDir("e/").ok());  // the trailing slash names the same directory
  ASSERT_TRUE(env_.SimulatePowerLoss().ok());
  EXPECT_FALSE(Exists("d/a"));
  EXPECT_EQ(Read("e/b"), "synced\n");
}

TEST_F(FaultInjection, WriteFileAtomicallySurvivesAPowerLoss) {
  ASSERT_TRUE(WriteFileAtomically(env_, "d/report", "v1").ok());
  ASSERT_TRUE(env_.SimulatePowerLoss().ok());
  EXPECT_EQ(Read("d/report"), "v1");
  ASSERT_TRUE(WriteFileAtomically(env_, "d/report", "v2").ok());
  ASSERT_TRUE(env_.SimulatePowerLoss().ok());
  EXPECT_EQ(Read("d/report"), "v2");
  EXPECT_FALSE(Exists("d/report.tmp"));
}

TEST_F(FaultInjection, ARenameCarriesTheFilesState) {
  WriteSyncedThenUnsynced("d/tmp", "synced\n", "unsynced\n");
  ASSERT_TRUE(env_.RenameFile("d/tmp", "d/final").ok());
  ASSERT_TRUE(env_.DropUnsyncedData().ok());
  EXPECT_EQ(Read("d/final"), "synced\n");
  // Created and renamed, but the directory never synced: the file is lost under its new name.
  ASSERT_TRUE(env_.RemoveFilesCreatedAfterLastDirSync().ok());
  EXPECT_FALSE(Exists("d/final"));
  EXPECT_FALSE(Exists("d/tmp"));
}

TEST_F(FaultInjection, AnInactiveFileSystemRefusesChangesButReads) {
  WriteSyncedThenUnsynced("d/a", "x", "");
  auto file = env_.NewAppendableFile("d/a");
  ASSERT_TRUE(file.ok());
  env_.SetFilesystemActive(false);
  const Status append = (*file)->Append("y");
  EXPECT_EQ(append.code(), Code::kIoError);
  EXPECT_EQ(append.message(), "append d/a: the file system is inactive (simulated crash)");
  EXPECT_FALSE((*file)->Sync().ok());
  EXPECT_FALSE((*file)->Close().ok());
  EXPECT_FALSE(env_.NewWritableFile("d/b").ok());
  EXPECT_FALSE(env_.RenameFile("d/a", "d/c").ok());
  EXPECT_FALSE(env_.RemoveFile("d/a").ok());
  EXPECT_FALSE(env_.SyncDir("d").ok());
  EXPECT_EQ(ReadWholeFile(env_, "d/a", 100).value(), "x");
  EXPECT_FALSE(Exists("d/b"));
  env_.SetFilesystemActive(true);
  EXPECT_TRUE(env_.RemoveFile("d/a").ok());
}

TEST_F(FaultInjection, CountsCalls) {
  WriteSyncedThenUnsynced("d/a", "1", "2");
  EXPECT_EQ(env_.CallCount(FileOperation::kOpen), 1);
  EXPECT_EQ(env_.CallCount(FileOperation::kAppend), 2);
  EXPECT_EQ(env_.CallCount(FileOperation::kSync), 1);
  EXPECT_EQ(env_.CallCount(FileOperation::kFlush), 1);
  EXPECT_EQ(env_.CallCount(FileOperation::kClose), 1);
  EXPECT_EQ(env_.CallCount(FileOperation::kRename), 0);
}

// One call of each kind (and a second open, to read), in a fixed order.
struct Script {
  FaultInjectionEnv& env;
  std::vector<std::pair<FileOperation, Status>> results;

  void Record(FileOperation operation, Status status) {
    results.emplace_back(operation, std::move(status));
  }
  void Run() {
    auto file = env.NewWritableFile("d/a");
    Record(FileOperation::kOpen, file.status());
    if (!file.ok()) file = env.NewWritableFile("d/a");  // go on with the rest of the script
    ASSERT_TRUE(file.ok());
    Record(FileOperation::kAppend, (*file)->Append("x"));
    Record(FileOperation::kFlush, (*file)->Flush());
    Record(FileOperation::kSync, (*file)->Sync());
    Record(FileOperation::kClose, (*file)->Close());
    auto in = env.NewSequentialFile("d/a");
    ASSERT_TRUE(in.ok());
    char buffer[8];
    Record(FileOperation::kRead, (*in)->Read(buffer, sizeof buffer).status());
    Status renamed = env.RenameFile("d/a", "d/b");
    const std::string name = renamed.ok() ? "d/b" : "d/a";
    Record(FileOperation::kRename, std::move(renamed));
    Record(FileOperation::kSyncDir, env.SyncDir("d"));
    Record(FileOperation::kRemove, env.RemoveFile(name));
  }
};

class FaultInjectionFailNth : public ::testing::TestWithParam<FileOperation> {};

TEST_P(FaultInjectionFailNth, TheChosenCallFailsAndNoOther) {
  const FileOperation failing = GetParam();
  std::unique_ptr<Env> base = NewMemoryEnv();
  FaultInjectionEnv env(*base);
  // A clean run, then one with the failure armed for the next call of its kind, then a clean
  // run again: the failure fires once, on that call only.
  for (int round = 1; round <= 3; ++round) {
    if (round == 2) env.FailNth(failing, 1);
    Script script{env, {}};
    script.Run();
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    for (const auto& [operation, status] : script.results) {
      const bool expect_failure = round == 2 && operation == failing;
      EXPECT_EQ(status.ok(), !expect_failure)
          << "round " << round << ", " << FileOperationName(operation) << ": " << status.ToString();
      if (expect_failure) {
        EXPECT_EQ(status.code(), Code::kIoError);
        const std::string prefix =
            "injected fault: " + std::string(FileOperationName(failing)) + " ";
        EXPECT_EQ(status.message().rfind(prefix, 0), 0u) << status.message();
      }
    }
  }
}

TEST_F(FaultInjection, TheNthCallFails) {
  auto file = env_.NewWritableFile("d/a");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("0").ok());  // before the arming: not counted towards it
  env_.FailNth(FileOperation::kAppend, 3);
  EXPECT_TRUE((*file)->Append("1").ok());
  EXPECT_TRUE((*file)->Append("2").ok());
  const Status third = (*file)->Append("3");
  EXPECT_EQ(third.message(), "injected fault: append d/a (call 4)");
  EXPECT_TRUE((*file)->Append("4").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("d/a"), "0124");
}

INSTANTIATE_TEST_SUITE_P(Operations, FaultInjectionFailNth,
                         ::testing::Values(FileOperation::kOpen, FileOperation::kRead,
                                           FileOperation::kAppend, FileOperation::kFlush,
                                           FileOperation::kSync, FileOperation::kClose,
                                           FileOperation::kRename, FileOperation::kRemove,
                                           FileOperation::kSyncDir),
                         [](const ::testing::TestParamInfo<FileOperation>& param) {
                           std::string name(FileOperationName(param.param));
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

TEST_F(FaultInjection, AFailedAppendWritesNothingAndAFailedSyncSyncsNothing) {
  auto file = env_.NewWritableFile("d/a");
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("kept ").ok());
  env_.FailNth(FileOperation::kAppend, 1);
  EXPECT_FALSE((*file)->Append("refused ").ok());
  ASSERT_TRUE((*file)->Append("and this").ok());
  ASSERT_TRUE((*file)->Sync().ok());
  env_.FailNth(FileOperation::kSync, 1);
  ASSERT_TRUE((*file)->Append(", unsynced").ok());
  EXPECT_FALSE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("d/a"), "kept and this, unsynced");
  ASSERT_TRUE(env_.DropUnsyncedData().ok());
  EXPECT_EQ(Read("d/a"), "kept and this");
}

TEST_F(FaultInjection, AFailedRemoveOrRenameChangesNothing) {
  WriteSyncedThenUnsynced("d/a", "x", "");
  env_.FailNth(FileOperation::kRemove, 1);
  EXPECT_FALSE(env_.RemoveFile("d/a").ok());
  EXPECT_TRUE(Exists("d/a"));
  env_.FailNth(FileOperation::kRename, 1);
  EXPECT_FALSE(env_.RenameFile("d/a", "d/b").ok());
  EXPECT_TRUE(Exists("d/a"));
  EXPECT_FALSE(Exists("d/b"));
}

// The model holds over the real file system too.
TEST(FaultInjectionOverPosix, UnsyncedDataIsDropped) {
  std::string dir = (std::filesystem::temp_directory_path() / "evident-fault-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  FaultInjectionEnv env(PosixEnv());
  {
    auto file = env.NewWritableFile(dir + "/a");
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("synced\n").ok() && (*file)->Sync().ok());
    ASSERT_TRUE((*file)->Append("lost\n").ok());
  }  // destroyed unclosed: the buffered line reaches the file, unsynced
  ASSERT_TRUE(env.SyncDir(dir).ok());
  ASSERT_TRUE(env.SimulatePowerLoss().ok());
  EXPECT_EQ(ReadWholeFile(PosixEnv(), dir + "/a", 100).value(), "synced\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace evident
