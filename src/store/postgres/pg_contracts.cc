// The PostgreSQL store's contract and consumer sets (store_contracts.h): one row per pushed set,
// inserted only as the next number (a push racing another is refused, kAborted, nothing of it
// kept).
#include <string>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_transaction.h"

namespace evident::postgres {
namespace {

// The table of a kind of set.
const char* TableOf(SetKind kind) {
  return kind == SetKind::kContracts ? "contract_set" : "consumer_set";
}

// A statement per kind of set: `make` writes it for a table.
template <typename Make>
const std::string& PerKind(SetKind kind, Make make) {
  static const std::string kContracts = make(std::string(TableOf(SetKind::kContracts)));
  static const std::string kConsumers = make(std::string(TableOf(SetKind::kConsumers)));
  return kind == SetKind::kContracts ? kContracts : kConsumers;
}

Result<int64_t> LatestVersion(Connection& db, SetKind kind) {
  const std::string& sql = PerKind(
      kind, [](const std::string& t) { return "SELECT coalesce(max(version), 0) FROM " + t; });
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(sql, Params()));
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

Result<std::optional<StoredContracts>> SetOf(Connection& db, SetKind kind, int64_t version) {
  const std::string& sql = PerKind(kind, [](const std::string& t) {
    return "SELECT version, pushed_at_ms, digest, settings, files FROM " + t +
           " WHERE version = CASE WHEN $1 = 0 THEN (SELECT max(version) FROM " + t +
           ") ELSE $1 END";
  });
  EVIDENT_ASSIGN_OR_RETURN(std::vector<StoredContracts> sets,
                           QuerySets(db, sql, Params().Int(version)));
  if (sets.empty()) return std::optional<StoredContracts>();
  return std::optional<StoredContracts>(std::move(sets.front()));
}

Result<std::vector<StoredContracts>> History(Connection& db, SetKind kind, int64_t rows_max) {
  const std::string& sql = PerKind(kind, [](const std::string& t) {
    return "SELECT version, pushed_at_ms, digest, settings, '' FROM " + t +
           " ORDER BY version DESC LIMIT $1";
  });
  return QuerySets(db, sql, Params().Int(rows_max));
}

}  // namespace

// Inserted only as the next number: a push that committed meanwhile makes the condition false,
// and one committing concurrently makes the key conflict (this insert waits for it first).
Result<int64_t> PgTransaction::PushSet(SetKind kind, const StoredContracts& c) {
  const std::string& sql = PerKind(kind, [](const std::string& t) {
    return "INSERT INTO " + t +
           "(version, pushed_at_ms, digest, settings, files)"
           " SELECT $1::bigint, $2::bigint, $3::text, $4::text, $5::text"
           " WHERE (SELECT coalesce(max(version), 0) FROM " +
           t + ") = $1::bigint - 1 ON CONFLICT (version) DO NOTHING";
  });
  EVIDENT_ASSIGN_OR_RETURN(const Rowset done, Db().Query(sql, Params()
                                                                  .Int(c.version)
                                                                  .Int(c.pushed_at_ms)
                                                                  .Text(c.digest)
                                                                  .Text(c.settings)
                                                                  .Text(c.files)));
  if (done.affected() != 1) {
    return Status::Aborted(std::string(SetKindName(kind)) + " set v" + std::to_string(c.version) +
                           " is not the next: another push came first; push again");
  }
  return c.version;
}
Result<int64_t> PgTransaction::LatestSetVersion(SetKind kind) { return LatestVersion(Db(), kind); }
Result<std::optional<StoredContracts>> PgTransaction::SetAt(SetKind kind, int64_t version) {
  return SetOf(Db(), kind, version);
}
Result<std::vector<StoredContracts>> PgTransaction::SetHistory(SetKind kind, int64_t rows_max) {
  return History(Db(), kind, rows_max);
}

Result<int64_t> PgSnapshot::LatestSetVersion(SetKind kind) { return LatestVersion(Db(), kind); }
Result<std::optional<StoredContracts>> PgSnapshot::SetAt(SetKind kind, int64_t version) {
  return SetOf(Db(), kind, version);
}
Result<std::vector<StoredContracts>> PgSnapshot::SetHistory(SetKind kind, int64_t rows_max) {
  return History(Db(), kind, rows_max);
}

}  // namespace evident::postgres
