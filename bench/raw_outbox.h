// bench/raw_outbox.h — the outbox as a hand-written relay uses it with the sqlite3 library alone
// (the (b) ceilings of relay_bench and kafka_bench): read a batch of pending rows in sequence
// order, then mark each sent with one prepared UPDATE, one transaction a batch, at
// synchronous=FULL. Every failure ends the benchmark with a message: a ceiling never comes
// from a run that did less than it claims.
// Record::kDeliveryTable is the layout a cheaper record of delivery would have (not evident's:
// measured to size that change, docs/BENCHMARKS.md): a row's delivery is a row appended to a
// narrow table of its own (seq, time, stream, stream sequence), its outbox row untouched, and the
// pending rows are those after the last delivered (a hand-written relay's view: no refused or
// parked rows here).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace evident::bench {

class RawOutbox {
 public:
  // The columns of Next's statement.
  enum Column : int { kSeq, kSource, kEventId, kType, kSubject, kPartition, kBytes };

  enum class Record : uint8_t { kUpdate, kDeliveryTable };

  explicit RawOutbox(const std::filesystem::path& path, Record record = Record::kUpdate)
      : record_(record) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) Fail("open " + path.string());
    Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL");
    constexpr const char* kColumns =
        "SELECT o.seq, o.source, o.event_id, o.type, o.subject, o.event_partition, b.bytes FROM "
        "outbox o JOIN outbox_body b ON b.seq=o.seq ";
    if (record_ == Record::kUpdate) {
      select_ =
          Prepare(std::string(kColumns) + "WHERE o.sent_at_ms IS NULL ORDER BY o.seq LIMIT ?1");
      mark_ =
          Prepare("UPDATE outbox SET sent_at_ms=?2, stream=?3, stream_sequence=?4 WHERE seq=?1");
      return;
    }
    Exec(
        "CREATE TABLE IF NOT EXISTS delivery(seq INTEGER PRIMARY KEY, sent_at_ms INTEGER NOT "
        "NULL, stream TEXT NOT NULL, stream_sequence INTEGER)");
    select_ = Prepare(std::string(kColumns) +
                      "WHERE o.seq > (SELECT coalesce(max(seq), 0) FROM delivery) ORDER BY o.seq "
                      "LIMIT ?1");
    mark_ = Prepare(
        "INSERT INTO delivery(seq, sent_at_ms, stream, stream_sequence) VALUES(?1, ?2, ?3, ?4)");
  }
  RawOutbox(const RawOutbox&) = delete;
  RawOutbox& operator=(const RawOutbox&) = delete;
  ~RawOutbox() { Close(); }

  // Steps through at most `rows_max` pending rows: `row` is called with the statement on each.
  template <typename OnRow>
  void Pending(int64_t rows_max, const OnRow& row) {
    sqlite3_bind_int64(select_, 1, rows_max);
    int step = SQLITE_ROW;
    while ((step = sqlite3_step(select_)) == SQLITE_ROW) row(select_);
    if (step != SQLITE_DONE) Fail("read pending rows");
    sqlite3_reset(select_);
  }

  static std::string_view Text(sqlite3_stmt* row, int column) {
    return {static_cast<const char*>(sqlite3_column_blob(row, column)),
            static_cast<size_t>(sqlite3_column_bytes(row, column))};
  }

  // Marks rows `seqs` sent to `stream` at `sequences` (one each), in one transaction.
  void MarkSent(const std::vector<int64_t>& seqs, std::string_view stream,
                const std::vector<int64_t>& sequences) {
    Exec("BEGIN IMMEDIATE");
    for (size_t i = 0; i < seqs.size(); ++i) {
      sqlite3_bind_int64(mark_, 1, seqs[i]);
      sqlite3_bind_int64(mark_, 2, 1'785'000'000'000);
      sqlite3_bind_text(mark_, 3, stream.data(), static_cast<int>(stream.size()), SQLITE_STATIC);
      sqlite3_bind_int64(mark_, 4, sequences[i]);
      if (sqlite3_step(mark_) != SQLITE_DONE) Fail("mark sent");
      sqlite3_reset(mark_);
    }
    Exec("COMMIT");
  }

  void Close() {
    if (db_ == nullptr) return;
    sqlite3_finalize(select_);
    sqlite3_finalize(mark_);
    if (sqlite3_close(db_) != SQLITE_OK) Fail("close");
    db_ = nullptr;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    std::fprintf(stderr, "raw outbox: %s: %s\n", what.c_str(),
                 db_ != nullptr ? sqlite3_errmsg(db_) : "");
    std::exit(1);
  }
  void Exec(const char* sql) const {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) Fail(sql);
  }
  sqlite3_stmt* Prepare(const std::string& sql) const {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) Fail(sql);
    return statement;
  }

  Record record_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* select_ = nullptr;
  sqlite3_stmt* mark_ = nullptr;
};

}  // namespace evident::bench
