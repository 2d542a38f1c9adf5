// tests/store_dump.h — a store read back through the Store read API as comparable text, for the
// end-to-end tests that compare a store after crashes with the store of an uninterrupted run
// (crash_test, consume_nats_crash_test).
//
// ReadStoreRows reads every row the read API reaches for the given subjects and consumers and
// fails the test when the store holds rows those reads did not reach, so nothing escapes a
// comparison. Tables turns the rows into one text line per row ("name=value " per column, every
// column but wall-clock times), sorted, so that FirstDifference names the table, row and column
// that differ. A test that must not compare a column (one that records arrival history) changes
// it in the StoreRows before calling Tables, and says why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/outcome.h"
#include "evident/store.h"

namespace evident::testing {

// One table of a store, one text row per stored row.
struct Table {
  std::string name;
  std::vector<std::string> rows;
};

// Builds one row's text: "name=value " per column, so that a difference names its column.
class Row {
 public:
  Row& operator()(std::string_view name, std::string_view value) {
    text_.append(name).append("=").append(value).append(" ");
    return *this;
  }
  Row& operator()(std::string_view name, int64_t value) {
    return (*this)(name, std::to_string(value));
  }
  Row& operator()(std::string_view name, Outcome value) {
    return (*this)(name, OutcomeName(value));
  }
  Row& operator()(std::string_view name, LedgerState value) {
    return (*this)(name, LedgerStateName(value));
  }
  Row& operator()(std::string_view name, GapRoute value) {
    return (*this)(name, GapRouteName(value));
  }
  Row& operator()(std::string_view name, const std::optional<int64_t>& value) {
    return (*this)(name, value ? std::to_string(*value) : std::string("null"));
  }
  std::string text() const { return text_; }

 private:
  std::string text_;
};

// What to read.
struct DumpOptions {
  std::vector<std::string> consumers;
  std::vector<std::string> subjects;  // include "" for inputs that name no subject
  // The source whose stored position is read (the test fails when it has none) and compared as
  // table "checkpoint"; nullopt reads no position.
  std::optional<std::string> position_source;
  // Fail the test when a table holds rows the reads did not reach. Off only for a read of some
  // of a store's subjects on purpose.
  bool every_row = true;
};

// Every row of the tables the pipeline writes, for the subjects and consumers read.
struct StoreRows {
  std::vector<LedgerEntry> ledger;
  std::vector<Projection> projections;
  std::vector<EvidenceRecord> evidence;
  std::vector<DeferredEvent> deferred;
  std::vector<QuarantineRecord> kept;  // the quarantine
  std::vector<JournalEntry> journal;
  std::vector<EffectIntent> effects;
  std::vector<CompensationRecord> compensations;
  std::optional<std::string> position_source;  // Tables adds a "checkpoint" table when set
  std::string position;
};

// The store at `path` through the read API. Fails the test (and returns what it read) when the
// store cannot be opened, a read fails, the position is missing, or a table holds rows the reads
// did not reach.
StoreRows ReadStoreRows(const std::string& path, const DumpOptions& options);

// The rows as text tables, each sorted: ledger, projection, evidence, deferred, kept, journal,
// and checkpoint when rows.position_source is set. Sorted because the read API orders some rows
// by wall-clock time, which may tie; the seq columns keep the order of kept and journal rows in
// the comparison, as ranks (a server's sequence skips the numbers of rolled-back transactions).
std::vector<Table> Tables(const StoreRows& rows);

// Tables(ReadStoreRows(path, options)).
std::vector<Table> ReadStore(const std::string& path, const DumpOptions& options);

// The first difference between two stores' tables, or "" when they are equal.
std::string FirstDifference(const std::vector<Table>& want, const std::vector<Table>& got);

// Every difference, as rows only one side holds ("table: want-only ROW" / "table: got-only ROW"),
// at most `lines_max` lines: for a failure message that shows the whole pattern, not one row.
std::string Differences(const std::vector<Table>& want, const std::vector<Table>& got,
                        size_t lines_max);

}  // namespace evident::testing
