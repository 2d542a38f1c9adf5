// End-to-end tests of `evident validate`, and of the options of the commands that take a
// positional input: the real binary, real files, real exit codes.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

struct Line {
  std::string outcome, reason, id;
  uint64_t index = 0;
};

std::vector<Line> ParseOutput(const std::string& out) {
  std::vector<Line> parsed;
  simdjson::dom::parser parser;
  for (const std::string& text : Lines(out)) {
    simdjson::dom::element e;
    EXPECT_EQ(parser.parse(text).get(e), simdjson::SUCCESS) << text;
    Line line;
    line.outcome = std::string(e["outcome"].get_string().value());
    line.index = e["index"].get_uint64().value();
    std::string_view s;
    if (e["reason"].get(s) == simdjson::SUCCESS) line.reason = std::string(s);
    if (e["id"].get(s) == simdjson::SUCCESS) line.id = std::string(s);
    parsed.push_back(line);
  }
  return parsed;
}

TEST(CliValidate, ExampleFileGivesOneLinePerEventAndExitOne) {
  const auto r =
      RunEvident({"validate", SourcePath("examples/envelopes/orders.ndjson"), "--boundary",
                  "https://example.test/order-service", "--require-schema-version"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0].outcome, "valid");
  EXPECT_EQ(lines[0].id, "evt-order-417-paid-v2");
  EXPECT_EQ(lines[2].reason, "missing-id");
  EXPECT_EQ(lines[3].reason, "source-outside-boundary");
  EXPECT_EQ(lines[4].reason, "unsupported-specversion");
  EXPECT_EQ(lines[5].reason, "duplicate-member");
  EXPECT_EQ(lines[6].reason, "invalid-time");
  EXPECT_EQ(lines[7].reason, "missing-schema-version");
  EXPECT_EQ(lines[8].reason, "malformed-json");
  EXPECT_EQ(lines[8].index, 8u);
}

TEST(CliValidate, AllValidExitsZero) {
  const std::string input = R"({"specversion":"1.0","id":"a","source":"s","type":"t"})"
                            "\n"
                            R"({"specversion":"1.0","id":"b","source":"s","type":"t"})"
                            "\n";
  const auto r = RunEvident({"validate", "-"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseOutput(r.out).size(), 2u);
}

TEST(CliValidate, BatchFromStdin) {
  const auto r =
      RunEvident({"validate", "--schema-version-at", "/data/schemaVersion",
                  "--require-schema-version", SourcePath("examples/envelopes/batch.json")});
  EXPECT_EQ(r.exit_code, 1);
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].outcome, "valid");
  EXPECT_EQ(lines[1].reason, "missing-schema-version");
}

TEST(CliValidate, FlatProfile) {
  const auto r = RunEvident({"validate", "--profile", "flat", "--require-schema-version",
                             SourcePath("examples/envelopes/flat.ndjson")});
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].outcome, "valid");
  EXPECT_EQ(lines[1].reason, "missing-id");
}

// Every line is decided on its own: text that is not JSON gives one rejection per line (it
// used to collapse into one result for the whole input).
TEST(CliValidate, NotJsonAtAllIsOneRejectionPerLine) {
  const auto r = RunEvident({"validate"}, "this is\nnot json\nat all\n");
  EXPECT_EQ(r.exit_code, 1);
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(lines[i].reason, "malformed-json");
    EXPECT_EQ(lines[i].index, i);
  }
}

TEST(CliValidate, BinaryGarbageDoesNotCrash) {
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 7919) % 256));
  const auto r = RunEvident({"validate"}, garbage);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  // Not a batch (it does not start with '['), so every line is decided on its own: one rejected
  // result per non-blank line, at that line's index, in order. (Its brackets never balance a
  // line into the next: a newline ends any string and the splitter's continuation rule needs an
  // unbalanced line that is not followed by a '{' at column 0; the count below is what the
  // layout rule in docs/envelope.md gives for this input.)
  std::vector<uint64_t> want_indexes;
  uint64_t line = 0;
  size_t start = 0;
  while (start <= garbage.size()) {
    size_t end = garbage.find('\n', start);
    if (end == std::string::npos) end = garbage.size();
    const std::string text = garbage.substr(start, end - start);
    if (text.find_first_not_of(" \t\r") != std::string::npos) want_indexes.push_back(line);
    ++line;
    start = end + 1;
  }
  ASSERT_GT(want_indexes.size(), 1u);
  const std::vector<Line> lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), want_indexes.size()) << r.out;
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(lines[i].outcome, "rejected");
    EXPECT_EQ(lines[i].index, want_indexes[i]);
  }
}

std::string Event(const std::string& id) {
  return R"({"specversion":"1.0","id":")" + id + R"(","source":"s","type":"t"})";
}

// NDJSON streams: an input far larger than --input-bytes-max is validated line by line, with
// the physical line numbers (blank lines counted) as indices.
TEST(CliValidate, NdjsonStreamsPastTheWholeInputLimit) {
  std::string input = "\n" + Event("a") + "\n\n";
  for (int i = 0; i < 200; ++i) input += Event("e" + std::to_string(i)) + "\n";
  const auto r = RunEvident({"validate", "--input-bytes-max", "100", "-"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 201u) << r.err;
  EXPECT_EQ(lines[0].index, 1u);
  EXPECT_EQ(lines[0].id, "a");
  EXPECT_EQ(lines[1].index, 3u);
  EXPECT_EQ(lines[200].index, 202u);
  EXPECT_EQ(lines[200].id, "e199");
}

// A line over --event-bytes-max is rejected as too large, with its real size, and the lines
// after it are read.
TEST(CliValidate, OversizedNdjsonLineIsRejectedAndTheRestIsRead) {
  const std::string big = R"({"specversion":"1.0","id":"big","source":"s","type":"t","data":")" +
                          std::string(200000, 'x') + R"("})";
  const std::string input = Event("a") + "\n" + big + "\n" + Event("b") + "\n";
  const auto r = RunEvident({"validate", "--event-bytes-max", "65536", "-"}, input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].outcome, "valid");
  EXPECT_EQ(lines[1].outcome, "rejected");
  EXPECT_EQ(lines[1].reason, "envelope-too-large");
  EXPECT_NE(r.out.find("event of " + std::to_string(big.size()) +
                       " bytes exceeds the limit of 65536 bytes"),
            std::string::npos)
      << r.out.substr(0, 400);
  EXPECT_EQ(lines[2].outcome, "valid");
  EXPECT_EQ(lines[2].id, "b");
}

// A broken first line does not turn the input into one document read whole: the lines after
// it stream as NDJSON, past --input-bytes-max (which used to refuse the input with exit 2).
TEST(CliValidate, BrokenFirstLineStillStreams) {
  std::string input = R"({"specversion":"1.0","id":)"
                      "\n";
  for (int i = 0; i < 50; ++i) input += Event("e" + std::to_string(i)) + "\n";
  const auto r = RunEvident({"validate", "--input-bytes-max", "100", "-"}, input);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 51u) << r.err;
  EXPECT_EQ(lines[0].reason, "malformed-json");
  EXPECT_EQ(lines[1].outcome, "valid");
  EXPECT_EQ(lines[50].index, 50u);
  EXPECT_EQ(lines[50].id, "e49");
}

// One malformed element of a batch gets its own malformed-json result; the others get theirs
// (the whole batch used to be one malformed-json result).
TEST(CliValidate, MalformedBatchElementDoesNotHideTheOthers) {
  const std::string batch = "[\n  " + Event("x") +
                            ",\n  {\"specversion\": \"1.0\", \"id\": },\n  " + Event("y") +
                            ",\n  {\"specversion\":\"1.0\",\"id\":\"z\"}\n]\n";
  const auto r = RunEvident({"validate", "-"}, batch);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  const auto lines = ParseOutput(r.out);
  ASSERT_EQ(lines.size(), 4u) << r.out;
  EXPECT_EQ(lines[0].id, "x");
  EXPECT_EQ(lines[1].reason, "malformed-json");
  EXPECT_EQ(lines[1].index, 1u);
  EXPECT_EQ(lines[2].id, "y");
  EXPECT_EQ(lines[2].outcome, "valid");
  EXPECT_EQ(lines[3].reason, "missing-source");
  EXPECT_EQ(lines[3].index, 3u);
}

// A pretty-printed object is one event, indexed by the line it starts on. A batch array past
// --input-bytes-max stops with exit 2; the elements that ended within the limit have their
// results already (results stream, so they cannot be held back), the rest are not validated.
TEST(CliValidate, PrettyPrintedObjectAndTheBatchLimit) {
  const auto pretty =
      RunEvident({"validate", "-"},
                 "\n{\n  \"specversion\": \"1.0\",\n  \"id\": \"p\",\n  \"source\": \"s\",\n  "
                 "\"type\": \"t\"\n}\n");
  EXPECT_EQ(pretty.exit_code, 0) << pretty.err;
  const auto one = ParseOutput(pretty.out);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id, "p");
  EXPECT_EQ(one[0].index, 1u);

  const std::string batch = "[" + Event("x") + "," + Event("y") + "]";
  const auto fits = RunEvident({"validate", "-"}, batch);
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(ParseOutput(fits.out).size(), 2u);
  const auto refused = RunEvident({"validate", "--input-bytes-max", "100", "-"}, batch);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("batch array larger than 100 bytes"), std::string::npos)
      << refused.err;
  const auto partial = ParseOutput(refused.out);
  ASSERT_EQ(partial.size(), 1u);
  EXPECT_EQ(partial[0].id, "x");
  // Whitespace before the array counts (it is input), after it does not: a batch whose ']' is
  // the limit's last byte fits, with its final newline; blanks that fill the limit before the
  // '[' leave no room for it.
  const std::string limit = std::to_string(batch.size());
  EXPECT_EQ(RunEvident({"validate", "--input-bytes-max", limit, "-"}, batch + "\n\n").exit_code, 0);
  const auto padded =
      RunEvident({"validate", "--input-bytes-max", "10", "-"}, std::string(20, ' ') + batch);
  EXPECT_EQ(padded.exit_code, 2) << padded.out;
  EXPECT_TRUE(padded.out.empty()) << padded.out;
}

// A result that cannot be written is an I/O error (exit 2), not a silent success.
TEST(CliValidate, WriteFailureExitsTwo) {
  const std::string script = std::string(EVIDENT_BINARY) + " validate - > /dev/full";
  const auto r = RunProcess({"/bin/sh", "-c", script}, Event("a") + "\n" + Event("b") + "\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("cannot write to standard output"), std::string::npos) << r.err;
}

TEST(CliValidate, UsageAndIoErrorsExitTwo) {
  EXPECT_EQ(RunEvident({"validate", "/nonexistent/file.ndjson"}).exit_code, 2);
  EXPECT_EQ(RunEvident({"validate", "--profile", "avro"}, "{}").exit_code, 2);
  EXPECT_EQ(RunEvident({"validate", "--no-such-flag"}).exit_code, 2);
  EXPECT_EQ(RunEvident({}).exit_code, 2);
}

// An empty value is an unset variable, nearly always: refused with the option's name before
// anything is opened, never read as "no outcomes", "every source outside" or a path.
TEST(CliOptions, AnEmptyValueIsAUsageError) {
  const fs::path dir = fs::temp_directory_path() / ("evident-empty-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string orders = SourcePath("examples/envelopes/orders.ndjson");
  const std::string config = SourcePath("examples/orders/evident.yaml");
  const std::string store = "sqlite:" + (dir / "s.db").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"validate", "--boundary", "", orders}, "--boundary was given an empty value"},
      {{"validate", ""}, "the argument <input> was given an empty value"},
      {{"consume", "--config", config, "--input", orders, "--store", store, "--outcomes", ""},
       "--outcomes was given an empty value"},
      {{"consume", "--config", config, "--input", "", "--store", store},
       "--input was given an empty value"},
      {{"quarantine", "list", "--store", ""}, "--store was given an empty value"},
  };
  for (const auto& [args, message] : cases) {
    const ProcessResult r = RunEvident(args, "");
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.out;
    EXPECT_NE(r.err.find("evident: " + message + " (an unset variable?)"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(dir / "s.db")) << "the store was created before the refusal";
  // gaps takes --store before or after its command's word: empty either way is named too.
  for (const std::vector<std::string>& args : {std::vector<std::string>{"gaps", "--store", ""},
                                               {"gaps", "check", "--store", ""},
                                               {"gaps", "--store", "", "check"}}) {
    const ProcessResult r = RunEvident(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--store was given an empty value"), std::string::npos) << r.err;
  }
  // "--opt=" with nothing after: CLI11 would take the next argument as the value (the outcomes
  // went to a file named --resume, and the run did not resume).
  const ProcessResult assigned = RunEvident({"consume", "--config", config, "--input", orders,
                                             "--store", store, "--outcomes=", "--resume"});
  EXPECT_EQ(assigned.exit_code, 2);
  EXPECT_NE(assigned.err.find("evident: --outcomes was given an empty value"), std::string::npos)
      << assigned.err;
  EXPECT_FALSE(fs::exists("--resume"));
  EXPECT_FALSE(fs::exists(dir / "s.db"));
  const ProcessResult boundary = RunEvident({"validate", "--boundary=", orders}, "");
  EXPECT_EQ(boundary.exit_code, 2);
  EXPECT_EQ(boundary.out, "");
  fs::remove_all(dir);
}

// --from takes any source of the registry: a file reads as --input does; a broker's options are
// refused for a source that does not read them, an unknown scheme names the known ones, and a
// group refuses a source whose partitions are not shared out (a file).
TEST(CliOptions, FromNamesAnySourceAndItsOptionsAreChecked) {
  const fs::path dir = fs::temp_directory_path() / ("evident-from-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string config = SourcePath("examples/orders/evident.yaml");
  const std::string events = "file:" + SourcePath("examples/orders/events.ndjson");
  const std::string store = "sqlite:" + (dir / "s.db").string();
  const ProcessResult from_file = RunEvident(
      {"consume", "--config", config, "--store", store, "--from", events, "--outcomes", "-"});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  const ProcessResult from_input =
      RunEvident({"consume", "--config", config, "--store", "sqlite:" + (dir / "t.db").string(),
                  "--input", SourcePath("examples/orders/events.ndjson"), "--outcomes", "-"});
  EXPECT_EQ(from_file.out, from_input.out);  // the same decisions, line for line
  EXPECT_FALSE(from_file.out.empty());
  // The config's event_bytes_max holds for a file named by --from as for --input.
  std::string yaml;
  {
    std::ifstream in(SourcePath("examples/orders/evident.yaml"));
    yaml.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string relative = "contracts: contracts";
  ASSERT_NE(yaml.find(relative), std::string::npos);
  yaml.replace(yaml.find(relative), relative.size(),
               "contracts: " + SourcePath("examples/orders/contracts"));
  std::ofstream(dir / "small.yaml") << yaml << "\nevent_bytes_max: 65536\n";
  std::ofstream(dir / "big.ndjson")
      << R"({"specversion":"1.0","id":"big","source":"training://orders/checkout",)"
      << R"("type":"order.status.changed","subject":"order-1","data":{"pad":")"
      << std::string(70'000, 'x') << "\"}}\n";
  for (const bool from : {true, false}) {
    const std::string big_file = (dir / "big.ndjson").string();
    const ProcessResult big = RunEvident(
        {"consume", "--config", (dir / "small.yaml").string(), "--store",
         "sqlite:" + (dir / (from ? "f.db" : "i.db")).string(), from ? "--from" : "--input",
         from ? "file:" + big_file : big_file, "--outcomes", "-"});
    EXPECT_NE(big.out.find("envelope-too-large"), std::string::npos) << from << big.out << big.err;
  }
  const ProcessResult stream = RunEvident(
      {"consume", "--config", config, "--store", store, "--from", events, "--stream", "ORDERS"});
  EXPECT_EQ(stream.exit_code, 2);
  EXPECT_NE(stream.err.find("--stream: not an option of the source --from " + events),
            std::string::npos)
      << stream.err;
  const ProcessResult unknown =
      RunEvident({"consume", "--config", config, "--store", store, "--from", "amqp://x:5672"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("--from amqp://x:5672: expected nats://HOST:PORT[,HOST:PORT...], "
                             "kafka://HOST:PORT[,HOST:PORT...], file:PATH or -"),
            std::string::npos)
      << unknown.err;
  const ProcessResult group =
      RunEvident({"consume", "--config", config, "--store", "postgresql://u@127.0.0.1:1/db",
                  "--from", events, "--group", "g", "--partitions", "2"});
  EXPECT_EQ(group.exit_code, 2);
  EXPECT_NE(group.err.find("a consumer group reads a source whose partitions are shared out"),
            std::string::npos)
      << group.err;
  fs::remove_all(dir);
}

// Flags that cannot work together with the store named are refused before it is created.
TEST(CliOptions, ImpossibleStoreFlagsAreRefusedBeforeTheStoreIsCreated) {
  const fs::path dir = fs::temp_directory_path() / ("evident-nostore-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string store = "sqlite:" + (dir / "s.db").string();
  const ProcessResult group =
      RunEvident({"consume", "--config", SourcePath("examples/orders/evident.yaml"), "--store",
                  store, "--from", "nats://127.0.0.1:1", "--group", "g", "--partitions", "4"});
  EXPECT_EQ(group.exit_code, 2);
  EXPECT_NE(group.err.find("--group needs a store that several processes share"), std::string::npos)
      << group.err;
  // CloudEvents asks every reader to take events of 64 KiB: a smaller limit is out of range.
  const ProcessResult small = RunEvident(
      {"outbox", "append", "--store", store, "--contracts", SourcePath("examples/orders/contracts"),
       "--event-bytes-max", "1000", SourcePath("examples/orders/events.ndjson")});
  EXPECT_EQ(small.exit_code, 2);
  EXPECT_NE(small.err.find("65536"), std::string::npos) << small.err;
  // --subject-prefix reads a stream (--from), and names the subjects as --filter would.
  const std::string config = SourcePath("examples/orders/evident.yaml");
  const ProcessResult no_stream =
      RunEvident({"consume", "--config", config, "--store", store, "--subject-prefix", "shop"});
  EXPECT_EQ(no_stream.exit_code, 2);
  EXPECT_NE(no_stream.err.find("--subject-prefix needs --from"), std::string::npos)
      << no_stream.err;
  const ProcessResult both =
      RunEvident({"consume", "--config", config, "--store", store, "--from", "nats://127.0.0.1:1",
                  "--filter", "shop.p1.>", "--subject-prefix", "shop"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("--filter and --subject-prefix exclude each other"), std::string::npos)
      << both.err;
  EXPECT_FALSE(fs::exists(dir / "s.db"));
  fs::remove_all(dir);
}

// Options of a JetStream destination are refused with another destination, not ignored.
TEST(CliOptions, RelayRefusesJetStreamOptionsForAnotherDestination) {
  const fs::path dir = fs::temp_directory_path() / ("evident-relayto-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string store = "sqlite:" + (dir / "s.db").string();
  ASSERT_EQ(RunEvident({"store", "migrate", "--store", store}).exit_code, 0);
  const ProcessResult r = RunEvident({"relay", "--store", store, "--to", "-", "--once", "--stream",
                                      "ORDERS", "--subject-prefix", "shop"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--stream, --subject-prefix: not options of the destination --to -"),
            std::string::npos)
      << r.err;
  // A mistyped --to is named as such first.
  const ProcessResult scheme =
      RunEvident({"relay", "--store", store, "--to", "nat://127.0.0.1:4222", "--stream", "ORDERS"});
  EXPECT_EQ(scheme.exit_code, 2);
  EXPECT_NE(scheme.err.find("--to nat://127.0.0.1:4222: expected nats://HOST:PORT[,HOST:PORT...], "
                            "kafka://HOST:PORT[,HOST:PORT...], file:PATH or -"),
            std::string::npos)
      << scheme.err;
  // A URL's password is never repeated: shown as ***@.
  const ProcessResult secret = RunEvident(
      {"relay", "--store", store, "--to", "nat://relay:pw-5c1d@127.0.0.1:4222", "--once"});
  EXPECT_EQ(secret.exit_code, 2);
  EXPECT_EQ(secret.err.find("pw-5c1d"), std::string::npos) << secret.err;
  EXPECT_NE(secret.err.find("nat://***@127.0.0.1:4222"), std::string::npos) << secret.err;
  const ProcessResult plain = RunEvident({"relay", "--store", store, "--to", "-", "--once"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  fs::remove_all(dir);
}

// A misspelt or missing command is named, with the closest command and the choices (CLI11 alone
// said "A subcommand is required" for both); a command that runs without one still does.
TEST(CliOptions, AMisspeltOrMissingCommandIsNamed) {
  const ProcessResult misspelt = RunEvident({"valdate", "events.ndjson"});
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_NE(misspelt.err.find("evident: no command 'valdate'; did you mean 'validate'?"),
            std::string::npos)
      << misspelt.err;
  const ProcessResult nested = RunEvident({"quarantine", "lisst", "--store", "sqlite:x.db"});
  EXPECT_EQ(nested.exit_code, 2);
  EXPECT_NE(nested.err.find("evident quarantine: no command 'lisst'; did you mean 'list'? "
                            "Commands: list, show, replay, discard"),
            std::string::npos)
      << nested.err;
  const ProcessResult far = RunEvident({"xyzzy"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_NE(far.err.find("evident: no command 'xyzzy'. Commands: validate, schema,"),
            std::string::npos)
      << far.err;
  const ProcessResult missing = RunEvident({"schema"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("evident schema: a command is needed: validate, check"),
            std::string::npos)
      << missing.err;
  // Options before a missing command; a group's own options before its command still work.
  const ProcessResult before = RunEvident({"quarantine", "--store", "sqlite:x.db"});
  EXPECT_EQ(before.exit_code, 2);
  EXPECT_NE(before.err.find("evident quarantine: a command is needed before its options: list, "
                            "show, replay, discard"),
            std::string::npos)
      << before.err;
  EXPECT_EQ(RunEvident({"quarantine", "--help"}).exit_code, 0);
  EXPECT_EQ(RunEvident({"--version"}).exit_code, 0);
  EXPECT_EQ(RunEvident({"schema", "--help"}).exit_code, 0);
  // `gaps` runs without a command of its own: its own parse answers.
  EXPECT_NE(RunEvident({"gaps"}).err.find("--store is required"), std::string::npos);
}

}  // namespace
}  // namespace evident::testing

namespace evident::testing {
namespace {

namespace fs = std::filesystem;

// A repeatable option takes one value per occurrence: after any option of `validate` and of
// `schema validate`, the trailing positional is the input that is read, never a second value
// (it was: `validate --boundary PREFIX FILE` read standard input, printed nothing, exited 0).
TEST(CliOptions, TheTrailingInputIsReadAfterEveryOption) {
  const std::string orders = SourcePath("examples/envelopes/orders.ndjson");
  const std::vector<std::vector<std::string>> validate_options = {
      {"--boundary", "https://nowhere.test/"},
      {"--boundary", "https://a.test/", "--boundary", "https://b.test/"},
      {"--profile", "cloudevents"},
      {"--schema-version-at", "/data/schemaVersion"},
      {"--require-schema-version"},
      {"--event-bytes-max", "1048576"},
      {"--input-bytes-max", "1048576"}};
  for (const std::vector<std::string>& options : validate_options) {
    std::vector<std::string> args = {"validate"};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back(orders);
    const ProcessResult r = RunEvident(args, /*input=*/"");
    SCOPED_TRACE(options.front());
    EXPECT_EQ(Lines(r.out).size(), 9u) << r.err;  // the file's nine events, not empty stdin
    EXPECT_EQ(r.exit_code, 1) << r.err;           // it holds refused events
  }
  const ProcessResult outside =
      RunEvident({"validate", "--boundary", "https://nowhere.test/", orders}, /*input=*/"");
  for (const Line& line : ParseOutput(outside.out)) EXPECT_EQ(line.outcome, "rejected");

  const fs::path dir = fs::temp_directory_path() / ("evident-options-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "remote");
  std::ofstream(dir / "s.json") << R"({"type":"object","required":["n"]})";
  std::ofstream(dir / "i.ndjson") << "{\"n\":1}\n{}\n";
  const std::vector<std::vector<std::string>> schema_options = {
      {"--draft", "7"},
      {"--remote", "http://localhost:1234/=" + (dir / "remote").string()},
      {"--remote", "http://a.test/=" + (dir / "remote").string(), "--remote",
       "http://b.test/=" + (dir / "remote").string()},
      {"--format-assertion"},
      {"--errors-max", "3"},
      {"--line-bytes-max", "1000"},
      {"--validation-steps-max", "1000000"}};
  for (const std::vector<std::string>& options : schema_options) {
    std::vector<std::string> args = {"schema", "validate", "--schema", (dir / "s.json").string()};
    args.insert(args.end(), options.begin(), options.end());
    args.push_back((dir / "i.ndjson").string());
    const ProcessResult r = RunEvident(args, /*input=*/"");
    SCOPED_TRACE(options.front());
    EXPECT_EQ(Lines(r.out).size(), 2u) << r.err;
    EXPECT_EQ(r.exit_code, 1) << r.err;  // the second instance lacks n
  }
  // Two values after one --boundary: the second is the input, a third is not expected.
  EXPECT_EQ(RunEvident({"validate", "--boundary", "https://a.test/", orders, "extra"}).exit_code,
            2);
  fs::remove_all(dir);
}

}  // namespace
// Option values are checked where they are given: a usage error (exit 2) that names the option,
// never a silent run or a verdict drawn from a nonsense value.
TEST(CliOptions, ValuesOutOfTheirDomainAreUsageErrors) {
  const std::string v1 =
      SourcePath("examples/orders/contracts/order.status.changed/v1.schema.json");
  const std::string v2 =
      SourcePath("examples/orders/contracts/order.status.changed/v2.schema.json");
  const std::string events = SourcePath("examples/envelopes/orders.ndjson");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"schema", "check", "--version-at", "nopointer", v1, v2}, "--version-at"},
      {{"schema", "check", "--comparisons-max", "-5", v1, v2}, "--comparisons-max"},
      {{"validate", "--event-bytes-max", "-1", events}, "--event-bytes-max"},
      {{"validate", "--event-bytes-max", "99999999999999999999", events}, "--event-bytes-max"},
      {{"validate", "--input-bytes-max", "0", events}, "--input-bytes-max"},
      {{"validate", "--profile", "flat", "--profile-file", events, events}, "--profile"},
      {{"effects", "run", "--config", SourcePath("examples/orders/evident.yaml"), "--store",
        "sqlite:/nonexistent/x.db", "--until-idle", "nan"},
       "--until-idle"},
  };
  for (const auto& [args, option] : cases) {
    const auto r = RunEvident(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << option << ": " << r.err;
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
  }
  EXPECT_EQ(RunEvident({"schema", "check", "--version-at", "/schemaVersion", v1, v2}).exit_code, 0);
}

// Standard input is read once: an option given "-" while the input also reads it is refused
// before anything is read (the second reader found nothing and the run "succeeded").
TEST(CliOptions, StandardInputHasOneReader) {
  const std::string schema =
      SourcePath("examples/orders/contracts/order.status.changed/v1.schema.json");
  const std::string config = SourcePath("examples/orders/evident.yaml");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"schema", "validate", "--schema", "-"},
           {"validate", "--profile-file", "-"},
           {"consume", "--config", "-", "--store", "sqlite:/nonexistent/x.db"},
           {"schema", "validate", "--schema", "-", "-"}}) {
    const auto r = RunEvident(args, "{}\n");
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << r.err;
    EXPECT_NE(r.err.find("standard input can be read once"), std::string::npos) << r.err;
  }
  // One reader, and "-" as standard output, are fine.
  EXPECT_EQ(RunEvident({"schema", "validate", "--schema", schema, "-"},
                       R"({"schemaVersion":1,"orderId":"o","status":"paid"})"
                       "\n")
                .exit_code,
            0);
  EXPECT_EQ(RunEvident({"validate", "-"}, "").exit_code, 0);
}

}  // namespace evident::testing
