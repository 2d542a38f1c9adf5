// `evident consume` throughput on PostgreSQL, against the practical ceiling measured in the same
// run on the same server: the same number of ledger rows, each with its projection row upserted,
// written with raw libpq in pipeline mode into the same tables (made by `evident store migrate`),
// in transactions of the same batch size. The server is a cluster of scripts/postgres.sh with
// fsync on (EVIDENT_PG_DURABLE=1), on this machine's loopback. Peak memory (ru_maxrss) of the
// real `evident consume` process at 100k and at N events shows whether memory stays flat.
//
//   build-bench/bench/postgres_bench [N=200000] [ROUNDS=3]      (see docs/BENCHMARKS.md)
//
// EVIDENT_BENCH_STATEMENTS=K also prints, after each round, the K statements of `evident consume`
// that took the server the most time (pg_stat_statements: calls, total and mean milliseconds).
#include <libpq-fe.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "consume_input.h"
#include "median.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kBatchCountMax = 1000;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "postgres_bench: %s\n", what.c_str());
  std::exit(1);
}

// The output of a shell command (its first line).
std::string Capture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) Die("cannot run " + command);
  char line[4096] = {0};
  const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
  if (pclose(pipe) != 0 || !read) Die(command + " failed");
  std::string out = line;
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

using Connection = std::unique_ptr<PGconn, void (*)(PGconn*)>;

Connection Connect(const std::string& uri) {
  Connection conn(PQconnectdb(uri.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) Die(PQerrorMessage(conn.get()));
  return conn;
}

void Exec(PGconn* conn, const std::string& sql) {
  PGresult* result = PQexec(conn, sql.c_str());
  const ExecStatusType type = PQresultStatus(result);
  const std::string message = PQresultErrorMessage(result);
  PQclear(result);
  if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) Die(sql + ": " + message);
}

// A fresh schema on the server, and the store URI whose connections use it.
std::string FreshSchema(const std::string& server, const std::string& name) {
  Connection conn = Connect(server);
  Exec(conn.get(), "SET client_min_messages = warning; DROP SCHEMA IF EXISTS " + name +
                       " CASCADE; CREATE SCHEMA " + name);
  return server + "?options=-csearch_path%3D" + name;
}

struct RunResult {
  double seconds = 0;
  long max_rss_kib = 0;
};

RunResult RunEvident(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::fflush(stdout);
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  RunResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.max_rss_kib = usage.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Die("evident " + args[1] + " failed (status " + std::to_string(status) + ")");
  }
  return r;
}

// Reads every result of a pipeline through its sync point; dies on any failure.
void DrainPipeline(PGconn* conn, int64_t statements) {
  for (int64_t i = 0; i < statements; ++i) {
    PGresult* result = PQgetResult(conn);
    if (result == nullptr) Die("a pipeline result is missing");
    const ExecStatusType type = PQresultStatus(result);
    if (type != PGRES_COMMAND_OK && type != PGRES_TUPLES_OK) {
      Die(std::string("pipeline: ") + PQresultErrorMessage(result));
    }
    PQclear(result);
    while ((result = PQgetResult(conn)) != nullptr) PQclear(result);
  }
  PGresult* sync = PQgetResult(conn);
  if (sync == nullptr || PQresultStatus(sync) != PGRES_PIPELINE_SYNC) Die("pipeline out of step");
  PQclear(sync);
}

// The ceiling: per event one ledger row and its subject's projection row (inserted, or updated
// to the event's version), with prepared statements in pipeline mode, one sync per transaction
// of `batch` events: the rows evident writes for an applied event, and nothing else.
double RawPipelinedInserts(const std::string& uri, int64_t count, int64_t batch) {
  Connection conn = Connect(uri);
  PGconn* c = conn.get();
  Exec(c, "SET synchronous_commit = on");
  PGresult* prepared = PQprepare(
      c, "ledger",
      "INSERT INTO ledger(consumer, source, event_id, state, type, subject, subject_version,"
      " input_schema_version, result_version, projection_version, committed_at_ms)"
      " VALUES($1, $2, $3, 'applied', $4, $5, $6, 1, 1, $6, $7)",
      0, nullptr);
  PQclear(prepared);
  prepared = PQprepare(
      c, "projection",
      "INSERT INTO projection(consumer, subject, version, state, fields_json, owner_source,"
      " owner_version_seen, updated_at_ms) VALUES($1, $2, $3, 'paid', $4, $5, $3, $6)"
      " ON CONFLICT (subject, consumer) DO UPDATE SET version=EXCLUDED.version,"
      " state=EXCLUDED.state, fields_json=EXCLUDED.fields_json,"
      " owner_version_seen=EXCLUDED.owner_version_seen, updated_at_ms=EXCLUDED.updated_at_ms",
      0, nullptr);
  PQclear(prepared);
  if (PQenterPipelineMode(c) != 1) Die("cannot enter pipeline mode");
  const auto start = Clock::now();
  int64_t sent = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (i % batch == 0) {
      PQsendQueryParams(c, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 0);
      ++sent;
    }
    const std::string id = "evt-" + std::to_string(i / 4) + "-" + std::to_string(i % 4 + 1);
    const std::string subject = "order-" + std::to_string(i / 4);
    const std::string version = std::to_string(i % 4 + 1);
    const std::string at = std::to_string(1785000000000 + i);
    const std::string fields = R"({"orderId":")" + subject + R"("})";
    const char* ledger[] = {"fulfillment",   "https://example.test/order-service",
                            id.c_str(),      "com.example.training.order.paid",
                            subject.c_str(), version.c_str(),
                            at.c_str()};
    PQsendQueryPrepared(c, "ledger", 7, ledger, nullptr, nullptr, 0);
    const char* projection[] = {"fulfillment",
                                subject.c_str(),
                                version.c_str(),
                                fields.c_str(),
                                "https://example.test/order-service",
                                at.c_str()};
    PQsendQueryPrepared(c, "projection", 6, projection, nullptr, nullptr, 0);
    sent += 2;
    if (i % batch == batch - 1 || i == count - 1) {
      PQsendQueryParams(c, "COMMIT", 0, nullptr, nullptr, nullptr, nullptr, 0);
      PQpipelineSync(c);
      DrainPipeline(c, sent + 1);
      sent = 0;
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The server's statements of one run, most expensive first (pg_stat_statements, reset before).
void PrintStatements(const std::string& server, int count) {
  Connection conn = Connect(server);
  const std::string sql =
      "SELECT calls, round(total_exec_time::numeric, 1), round(mean_exec_time::numeric, 3),"
      " rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 150) FROM pg_stat_statements"
      " ORDER BY total_exec_time DESC LIMIT " +
      std::to_string(count);
  PGresult* result = PQexec(conn.get(), sql.c_str());
  if (PQresultStatus(result) != PGRES_TUPLES_OK) Die(PQresultErrorMessage(result));
  std::printf("  %10s %10s %9s %10s  statement\n", "calls", "total ms", "mean ms", "rows");
  for (int i = 0; i < PQntuples(result); ++i) {
    std::printf("  %10s %10s %9s %10s  %s\n", PQgetvalue(result, i, 0), PQgetvalue(result, i, 1),
                PQgetvalue(result, i, 2), PQgetvalue(result, i, 3), PQgetvalue(result, i, 4));
  }
  PQclear(result);
}

void ResetStatements(const std::string& server) {
  Connection conn = Connect(server);
  Exec(conn.get(), "CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  Exec(conn.get(), "SELECT pg_stat_statements_reset()");
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t count = argc > 1 ? std::stoll(argv[1]) : 200'000;
  const int rounds = argc > 2 ? std::max(1, std::stoi(argv[2])) : 3;
  const int64_t small = std::min<int64_t>(100'000, count);
  const std::string evident = EVIDENT_BINARY;
  const fs::path dir = fs::temp_directory_path() / ("evident-pgbench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string script = std::string(EVIDENT_SOURCE_DIR) + "/scripts/postgres.sh";
  const char* profile = std::getenv("EVIDENT_BENCH_STATEMENTS");
  const int statements = profile != nullptr ? std::atoi(profile) : 0;
  const std::string options =
      statements > 0 ? "EVIDENT_PG_OPTIONS='-c shared_preload_libraries=pg_stat_statements' " : "";
  const std::string server = Capture(options + "EVIDENT_PG_DURABLE=1 bash " + script + " start " +
                                     (dir / "server").string());
  const std::string config = (dir / "evident.yaml").string();
  evident::bench::WriteConfigWithoutEffects(config);
  evident::bench::WriteEvents(dir / "small.ndjson", small);
  evident::bench::WriteEvents(dir / "large.ndjson", count);

  std::printf("postgres benchmark: %lld events, batches of %d, fsync on, loopback, %d rounds\n",
              static_cast<long long>(count), kBatchCountMax, rounds);
  const std::string batch = std::to_string(kBatchCountMax);
  std::vector<double> ratios;
  long large_rss_kib = 0;
  for (int round = 1; round <= rounds; ++round) {
    const std::string raw_uri = FreshSchema(server, "raw" + std::to_string(round));
    RunEvident({evident, "store", "migrate", "--store", raw_uri});
    const double raw_s = RawPipelinedInserts(raw_uri, count, kBatchCountMax);
    const std::string uri = FreshSchema(server, "evident" + std::to_string(round));
    if (statements > 0) ResetStatements(server);
    const RunResult run =
        RunEvident({evident, "consume", "--config", config, "--store", uri, "--input",
                    (dir / "large.ndjson").string(), "--batch-count-max", batch});
    large_rss_kib = std::max(large_rss_kib, run.max_rss_kib);
    const double raw_rate = static_cast<double>(count) / raw_s;
    const double evident_rate = static_cast<double>(count) / run.seconds;
    ratios.push_back(evident_rate / raw_rate);
    std::printf(
        "round %d: raw libpq pipelined ledger+projection %8.0f events/s | evident consume "
        "%8.0f events/s (process start, schema compile, decisions and evidence included) | "
        "ratio %.3f\n",
        round, raw_rate, evident_rate, ratios.back());
    if (statements > 0) PrintStatements(server, statements);
    std::fflush(stdout);
  }
  const RunResult small_run =
      RunEvident({evident, "consume", "--config", config, "--store", FreshSchema(server, "small"),
                  "--input", (dir / "small.ndjson").string(), "--batch-count-max", batch});
  std::printf("median ratio evident / raw libpq: %.3f   (goal >= 0.85)\n",
              evident::bench::Median(ratios));
  evident::bench::PrintFigure("consume_postgres", ratios);
  std::printf("peak RSS: %lld events %ld KiB, %lld events %ld KiB, ratio %.2f (flat = 1.0)\n",
              static_cast<long long>(small), small_run.max_rss_kib, static_cast<long long>(count),
              large_rss_kib,
              static_cast<double>(large_rss_kib) / static_cast<double>(small_run.max_rss_kib));
  std::fflush(stdout);
  (void)std::system(("bash " + script + " stop " + (dir / "server").string()).c_str());
  fs::remove_all(dir);
  return 0;
}
