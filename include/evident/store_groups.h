// evident/store_groups.h — the store's consumer groups (group.h): members and partition leases
// with fencing epochs. A store that processes cannot share (SQLite, memory) refuses them with
// kFailedPrecondition; the default implementations do that. Part of the Store contract
// (store.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/status.h"

namespace evident {

// Consumer groups (group.h): a stream's partitions leased to the processes of a group, each
// lease with a fencing epoch that goes up whenever the partition changes hands.
struct GroupLease {
  std::string group;
  int64_t partition = 0;
  std::string holder;  // a member's name
  int64_t epoch = 0;   // 1 for the first holder; +1 at each change of holder
  int64_t acquired_at_ms = 0;
  int64_t expires_at_ms = 0;  // renewed by its holder; past it, another member may take it
  // As of the holder's last commit (FenceLease): the last stream sequence decided, and how many
  // messages of the partition were behind it in the stream then (nullopt: not known yet).
  std::optional<int64_t> position, lag;
};
struct GroupMember {
  std::string group, member;
  int64_t joined_at_ms = 0;
  int64_t expires_at_ms = 0;  // renewed while the member runs; past it, it counts as gone
};

class GroupWrites {
 public:
  virtual ~GroupWrites() = default;

  // Consumer groups (group.h). A store that processes cannot share (SQLite, memory) refuses
  // them with kFailedPrecondition; the defaults do that.
  //
  // Records `member` of `group` as alive until `expires_at_ms` (joining, or renewing), and the
  // group's partition count: a member that names another count than the group's is refused
  // (kFailedPrecondition). Returns the members alive at `now_ms`, by name, itself included.
  virtual Result<std::vector<GroupMember>> JoinGroup(std::string_view group,
                                                     std::string_view member,
                                                     int64_t partition_count, int64_t now_ms,
                                                     int64_t expires_at_ms);

  // Removes the member (leaving); nothing happens for one not there.
  virtual Status LeaveGroup(std::string_view group, std::string_view member);

  // Takes `partition` for `holder` until `expires_at_ms` when nobody holds it, when its lease
  // expired before `now_ms`, or when `holder` holds it (a member of that name run again): the
  // epoch goes up every time, so that whatever held it before is fenced off. nullopt when another
  // member holds it unexpired.
  virtual Result<std::optional<GroupLease>> AcquireLease(std::string_view group, int64_t partition,
                                                         std::string_view holder, int64_t now_ms,
                                                         int64_t expires_at_ms);

  // Extends the lease `holder` holds at `epoch` to `expires_at_ms`; false when it holds it no
  // longer (another member took it over, or a run of the same name took it again).
  virtual Result<bool> RenewLease(std::string_view group, int64_t partition,
                                  std::string_view holder, int64_t epoch, int64_t expires_at_ms);

  // Gives the lease up (it expires at once), if `holder` still holds it at `epoch`.
  virtual Status ReleaseLease(std::string_view group, int64_t partition, std::string_view holder,
                              int64_t epoch);

  // The fence of a batch: this transaction commits only if `holder` still holds `partition` at
  // `epoch` when it commits (kFailedPrecondition "lease lost" otherwise, from this call or from
  // the commit), and the lease records `position` and `lag`. A transaction that then says
  // nothing to the store for `hold_ms` is ended by it, so that a stalled holder cannot keep
  // a taker waiting.
  virtual Status FenceLease(std::string_view group, int64_t partition, std::string_view holder,
                            int64_t epoch, std::optional<int64_t> position,
                            std::optional<int64_t> lag, int64_t hold_ms);

  // Takes `partition` for `holder` whoever holds it, for as long as it holds it: the broker
  // assigned it (a group whose broker assigns the partitions: Kafka's group protocol), so it is
  // not the store's to refuse. The epoch goes up, fencing off the earlier holder's batches
  // (FenceLease), and the lease never expires by time (expires_at_ms INT64_MAX): the broker
  // decides when it ends, and the next holder's SeizeLease ends it.
  virtual Result<GroupLease> SeizeLease(std::string_view group, int64_t partition,
                                        std::string_view holder, int64_t now_ms);
};

// A consumer group as one snapshot sees it (store.h, Snapshot).
class GroupReads {
 public:
  virtual ~GroupReads() = default;

  // A consumer group's leases by partition, and its members by name (group.h); a store
  // without groups: kFailedPrecondition. The partition count the group was started with, 0 when
  // no member ever joined.
  virtual Result<std::vector<GroupLease>> GroupLeases(std::string_view group);
  virtual Result<std::vector<GroupMember>> GroupMembers(std::string_view group);
  virtual Result<int64_t> GroupPartitionCount(std::string_view group);
};

}  // namespace evident
