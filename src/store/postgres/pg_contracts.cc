// The PostgreSQL store's contract sets (store_contracts.h): one row per pushed set, inserted
// only as the next number (a push racing another is refused, kAborted, nothing of it kept).
#include <string>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_transaction.h"

namespace evident::postgres {
namespace {

Result<int64_t> LatestVersion(Connection& db) {
  static const std::string kSql = "SELECT coalesce(max(version), 0) FROM contract_set";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params()));
  const int64_t version = rows.Int(0, 0);
  if (!rows.problem().ok()) return rows.problem();
  return version;
}

// The sets a query of (version, pushed_at_ms, digest, settings, files) answers.
Result<std::vector<StoredContracts>> QuerySets(Connection& db, const std::string& sql,
                                               const Params& params) {
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(sql, params));
  std::vector<StoredContracts> out;
  for (int i = 0; i < rows.rows(); ++i) {
    out.push_back(StoredContracts{.version = rows.Int(i, 0),
                                  .pushed_at_ms = rows.Int(i, 1),
                                  .digest = std::string(rows.Text(i, 2)),
                                  .settings = std::string(rows.Text(i, 3)),
                                  .files = std::string(rows.Text(i, 4))});
  }
  if (!rows.problem().ok()) return rows.problem();
  return out;
}

Result<std::optional<StoredContracts>> SetAt(Connection& db, int64_t version) {
  static const std::string kSql =
      "SELECT version, pushed_at_ms, digest, settings, files FROM contract_set WHERE version ="
      " CASE WHEN $1 = 0 THEN (SELECT max(version) FROM contract_set) ELSE $1 END";
  EVIDENT_ASSIGN_OR_RETURN(std::vector<StoredContracts> sets,
                           QuerySets(db, kSql, Params().Int(version)));
  if (sets.empty()) return std::optional<StoredContracts>();
  return std::optional<StoredContracts>(std::move(sets.front()));
}

Result<std::vector<StoredContracts>> History(Connection& db, int64_t rows_max) {
  static const std::string kSql =
      "SELECT version, pushed_at_ms, digest, settings, '' FROM contract_set"
      " ORDER BY version DESC LIMIT $1";
  return QuerySets(db, kSql, Params().Int(rows_max));
}

}  // namespace

// Inserted only as the next number: a push that committed meanwhile makes the condition false,
// and one committing concurrently makes the key conflict (this insert waits for it first).
Result<int64_t> PgTransaction::PushContracts(const StoredContracts& c) {
  static const std::string kSql =
      "INSERT INTO contract_set(version, pushed_at_ms, digest, settings, files)"
      " SELECT $1::bigint, $2::bigint, $3::text, $4::text, $5::text"
      " WHERE (SELECT coalesce(max(version), 0) FROM contract_set) = $1::bigint - 1"
      " ON CONFLICT (version) DO NOTHING";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Db().Query(kSql, Params()
                                                                   .Int(c.version)
                                                                   .Int(c.pushed_at_ms)
                                                                   .Text(c.digest)
                                                                   .Text(c.settings)
                                                                   .Text(c.files)));
  if (done.affected() != 1) {
    return Status::Aborted("contract set v" + std::to_string(c.version) +
                           " is not the next: another push came first; push again");
  }
  return c.version;
}
Result<int64_t> PgTransaction::LatestContractsVersion() { return LatestVersion(Db()); }
Result<std::optional<StoredContracts>> PgTransaction::ContractsAt(int64_t version) {
  return SetAt(Db(), version);
}
Result<std::vector<StoredContracts>> PgTransaction::ContractsHistory(int64_t rows_max) {
  return History(Db(), rows_max);
}

Result<int64_t> PgSnapshot::LatestContractsVersion() { return LatestVersion(Db()); }
Result<std::optional<StoredContracts>> PgSnapshot::ContractsAt(int64_t version) {
  return SetAt(Db(), version);
}
Result<std::vector<StoredContracts>> PgSnapshot::ContractsHistory(int64_t rows_max) {
  return History(Db(), rows_max);
}

}  // namespace evident::postgres
