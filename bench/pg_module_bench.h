// bench/pg_module_bench.h — what the benchmarks of evident_pg.so's functions share (pg_ext_bench,
// pg_decide_bench): libpq calls that end the run on failure, and a durable server of
// scripts/postgres.sh with the module copied where the server's OS user can read it.
#pragma once

#include <libpq-fe.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "shell.h"

namespace evident::bench {

using PgConnection = std::unique_ptr<PGconn, void (*)(PGconn*)>;

// The program's name in its messages (set by PgModuleServer).
inline std::string& PgBenchName() {
  static std::string name = "bench";
  return name;
}

[[noreturn]] inline void PgDie(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", PgBenchName().c_str(), what.c_str());
  std::exit(1);
}

inline PgConnection PgConnect(const std::string& uri) {
  PgConnection conn(PQconnectdb(uri.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) PgDie(PQerrorMessage(conn.get()));
  return conn;
}

// Ends the run unless `result` succeeded; clears it.
inline void PgCheck(PGresult* result, const std::string& what) {
  const ExecStatusType type = PQresultStatus(result);
  const std::string message = PQresultErrorMessage(result);
  PQclear(result);
  if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) PgDie(what + ": " + message);
}

inline void PgExec(PGconn* conn, const std::string& sql) {
  PgCheck(PQexec(conn, sql.c_str()), sql);
}

// A server of scripts/postgres.sh with fsync on (EVIDENT_PG_DURABLE=1), in a temporary
// directory, stopped and removed with the object; `module` is evident_pg.so where the server's
// OS user can read it.
class PgModuleServer {
 public:
  PgModuleServer(const std::string& name, const std::string& module_file)
      : dir_(std::filesystem::temp_directory_path() /
             ("evident-" + name + "-" + std::to_string(getpid()))),
        script_(std::string(EVIDENT_SOURCE_DIR) + "/scripts/postgres.sh") {
    PgBenchName() = name;
    std::filesystem::create_directories(dir_);
    int rc = 0;
    url_ =
        Shell("EVIDENT_PG_DURABLE=1 bash " + script_ + " start " + (dir_ / "server").string(), rc);
    if (rc != 0) PgDie("the server did not start: " + url_);
    std::string data;
    std::getline(std::ifstream(dir_ / "server" / "data"), data);
    module_ = (std::filesystem::path(data) / "evident_pg.so").string();
    std::filesystem::copy_file(module_file, module_,
                               std::filesystem::copy_options::overwrite_existing);
    using std::filesystem::perms;
    std::filesystem::permissions(module_,
                                 perms::owner_all | perms::group_read | perms::others_read);
  }
  ~PgModuleServer() {
    int rc = 0;
    (void)Shell("bash " + script_ + " stop " + (dir_ / "server").string(), rc);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PgModuleServer(const PgModuleServer&) = delete;
  PgModuleServer& operator=(const PgModuleServer&) = delete;

  const std::string& url() const { return url_; }
  const std::string& module() const { return module_; }

  // A fresh schema of the server (dropped first when it exists); the URI that uses it.
  std::string FreshSchema(const std::string& schema) const {
    PgConnection conn = PgConnect(url_);
    PgExec(conn.get(), "SET client_min_messages = warning; DROP SCHEMA IF EXISTS " + schema +
                           " CASCADE; CREATE SCHEMA " + schema);
    return url_ + "?options=-csearch_path%3D" + schema;
  }

 private:
  std::filesystem::path dir_;
  std::string script_, url_, module_;
};

}  // namespace evident::bench
