// The Env conformance suite: every backend listed in env_backends.h must pass it unchanged.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

#include "env/env_backends.h"
#include "evident/env.h"

namespace evident {
namespace {

constexpr size_t kReadMaxBytes = 64 << 20;

class EnvConformance : public ::testing::TestWithParam<EnvBackend> {
 protected:
  void SetUp() override {
    std::string dir_template =
        (std::filesystem::temp_directory_path() / "evident-env-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
    dir_ = dir_template;
    env_ = GetParam().make(dir_);
    ASSERT_NE(env_, nullptr);
  }
  void TearDown() override {
    env_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  void Write(const std::string& name, std::string_view contents) {
    auto file = env_->NewWritableFile(Path(name));
    ASSERT_TRUE(file.ok()) << file.status().ToString();
    ASSERT_TRUE((*file)->Append(contents).ok());
    ASSERT_TRUE((*file)->Close().ok());
  }

  std::string Read(const std::string& name) {
    auto contents = ReadWholeFile(*env_, Path(name), kReadMaxBytes);
    EXPECT_TRUE(contents.ok()) << contents.status().ToString();
    return contents.ok() ? *contents : "<error>";
  }

  // "yes", "no" or the error.
  std::string IsDirectory(const std::string& path) {
    const Result<bool> directory = env_->IsDirectory(path);
    if (!directory.ok()) return directory.status().ToString();
    return *directory ? "yes" : "no";
  }

  std::string dir_;
  std::shared_ptr<Env> env_;
};

TEST_P(EnvConformance, WriteThenReadRoundTrip) {
  Write("a", "hello\nworld\n");
  EXPECT_EQ(Read("a"), "hello\nworld\n");
}

TEST_P(EnvConformance, ManyAppendsKeepTheirOrder) {
  auto file = env_->NewWritableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  std::string expected;
  for (int i = 0; i < 1000; ++i) {
    const std::string line = std::to_string(i) + "\n";
    ASSERT_TRUE((*file)->Append(line).ok());
    expected += line;
  }
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("a"), expected);
}

TEST_P(EnvConformance, AppendableFileAppendsToAnExistingFile) {
  Write("a", "one\n");
  auto file = env_->NewAppendableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("two\n").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("a"), "one\ntwo\n");
}

TEST_P(EnvConformance, AppendableFileCreatesAMissingFile) {
  auto file = env_->NewAppendableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("first\n").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("a"), "first\n");
}

TEST_P(EnvConformance, WritableFileTruncatesAnExistingFile) {
  Write("a", "a long first version\n");
  Write("a", "short\n");
  EXPECT_EQ(Read("a"), "short\n");
}

TEST_P(EnvConformance, SizeCountsFlushedBytes) {
  auto file = env_->NewWritableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("12345").ok());
  // After Flush the bytes are the operating system's: the size shows them before Close.
  ASSERT_TRUE((*file)->Flush().ok());
  EXPECT_EQ(env_->GetFileSize(Path("a")).value(), 5u);
  ASSERT_TRUE((*file)->Append("678").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(env_->GetFileSize(Path("a")).value(), 8u);
  EXPECT_EQ(env_->GetFileSize(Path("missing")).status().code(), Code::kNotFound);
}

TEST_P(EnvConformance, LastByteIsTheFilesLastOrNoneWhenEmpty) {
  Write("a", "");
  EXPECT_EQ(env_->LastByte(Path("a")).value(), std::nullopt);
  Write("a", "{\"torn\":");
  EXPECT_EQ(env_->LastByte(Path("a")).value(), std::optional<char>(':'));
  Write("a", "{}\n");
  EXPECT_EQ(env_->LastByte(Path("a")).value(), std::optional<char>('\n'));
  EXPECT_EQ(env_->LastByte(Path("missing")).status().code(), Code::kNotFound);
}

TEST_P(EnvConformance, ExistsAnswersForFilesAndMissingOnes) {
  EXPECT_FALSE(env_->FileExists(Path("a")).value());
  Write("a", "x");
  EXPECT_TRUE(env_->FileExists(Path("a")).value());
  EXPECT_FALSE(env_->FileExists(Path("no-such-dir/a")).value());
}

TEST_P(EnvConformance, RenameMovesAndReplaces) {
  Write("a", "new");
  Write("b", "old");
  ASSERT_TRUE(env_->RenameFile(Path("a"), Path("b")).ok());
  EXPECT_FALSE(env_->FileExists(Path("a")).value());
  EXPECT_EQ(Read("b"), "new");
  ASSERT_TRUE(env_->RenameFile(Path("b"), Path("c")).ok());
  EXPECT_EQ(Read("c"), "new");
  EXPECT_EQ(env_->RenameFile(Path("a"), Path("d")).code(), Code::kNotFound);
}

TEST_P(EnvConformance, RemoveDeletesAndAMissingFileIsNotFound) {
  Write("a", "x");
  ASSERT_TRUE(env_->RemoveFile(Path("a")).ok());
  EXPECT_FALSE(env_->FileExists(Path("a")).value());
  const Status again = env_->RemoveFile(Path("a"));
  EXPECT_EQ(again.code(), Code::kNotFound);
  EXPECT_NE(again.message().find(Path("a")), std::string::npos) << again.message();
}

TEST_P(EnvConformance, ReadingAMissingFileIsNotFoundAndNamesThePath) {
  auto file = env_->NewSequentialFile(Path("missing"));
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), Code::kNotFound);
  EXPECT_NE(file.status().message().find(Path("missing")), std::string::npos);
}

TEST_P(EnvConformance, SmallChunkReadsReturnEveryByte) {
  std::string contents;
  for (int i = 0; i < 1000; ++i) contents += static_cast<char>('a' + i % 26);
  Write("a", contents);
  auto file = env_->NewSequentialFile(Path("a"));
  ASSERT_TRUE(file.ok());
  std::string read;
  char chunk[7];
  for (int reads = 0; reads < 1000; ++reads) {
    auto n = (*file)->Read(chunk, sizeof chunk);
    ASSERT_TRUE(n.ok());
    if (*n == 0) break;
    ASSERT_LE(*n, sizeof chunk);
    read.append(chunk, *n);
  }
  EXPECT_EQ(read, contents);
  EXPECT_EQ((*file)->Read(chunk, sizeof chunk).value(), 0u);  // the end stays the end
}

TEST_P(EnvConformance, EmptyFile) {
  Write("a", "");
  EXPECT_TRUE(env_->FileExists(Path("a")).value());
  EXPECT_EQ(env_->GetFileSize(Path("a")).value(), 0u);
  auto file = env_->NewSequentialFile(Path("a"));
  ASSERT_TRUE(file.ok());
  char byte;
  EXPECT_EQ((*file)->Read(&byte, 1).value(), 0u);
}

TEST_P(EnvConformance, LargeFileInUnevenAppends) {
  constexpr size_t kBytes = 8 << 20;
  std::string contents(kBytes, '\0');
  for (size_t i = 0; i < kBytes; ++i) contents[i] = static_cast<char>((i * 7919) >> 3);
  auto file = env_->NewWritableFile(Path("large"));
  ASSERT_TRUE(file.ok());
  // Appends smaller and larger than any buffer a backend may keep.
  const size_t sizes[] = {1, 4095, 65537, 300000, 17, 1 << 20};
  size_t at = 0;
  for (size_t i = 0; at < kBytes; ++i) {
    const size_t n = std::min(sizes[i % std::size(sizes)], kBytes - at);
    ASSERT_TRUE((*file)->Append(std::string_view(contents).substr(at, n)).ok());
    at += n;
  }
  ASSERT_TRUE((*file)->Sync().ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ(env_->GetFileSize(Path("large")).value(), kBytes);
  EXPECT_TRUE(Read("large") == contents);  // not EXPECT_EQ: a failure would print 16 MiB
}

TEST_P(EnvConformance, AClosedFileRefusesWritesAndClosesAgainQuietly) {
  auto file = env_->NewWritableFile(Path("a"));
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->Append("x").ok());
  ASSERT_TRUE((*file)->Close().ok());
  EXPECT_EQ((*file)->Append("y").code(), Code::kFailedPrecondition);
  EXPECT_EQ((*file)->Flush().code(), Code::kFailedPrecondition);
  EXPECT_EQ((*file)->Sync().code(), Code::kFailedPrecondition);
  EXPECT_TRUE((*file)->Close().ok());
  EXPECT_EQ(Read("a"), "x");
}

TEST_P(EnvConformance, DestroyingAnOpenFileKeepsWhatWasAppended) {
  {
    auto file = env_->NewWritableFile(Path("a"));
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Append("kept").ok());
  }  // best-effort close
  EXPECT_EQ(Read("a"), "kept");
}

TEST_P(EnvConformance, SyncDirOfTheDirectory) { EXPECT_TRUE(env_->SyncDir(dir_).ok()); }

TEST_P(EnvConformance, ChildrenAreTheNamesInADirectorySorted) {
  ASSERT_TRUE(env_->CreateDir(Path("sub")).ok());
  ASSERT_TRUE(env_->CreateDir(Path("sub")).ok()) << "an existing directory is no error";
  ASSERT_TRUE(env_->CreateDir(Path("empty")).ok());
  Write("b.yaml", "b");
  Write("a.json", "a");
  Write("sub/inner", "i");
  const auto children = env_->GetChildren(dir_);
  ASSERT_TRUE(children.ok()) << children.status().ToString();
  EXPECT_EQ(*children, (std::vector<std::string>{"a.json", "b.yaml", "empty", "sub"}));
  const auto inner = env_->GetChildren(Path("sub") + "/");
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  EXPECT_EQ(*inner, std::vector<std::string>{"inner"});
  const auto none = env_->GetChildren(Path("empty"));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());
}

TEST_P(EnvConformance, IsDirectoryTellsDirectoriesFromFilesAndNothing) {
  ASSERT_TRUE(env_->CreateDir(Path("sub")).ok());
  Write("file", "x");
  EXPECT_EQ(IsDirectory(dir_), "yes");
  EXPECT_EQ(IsDirectory(Path("sub")), "yes");
  EXPECT_EQ(IsDirectory(Path("file")), "no");
  EXPECT_EQ(IsDirectory(Path("missing")), "no");
  EXPECT_FALSE(env_->CreateDir(Path("file")).ok()) << "a file is in the way";
}

TEST_P(EnvConformance, ASharedFileKeepsEveryAppendWholeAcrossThreads) {
  std::unique_ptr<WritableFile> base = env_->NewWritableFile(Path("shared")).value();
  const std::unique_ptr<WritableFile> shared = SharedWritableFile(*base);
  constexpr int kThreads = 4, kLines = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&shared, t] {
      const std::string line = std::string(100, static_cast<char>('a' + t)) + "\n";
      for (int i = 0; i < kLines; ++i) {
        ASSERT_TRUE(shared->Append(line).ok());
        if (i % 100 == 0) {
          ASSERT_TRUE(shared->Flush().ok());
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(shared->Close().ok());
  std::istringstream text(Read("shared"));
  std::map<char, int> lines;
  for (std::string line; std::getline(text, line);) {
    ASSERT_EQ(line, std::string(100, line.empty() ? '?' : line[0]));
    ++lines[line[0]];
  }
  EXPECT_EQ(lines,
            (std::map<char, int>{{'a', kLines}, {'b', kLines}, {'c', kLines}, {'d', kLines}}));
}

TEST_P(EnvConformance, ListingWhatIsNoDirectoryIsNotFound) {
  Write("file", "x");
  EXPECT_EQ(env_->GetChildren(Path("missing")).status().code(), Code::kNotFound);
  EXPECT_EQ(env_->GetChildren(Path("file")).status().code(), Code::kNotFound);
}

TEST_P(EnvConformance, WriteFileAtomicallyReplacesAndLeavesNoTemporary) {
  ASSERT_TRUE(WriteFileAtomically(*env_, Path("report.json"), "{\"v\":1}").ok());
  EXPECT_EQ(Read("report.json"), "{\"v\":1}");
  ASSERT_TRUE(WriteFileAtomically(*env_, Path("report.json"), "{\"v\":2}").ok());
  EXPECT_EQ(Read("report.json"), "{\"v\":2}");
  EXPECT_FALSE(env_->FileExists(Path("report.json.tmp")).value());
}

TEST_P(EnvConformance, ReadWholeFileStopsAtItsLimit) {
  Write("a", "0123456789");
  EXPECT_EQ(ReadWholeFile(*env_, Path("a"), 10).value(), "0123456789");
  EXPECT_EQ(ReadWholeFile(*env_, Path("a"), 9).status().code(), Code::kLimitExceeded);
}

INSTANTIATE_TEST_SUITE_P(Backends, EnvConformance, ::testing::ValuesIn(EnvBackends()),
                         [](const ::testing::TestParamInfo<EnvBackend>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace evident
