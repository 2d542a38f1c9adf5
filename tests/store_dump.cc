#include "store_dump.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "evident/store_sqlite.h"

namespace evident::testing {
namespace {

void AddConsumerRows(Snapshot& store, const std::string& consumer, const std::string& subject,
                     StoreRows& rows) {
  for (LedgerEntry& e : store.LedgerOf(consumer, subject).value().rows) {
    rows.ledger.push_back(std::move(e));
  }
  for (EvidenceRecord& r : store.EvidenceOf(consumer, subject).value().rows) {
    rows.evidence.push_back(std::move(r));
  }
  for (DeferredEvent& d : store.DeferredOf(consumer, subject).value().rows) {
    rows.deferred.push_back(std::move(d));
  }
  for (JournalEntry& j : store.JournalOf(consumer, subject).value().rows) {
    rows.journal.push_back(std::move(j));
  }
  EffectFilter filter;
  filter.consumer = consumer;
  filter.subject = subject;
  for (EffectIntent& e : store.ListIntents(filter).value().rows) {
    rows.effects.push_back(std::move(e));
  }
  // A compensation always has a subject (an empty one lists every subject's).
  if (subject.empty()) return;
  for (CompensationRecord& c : store.ListCompensations(consumer, subject).value().rows) {
    rows.compensations.push_back(std::move(c));
  }
}

void AddSubjectRows(Snapshot& store, const std::string& subject,
                    const std::vector<std::string>& consumers, StoreRows& rows) {
  for (Projection& p : store.ProjectionsOf(subject).value().rows) {
    rows.projections.push_back(std::move(p));
  }
  for (QuarantineRecord& k : store.QuarantineOf(subject).value().rows) {
    rows.kept.push_back(std::move(k));
  }
  for (const std::string& consumer : consumers) AddConsumerRows(store, consumer, subject, rows);
}

// The number of rows of table `name` in `rows`, for the completeness check.
int64_t RowsRead(const StoreRows& rows, const std::string& name) {
  if (name == "ledger") return static_cast<int64_t>(rows.ledger.size());
  if (name == "projection") return static_cast<int64_t>(rows.projections.size());
  if (name == "deferred") return static_cast<int64_t>(rows.deferred.size());
  if (name == "quarantine") return static_cast<int64_t>(rows.kept.size());
  if (name == "journal") return static_cast<int64_t>(rows.journal.size());
  if (name == "effect") return static_cast<int64_t>(rows.effects.size());
  if (name == "compensation") return static_cast<int64_t>(rows.compensations.size());
  return -1;  // a table this dump does not know
}

}  // namespace

StoreRows ReadStoreRows(const std::string& path, const DumpOptions& options) {
  StoreRows rows;
  // A URI ("postgresql://...", "sqlite:PATH") names its backend; a bare path is a SQLite file.
  auto opened = path.find(':') != std::string::npos && path.find("://") != std::string::npos
                    ? OpenStore(path, {.read_only = true})
                    : OpenSqliteStore(path);
  EXPECT_TRUE(opened.ok()) << opened.status().ToString();
  if (!opened.ok()) return rows;
  auto snapshot = (*opened)->Read();
  EXPECT_TRUE(snapshot.ok()) << snapshot.status().ToString();
  if (!snapshot.ok()) return rows;
  Snapshot& store = **snapshot;
  for (const std::string& subject : options.subjects) {
    AddSubjectRows(store, subject, options.consumers, rows);
  }
  if (options.position_source) {
    const std::optional<std::string> position = store.GetPosition(*options.position_source).value();
    EXPECT_TRUE(position.has_value()) << path << ": no position of " << *options.position_source;
    rows.position_source = options.position_source;
    rows.position = position.value_or("");
  }
  if (!options.every_row) return rows;
  for (const auto& [name, count] : store.Counts().value()) {
    EXPECT_EQ(RowsRead(rows, name), count) << path << ": table " << name << " holds " << count
                                           << " rows, the reads reached " << RowsRead(rows, name);
  }
  return rows;
}

// The rank (1, 2, ...) of each of `seqs` among them. A sequence a server assigns skips the
// numbers of transactions that rolled back (PostgreSQL's never goes back, SQLite's rowids do), so
// two stores with the same rows in the same order compare equal by rank, not by number.
std::map<int64_t, int64_t> Ranks(std::vector<int64_t> seqs) {
  std::sort(seqs.begin(), seqs.end());
  std::map<int64_t, int64_t> rank;
  for (const int64_t seq : seqs) rank.emplace(seq, static_cast<int64_t>(rank.size()) + 1);
  return rank;
}

std::vector<Table> Tables(const StoreRows& rows) {
  std::vector<int64_t> kept_ids, journal_seqs;
  for (const QuarantineRecord& k : rows.kept) kept_ids.push_back(k.id);
  for (const JournalEntry& j : rows.journal) journal_seqs.push_back(j.seq);
  const std::map<int64_t, int64_t> kept_rank = Ranks(kept_ids);
  const std::map<int64_t, int64_t> journal_rank = Ranks(journal_seqs);
  std::vector<Table> t = {{"ledger", {}},   {"projection", {}},  {"evidence", {}},
                          {"deferred", {}}, {"quarantine", {}},  {"journal", {}},
                          {"effect", {}},   {"compensation", {}}};
  for (const LedgerEntry& e : rows.ledger) {
    t[0].rows.push_back(
        Row()("consumer", e.consumer)("source", e.source)("id", e.event_id)("state", e.state)(
            "type", e.type)("subject", e.subject)("subject_version", e.subject_version)(
            "input_schema_version", e.input_schema_version)("result_version", e.result_version)(
            "projection_version", e.projection_version)("duplicates", e.duplicates)(
            "last_duplicate_at", e.last_duplicate_at_ms ? "set" : "none")
            .text());
  }
  for (const Projection& p : rows.projections) {
    t[1].rows.push_back(
        Row()("consumer", p.consumer)("subject", p.subject)("version", p.version)("state", p.state)(
            "fields", p.fields_json)("owner_source", p.owner_source)("owner_version_seen",
                                                                     p.owner_version_seen)
            .text());
  }
  for (const EvidenceRecord& r : rows.evidence) {
    t[2].rows.push_back(
        Row()("consumer", r.consumer)("subject", r.subject)("name", r.name)("source", r.source)(
            "id", r.event_id)("subject_version", r.subject_version)
            .text());
  }
  for (const DeferredEvent& d : rows.deferred) {
    t[3].rows.push_back(
        Row()("consumer", d.consumer)("subject", d.subject)("subject_version", d.subject_version)(
            "source", d.source)("id", d.event_id)("type", d.type)(
            "schema_version", d.schema_version)("expected_version", d.expected_version)(
            "raw", d.raw)("deadline_after_ms", d.deadline_at_ms - d.received_at_ms)(
            "route", d.route)("input_index", d.input_index)
            .text());
  }
  for (const QuarantineRecord& k : rows.kept) {
    t[4].rows.push_back(
        Row()("seq", kept_rank.at(k.id))("consumer", k.consumer)("outcome", k.outcome)(
            "reason", k.reason)("message", k.message)("source", k.source)("id", k.event_id)(
            "type", k.type)("subject", k.subject)("subject_version", k.subject_version)(
            "schema_version", k.schema_version)("raw", k.raw)("attempts", k.attempts)(
            "status", QuarantineStatusName(k.status))("input_index", k.input_index)
            .text());
  }
  for (const JournalEntry& j : rows.journal) {
    t[5].rows.push_back(Row()("seq", journal_rank.at(j.seq))("consumer", j.consumer)(
                            "outcome", j.outcome)("source", j.source)("id", j.event_id)(
                            "subject", j.subject)("subject_version", j.subject_version)
                            .text());
  }
  for (const EffectIntent& e : rows.effects) {
    t[6].rows.push_back(
        Row()("key", e.key)("effect", e.effect)("consumer", e.consumer)("subject", e.subject)(
            "source", e.source)("id", e.event_id)("subject_version", e.subject_version)(
            "request", e.request)("state", EffectStateName(e.state))("attempts", e.attempts)
            .text());
  }
  for (const CompensationRecord& c : rows.compensations) {
    t[7].rows.push_back(Row()("key", c.key)("consumer", c.consumer)("subject", c.subject)(
                            "owner_source", c.owner_source)("owner_version", c.owner_version)(
                            "id", c.event_id)("type", c.type)
                            .text());
  }
  if (rows.position_source) {
    t.push_back(
        {"checkpoint", {Row()("input", *rows.position_source)("position", rows.position).text()}});
  }
  for (Table& table : t) std::sort(table.rows.begin(), table.rows.end());
  return t;
}

std::vector<Table> ReadStore(const std::string& path, const DumpOptions& options) {
  return Tables(ReadStoreRows(path, options));
}

std::string FirstDifference(const std::vector<Table>& want, const std::vector<Table>& got) {
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    if (want[i].name != got[i].name) {
      return "table " + std::to_string(i) + " is " + got[i].name + ", want " + want[i].name;
    }
    const std::vector<std::string>& w = want[i].rows;
    const std::vector<std::string>& g = got[i].rows;
    for (size_t r = 0; r < std::min(w.size(), g.size()); ++r) {
      if (w[r] != g[r]) {
        return "table " + want[i].name + ", row " + std::to_string(r) + ":\n  want " + w[r] +
               "\n  got  " + g[r];
      }
    }
    if (w.size() != g.size()) {
      return "table " + want[i].name + ": want " + std::to_string(w.size()) + " rows, got " +
             std::to_string(g.size());
    }
  }
  if (want.size() != got.size()) {
    return "want " + std::to_string(want.size()) + " tables, got " + std::to_string(got.size());
  }
  return "";
}

std::string Differences(const std::vector<Table>& want, const std::vector<Table>& got,
                        size_t lines_max) {
  std::string out;
  size_t lines = 0;
  const auto add = [&](const std::string& table, const char* side, const std::string& row) {
    if (lines++ < lines_max) out += table + ": " + side + " " + row + "\n";
  };
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    std::vector<std::string> only;
    std::set_difference(want[i].rows.begin(), want[i].rows.end(), got[i].rows.begin(),
                        got[i].rows.end(), std::back_inserter(only));
    for (const std::string& row : only) add(want[i].name, "want-only", row);
    only.clear();
    std::set_difference(got[i].rows.begin(), got[i].rows.end(), want[i].rows.begin(),
                        want[i].rows.end(), std::back_inserter(only));
    for (const std::string& row : only) add(got[i].name, "got-only ", row);
  }
  if (lines > lines_max) out += "(" + std::to_string(lines - lines_max) + " more)\n";
  return out;
}

}  // namespace evident::testing
