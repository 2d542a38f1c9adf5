#include "store/postgres/test_database.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <memory>

namespace evident {

Result<std::string> TestPostgresUrl() {
  const char* file = std::getenv("EVIDENT_TEST_POSTGRES_URL_FILE");
  if (file == nullptr || file[0] == '\0') {
    return Status::FailedPrecondition(
        "EVIDENT_TEST_POSTGRES_URL_FILE is not set: run the test through ctest (which starts "
        "PostgreSQL with scripts/postgres.sh), or start one and point the variable at its url");
  }
  std::string url;
  std::getline(std::ifstream(file), url);
  if (url.empty()) {
    return Status::Unavailable(
        std::string("no PostgreSQL URL in ") + file +
        " (did scripts/postgres.sh start fail? see the postgres_start test)");
  }
  return url;
}

Result<std::string> FreshPostgresSchema(const std::string& hint) {
  static std::atomic<int64_t> made{0};
  EVIDENT_ASSIGN_OR_RETURN(const std::string url, TestPostgresUrl());
  // Appended piecewise: GCC 12 warns falsely (-Wrestrict) about "t" + std::to_string(n).
  std::string schema = "t";
  schema += std::to_string(getpid());
  schema += '_';
  schema += std::to_string(++made);
  schema += '_';
  for (const char c : hint) {
    if (schema.size() >= 60) break;
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    schema += word ? c : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : '_';
  }
  std::unique_ptr<PGconn, void (*)(PGconn*)> conn(PQconnectdb(url.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return Status::Unavailable("cannot connect to the tests' PostgreSQL at " + url + ": " +
                               PQerrorMessage(conn.get()));
  }
  const std::string sql = "SET client_min_messages = warning; DROP SCHEMA IF EXISTS " + schema +
                          " CASCADE; CREATE SCHEMA " + schema;
  PGresult* result = PQexec(conn.get(), sql.c_str());
  const bool ok = PQresultStatus(result) == PGRES_COMMAND_OK;
  const std::string message = PQresultErrorMessage(result);
  PQclear(result);
  if (!ok) return Status::Internal("cannot create schema " + schema + ": " + message);
  return url + "?options=-csearch_path%3D" + schema;
}

}  // namespace evident
