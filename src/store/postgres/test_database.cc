#include "store/postgres/test_database.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

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

Result<std::string> CopyToTestServer(const std::string& path) {
  namespace fs = std::filesystem;
  const char* url_file = std::getenv("EVIDENT_TEST_POSTGRES_URL_FILE");
  if (url_file == nullptr || url_file[0] == '\0') {
    return Status::FailedPrecondition("EVIDENT_TEST_POSTGRES_URL_FILE is not set");
  }
  std::string data;
  std::getline(std::ifstream(fs::path(url_file).parent_path() / "data"), data);
  if (data.empty()) return Status::Unavailable("the tests' server keeps no data directory");
  std::string name = fs::path(path).stem().string();
  name += '_';
  name += std::to_string(getpid());
  name += fs::path(path).extension().string();
  const fs::path target = fs::path(data) / name;
  std::error_code error;
  fs::copy_file(path, target, fs::copy_options::overwrite_existing, error);
  if (!error) {
    fs::permissions(target, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read,
                    error);
  }
  if (error)
    return Status::IoError("cannot copy " + path + " to " + target.string() + ": " +
                           error.message());
  return target.string();
}

}  // namespace evident
