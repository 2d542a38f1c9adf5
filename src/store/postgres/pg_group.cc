// The PostgreSQL store's consumer groups (store.h, group.h): members, partition leases with
// fencing epochs, and the fence each batch of a lease holder commits behind.
#include <string>

#include "store/postgres/pg_rows.h"
#include "store/postgres/pg_transaction.h"

namespace evident::postgres {
namespace {

constexpr const char* kLeaseColumns =
    "group_name, event_partition, holder, epoch, acquired_at_ms, expires_at_ms, position, lag";
constexpr const char* kMemberColumns = "group_name, member, joined_at_ms, expires_at_ms";
constexpr int64_t kMemberForgottenAfterMs = int64_t{3600} * 1000;

GroupLease ReadLease(const Rowset& r, int i, Status& /*error*/) {
  return GroupLease{.group = std::string(r.Text(i, 0)),
                    .partition = r.Int(i, 1),
                    .holder = std::string(r.Text(i, 2)),
                    .epoch = r.Int(i, 3),
                    .acquired_at_ms = r.Int(i, 4),
                    .expires_at_ms = r.Int(i, 5),
                    .position = r.OptInt(i, 6),
                    .lag = r.OptInt(i, 7)};
}

GroupMember ReadMember(const Rowset& r, int i, Status& /*error*/) {
  return GroupMember{.group = std::string(r.Text(i, 0)),
                     .member = std::string(r.Text(i, 1)),
                     .joined_at_ms = r.Int(i, 2),
                     .expires_at_ms = r.Int(i, 3)};
}

// Every row of `rows`, however many (a group has a bounded number of partitions and members).
template <typename T>
Result<std::vector<T>> ReadAll(const Rowset& rows, T (*read)(const Rowset&, int, Status&)) {
  EVIDENT_ASSIGN_OR_RETURN(Rows<T> all, ReadRows(rows, rows.rows(), read));
  return std::move(all.rows);
}

Result<int64_t> PartitionCount(Connection& db, std::string_view group) {
  static const std::string kSql = "SELECT partition_count FROM consumer_group WHERE group_name=$1";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, db.Query(kSql, Params().Text(group)));
  const int64_t count = rows.rows() == 0 ? 0 : rows.Int(0, 0);
  EVIDENT_RETURN_IF_ERROR(rows.problem());
  return count;
}

}  // namespace

// One round trip for the group and the member (sent without waiting), another for the list.
Result<std::vector<GroupMember>> PgTransaction::JoinGroup(std::string_view group,
                                                          std::string_view member,
                                                          int64_t partition_count, int64_t now_ms,
                                                          int64_t expires_at_ms) {
  static const std::string kGroup =
      "INSERT INTO consumer_group(group_name, partition_count, created_at_ms) VALUES($1, $2, $3)"
      " ON CONFLICT DO NOTHING";
  static const std::string kMember =
      "INSERT INTO group_member(group_name, member, joined_at_ms, expires_at_ms)"
      " VALUES($1, $2, $3, $4) ON CONFLICT (group_name, member)"
      " DO UPDATE SET expires_at_ms=EXCLUDED.expires_at_ms";
  static const std::string kAlive = std::string("SELECT ") + kMemberColumns +
                                    " FROM group_member WHERE group_name=$1 AND expires_at_ms>=$2"
                                    " ORDER BY member COLLATE \"C\"";
  Db().Send(kGroup, Params().Text(group).Int(partition_count).Int(now_ms));
  EVIDENT_ASSIGN_OR_RETURN(const int64_t count, PartitionCount(Db(), group));
  if (count != partition_count) {
    return Status::FailedPrecondition("group " + std::string(group) + " has " +
                                      std::to_string(count) + " partitions; this " +
                                      "member was started with " + std::to_string(partition_count) +
                                      " (every member of a group, and the relay, must agree)");
  }
  static const std::string kForget =
      "DELETE FROM group_member WHERE group_name=$1 AND expires_at_ms<$2";
  Db().Send(kMember, Params().Text(group).Text(member).Int(now_ms).Int(expires_at_ms));
  // Members gone for an hour are forgotten (every process run is a member of its own).
  Db().Send(kForget, Params().Text(group).Int(now_ms - kMemberForgottenAfterMs));
  EVIDENT_ASSIGN_OR_RETURN(const Rowset alive,
                           Db().Query(kAlive, Params().Text(group).Int(now_ms)));
  return ReadAll(alive, &ReadMember);
}

Status PgTransaction::LeaveGroup(std::string_view group, std::string_view member) {
  static const std::string kSql = "DELETE FROM group_member WHERE group_name=$1 AND member=$2";
  Db().Send(kSql, Params().Text(group).Text(member));
  return Status::Ok();
}

// Taken when free, expired, or held under this member's name; the epoch goes up every time.
Result<std::optional<GroupLease>> PgTransaction::AcquireLease(std::string_view group,
                                                              int64_t partition,
                                                              std::string_view holder,
                                                              int64_t now_ms,
                                                              int64_t expires_at_ms) {
  static const std::string kSql =
      "INSERT INTO group_lease AS l(group_name, event_partition, holder, epoch, acquired_at_ms,"
      " expires_at_ms) VALUES($1, $2, $3, 1, $4, $5) ON CONFLICT (group_name, event_partition)"
      " DO UPDATE SET epoch=l.epoch+1, acquired_at_ms=$4, holder=EXCLUDED.holder,"
      " expires_at_ms=EXCLUDED.expires_at_ms"
      " WHERE l.holder=EXCLUDED.holder OR l.expires_at_ms<$4 RETURNING " +
      std::string(kLeaseColumns);
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql,
                 Params().Text(group).Int(partition).Text(holder).Int(now_ms).Int(expires_at_ms)));
  return ReadOne(rows, &ReadLease);
}

Result<bool> PgTransaction::RenewLease(std::string_view group, int64_t partition,
                                       std::string_view holder, int64_t epoch,
                                       int64_t expires_at_ms) {
  static const std::string kSql =
      "UPDATE group_lease SET expires_at_ms=$5 WHERE group_name=$1 AND event_partition=$2 AND"
      " holder=$3 AND epoch=$4";
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset done,
      Db().Query(kSql,
                 Params().Text(group).Int(partition).Text(holder).Int(epoch).Int(expires_at_ms)));
  return done.affected() == 1;
}

Status PgTransaction::ReleaseLease(std::string_view group, int64_t partition,
                                   std::string_view holder, int64_t epoch) {
  static const std::string kSql =
      "UPDATE group_lease SET expires_at_ms=0 WHERE group_name=$1 AND event_partition=$2 AND"
      " holder=$3 AND epoch=$4";
  Db().Send(kSql, Params().Text(group).Int(partition).Text(holder).Int(epoch));
  return Status::Ok();
}

// Sent without waiting, checked on the server: the lease row stays locked by this transaction
// until it ends, so a takeover waits for the commit (and then sees its position) or the commit
// fails; it cannot happen in between.
Status PgTransaction::FenceLease(std::string_view group, int64_t partition, std::string_view holder,
                                 int64_t epoch, std::optional<int64_t> position,
                                 std::optional<int64_t> lag, int64_t hold_ms) {
  static const std::string kHold =
      "SELECT set_config('idle_in_transaction_session_timeout', $1, true)";
  static const std::string kFence =
      "WITH f AS (UPDATE group_lease SET position=COALESCE($5, position), lag=COALESCE($6, lag)"
      " WHERE group_name=$1 AND event_partition=$2 AND holder=$3 AND epoch=$4 RETURNING 1)"
      " SELECT 1 / (SELECT count(*) FROM f)::int";
  Db().Send(kHold, Params().Text(std::to_string(hold_ms)));
  Params p;
  p.Text(group).Int(partition).Text(holder).Int(epoch).OptInt(position).OptInt(lag);
  Db().Send(kFence, p,
            Expect{.checked_on_server = true,
                   .otherwise = Status::FailedPrecondition(
                       "lease lost: partition " + std::to_string(partition) + " of group " +
                       std::string(group) + " is no longer " + std::string(holder) +
                       "'s at epoch " + std::to_string(epoch) + " (another member took it over)")});
  return Status::Ok();
}

// The row lock this takes waits for an earlier holder's batch that fenced it (FenceLease) to end:
// that batch commits before the seize (and its position is then read by the new holder) or
// fails after it.
Result<GroupLease> PgTransaction::SeizeLease(std::string_view group, int64_t partition,
                                             std::string_view holder, int64_t now_ms) {
  static const std::string kSql =
      "INSERT INTO group_lease AS l(group_name, event_partition, holder, epoch, acquired_at_ms,"
      " expires_at_ms) VALUES($1, $2, $3, 1, $4, 9223372036854775807)"
      " ON CONFLICT (group_name, event_partition) DO UPDATE SET epoch=l.epoch+1,"
      " acquired_at_ms=$4, holder=EXCLUDED.holder, expires_at_ms=EXCLUDED.expires_at_ms"
      " RETURNING " +
      std::string(kLeaseColumns);
  EVIDENT_ASSIGN_OR_RETURN(
      const Rowset rows,
      Db().Query(kSql, Params().Text(group).Int(partition).Text(holder).Int(now_ms)));
  EVIDENT_ASSIGN_OR_RETURN(std::optional<GroupLease> lease, ReadOne(rows, &ReadLease));
  if (!lease.has_value()) return Status::IoError("seizing a lease returned no row");
  return *std::move(lease);
}

Result<std::vector<GroupLease>> PgSnapshot::GroupLeases(std::string_view group) {
  static const std::string kSql = std::string("SELECT ") + kLeaseColumns +
                                  " FROM group_lease WHERE group_name=$1 ORDER BY event_partition";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params().Text(group)));
  return ReadAll(rows, &ReadLease);
}

Result<std::vector<GroupMember>> PgSnapshot::GroupMembers(std::string_view group) {
  static const std::string kSql = std::string("SELECT ") + kMemberColumns +
                                  " FROM group_member WHERE group_name=$1"
                                  " ORDER BY member COLLATE \"C\"";
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, Db().Query(kSql, Params().Text(group)));
  return ReadAll(rows, &ReadMember);
}

Result<int64_t> PgSnapshot::GroupPartitionCount(std::string_view group) {
  return PartitionCount(Db(), group);
}

}  // namespace evident::postgres
