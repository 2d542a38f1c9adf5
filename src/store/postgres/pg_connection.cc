#include "store/postgres/pg_connection.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstring>

namespace evident::postgres {

Params& Params::Add(std::string value, int format) {
  const std::string& kept = storage_.emplace_back(std::move(value));
  values_.push_back(kept.c_str());
  lengths_.push_back(static_cast<int>(kept.size()));
  formats_.push_back(format);
  return *this;
}

Params& Params::Text(std::string_view value) {
  if (value.find('\0') != std::string_view::npos && status_.ok()) {
    status_ = Status::InvalidArgument(
        "a text value holds a NUL byte, which PostgreSQL text cannot store");
  }
  return Add(std::string(value), 0);
}

Params& Params::Int(int64_t value) { return Add(std::to_string(value), 0); }

Params& Params::OptInt(std::optional<int64_t> value) { return value ? Int(*value) : Null(); }

Params& Params::OptText(const std::optional<std::string>& value) {
  return value ? Text(*value) : Null();
}

Params& Params::Bytes(std::string_view value) { return Add(std::string(value), 1); }

Params& Params::Null() {
  values_.push_back(nullptr);
  lengths_.push_back(0);
  formats_.push_back(0);
  return *this;
}

// Every element quoted, with backslash and double quote escaped: the array input syntax then
// reads any text back exactly (NULL, braces, commas and spaces included).
Params& Params::TextArray(const std::vector<std::string_view>& values) {
  std::string literal = "{";
  for (const std::string_view value : values) {
    if (value.find('\0') != std::string_view::npos && status_.ok()) {
      status_ = Status::InvalidArgument(
          "a text value holds a NUL byte, which PostgreSQL text cannot store");
    }
    if (literal.size() > 1) literal += ',';
    literal += '"';
    for (const char c : value) {
      if (c == '"' || c == '\\') literal += '\\';
      literal += c;
    }
    literal += '"';
  }
  literal += '}';
  return Add(std::move(literal), 0);
}

Params& Params::IntArray(const std::vector<int64_t>& values) {
  std::string literal = "{";
  for (const int64_t value : values) {
    if (literal.size() > 1) literal += ',';
    literal += std::to_string(value);
  }
  literal += '}';
  return Add(std::move(literal), 0);
}

Params& Params::OptIntArray(const std::vector<std::optional<int64_t>>& values) {
  std::string literal = "{";
  for (const std::optional<int64_t>& value : values) {
    if (literal.size() > 1) literal += ',';
    literal += value ? std::to_string(*value) : "NULL";
  }
  literal += '}';
  return Add(std::move(literal), 0);
}

int64_t Rowset::Int(int row, int column) const { return OptInt(row, column).value_or(0); }

std::optional<int64_t> Rowset::OptInt(int row, int column) const {
  if (IsNull(row, column)) return std::nullopt;
  const std::string_view text = Text(row, column);
  int64_t value = 0;
  if (text == "t") return 1;  // a boolean column
  if (text == "f") return 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    NoteProblem("column " + std::to_string(column) + " holds '" + std::string(text) +
                "', not an integer");
  }
  return value;
}

void Rowset::NoteProblem(std::string what) const {
  if (problem_.ok()) problem_ = Status::Corruption("PostgreSQL answered " + std::move(what));
}

namespace {
int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

// bytea_output is 'hex' (the default since PostgreSQL 9.0, and set for this session): "\x" and
// two hex digits per byte.
std::string Rowset::Bytes(int row, int column) const {
  const std::string_view text = Text(row, column);
  std::string out;
  if (table_ && table_->raw_bytes[static_cast<size_t>(column)]) return std::string(text);
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2 != 0) {
    NoteProblem("column " + std::to_string(column) + " in a form other than hex bytea");
    return out;
  }
  out.reserve((text.size() - 2) / 2);
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    const int high = HexDigit(text[i]);
    const int low = HexDigit(text[i + 1]);
    if (high < 0 || low < 0) {
      NoteProblem("column " + std::to_string(column) + " with a byte that is not hex");
      return out;
    }
    out += static_cast<char>((high << 4) | low);
  }
  return out;
}

int64_t Rowset::affected() const {
  if (table_) return table_->affected;
  const char* tuples = PQcmdTuples(result_.get());
  int64_t value = 0;
  std::from_chars(tuples, tuples + std::strlen(tuples), value);
  return value;
}

Status StatusOf(std::string_view sqlstate, std::string message) {
  if (sqlstate == "40001" || sqlstate == "40P01") {
    return Status::Aborted("conflict with another writer (retry the batch): " + message);
  }
  if (sqlstate == "55P03" || sqlstate == "57014") {
    return Status::Unavailable("the store is locked by another writer: " + message);
  }
  if (sqlstate == "25P03") {  // idle_in_transaction_session_timeout: the session was ended
    return Status::Unavailable(
        "the transaction was idle past its hold (a claim or a lease) and the server ended it: " +
        message);
  }
  if (sqlstate.substr(0, 2) == "08" || sqlstate == "57P01" || sqlstate == "57P03" ||
      sqlstate == "53300") {
    return Status::Unavailable("PostgreSQL is unreachable: " + message);
  }
  if (sqlstate == "25006") return Status::FailedPrecondition(message);  // read-only transaction
  return Status::Internal("PostgreSQL: " + message);
}

Status ExpectedStatusOf(std::string_view sqlstate, std::string message, const Expect& expect) {
  if (sqlstate == "22012" && expect.checked_on_server) return expect.otherwise;
  if (sqlstate == "23505" && expect.unique_is_conflict) {
    return Status::Aborted("another writer inserted the same key (retry the batch): " + message);
  }
  return StatusOf(sqlstate, std::move(message));
}

Result<std::unique_ptr<Connection>> Connection::Open(const std::string& uri,
                                                     int64_t lock_timeout_ms,
                                                     int64_t idle_timeout_ms) {
  PGconn* conn = PQconnectdb(uri.c_str());
  if (conn == nullptr) return Status::Unavailable("PostgreSQL: out of memory connecting");
  std::unique_ptr<LibpqConnection> out(new LibpqConnection(conn));
  out->uri_ = uri;
  out->lock_timeout_ms_ = lock_timeout_ms;
  out->idle_timeout_ms_ = idle_timeout_ms;
  EVIDENT_RETURN_IF_ERROR(out->Reset());
  return std::unique_ptr<Connection>(std::move(out));
}

LibpqConnection::~LibpqConnection() { PQfinish(conn_); }

bool LibpqConnection::broken() const { return PQstatus(conn_) != CONNECTION_OK; }

// (Re)connects when the connection is bad, and sets the session up: pipeline mode, UTC, hex
// bytea, the lock timeout. Prepared statements of an earlier session are gone with it.
Status LibpqConnection::Reset() {
  failure_ = Status::Ok();
  if (PQstatus(conn_) == CONNECTION_OK && PQpipelineStatus(conn_) != PQ_PIPELINE_OFF &&
      (!pending_.empty() || PQtransactionStatus(conn_) != PQTRANS_IDLE)) {
    Poison();  // a transaction left open or results left unread: start a clean session
  }
  if (PQstatus(conn_) != CONNECTION_OK || PQpipelineStatus(conn_) == PQ_PIPELINE_OFF) {
    if (PQstatus(conn_) != CONNECTION_OK) PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) {
      std::string message = PQerrorMessage(conn_);
      while (!message.empty() && message.back() == '\n') message.pop_back();
      return Status::Unavailable("cannot connect to PostgreSQL: " + message);
    }
    prepared_.clear();
    pending_.clear();
    send_error_ = Status::Ok();
    const std::string setup =
        "SET TIME ZONE 'UTC'; SET bytea_output = 'hex'; SET lock_timeout = " +
        // 0 is "wait forever" to PostgreSQL but "do not wait" to SQLite's busy timeout, as to
        // the options that set it: the shortest wait PostgreSQL has.
        std::to_string(std::max<int64_t>(lock_timeout_ms_, 1)) +
        "; SET idle_in_transaction_session_timeout = " + std::to_string(idle_timeout_ms_) +
        "; SET client_min_messages = error";
    PGresult* result = PQexec(conn_, setup.c_str());
    const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
    std::string message = PQresultErrorMessage(result);
    PQclear(result);
    if (!ok) return Status::Unavailable("PostgreSQL session setup failed: " + message);
    if (PQenterPipelineMode(conn_) != 1) {
      return Status::Internal("PostgreSQL: cannot enter pipeline mode: " +
                              std::string(PQerrorMessage(conn_)));
    }
  }
  return Status::Ok();
}

Status LibpqConnection::Fail(const std::string& what) {
  std::string message = PQerrorMessage(conn_);
  while (!message.empty() && message.back() == '\n') message.pop_back();
  if (broken()) return Status::Unavailable("PostgreSQL connection lost (" + what + "): " + message);
  return Status::Internal("PostgreSQL (" + what + "): " + message);
}

// The name of `sql`'s prepared statement, preparing it first; empty when the Prepare could
// not be sent.
std::string LibpqConnection::PreparedName(const std::string& sql, int param_count) {
  auto it = prepared_.find(&sql);
  if (it != prepared_.end()) return it->second;
  std::string name = "evident_" + std::to_string(++prepared_count_);
  if (PQsendPrepare(conn_, name.c_str(), sql.c_str(), param_count, nullptr) != 1) {
    NoteSendError(Fail("prepare"));
    return "";
  }
  // Built, then moved: GCC 12 takes the designated temporary's Status for maybe-uninitialized.
  Pending pending;
  pending.prepared_name = name;
  pending_.push_back(std::move(pending));
  prepared_.emplace(&sql, name);
  return name;
}

void LibpqConnection::NoteSendError(Status status) {
  if (send_error_.ok()) send_error_ = status;
  if (failure_.ok()) failure_ = std::move(status);
}

Result<PGconn*> LibpqConnection::Lend() {
  EVIDENT_RETURN_IF_ERROR(Resume());
  EVIDENT_RETURN_IF_ERROR(Sync());
  EVIDENT_RETURN_IF_ERROR(failure_);
  if (PQtransactionStatus(conn_) != PQTRANS_INTRANS) {
    return Status::FailedPrecondition("PostgreSQL: no transaction is open on this connection");
  }
  if (PQexitPipelineMode(conn_) != 1) return Fail("leave pipeline mode");
  lent_ = true;
  return conn_;
}

Status LibpqConnection::Resume() {
  if (!lent_) return Status::Ok();
  lent_ = false;
  if (broken()) return Failed(Fail("while lent to the caller's statements"));
  const PGTransactionStatusType state = PQtransactionStatus(conn_);
  if (state == PQTRANS_ACTIVE) {  // a statement of the caller's still runs: nothing pairs up
    Poison();
    return Failed(Status::FailedPrecondition(
        "PostgreSQL: the caller's statement on the transaction's connection left its results "
        "unread; the transaction is lost"));
  }
  if (PQenterPipelineMode(conn_) != 1) {
    const Status failed = Fail("enter pipeline mode");
    Poison();
    return Failed(failed);
  }
  if (state == PQTRANS_INERROR) {
    return Failed(Status::Aborted(
        "PostgreSQL: a statement of the caller's failed in this transaction, which the server "
        "has aborted: roll it back (nothing of it is committed)"));
  }
  if (state != PQTRANS_INTRANS) {
    return Failed(Status::FailedPrecondition(
        "PostgreSQL: the caller's statements ended the transaction (COMMIT or ROLLBACK on the "
        "lent connection): what evident wrote before was committed or rolled back with it, and "
        "nothing after it is; end transactions through Transaction::Commit and Rollback only"));
  }
  return Status::Ok();
}

void LibpqConnection::Send(const std::string& sql, const Params& params, Expect expect) {
  if (const Status resumed = Resume(); !resumed.ok()) {
    NoteSendError(resumed);
    return;
  }
  if (!params.status().ok()) {
    NoteSendError(params.status());
    return;
  }
  const std::string name = PreparedName(sql, params.count());
  if (name.empty()) return;
  if (PQsendQueryPrepared(conn_, name.c_str(), params.count(), params.values(), params.lengths(),
                          params.formats(), 0) != 1) {
    NoteSendError(Fail("send"));
    return;
  }
  pending_.push_back(Pending{.expect = std::move(expect)});
}

void LibpqConnection::SendWanted(const std::string& sql, const Params& params) {
  const size_t before = pending_.size();
  Send(sql, params);
  if (pending_.size() > before) pending_.back().wanted = true;
  ++wanted_;
}

Result<std::vector<Rowset>> LibpqConnection::Fetch() {
  std::vector<Rowset> rows;
  EVIDENT_RETURN_IF_ERROR(Drain(&rows));
  return rows;
}

Result<Rowset> LibpqConnection::Query(const std::string& sql, const Params& params) {
  EVIDENT_RETURN_IF_ERROR(params.status());
  SendWanted(sql, params);
  std::vector<Rowset> rows;
  EVIDENT_RETURN_IF_ERROR(Drain(&rows));
  assert(rows.size() == 1);
  return std::move(rows.back());
}

Status LibpqConnection::Sync() { return Drain(nullptr); }

Status LibpqConnection::ResultStatus(PGresult* result, const Pending& pending) {
  const ExecStatusType type = PQresultStatus(result);
  if (type == PGRES_PIPELINE_ABORTED) return Status::Ok();  // the first failure says why
  if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) {
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    std::string message = PQresultErrorMessage(result);
    while (!message.empty() && message.back() == '\n') message.pop_back();
    const std::string_view sqlstate = state == nullptr ? "" : state;
    if (state == nullptr && broken()) return Fail("result");
    return ExpectedStatusOf(sqlstate, std::move(message), pending.expect);
  }
  return Status::Ok();
}

// Reads every pending result through the sync point. The first failure wins; a statement after
// a failed one in the same pipeline was never run (PGRES_PIPELINE_ABORTED).
Status LibpqConnection::Drain(std::vector<Rowset>* wanted) {
  EVIDENT_RETURN_IF_ERROR(Resume());
  const int64_t wanted_count = std::exchange(wanted_, 0);
  Status first = std::exchange(send_error_, Status::Ok());
  if (PQpipelineSync(conn_) != 1) {
    if (first.ok()) first = Fail("sync");
    Poison();
    return Failed(std::move(first));
  }
  ++round_trips_;
  while (!pending_.empty()) {
    Pending pending = std::move(pending_.front());
    pending_.pop_front();
    PGresult* result = PQgetResult(conn_);
    if (result == nullptr) {  // the results are out of step with the statements sent
      if (first.ok()) first = Fail("no result");
      Poison();
      return Failed(std::move(first));
    }
    const Status status = ResultStatus(result, pending);
    if (!status.ok() || PQresultStatus(result) == PGRES_PIPELINE_ABORTED) {
      if (!pending.prepared_name.empty()) {
        for (auto it = prepared_.begin(); it != prepared_.end(); ++it) {
          if (it->second == pending.prepared_name) {
            prepared_.erase(it);
            break;
          }
        }
      }
    }
    if (first.ok() && !status.ok()) first = status;
    if (pending.wanted && first.ok() && wanted != nullptr) {
      wanted->emplace_back(result);
    } else {
      PQclear(result);
    }
    while ((result = PQgetResult(conn_)) != nullptr) PQclear(result);  // the statement's end
  }
  PGresult* sync = PQgetResult(conn_);
  const bool in_step = sync != nullptr && PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  PQclear(sync);
  if (!in_step) {
    if (first.ok()) first = Fail("pipeline sync");
    Poison();
  } else if (first.ok() && wanted != nullptr &&
             static_cast<int64_t>(wanted->size()) != wanted_count) {
    first = Fail("rows missing");
  }
  return Failed(std::move(first));
}

// Records a failure (if any) as the transaction's, and returns it.
Status LibpqConnection::Failed(Status status) {
  if (!status.ok() && failure_.ok()) failure_ = status;
  return status;
}

// The connection can no longer be trusted to pair results with statements: it is closed, and
// the next Reset opens a new session.
void LibpqConnection::Poison() {
  lent_ = false;
  pending_.clear();
  prepared_.clear();
  PQreset(conn_);  // a new session, out of pipeline mode: Reset sets it up again
}

}  // namespace evident::postgres
