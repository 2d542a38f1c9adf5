// The PostgreSQL store's contract sets (store_contracts.h): one row per pushed set, numbered one
// past the latest in the pushing transaction; a second push racing it fails on the primary key
// when it commits second (nothing of it is kept).
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

std::vector<StoredContracts> ContractsRows(const Rowset& rows) {
  std::vector<StoredContracts> out;
  for (int i = 0; i < rows.rows(); ++i) {
    out.push_back(StoredContracts{.version = rows.Int(i, 0),
                                  .pushed_at_ms = rows.Int(i, 1),
                                  .digest = std::string(rows.Text(i, 2)),
                                  .settings = std::string(rows.Text(i, 3)),
                                  .files = std::string(rows.Text(i, 4))});
  }
  return out;
}

Result<std::optional<StoredContracts>> SetAt(Connection& db, int64_t version) {
  static const std::string kSql =
      "SELECT version, pushed_at_ms, digest, settings, files FROM contract_set WHERE version ="
      " CASE WHEN $1 = 0 THEN (SELECT max(version) FROM contract_set) ELSE $1 END";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Int(version)));
  std::vector<StoredContracts> sets = ContractsRows(rows);
  if (!rows.problem().ok()) return rows.problem();
  if (sets.empty()) return std::optional<StoredContracts>();
  return std::optional<StoredContracts>(std::move(sets.front()));
}

Result<std::vector<StoredContracts>> History(Connection& db, int64_t rows_max) {
  static const std::string kSql =
      "SELECT version, pushed_at_ms, digest, settings, '' FROM contract_set"
      " ORDER BY version DESC LIMIT $1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Int(rows_max)));
  std::vector<StoredContracts> sets = ContractsRows(rows);
  if (!rows.problem().ok()) return rows.problem();
  return sets;
}

}  // namespace

Result<int64_t> PgTransaction::PushContracts(const StoredContracts& c) {
  EVIDENT_ASSIGN_OR_RETURN(const int64_t latest, LatestVersion(Db()));
  static const std::string kSql =
      "INSERT INTO contract_set(version, pushed_at_ms, digest, settings, files)"
      " VALUES($1, $2, $3, $4, $5)";
  EVIDENT_RETURN_IF_ERROR(Db().Query(kSql, Params()
                                               .Int(latest + 1)
                                               .Int(c.pushed_at_ms)
                                               .Text(c.digest)
                                               .Text(c.settings)
                                               .Text(c.files))
                              .status());
  return latest + 1;
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
