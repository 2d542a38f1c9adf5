// store/postgres/pg_connection.h — one libpq connection in pipeline mode, for the PostgreSQL
// store: statements are sent as they come and their results read only when an answer is needed
// (a read, a commit), so the writes of a batch travel with its next read instead of costing a
// network round trip each (libpq "pipeline mode", PostgreSQL 14+).
//
// Every statement is prepared once per connection under a name of its own, keyed by the address
// of its text (`sql` has static storage), and then sent with its parameters as text (bytes as
// binary); results come back as text.
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

// A result's rows, read by column.
class Rowset {
 public:
  explicit Rowset(PGresult* result) : result_(result, &PQclear) {}
  int rows() const { return PQntuples(result_.get()); }
  bool IsNull(int row, int column) const { return PQgetisnull(result_.get(), row, column) != 0; }
  std::string_view Text(int row, int column) const {
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
  std::unique_ptr<PGresult, void (*)(PGresult*)> result_;
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
  // Connects with a libpq URI ("postgresql://user@host:port/db?..."), in pipeline mode, with
  // the session's lock timeout set (a lock held elsewhere longer: kUnavailable).
  // idle_timeout_ms > 0: a transaction idle that long is ended by the server (SQLSTATE 25P03).
  static Result<std::unique_ptr<Connection>> Open(const std::string& uri, int64_t lock_timeout_ms,
                                                  int64_t idle_timeout_ms = 0);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends `sql` without waiting; its result is checked at the next Sync, Fetch or Query.
  void Send(const std::string& sql, const Params& params, Expect expect = {});
  // The same, keeping its rows for the next Fetch.
  void SendWanted(const std::string& sql, const Params& params);
  // Waits for every result still unread: the first failure among them, or the rows of the
  // statements sent with SendWanted, in the order sent.
  Result<std::vector<Rowset>> Fetch();
  // Sends `sql` and fetches: its rows.
  Result<Rowset> Query(const std::string& sql, const Params& params);
  // Waits for every result still unread; the first failure among them.
  Status Sync();
  // The first failure since the last ClearFailure: a statement that could not be sent, or one
  // the server refused. The server's transaction is then aborted (or the statement missing),
  // so the transaction must not commit.
  const Status& failure() const { return failure_; }
  void ClearFailure() { failure_ = Status::Ok(); }
  // The connection was lost (or never made it): kUnavailable until Reset succeeds.
  bool broken() const;
  // Makes the connection ready for a new transaction: reconnects when it was lost, starts a
  // new session when an earlier one was left mid-way, and clears the failure.
  Status Reset();
  // Lends the connection to the caller's own statements inside the transaction open on it:
  // waits for every result still unread (their first failure), then leaves pipeline mode, so
  // that libpq's synchronous calls (PQexec, PQexecParams) work on it.
  Result<PGconn*> Lend();
  // Takes a lent connection back (nothing when it is not lent): pipeline mode again. Fails (and
  // records the failure as the transaction's) when the caller's statements left the transaction
  // aborted, ended or busy.
  Status Resume();
  // Round trips made so far (each Sync or Query that waited on the server), for tests.
  int64_t round_trips() const { return round_trips_; }

 private:
  explicit Connection(PGconn* conn) : conn_(conn) {}
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
  Status send_error_;  // a send that failed before its result could be queued
  Status failure_;
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

}  // namespace evident::postgres
