// `evident quarantine list|show|replay|discard` end to end: the real binary, a real SQLite file,
// inputs quarantined by `evident consume` under a contract that accepts schema version 1 only
// (tests/paid_contracts.h), then replayed under one that accepts [1, 2].
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>

#include "paid_contracts.h"
#include "run_process.h"

namespace evident::testing {
namespace {

namespace fs = std::filesystem;
using std::string_view_literals::operator""sv;

// RFC 4648 base64 with padding; nullopt for text that is not. Written here rather than taken
// from the product (core/base64.h only encodes), so that the test checks the encoding.
std::optional<std::string> DecodeBase64(std::string_view text) {
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (text.size() % 4 != 0) return std::nullopt;
  size_t pads = 0;
  while (pads < 2 && pads < text.size() && text[text.size() - 1 - pads] == '=') ++pads;
  std::string out;
  uint32_t bits = 0;
  int bit_count = 0;
  for (const char c : text.substr(0, text.size() - pads)) {
    const size_t value = kAlphabet.find(c);
    if (value == std::string_view::npos) return std::nullopt;
    bits = bits << 6 | static_cast<uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      out.push_back(static_cast<char>(bits >> bit_count & 0xff));
    }
  }
  return out;
}

// `ms` since the epoch as RFC 3339 UTC with milliseconds, the form list and show print.
std::string Rfc3339(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &tm);
  char millis[8];
  std::snprintf(millis, sizeof millis, ".%03dZ", static_cast<int>(ms % 1000));
  return std::string(text) + millis;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// One record of `quarantine list --format json`; a JSON null reads as "null".
struct Listed {
  int64_t id = 0, attempts = 0;
  std::optional<int64_t> schema_version;
  std::string consumer, source, event_id, type, subject, outcome, reason, message, status,
      first_seen, last_seen;
};

std::string TextOrNull(simdjson::dom::element e, std::string_view key) {
  simdjson::dom::element field;
  EXPECT_EQ(e[key].get(field), simdjson::SUCCESS) << "no field " << key;
  if (field.is_null()) return "null";
  std::string_view text;
  EXPECT_EQ(field.get(text), simdjson::SUCCESS) << key << " is not a string";
  return std::string(text);
}

Listed ParseListed(simdjson::dom::element e) {
  Listed r;
  r.id = e["id"].get_int64().value();
  r.attempts = e["attempts"].get_int64().value();
  if (!e["schema_version"].is_null()) r.schema_version = e["schema_version"].get_int64().value();
  r.consumer = TextOrNull(e, "consumer");
  r.source = TextOrNull(e, "source");
  r.event_id = TextOrNull(e, "event_id");
  r.type = TextOrNull(e, "type");
  r.subject = TextOrNull(e, "subject");
  r.outcome = TextOrNull(e, "outcome");
  r.reason = TextOrNull(e, "reason");
  r.status = TextOrNull(e, "status");
  r.first_seen = TextOrNull(e, "first_seen");
  r.last_seen = TextOrNull(e, "last_seen");
  r.message = TextOrNull(e, "message");
  EXPECT_EQ(e["subject_version"].error(), simdjson::SUCCESS) << "no field subject_version";
  return r;
}

class QuarantineCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("evident-quarantine-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    store_ = "sqlite:" + (dir_ / "q.db").string();
    config_ = (dir_ / "evident.yaml").string();
    WritePaidConfig(dir_, "[1]");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Consumes `lines` (one input file per call) into the store; the run must succeed.
  void Consume(const std::vector<std::string>& lines) {
    const fs::path input = dir_ / ("input-" + std::to_string(inputs_++) + ".ndjson");
    std::ofstream out(input, std::ios::binary);
    for (const std::string& line : lines) out << line << '\n';
    out.close();
    const ProcessResult r =
        RunEvident({"consume", "--config", config_, "--store", store_, "--input", input.string()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  ProcessResult Quarantine(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"quarantine"};
    all.insert(all.end(), args.begin(), args.end());
    return RunEvident(all);
  }
  ProcessResult Replay(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"replay", "--config", config_, "--store", store_};
    all.insert(all.end(), args.begin(), args.end());
    return Quarantine(all);
  }
  // `quarantine list --format json` with `args`, its exit code checked.
  std::string ListJson(const std::vector<std::string>& args = {}) {
    std::vector<std::string> all = {"list", "--store", store_, "--format", "json"};
    all.insert(all.end(), args.begin(), args.end());
    const ProcessResult r = Quarantine(all);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  std::vector<Listed> List(const std::vector<std::string>& args = {}) {
    std::vector<Listed> out;
    simdjson::dom::parser parser;
    for (const std::string& line : Lines(ListJson(args))) {
      simdjson::dom::element e;
      EXPECT_EQ(parser.parse(line).get(e), simdjson::SUCCESS) << line;
      out.push_back(ParseListed(e));
    }
    return out;
  }
  // The event ids (or reasons, for inputs without an id) of a listing, in order.
  std::vector<std::string> Names(const std::vector<std::string>& args) {
    std::vector<std::string> out;
    for (const Listed& r : List(args)) {
      out.push_back(r.consumer + "/" + (r.event_id == "null" ? r.reason : r.event_id));
    }
    return out;
  }

  fs::path dir_;
  std::string store_, config_;
  int inputs_ = 0;
};

TEST_F(QuarantineCliTest, ListPrintsEveryFieldAndShowGivesTheExactOriginalBytes) {
  // Escapes, multi-byte UTF-8 and a long number: bytes a re-serialization would change.
  const std::string odd =
      Paid("e1", 1, 2, "order-1", R"(,"note":"caf\u00e9 \"quoted\" ☕","n":1.50e+00)");
  const std::string malformed = "{not json";
  const std::string before = Rfc3339(NowMs());
  Consume({odd, malformed});
  const std::string after = Rfc3339(NowMs());

  const std::vector<Listed> records = List();
  ASSERT_EQ(records.size(), 2u);
  const Listed& r = records[0];
  EXPECT_GT(r.id, 0);
  EXPECT_EQ(r.consumer, kPaidConsumer);
  EXPECT_EQ(r.source, "shop");
  EXPECT_EQ(r.event_id, "e1");
  EXPECT_EQ(r.type, "order.paid");
  EXPECT_EQ(r.schema_version, 2);
  EXPECT_EQ(r.subject, "order-1");
  EXPECT_EQ(r.outcome, "contract-update-required");
  EXPECT_EQ(r.reason, "unaccepted-schema-version");
  EXPECT_NE(r.message.find("not 2"), std::string::npos) << r.message;
  EXPECT_EQ(r.attempts, 1);
  // The time of the consume run (fixed-width times compare as text).
  EXPECT_LE(before, r.first_seen);
  EXPECT_LE(r.first_seen, after);
  EXPECT_EQ(r.last_seen, r.first_seen);
  EXPECT_EQ(r.status, "open");
  // Refused before any consumer was chosen: no consumer, nothing read from it.
  const Listed& m = records[1];
  EXPECT_GT(m.id, r.id);
  EXPECT_EQ(m.consumer, "null");
  EXPECT_EQ(m.source, "null");
  EXPECT_EQ(m.event_id, "null");
  EXPECT_EQ(m.type, "null");
  EXPECT_EQ(m.subject, "null");
  EXPECT_FALSE(m.schema_version.has_value());
  EXPECT_EQ(m.outcome, "rejected");
  EXPECT_EQ(m.reason, "malformed-json");

  simdjson::dom::parser parser;
  for (const auto& [id, bytes] : {std::pair{r.id, odd}, std::pair{m.id, malformed}}) {
    const ProcessResult show =
        Quarantine({"show", std::to_string(id), "--store", store_, "--format", "json"});
    ASSERT_EQ(show.exit_code, 0) << show.err;
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(show.out).get(e), simdjson::SUCCESS) << show.out;
    EXPECT_EQ(e["id"].get_int64().value(), id);
    EXPECT_EQ(e["status"].get_string().value(), "open"sv);
    const std::string_view encoded = e["original_bytes_base64"].get_string().value();
    EXPECT_EQ(DecodeBase64(encoded), bytes) << encoded;
    EXPECT_EQ(e["audit"].get_array().size(), 0u);
  }
  const ProcessResult text = Quarantine({"show", std::to_string(r.id), "--store", store_});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("#" + std::to_string(r.id) + "  open  1 attempt(s)  ledgerist"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("original bytes (" + std::to_string(odd.size()) + ")"), std::string::npos)
      << text.out;
  const ProcessResult missing = Quarantine({"show", "999", "--store", store_});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no quarantine record 999"), std::string::npos) << missing.err;
}

TEST_F(QuarantineCliTest, TheSameBadLineConsumedFiveTimesIsOneRecordWithFiveAttempts) {
  const std::string bad = Paid("e1", 1, 2);
  for (int i = 0; i < 5; ++i) Consume({bad, "{not json"});
  // The same id with other bytes is another input: a record of its own.
  Consume({Paid("e1", 1, 2, "order-1", R"(,"retry":true)")});
  const std::vector<Listed> records = List();
  ASSERT_EQ(records.size(), 3u) << ListJson();
  EXPECT_EQ(records[0].event_id, "e1");
  EXPECT_EQ(records[0].attempts, 5);
  EXPECT_LE(records[0].first_seen, records[0].last_seen);  // fixed-width times compare as text
  EXPECT_EQ(records[0].status, "open");
  EXPECT_EQ(records[1].reason, "malformed-json");
  EXPECT_EQ(records[1].attempts, 5);
  EXPECT_EQ(records[2].event_id, "e1");
  EXPECT_EQ(records[2].attempts, 1);
  EXPECT_NE(records[2].id, records[0].id);
}

TEST_F(QuarantineCliTest, FiltersSelectByConsumerReasonAndStatus) {
  WritePaidConfig(dir_, "[1]", /*with_archivist=*/true);
  Consume({Paid("e1", 1, 2, "order-1"),
           Paid("e2", 1, 1, "order-2"),  // accepted by both: applied, never quarantined
           Paid("e3", 0, 1, "order-3"),  // orderVersion below the schema's minimum
           "{not json"});
  using Want = std::vector<std::string>;
  EXPECT_EQ(Names({}), (Want{"ledgerist/e1", "archivist/e1", "ledgerist/e3", "archivist/e3",
                             "null/malformed-json"}));
  EXPECT_EQ(Names({"--consumer", "ledgerist"}), (Want{"ledgerist/e1", "ledgerist/e3"}));
  EXPECT_EQ(Names({"--consumer", "archivist"}), (Want{"archivist/e1", "archivist/e3"}));
  EXPECT_EQ(Names({"--consumer", "nobody"}), Want{});
  EXPECT_EQ(Names({"--reason", "unaccepted-schema-version"}),
            (Want{"ledgerist/e1", "archivist/e1"}));
  EXPECT_EQ(Names({"--reason", "malformed-json"}), Want{"null/malformed-json"});
  EXPECT_EQ(Names({"--consumer", "archivist", "--reason", "schema-violation"}),
            Want{"archivist/e3"});
  EXPECT_EQ(Names({"--status", "replayed"}), Want{});
  const ProcessResult limited = Quarantine({"list", "--store", store_, "--limit", "2"});
  EXPECT_EQ(limited.exit_code, 0) << limited.err;
  EXPECT_EQ(Lines(limited.out).size(), 2u) << limited.out;
  EXPECT_NE(limited.err.find("more than 2 records match"), std::string::npos) << limited.err;

  const std::vector<Listed> all = List();
  ASSERT_EQ(all.size(), 5u);
  const ProcessResult discarded = Quarantine({"discard", std::to_string(all[4].id), "--store",
                                              store_, "--by", "ops", "--note", "garbage"});
  ASSERT_EQ(discarded.exit_code, 0) << discarded.err;
  // ledgerist now accepts version 2; archivist still does not: one replayed, one refused again.
  WritePaidConfig(dir_, "[1, 2]", /*with_archivist=*/true);
  const ProcessResult replay =
      Replay({"--reason", "unaccepted-schema-version", "--by", "ops", "--note", "v2"});
  EXPECT_EQ(replay.exit_code, 1) << replay.err;
  EXPECT_NE(replay.out.find("2 record(s): 1 replayed, 0 duplicate, 1 refused again"),
            std::string::npos)
      << replay.out;
  EXPECT_EQ(Names({"--status", "discarded"}), Want{"null/malformed-json"});
  EXPECT_EQ(Names({"--status", "replayed"}), Want{"ledgerist/e1"});
  EXPECT_EQ(Names({"--status", "open"}), (Want{"archivist/e1", "ledgerist/e3", "archivist/e3"}));
  EXPECT_EQ(Names({"--status", "open", "--consumer", "archivist", "--reason",
                   "unaccepted-schema-version"}),
            Want{"archivist/e1"});
  EXPECT_EQ(List({"--consumer", "archivist"}).at(0).attempts, 2);
}

TEST_F(QuarantineCliTest, ReplayExitCodesDryRunOutcomesAndTheAudit) {
  Consume({Paid("e1", 1, 2), Paid("e2", 2, 2), Paid("e3", 3, 2)});
  const std::vector<Listed> records = List();
  ASSERT_EQ(records.size(), 3u);

  // Still refused: exit 1, every record open with one more attempt, its line in the file.
  const fs::path refused_lines = dir_ / "refused.ndjson";
  const ProcessResult refused =
      Replay({"--all", "--by", "ops", "--note", "too early", "--outcomes", refused_lines.string()});
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.out.find("3 record(s): 0 replayed, 0 duplicate, 3 refused again"),
            std::string::npos)
      << refused.out;
  std::ifstream in(refused_lines);
  const std::vector<std::string> lines = Lines(std::string(std::istreambuf_iterator<char>(in), {}));
  ASSERT_EQ(lines.size(), 3u);
  simdjson::dom::parser parser;
  for (size_t i = 0; i < lines.size(); ++i) {
    simdjson::dom::element e = parser.parse(lines[i]).value();
    EXPECT_EQ(e["quarantine_id"].get_int64().value(), records[i].id);
    EXPECT_EQ(e["outcome"].get_string().value(), "contract-update-required"sv);
    EXPECT_EQ(e["reason"].get_string().value(), "unaccepted-schema-version"sv);
    EXPECT_EQ(e["status"].get_string().value(), "open"sv);
    EXPECT_EQ(e["attempts"].get_int64().value(), 2);
  }
  const std::vector<Listed> after_refused = List();
  ASSERT_EQ(after_refused.size(), 3u);
  for (const Listed& r : after_refused) EXPECT_EQ(r.attempts, 2) << r.event_id;

  WritePaidConfig(dir_, "[1, 2]");
  // A dry run decides and commits nothing: the listing is the same to the byte.
  const std::string before = ListJson();
  const ProcessResult dry = Replay({"--all", "--by", "ops", "--note", "v2", "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("dry run (nothing committed): 3 record(s): 3 replayed, 0 duplicate, 0 "
                         "refused again"),
            std::string::npos)
      << dry.out;
  EXPECT_EQ(ListJson(), before);
  const ProcessResult untouched =
      RunEvident({"evidence", "order-1", "--store", store_, "--format", "json"});
  EXPECT_EQ(untouched.out.find("\"applied\":[{"), std::string::npos) << untouched.out;

  // The replay: one outcome line per record on standard output, the summary on standard error.
  const ProcessResult replay =
      Replay({"--all", "--by", "ops", "--note", "contract v2", "--outcomes", "-"});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.err.find("3 record(s): 3 replayed, 0 duplicate, 0 refused again"),
            std::string::npos)
      << replay.err;
  const std::vector<std::string> outcome_lines = Lines(replay.out);
  ASSERT_EQ(outcome_lines.size(), 3u) << replay.out;
  for (size_t i = 0; i < outcome_lines.size(); ++i) {
    simdjson::dom::element e;
    ASSERT_EQ(parser.parse(outcome_lines[i]).get(e), simdjson::SUCCESS) << outcome_lines[i];
    EXPECT_EQ(e["quarantine_id"].get_int64().value(), records[i].id);
    EXPECT_EQ(e["event_id"].get_string().value(), "e" + std::to_string(i + 1));
    EXPECT_EQ(e["outcome"].get_string().value(), "applied"sv);
    EXPECT_EQ(e["status"].get_string().value(), "replayed"sv);
    EXPECT_FALSE(e["dry_run"].get_bool().value());
  }
  const std::vector<Listed> after_replay = List();
  ASSERT_EQ(after_replay.size(), 3u);
  for (const Listed& r : after_replay) EXPECT_EQ(r.status, "replayed") << r.event_id;

  // Nothing is left open: a second replay --all replays nothing.
  const ProcessResult again = Replay({"--all", "--by", "ops", "--note", "again"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("0 record(s): 0 replayed, 0 duplicate, 0 refused again"),
            std::string::npos)
      << again.out;
  // By id, a replayed record is decided again: a duplicate, applied nowhere twice.
  const ProcessResult by_id =
      Replay({std::to_string(records[0].id), "--by", "ops", "--note", "check"});
  EXPECT_EQ(by_id.exit_code, 0) << by_id.err;
  EXPECT_NE(by_id.out.find("1 record(s): 0 replayed, 1 duplicate, 0 refused again"),
            std::string::npos)
      << by_id.out;

  // The evidence shows each record replayed, with its audit entries in order.
  const ProcessResult evidence =
      RunEvident({"evidence", "order-1", "--store", store_, "--format", "json"});
  ASSERT_EQ(evidence.exit_code, 0) << evidence.err;
  simdjson::dom::element packet;
  ASSERT_EQ(parser.parse(evidence.out).get(packet), simdjson::SUCCESS) << evidence.out;
  simdjson::dom::element c = packet["consumers"].at(0);
  EXPECT_EQ(c["consumer"].get_string().value(), std::string_view(kPaidConsumer));
  EXPECT_EQ(c["projection_version"].get_int64().value(), 3);
  EXPECT_EQ(c["applied"].get_array().size(), 3u);
  simdjson::dom::array kept = c["kept"].get_array();
  ASSERT_EQ(kept.size(), 3u) << evidence.out;
  for (simdjson::dom::element k : kept) {
    const int64_t id = k["quarantine_id"].get_int64().value();
    EXPECT_EQ(k["status"].get_string().value(), "replayed"sv);
    std::vector<std::string> audit;
    for (simdjson::dom::element a : k["audit"].get_array()) {
      audit.push_back(std::string(a["action"].get_string().value()) + " " +
                      std::string(a["by"].get_string().value()) + " " +
                      std::string(a["note"].get_string().value()) + " " +
                      std::string(a["outcome"].get_string().value()) + " " +
                      std::string(a["status_after"].get_string().value()));
    }
    std::vector<std::string> want = {"replay ops too early contract-update-required open",
                                     "replay ops contract v2 applied replayed"};
    if (id == records[0].id) want.push_back("replay ops check duplicate replayed");
    EXPECT_EQ(audit, want) << "record " << id;
  }
  const ProcessResult show =
      Quarantine({"show", std::to_string(records[0].id), "--store", store_, "--format", "json"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  simdjson::dom::element shown = parser.parse(show.out).value();
  ASSERT_EQ(shown["audit"].get_array().size(), 3u) << show.out;
  EXPECT_EQ(shown["audit"].at(1)["outcome"].get_string().value(), "applied"sv);
  EXPECT_TRUE(shown["audit"].at(1)["reason"].is_null());
  EXPECT_EQ(shown["audit"].at(0)["reason"].get_string().value(), "unaccepted-schema-version"sv);
}

TEST_F(QuarantineCliTest, DiscardIsAllOrNone) {
  Consume({Paid("e1", 1, 2), Paid("e2", 2, 2)});
  const std::vector<Listed> records = List();
  ASSERT_EQ(records.size(), 2u);
  const std::string first = std::to_string(records[0].id), second = std::to_string(records[1].id);
  const auto discard = [&](const std::vector<std::string>& ids) {
    std::vector<std::string> args = {"discard"};
    args.insert(args.end(), ids.begin(), ids.end());
    args.insert(args.end(), {"--store", store_, "--by", "ops", "--note", "producer bug"});
    return Quarantine(args);
  };
  const ProcessResult missing = discard({first, "999"});
  EXPECT_EQ(missing.exit_code, 1) << missing.err;
  EXPECT_NE(missing.err.find("nothing was discarded"), std::string::npos) << missing.err;
  EXPECT_EQ(List({"--status", "open"}).size(), 2u);

  const ProcessResult one = discard({first});
  EXPECT_EQ(one.exit_code, 0) << one.err;
  EXPECT_NE(one.out.find("discarded 1 record(s)"), std::string::npos) << one.out;
  const ProcessResult not_open = discard({second, first});
  EXPECT_EQ(not_open.exit_code, 1) << not_open.err;
  EXPECT_NE(not_open.err.find("is discarded"), std::string::npos) << not_open.err;
  const std::vector<Listed> after = List();
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].status, "discarded");
  EXPECT_EQ(after[1].status, "open");  // not discarded with the refused first

  const ProcessResult show = Quarantine({"show", first, "--store", store_, "--format", "json"});
  simdjson::dom::parser parser;
  simdjson::dom::element e = parser.parse(show.out).value();
  ASSERT_EQ(e["audit"].get_array().size(), 1u) << show.out;
  simdjson::dom::element a = e["audit"].at(0);
  EXPECT_EQ(a["action"].get_string().value(), "discard"sv);
  EXPECT_EQ(a["by"].get_string().value(), "ops"sv);
  EXPECT_EQ(a["note"].get_string().value(), "producer bug"sv);
  EXPECT_EQ(a["outcome"].get_string().value(), "discarded"sv);
  EXPECT_EQ(a["status_after"].get_string().value(), "discarded"sv);
  // A discarded record is not replayed by --all (open records only).
  WritePaidConfig(dir_, "[1, 2]");
  const ProcessResult replay = Replay({"--all", "--by", "ops", "--note", "v2"});
  EXPECT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.out.find("1 record(s): 1 replayed, 0 duplicate, 0 refused again"),
            std::string::npos)
      << replay.out;
  // e2 went forward, as a deferral: it waits for version 1, whose event was discarded.
  const ProcessResult evidence =
      RunEvident({"evidence", "order-1", "--store", store_, "--format", "json"});
  simdjson::dom::element deferred = parser.parse(evidence.out).value()["consumers"].at(0);
  ASSERT_EQ(deferred["deferred"].get_array().size(), 1u) << evidence.out;
  EXPECT_EQ(deferred["deferred"].at(0)["id"].get_string().value(), "e2"sv);
  EXPECT_EQ(deferred["applied"].get_array().size(), 0u);
}

TEST_F(QuarantineCliTest, UsageErrorsExitTwoAndChangeNothing) {
  Consume({Paid("e1", 1, 2)});
  const std::string id = std::to_string(List().at(0).id);
  WritePaidConfig(dir_, "[1, 2]");
  const std::vector<std::vector<std::string>> replays = {
      {"--by", "ops", "--note", "n"},               // no selection
      {id, "--all", "--by", "ops", "--note", "n"},  // IDs and --all
      {"--consumer", kPaidConsumer, "--all", "--by", "ops", "--note", "n"},
      {"--all", "--note", "n"},              // no --by
      {"--all", "--by", "ops"},              // no --note
      {"--all", "--by", "", "--note", "n"},  // an empty --by
      {"--all", "--by", "ops", "--note", "n", "--batch-count-max", "0"},
  };
  for (const std::vector<std::string>& args : replays) {
    const ProcessResult r = Replay(args);
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    EXPECT_EQ(r.exit_code, 2) << joined << "\n" << r.out << r.err;
  }
  EXPECT_NE(Replay({"--by", "ops", "--note", "n"}).err.find("choose the records"),
            std::string::npos);
  EXPECT_NE(Replay({id, "--all", "--by", "ops", "--note", "n"}).err.find("exclude each other"),
            std::string::npos);
  EXPECT_EQ(Quarantine({"discard", id, "--store", store_, "--by", "ops"}).exit_code, 2);
  EXPECT_EQ(Quarantine({"discard", "--store", store_, "--by", "ops", "--note", "n"}).exit_code, 2);
  EXPECT_EQ(Quarantine({"list", "--store", store_, "--status", "lost"}).exit_code, 2);
  const std::vector<Listed> records = List();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].status, "open");
  EXPECT_EQ(records[0].attempts, 1);
}

TEST_F(QuarantineCliTest, AMissingStoreIsRefusedWithoutBeingCreated) {
  const std::string absent = "sqlite:" + (dir_ / "absent.db").string();
  const std::vector<std::vector<std::string>> commands = {
      {"list", "--store", absent},
      {"show", "1", "--store", absent},
      {"replay", "--config", config_, "--store", absent, "--all", "--by", "ops", "--note", "n"},
      {"discard", "1", "--store", absent, "--by", "ops", "--note", "n"},
  };
  for (const std::vector<std::string>& args : commands) {
    const ProcessResult r = Quarantine(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("no evident store"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "absent.db")) << args[0] << " created the store";
  }
}

}  // namespace
}  // namespace evident::testing
