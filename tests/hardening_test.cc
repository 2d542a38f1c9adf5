// End-to-end tests of what a hostile event, a careless user or an unlucky operator does to the
// evident binary: full disks, a resume on another input, an outcomes path that names the store,
// read-only commands on the wrong file, terminal escapes in stored text, exit codes and limits.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

std::string Paid(const std::string& id, const std::string& subject, int version) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"https://example.test/order-service","type":"com.example.training.order.paid","subject":")" +
         subject + R"(","schemaversion":1,"data":{"orderId":")" + subject + R"(","orderVersion":)" +
         std::to_string(version) + "}}";
}

// An event of the orders example's contracts for `evident outbox append`.
std::string StatusChanged(const std::string& id, const std::string& status) {
  return R"({"specversion":"1.0","id":")" + id +
         R"(","source":"training://orders/checkout","type":"order.status.changed",)"
         R"("subject":"order-104","data":{"schemaVersion":1,"orderId":"order-104","status":")" +
         status + R"("}})";
}

class HardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-hardening-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    db_ = (dir_ / "orders.db").string();
    store_ = "sqlite:" + db_;
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessResult Consume(const std::string& input, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"consume", "--config", config_, "--store",
                                     store_,    "--input",  input};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunEvident(args);
  }
  // Runs evident with standard output on /dev/full.
  ProcessResult RunToFullDisk(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" >/dev/full",
                                     EVIDENT_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Applied receipts in the store, from `evident evidence --format json` of one subject.
  int64_t AppliedOf(const std::string& subject) {
    const auto r = RunEvident({"evidence", subject, "--store", store_, "--format", "json"});
    int64_t count = 0;
    for (size_t at = r.out.find("\"input_schema_version\""); at != std::string::npos;
         at = r.out.find("\"input_schema_version\"", at + 1)) {
      ++count;
    }
    return count;
  }

  fs::path dir_;
  std::string db_, store_;
  const std::string config_ = SourcePath("examples/orders/evident.yaml");
  const std::string events_ = SourcePath("examples/orders/events.ndjson");
};

// --- every write is checked -------------------------------------------------------------------

// --help and --version answer on standard output too: a full disk there is not an exit 0.
TEST_F(HardeningTest, HelpAndVersionOnAFullDiskExit2) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"--version"}, {"validate", "--help"}, {"schema", "check", "--help"}}) {
    const auto r = RunToFullDisk(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << " " << r.err;
    EXPECT_NE(r.err.find("cannot write standard output"), std::string::npos) << r.err;
  }
  EXPECT_EQ(RunEvident({"--version"}).exit_code, 0);
}

TEST_F(HardeningTest, OutcomesOnAFullDiskExit2) {
  const auto r = Consume(events_, {"--outcomes", "/dev/full"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot write the outcomes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("committed"), std::string::npos) << r.err;
}

TEST_F(HardeningTest, CommandsWritingToAFullStdoutExit2) {
  ASSERT_EQ(Consume(events_).exit_code, 0);
  const std::string schema =
      SourcePath("examples/orders/contracts/com.example.training.order.paid/v1.schema.json");
  const std::string instances = Write("instances.ndjson", R"({"orderId":"a","orderVersion":1})"
                                                          "\n");
  const std::string outbox_input = Write(
      "outbox.ndjson", StatusChanged("o1", "paid") + "\n" + StatusChanged("o2", "packed") + "\n");
  const std::vector<std::string> append = {"outbox",
                                           "append",
                                           "--contracts",
                                           SourcePath("examples/orders/contracts"),
                                           "--schema-version-at",
                                           "/data/schemaVersion",
                                           outbox_input,
                                           "--store"};
  const std::string outbox_store = "sqlite:" + (dir_ / "outbox.db").string();
  std::vector<std::string> append_args = append;
  append_args.push_back(outbox_store);
  const ProcessResult appended = RunEvident(append_args);
  ASSERT_EQ(appended.exit_code, 0) << appended.err;
  ASSERT_EQ(Lines(appended.out).size(), 2u) << appended.out;
  std::vector<std::string> append_to_full = append;
  append_to_full.push_back("sqlite:" + (dir_ / "outbox-b.db").string());
  const std::vector<std::vector<std::string>> commands = {
      {"outbox", "list", "--store", outbox_store},
      {"outbox", "list", "--store", outbox_store, "--format", "json"},
      {"outbox", "stats", "--store", outbox_store},
      {"outbox", "stats", "--store", outbox_store, "--format", "json"},
      append_to_full,
      {"evidence", "order-417", "--store", store_},
      {"evidence", "order-417", "--store", store_, "--format", "json"},
      {"gaps", "--store", store_, "--all"},
      {"guard", "--config", config_, "--store", store_, "--consumer", "fulfillment", "--subject",
       "order-417", "--action", "ship"},
      {"validate", events_},
      {"schema", "validate", "--schema", schema, instances},
      {"consume", "--config", config_, "--store", "sqlite:" + (dir_ / "b.db").string(), "--input",
       events_, "--outcomes", "-"},
  };
  for (const auto& args : commands) {
    const auto r = RunToFullDisk(args);
    std::string command;
    for (const std::string& a : args) command += a + " ";
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_FALSE(r.err.empty()) << args[0];
  }
}

// --- --resume identifies its input --------------------------------------------------------------

TEST_F(HardeningTest, ResumeRefusesADifferentInputAtTheSamePath) {
  const std::string all = Read(events_);
  const std::string input = Write("in.ndjson", all);
  ASSERT_EQ(Consume(input).exit_code, 0);
  const int64_t applied = AppliedOf("order-417");
  ASSERT_GT(applied, 0);
  // Other events of the same line count at the same path: nothing may be skipped unseen.
  std::string other;
  for (int i = 0; i < static_cast<int>(Lines(all).size()); ++i) {
    other += Paid("evt-other-" + std::to_string(i), "order-9" + std::to_string(i), 1) + "\n";
  }
  Write("in.ndjson", other);
  const auto r = Consume(input, {"--resume"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("cannot resume"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("different input"), std::string::npos) << r.err;
  EXPECT_EQ(AppliedOf("order-90"), 0);  // nothing decided
  // A shorter input is refused as well.
  Write("in.ndjson", Lines(all)[0] + "\n");
  const auto shorter = Consume(input, {"--resume"});
  EXPECT_EQ(shorter.exit_code, 2);
  EXPECT_NE(shorter.err.find("has only 1 lines"), std::string::npos) << shorter.err;
  // Without --resume the other input is decided in full.
  Write("in.ndjson", other);
  ASSERT_EQ(Consume(input).exit_code, 0);
  EXPECT_EQ(AppliedOf("order-90"), 1);
}

// Same lines, same bytes, one character changed: only the hash tells the inputs apart.
TEST_F(HardeningTest, ResumeRefusesAnInputOfTheSameSizeWithOtherBytes) {
  const std::string all = Read(events_);
  const std::string input = Write("in.ndjson", all);
  ASSERT_EQ(Consume(input).exit_code, 0);
  std::string edited = all;
  const size_t at = edited.find("evt-104");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 7, "evt-999");
  ASSERT_EQ(edited.size(), all.size());
  Write("in.ndjson", edited);
  const auto r = Consume(input, {"--resume"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("different input"), std::string::npos) << r.err;
}

TEST_F(HardeningTest, ResumeContinuesAnInputThatGrew) {
  const std::vector<std::string> lines = Lines(Read(events_));
  std::string first;
  for (size_t i = 0; i < 7; ++i) first += lines[i] + "\n";
  const std::string input = Write("in.ndjson", first);
  ASSERT_EQ(Consume(input).exit_code, 0);
  std::string all = first;
  for (size_t i = 7; i < lines.size(); ++i) all += lines[i] + "\n";
  Write("in.ndjson", all);
  const std::string outcomes = (dir_ / "outcomes.ndjson").string();
  const auto r = Consume(input, {"--resume", "--outcomes", outcomes});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("7 events skipped"), std::string::npos) << r.out;
  for (const std::string& line : Lines(Read(outcomes))) {
    const size_t at = line.find("\"index\":");
    ASSERT_NE(at, std::string::npos);
    EXPECT_GE(std::stoi(line.substr(at + 8)), 7) << line;  // nothing before line 7 again
  }
}

TEST_F(HardeningTest, ResumeRefusesADifferentStandardInput) {
  const std::vector<std::string> lines = Lines(Read(events_));
  const auto first = RunEvident({"consume", "--config", config_, "--store", store_},
                                lines[0] + "\n" + lines[1] + "\n");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const auto r = RunEvident({"consume", "--config", config_, "--store", store_, "--resume"},
                            lines[2] + "\n" + lines[3] + "\n" + lines[4] + "\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot resume"), std::string::npos) << r.err;
  const auto same = RunEvident({"consume", "--config", config_, "--store", store_, "--resume"},
                               lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n");
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("2 events skipped"), std::string::npos) << same.out;
}

// --- --outcomes never destroys what the run reads or writes -------------------------------------

TEST_F(HardeningTest, OutcomesPathThatIsTheStoreOrTheInputIsRefused) {
  ASSERT_EQ(Consume(events_).exit_code, 0);
  const std::string input = Write("in.ndjson", Read(events_));
  const std::string store_bytes = Read(db_);
  const std::string config_copy = Write("evident.yaml", Read(config_));
  for (const std::string& target :
       {db_, db_ + "-wal", db_ + "-shm", input, (dir_ / "." / "in.ndjson").string(), config_}) {
    const auto r = Consume(input, {"--outcomes", target});
    EXPECT_EQ(r.exit_code, 2) << target;
    EXPECT_NE(r.err.find("would destroy it"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Read(db_), store_bytes);
  EXPECT_EQ(Read(input), Read(events_));
  EXPECT_EQ(Read(config_), Read(config_copy));
}

// The files a config brings in are read too: its contracts (any path in their directory) and a
// profile file; `quarantine replay --outcomes` is held to the same rule.
TEST_F(HardeningTest, OutcomesPathThatIsAContractTheProfileOrTheReplayStoreIsRefused) {
  fs::copy(SourcePath("examples/orders"), dir_ / "orders", fs::copy_options::recursive);
  const std::string config = (dir_ / "orders" / "evident.yaml").string();
  const std::string contract =
      (dir_ / "orders" / "contracts" / "consumers" / "fulfillment.yaml").string();
  const std::string contract_bytes = Read(contract);
  const std::string profile =
      Write("legacy.json", R"({"name":"legacy","attributes":{"id":"/meta/id",)"
                           R"("source":"/meta/from","type":"/meta/kind"},"data":"/body"})");
  const std::string legacy =
      Write("legacy.ndjson", R"({"meta":{"id":"1","from":"a://b","kind":"t"},"body":{}})"
                             "\n");
  const auto consume = [&](const std::string& input, std::vector<std::string> extra) {
    std::vector<std::string> args = {"consume", "--config", config, "--store",
                                     store_,    "--input",  input};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunEvident(args);
  };
  for (const std::string& target :
       {contract, (dir_ / "orders" / "contracts" / "new.ndjson").string()}) {
    const auto r = consume(events_, {"--outcomes", target});
    EXPECT_EQ(r.exit_code, 2) << target;
    EXPECT_NE(r.err.find("is in the contracts directory"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(dir_ / "orders" / "contracts" / "new.ndjson"));
  const auto by_profile = consume(legacy, {"--profile-file", profile, "--outcomes", profile});
  EXPECT_EQ(by_profile.exit_code, 2);
  EXPECT_NE(by_profile.err.find("is the profile file"), std::string::npos) << by_profile.err;
  EXPECT_EQ(Read(contract), contract_bytes);
  EXPECT_NE(Read(profile).find("\"legacy\""), std::string::npos);
  // Next to the config is fine: outcomes are often kept there.
  EXPECT_EQ(consume(events_, {"--outcomes", (dir_ / "orders" / "out.ndjson").string()}).exit_code,
            0);

  const std::string store_bytes = Read(db_);
  for (const std::string& target : {db_, db_ + "-wal", config}) {
    const auto r = RunEvident({"quarantine", "replay", "--config", config, "--store", store_,
                               "--by", "me", "--note", "n", "1", "--outcomes", target});
    EXPECT_EQ(r.exit_code, 2) << target;
    EXPECT_NE(r.err.find("would destroy it"), std::string::npos) << r.err;
  }
  EXPECT_EQ(Read(db_), store_bytes);
  EXPECT_NE(Read(config).find("consumers"), std::string::npos);
}

TEST_F(HardeningTest, ResumedOutcomesAreAppended) {
  const std::vector<std::string> lines = Lines(Read(events_));
  const std::string input = Write("in.ndjson", lines[0] + "\n" + lines[2] + "\n");
  const std::string outcomes = (dir_ / "outcomes.ndjson").string();
  ASSERT_EQ(Consume(input, {"--outcomes", outcomes}).exit_code, 0);
  const size_t before = Lines(Read(outcomes)).size();
  ASSERT_GT(before, 0u);
  Write("in.ndjson", lines[0] + "\n" + lines[2] + "\n" + lines[6] + "\n");
  ASSERT_EQ(Consume(input, {"--resume", "--outcomes", outcomes}).exit_code, 0);
  EXPECT_GT(Lines(Read(outcomes)).size(), before);
  EXPECT_EQ(Read(outcomes).find(Lines(Read(outcomes))[0]), 0u);  // the first run's lines stay
}

// --- read-only commands ------------------------------------------------------------------------

TEST_F(HardeningTest, ReadingCommandsNeverCreateAStore) {
  const std::string missing = (dir_ / "mistyped.db").string();
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"evidence", "order-417", "--store", "sqlite:" + missing},
           {"gaps", "--store", "sqlite:" + missing},
           {"guard", "--config", config_, "--store", "sqlite:" + missing, "--consumer",
            "fulfillment", "--subject", "order-417", "--action", "ship"}}) {
    const auto r = RunEvident(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find("no evident store"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(missing)) << args[0];
  }
}

TEST_F(HardeningTest, ReadingCommandsRefuseAndLeaveAForeignFileAlone) {
  // A SQLite database of someone else's (rollback journal, one table), and a file of text.
  const std::string foreign = (dir_ / "foreign.db").string();
  const auto made =
      RunProcess({"/usr/bin/sqlite3", foreign, "CREATE TABLE t(a); INSERT INTO t VALUES(1);"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string foreign_bytes = Read(foreign);
  const std::string text = Write("notes.db", "not a database at all\n");
  for (const std::string& path : {foreign, text}) {
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"evidence", "order-417", "--store", "sqlite:" + path},
             {"gaps", "--store", "sqlite:" + path}}) {
      const auto r = RunEvident(args);
      EXPECT_EQ(r.exit_code, 2) << path;
      EXPECT_NE(r.err.find("is not an evident store"), std::string::npos) << r.err;
    }
  }
  EXPECT_EQ(Read(foreign), foreign_bytes);  // still in its journal mode, no tables added
  EXPECT_FALSE(fs::exists(foreign + "-wal"));
  EXPECT_EQ(Read(text), "not a database at all\n");
}

TEST_F(HardeningTest, ReadingCommandsWorkOnAStoreThatIsNotWritable) {
  ASSERT_EQ(Consume(events_).exit_code, 0);
  const std::string bytes = Read(db_);
  fs::permissions(db_, fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  for (int i = 0; i < 2; ++i) {
    const auto r = RunEvident({"evidence", "order-417", "--store", store_});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("evt-order-417-paid-v1"), std::string::npos);
    const auto gaps = RunEvident({"gaps", "--store", store_, "--all"});
    EXPECT_EQ(gaps.exit_code, 0) << gaps.err;
  }
  EXPECT_EQ(Read(db_), bytes);  // not a byte changed
}

// On a read-only mount SQLite cannot create the -shm file a WAL reader needs; the store is then
// read as immutable (no writer can exist there). Runs in a mount namespace of its own, as root
// (CI runs as root).
TEST_F(HardeningTest, ReadingCommandsWorkOnAReadOnlyMount) {
  ASSERT_EQ(Consume(events_).exit_code, 0);
  const fs::path mount = dir_ / "ro";
  fs::create_directories(mount);
  const std::string script =
      "set -e; mount -t tmpfs none \"$1\"; cp \"$2\" \"$1\"/s.db; mount -o remount,ro \"$1\"; "
      "\"$3\" evidence order-417 --store \"sqlite:$1/s.db\"; "
      "\"$3\" gaps --all --store \"sqlite:$1/s.db\"; ls -A \"$1\"";
  const auto r = RunProcess({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script, "sh",
                             mount.string(), db_, EVIDENT_BINARY});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("evt-order-417-paid-v1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("order-418"), std::string::npos) << r.out;  // its open gap
  EXPECT_EQ(Lines(r.out).back(), "s.db");                          // nothing created beside it
  // A write-ahead log beside it holds commits the main file lacks, and immutable reads the main
  // file only: refused, not answered as of before those commits.
  const std::string with_wal =
      "set -e; mount -t tmpfs none \"$1\"; cp \"$2\" \"$1\"/s.db; printf 'commits' > "
      "\"$1\"/s.db-wal; mount -o remount,ro \"$1\"; "
      "\"$3\" evidence order-417 --store \"sqlite:$1/s.db\"";
  const auto stale = RunProcess({"/usr/bin/unshare", "-m", "/bin/sh", "-c", with_wal, "sh",
                                 mount.string(), db_, EVIDENT_BINARY});
  EXPECT_NE(stale.exit_code, 0) << stale.out;
  EXPECT_NE(stale.err.find("its write-ahead log"), std::string::npos) << stale.err;
  EXPECT_EQ(stale.out.find("evt-order-417"), std::string::npos) << stale.out;
}

// --- stored text is escaped on a terminal -------------------------------------------------------

// CloudEvents forbids control characters in a String: an id that would rewrite the line it is
// printed on, an id with a NUL, one with a raw DEL, are refused (control-character) and kept;
// what is printed of them, their original bytes included, is escaped. A bidi override is no
// control character: that event is applied, and its id printed escaped.
TEST_F(HardeningTest, ControlCharactersAreRefusedAndWhatIsPrintedIsEscaped) {
  const std::string evil_id = R"(evt-\u001b[2K\r  allowed\u001b[8m)";
  const std::string input = Write("in.ndjson", Paid(evil_id, "order-1", 1) + "\n" +
                                                   Paid(R"(evt-a\u0000b)", "order-1", 2) + "\n" +
                                                   Paid("evt-a\x7f"
                                                        "c",
                                                        "order-1", 3) +
                                                   "\n" +
                                                   Paid("evt-\xE2\x80\xAE"
                                                        "dliw",
                                                        "order-1", 1) +
                                                   "\n");
  ASSERT_EQ(Consume(input).exit_code, 0);
  const auto r = RunEvident({"evidence", "order-1", "--store", store_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t refused = 0;
  for (size_t at = 0; (at = r.out.find("reason control-character", at)) != std::string::npos;
       ++at) {
    ++refused;
  }
  EXPECT_EQ(refused, 3U) << r.out;
  EXPECT_NE(r.out.find(R"(evt-\u{202E}dliw)"), std::string::npos) << r.out;
  for (const int id : {1, 2, 3}) {
    const auto shown = RunEvident({"quarantine", "show", std::to_string(id), "--store", store_});
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_NE(shown.out.find("original bytes"), std::string::npos) << shown.out;
    for (const std::string& text : {r.out, shown.out}) {
      for (const char raw : {'\x1b', '\r', '\0', '\x7f'}) {
        EXPECT_EQ(text.find(raw), std::string::npos) << static_cast<int>(raw) << ": " << text;
      }
      EXPECT_EQ(text.find("\xE2\x80\xAE"), std::string::npos) << text;
    }
  }
}

// --- exit codes, messages and limits -----------------------------------------------------------

TEST_F(HardeningTest, EvidenceOfAnUnknownSubjectExits1WithAConsumerToo) {
  ASSERT_EQ(Consume(events_).exit_code, 0);
  EXPECT_EQ(RunEvident({"evidence", "order-404", "--store", store_}).exit_code, 1);
  EXPECT_EQ(RunEvident({"evidence", "order-404", "--store", store_, "--consumer", "fulfillment"})
                .exit_code,
            1);
  EXPECT_EQ(RunEvident({"evidence", "order-417", "--store", store_, "--consumer", "fulfillment"})
                .exit_code,
            0);
}

TEST_F(HardeningTest, OutOfRangeFlagsAreRefusedInPlainWords) {
  const auto negative = Consume(events_, {"--batch-count-max", "-5"});
  EXPECT_EQ(negative.exit_code, 2);
  EXPECT_NE(negative.err.find("must be a whole number from 1 to 1000000, not '-5'"),
            std::string::npos)
      << negative.err;
  EXPECT_FALSE(fs::exists(db_));  // refused before anything was opened
  const auto linger = Consume(events_, {"--linger-ms", "60001"});
  EXPECT_EQ(linger.exit_code, 2);
  EXPECT_NE(linger.err.find("from 0 to 60000"), std::string::npos) << linger.err;
  const auto line_bytes =
      RunEvident({"schema", "validate", "--schema", events_, "--line-bytes-max", "0"});
  EXPECT_EQ(line_bytes.exit_code, 2);
  EXPECT_EQ(line_bytes.err.find("1.797e308"), std::string::npos) << line_bytes.err;
  EXPECT_NE(line_bytes.err.find("whole number"), std::string::npos) << line_bytes.err;
}

TEST_F(HardeningTest, ALockedStoreNamesTheProcessHoldingIt) {
  ASSERT_EQ(Consume(events_).exit_code, 0);
  // sqlite3 takes the write lock and keeps it while it sleeps. It waits for the lock itself
  // (.timeout): a consume of the loop below may hold it at that moment, and without the wait
  // sqlite3 failed its BEGIN and slept holding nothing (the test then saw no refusal).
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    execlp("sqlite3", "sqlite3", db_.c_str(), ".timeout 10000", "BEGIN IMMEDIATE;",
           ".shell sleep 5", nullptr);
    _exit(127);
  }
  // Until the lock is taken, a consume succeeds; then it is refused.
  ProcessResult r;
  for (int i = 0; i < 100; ++i) {
    r = Consume(events_, {"--busy-timeout-ms", "200"});
    if (r.exit_code != 0) break;
    usleep(20'000);
  }
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("locked by another writer"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("process " + std::to_string(holder)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sqlite3"), std::string::npos) << r.err;
}

TEST_F(HardeningTest, AGapDeadlineThatWouldOverflowIsRefused) {
  const fs::path contracts = dir_ / "contracts";
  fs::copy(SourcePath("examples/orders/contracts"), contracts, fs::copy_options::recursive);
  const fs::path fulfillment = contracts / "consumers" / "fulfillment.yaml";
  std::string text = Read(fulfillment.string());
  const std::string from = "deadline_seconds: 300";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "deadline_seconds: 9223372036854775");
  Write("contracts/consumers/fulfillment.yaml", text);
  std::string config = Read(config_);
  Write("evident.yaml", config);
  const auto r = RunEvident({"consume", "--config", (dir_ / "evident.yaml").string(), "--store",
                             store_, "--input", events_});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("deadline_seconds from 0 to"), std::string::npos) << r.err;
}

TEST_F(HardeningTest, GapsReportTheVersionMissingNow) {
  // v3 deferred while nothing is applied (missing: v1); then v1 applies: v2 is missing now.
  const std::string input =
      Write("in.ndjson", Paid("evt-3", "order-7", 3) + "\n" + Paid("evt-1", "order-7", 1) + "\n");
  ASSERT_EQ(Consume(input).exit_code, 0);
  const auto gaps = RunEvident({"gaps", "--store", store_, "--all", "--format", "json"});
  ASSERT_EQ(gaps.exit_code, 0) << gaps.err;
  EXPECT_NE(gaps.out.find(R"("expected_version":2)"), std::string::npos) << gaps.out;
  const auto text = RunEvident({"gaps", "--store", store_, "--all"});
  EXPECT_NE(text.out.find("expects v2"), std::string::npos) << text.out;
  const auto evidence = RunEvident({"evidence", "order-7", "--store", store_, "--format", "json"});
  EXPECT_NE(evidence.out.find(R"("expected_version":2)"), std::string::npos) << evidence.out;
  EXPECT_EQ(evidence.out.find(R"("expected_version":1)"), std::string::npos) << evidence.out;
}

}  // namespace
}  // namespace evident::testing
