// store/postgres/pg_connection.h — how the PostgreSQL store talks to its database: a Connection
// sends statements and reads their rows. Two kinds: a libpq client connection in pipeline mode
// (LibpqConnection, here), and SPI inside a server backend, for the functions of evident_pg.so
// (pg_ext/spi_connection.h), where the store runs inside the caller's own transaction.
//
// On libpq, statements are sent as they come and their results read only when an answer is
// needed (a read, a commit), so the writes of a batch travel with its next read instead of
// costing a network round trip each (libpq "pipeline mode", PostgreSQL 14+).
//
// Every statement is prepared once per connection, keyed by the address of its text (`sql` has
// static storage), and then sent with its parameters as text (bytes as binary); results come
// back as text (bytes as bytes).
#pragma once

#include <libpq-fe.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "evident/status.h"

namespace evident::postgres {

// The parameters of one statement. Text that holds a NUL byte cannot be a PostgreSQL text value:
// it is refused (ok() false) rather than cut at the NUL.
class Params {
 public:
  Params& Text(std::string_view value);
  Params& Int(int64_t value);
  Params& OptInt(std::optional<int64_t> value);
  Params& OptText(const std::optional<std::string>& value);
  Params& Bytes(std::string_view value);  // bytea, sent as binary
  Params& Null();
  // A text[] parameter (PostgreSQL array literal), for unnest() over a batch's keys.
  Params& TextArray(const std::vector<std::string_view>& values);
  Params& IntArray(const std::vector<int64_t>& values);
  Params& OptIntArray(const std::vector<std::optional<int64_t>>& values);  // NULL for nullopt

  int count() const { return static_cast<int>(values_.size()); }
  const char* const* values() const { return values_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return formats_.data(); }
  const Status& status() const { return status_; }

 private:
  Params& Add(std::string value, int format);
  std::deque<std::string> storage_;  // stable addresses
  std::vector<const char*> values_;
  std::vector<int> lengths_, formats_;
  Status status_;
};

// Rows copied out of a result that is not libpq's (SPI's): every value as its text form, but a
// bytea column's values as their bytes (raw_bytes), whatever the session's bytea_output.
struct Table {
  int rows = 0;
  int columns = 0;
  std::vector<std::optional<std::string>> cells;  // row-major; nullopt for NULL
  std::vector<bool> raw_bytes;                    // per column
  int64_t affected = 0;                           // rows an INSERT, UPDATE or DELETE touched
};

// A result's rows, read by column.
class Rowset {
 public:
  explicit Rowset(PGresult* result) : result_(result, &PQclear) {}
  explicit Rowset(Table table)
      : result_(nullptr, &PQclear), table_(std::make_unique<Table>(std::move(table))) {}
  int rows() const { return table_ ? table_->rows : PQntuples(result_.get()); }
  int columns() const { return table_ ? table_->columns : PQnfields(result_.get()); }
  // The column holds bytea values as their bytes (a Table's), not their text form.
  bool RawBytes(int column) const {
    return table_ && table_->raw_bytes[static_cast<size_t>(column)];
  }
  bool IsNull(int row, int column) const {
    if (table_) return !Cell(row, column).has_value();
    return PQgetisnull(result_.get(), row, column) != 0;
  }
  std::string_view Text(int row, int column) const {
    if (table_) return Cell(row, column) ? std::string_view(*Cell(row, column)) : "";
    return {PQgetvalue(result_.get(), row, column),
            static_cast<size_t>(PQgetlength(result_.get(), row, column))};
  }
  int64_t Int(int row, int column) const;
  std::optional<int64_t> OptInt(int row, int column) const;
  std::string Bytes(int row, int column) const;  // a bytea column, from its hex text form
  int64_t affected() const;                      // rows an INSERT, UPDATE or DELETE touched
  // A value read so far was not in the form asked for (kCorruption), else OK.
  const Status& problem() const { return problem_; }

 private:
  void NoteProblem(std::string what) const;
  const std::optional<std::string>& Cell(int row, int column) const {
    return table_->cells[static_cast<size_t>(row) * static_cast<size_t>(table_->columns) +
                         static_cast<size_t>(column)];
  }
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
  std::unique_ptr<Table> table_;  // instead of result_
  mutable Status problem_;
};

// What a statement sent without waiting must have done; checked when its result is read.
struct Expect {
  // The statement checks itself on the server: it divides by zero (SQLSTATE 22012) when its
  // condition fails, which aborts the pipeline (so that a COMMIT sent behind it never runs), and
  // the failure reads as `otherwise`.
  bool checked_on_server = false;
  Status otherwise;
  // A unique violation (another writer inserted the same key) fails with kAborted: the caller
  // retries its batch. Otherwise it is an error like any other.
  bool unique_is_conflict = false;
};

class Connection {
 public:
  // A libpq connection (LibpqConnection) with a libpq URI ("postgresql://user@host:port/db?..."),
  // in pipeline mode, with the session's lock timeout set (a lock held elsewhere longer:
  // kUnavailable). idle_timeout_ms > 0: a transaction idle that long is ended by the server
  // (SQLSTATE 25P03).
  static Result<std::unique_ptr<Connection>> Open(const std::string& uri, int64_t lock_timeout_ms,
                                                  int64_t idle_timeout_ms = 0);
  virtual ~Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `sql` without waiting (a connection may also run it at once); its result is checked
  // at the next Sync, Fetch or Query.
  virtual void Send(const std::string& sql, const Params& params, Expect expect = {}) = 0;
  // The same, keeping its rows for the next Fetch.
  virtual void SendWanted(const std::string& sql, const Params& params) = 0;
  // Waits for every result still unread: the first failure among them, or the rows of the
  // statements sent with SendWanted, in the order sent.
  virtual Result<std::vector<Rowset>> Fetch() = 0;
  // Sends `sql` and fetches: its rows.
  virtual Result<Rowset> Query(const std::string& sql, const Params& params) = 0;
  // Waits for every result still unread; the first failure among them.
  virtual Status Sync() = 0;
  // The first failure since the last ClearFailure: a statement that could not be sent, or one
  // the server refused. The server's transaction is then aborted (or the statement missing),
  // so the transaction must not commit.
  const Status& failure() const { return failure_; }
  void ClearFailure() { failure_ = Status::Ok(); }
  // The connection was lost (or never made it): kUnavailable until Reset succeeds.
  virtual bool broken() const = 0;
  // Makes the connection ready for a new transaction: reconnects when it was lost, starts a
  // new session when an earlier one was left mid-way, and clears the failure.
  virtual Status Reset() = 0;
  // Lends the connection to the caller's own statements inside the transaction open on it:
  // waits for every result still unread (their first failure), then leaves pipeline mode, so
  // that libpq's synchronous calls (PQexec, PQexecParams) work on it. Only libpq's can.
  virtual Result<PGconn*> Lend() = 0;
  // Takes a lent connection back (nothing when it is not lent): pipeline mode again. Fails (and
  // records the failure as the transaction's) when the caller's statements left the transaction
  // aborted, ended or busy.
  virtual Status Resume() = 0;
  // Round trips made so far (each Sync or Query that waited on the server), for tests.
  virtual int64_t round_trips() const = 0;
  // The store's transactions are parts of a caller's transaction (SPI inside the server): what
  // they write commits when the caller's does.
  virtual bool InCallersTransaction() const { return false; }

 protected:
  Connection() = default;
  Status failure_;
};

// The libpq connection in pipeline mode.
class LibpqConnection final : public Connection {
 public:
  ~LibpqConnection() override;

  void Send(const std::string& sql, const Params& params, Expect expect = {}) override;
  void SendWanted(const std::string& sql, const Params& params) override;
  Result<std::vector<Rowset>> Fetch() override;
  Result<Rowset> Query(const std::string& sql, const Params& params) override;
  Status Sync() override;
  bool broken() const override;
  Status Reset() override;
  Result<PGconn*> Lend() override;
  Status Resume() override;
  int64_t round_trips() const override { return round_trips_; }

 private:
  friend class Connection;
  explicit LibpqConnection(PGconn* conn) : conn_(conn) {}
  struct Pending {
    Expect expect;
    std::string prepared_name;  // a Prepare: forgotten again when it failed
    bool wanted = false;        // its rows go back to the caller
  };
  std::string PreparedName(const std::string& sql, int param_count);
  void NoteSendError(Status status);
  Status Failed(Status status);
  void Poison();
  Status Drain(std::vector<Rowset>* wanted);
  Status Fail(const std::string& what);
  Status ResultStatus(PGresult* result, const Pending& pending);

  PGconn* conn_;
  std::unordered_map<const std::string*, std::string> prepared_;
  std::deque<Pending> pending_;
  Status send_error_;           // a send that failed before its result could be queued
  int64_t prepared_count_ = 0;  // names are never reused
  int64_t round_trips_ = 0;
  int64_t wanted_ = 0;  // SendWanted calls since the last drain
  bool lent_ = false;   // out of pipeline mode, the caller's (Lend) until Resume
  int64_t lock_timeout_ms_ = 0;
  int64_t idle_timeout_ms_ = 0;
  std::string uri_;
};

// Maps a failed statement's SQLSTATE to a Status code: serialization failures and deadlocks
// abort (retry the batch), lock and statement timeouts and lost connections are kUnavailable.
Status StatusOf(std::string_view sqlstate, std::string message);
// A failed statement's Status, given what it was sent expecting (Expect): a division by zero
// of a statement checked on the server is its `otherwise`, a unique violation a conflict.
Status ExpectedStatusOf(std::string_view sqlstate, std::string message, const Expect& expect);

}  // namespace evident::postgres
