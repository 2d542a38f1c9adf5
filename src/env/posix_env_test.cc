// What only the posix Env can show: the operating system's errors, reported with the path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "evident/env.h"

namespace evident {
namespace {

// /dev/full accepts the open and fails every write with ENOSPC: a full disk on demand.
TEST(PosixEnv, AFullDiskFailsTheWriteWithThePathAndTheReason) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto file = PosixEnv().NewAppendableFile("/dev/full");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_TRUE((*file)->Append("an outcome line\n").ok());  // buffered
  const Status flushed = (*file)->Flush();
  EXPECT_EQ(flushed.code(), Code::kIoError);
  EXPECT_EQ(flushed.message(), "write /dev/full: No space left on device");
  // The bytes were kept, so Close tries again and reports the failure again: never lost silently.
  const Status closed = (*file)->Close();
  EXPECT_EQ(closed.code(), Code::kIoError);
  EXPECT_EQ(closed.message(), "write /dev/full: No space left on device");
}

TEST(PosixEnv, ALargeAppendToAFullDiskFailsAtOnce) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no writable /dev/full";
  auto file = PosixEnv().NewAppendableFile("/dev/full");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Append(std::string(1 << 20, 'x')).message(),
            "write /dev/full: No space left on device");
  EXPECT_TRUE((*file)->Close().ok());  // nothing was left buffered
}

TEST(PosixEnv, OpeningInAMissingDirectoryIsNotFound) {
  const std::string path = "/nonexistent-evident-dir/out.ndjson";
  auto file = PosixEnv().NewWritableFile(path);
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), Code::kNotFound);
  EXPECT_EQ(file.status().message(), "open " + path + ": No such file or directory");
}

TEST(PosixEnv, ReadingADirectoryIsAnIoError) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto file = PosixEnv().NewSequentialFile(dir);
  ASSERT_TRUE(file.ok());  // open(2) of a directory read-only succeeds; read(2) does not
  char buffer[16];
  auto n = (*file)->Read(buffer, sizeof buffer);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), Code::kIoError);
  EXPECT_EQ(n.status().message(), "read " + dir + ": Is a directory");
}

TEST(PosixEnv, SyncOfAMissingDirectoryIsNotFound) {
  EXPECT_EQ(PosixEnv().SyncDir("/nonexistent-evident-dir").code(), Code::kNotFound);
}

TEST(PosixEnv, IsOneInstance) { EXPECT_EQ(&PosixEnv(), &PosixEnv()); }

}  // namespace
}  // namespace evident
