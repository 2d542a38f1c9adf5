#include "pg_ext/spi_proxy.h"

#include <libpq-fe.h>

#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "store/postgres/pg_open.h"

namespace evident {
namespace {

using postgres::Connection;
using postgres::Expect;
using postgres::Params;
using postgres::Rowset;
using postgres::Table;

bool IsControl(const std::string& sql) {
  return sql.rfind("BEGIN", 0) == 0 || sql == "COMMIT" || sql == "ROLLBACK";
}

// An array literal of `params`: text as it is, bytes as hex, NULL unquoted.
std::pair<std::string, std::string> ArrayLiterals(const Params& params) {
  static const char* kDigits = "0123456789abcdef";
  std::string texts = "{", bytes = "{";
  for (int i = 0; i < params.count(); ++i) {
    if (i > 0) texts += ',', bytes += ',';
    const char* value = params.values()[i];
    const bool raw = params.formats()[i] == 1;
    bytes += raw ? 't' : 'f';
    if (value == nullptr) {
      texts += "NULL";
      continue;
    }
    std::string text;
    if (raw) {
      text = "\\x";
      for (int b = 0; b < params.lengths()[i]; ++b) {
        const auto c = static_cast<unsigned char>(value[b]);
        text += kDigits[c >> 4];
        text += kDigits[c & 0xF];
      }
    } else {
      text = value;
    }
    texts += '"';
    for (const char c : text) {
      if (c == '"' || c == '\\') texts += '\\';
      texts += c;
    }
    texts += '"';
  }
  return {texts + "}", bytes + "}"};
}

std::string Unhex(std::string_view text) {
  const auto digit = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
  std::string out;
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    out += static_cast<char>((digit(text[i]) << 4) | digit(text[i + 1]));
  }
  return out;
}

class SpiProxyConnection final : public Connection {
 public:
  explicit SpiProxyConnection(PGconn* conn) : conn_(conn, &PQfinish) {}

  void Send(const std::string& sql, const Params& params, Expect expect) override {
    (void)Execute(sql, params, expect);
  }
  void SendWanted(const std::string& sql, const Params& params) override {
    Result<Rowset> rows = Execute(sql, params, Expect());
    if (rows.ok()) wanted_.push_back(std::move(*rows));
  }
  Result<std::vector<Rowset>> Fetch() override {
    EVIDENT_RETURN_IF_ERROR(std::exchange(unsynced_, Status::Ok()));
    return std::exchange(wanted_, {});
  }
  Result<Rowset> Query(const std::string& sql, const Params& params) override {
    Result<Rowset> rows = Execute(sql, params, Expect());
    EVIDENT_RETURN_IF_ERROR(std::exchange(unsynced_, Status::Ok()));
    return rows;
  }
  Status Sync() override { return std::exchange(unsynced_, Status::Ok()); }
  bool broken() const override { return PQstatus(conn_.get()) != CONNECTION_OK; }
  Status Reset() override {
    if (broken()) PQreset(conn_.get());
    if (broken()) return Status::Unavailable("PostgreSQL is unreachable");
    if (PQtransactionStatus(conn_.get()) != PQTRANS_IDLE) PQclear(PQexec(conn_.get(), "ROLLBACK"));
    failure_ = Status::Ok();
    unsynced_ = Status::Ok();
    wanted_.clear();
    return Status::Ok();
  }
  Result<PGconn*> Lend() override { return Status::FailedPrecondition("not lent over SPI"); }
  Status Resume() override { return Status::Ok(); }
  int64_t round_trips() const override { return 0; }
  bool InCallersTransaction() const override { return true; }

 private:
  Status Record(Status status) {
    if (!status.ok() && failure_.ok()) failure_ = status;
    if (!status.ok() && unsynced_.ok()) unsynced_ = status;
    return status;
  }
  // The statement's failure as the server reported it, read as the store reads it.
  Status Failed(PGresult* result, const Expect& expect) {
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    const char* message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    Status status = postgres::ExpectedStatusOf(state != nullptr ? state : "08000",
                                               message != nullptr ? message : "no message", expect);
    PQclear(result);
    return Record(std::move(status));
  }
  Result<Rowset> Execute(const std::string& sql, const Params& params, const Expect& expect);
  static Rowset RowsOf(PGresult* result);

  std::unique_ptr<PGconn, void (*)(PGconn*)> conn_;
  Status unsynced_;
  std::vector<Rowset> wanted_;
};

// The answer's cells, one row per (answer row, column): the first answer row is the header.
Rowset SpiProxyConnection::RowsOf(PGresult* result) {
  std::map<int, std::map<int, std::optional<std::string>>> cells;
  for (int r = 0; r < PQntuples(result); ++r) {
    std::optional<std::string> value;
    if (PQgetisnull(result, r, 2) == 0) value = PQgetvalue(result, r, 2);
    cells[std::stoi(PQgetvalue(result, r, 0))][std::stoi(PQgetvalue(result, r, 1))] = value;
  }
  PQclear(result);
  Table table;
  const auto& header = cells[1];
  table.affected = std::stoll(header.at(1).value_or("0"));
  table.columns = static_cast<int>(header.size()) - 1;
  for (int c = 0; c < table.columns; ++c) table.raw_bytes.push_back(header.at(c + 2) == "b");
  table.rows = static_cast<int>(cells.size()) - 1;
  for (int r = 0; r < table.rows; ++r) {
    for (int c = 0; c < table.columns; ++c) {
      std::optional<std::string> cell = cells[r + 2][c + 1];
      if (cell && table.raw_bytes[static_cast<size_t>(c)]) cell = Unhex(*cell);
      table.cells.push_back(std::move(cell));
    }
  }
  return Rowset(std::move(table));
}

Result<Rowset> SpiProxyConnection::Execute(const std::string& sql, const Params& params,
                                           const Expect& expect) {
  if (!params.status().ok()) return Record(params.status());
  if (IsControl(sql)) {
    PGresult* result = PQexec(conn_.get(), sql.c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK) return Failed(result, expect);
    PQclear(result);
    return Rowset(Table());
  }
  static const char* kCall =
      "SELECT r.ord, a.i, a.v FROM evident_spi_statement($1, $2::text[], $3::boolean[])"
      " WITH ORDINALITY AS r(arr, ord), unnest(r.arr) WITH ORDINALITY AS a(v, i)"
      " ORDER BY r.ord, a.i";
  const auto [texts, bytes] = ArrayLiterals(params);
  const char* values[3] = {sql.c_str(), texts.c_str(), bytes.c_str()};
  PGresult* result = PQexecParams(conn_.get(), kCall, 3, nullptr, values, nullptr, nullptr, 0);
  if (PQresultStatus(result) != PGRES_TUPLES_OK) return Failed(result, expect);
  return RowsOf(result);
}

Status Exec(PGconn* conn, const std::string& sql) {
  PGresult* result = PQexec(conn, sql.c_str());
  const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
  std::string message = PQresultErrorMessage(result);
  PQclear(result);
  return ok ? Status::Ok() : Status::Internal(sql + ": " + message);
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSpiProxyStore(const std::string& uri, bool deciders_shared) {
  PGconn* conn = PQconnectdb(uri.c_str());
  auto connection = std::make_unique<SpiProxyConnection>(conn);
  if (PQstatus(conn) != CONNECTION_OK) {
    return Status::Unavailable(std::string("cannot connect: ") + PQerrorMessage(conn));
  }
  // As the store's own connections are set up (a short lock wait, as the suite's other backends).
  EVIDENT_RETURN_IF_ERROR(
      Exec(conn, "SET TIME ZONE 'UTC'; SET lock_timeout = 100; SET client_min_messages = error"));
  return postgres::OpenStoreOver(std::move(connection), deciders_shared);
}

Status InstallSpiStatementFunction(const std::string& uri, const std::string& library) {
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(uri.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Status::Unavailable(std::string("cannot connect: ") + PQerrorMessage(conn.get()));
  }
  return Exec(conn.get(),
              "CREATE OR REPLACE FUNCTION evident_spi_statement(text, text[], boolean[]) RETURNS "
              "SETOF text[] AS '" +
                  library + "', 'evident_spi_statement' LANGUAGE C STRICT VOLATILE");
}

}  // namespace evident
