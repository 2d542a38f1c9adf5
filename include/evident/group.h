// evident/group.h — consumer groups: several processes (`evident consume --group NAME`) share one
// store that processes can share (PostgreSQL) and one JetStream stream; or one Kafka topic, whose
// broker assigns the partitions (see GroupOptions::from).
//
// The stream's partitions are those of the relay (relay.h: subjects "<prefix>.p<k>.<type>", one
// subject always in one partition). Each partition is leased, through the store, to one member
// of the group at a time. A member runs one consume loop per partition it holds, each on a store
// connection, a pipeline and a JetStream consumer of its own (OpenJetStreamPartitionSource: the
// stored position is where it begins). So a subject's events are decided by one process at a
// time, in stream order, across processes.
//
// Leases: a member renews its members row and its leases every lease_ms / 3; a lease not
// renewed for lease_ms may be taken over by another member, and its epoch goes up. Every batch
// of a partition's loop commits behind a fence (Transaction::FenceLease): the lease must still be
// this member's at the epoch it was taken with, or the batch does not commit and the loop of
// that partition ends. A member that was paused, cut off or slow past its lease therefore
// cannot commit anything for the partition once another member holds it; the new holder starts
// from the last committed position.
//
// Balance: the members alive, ordered by name, share the partitions evenly (the first
// partitions % members take one more). A member above its share
// gives its highest partitions up (their loops finish and commit the batch in hand, then the
// lease is released); a member below it takes free or expired partitions, starting at its rank's
// part of the range. Members come and go
// by joining (the first renewal) and by leaving (a clean stop) or expiring (a crash).
//
// A partition whose loop ended on an error (not a lost lease) is not taken again by this member
// for a lease. The holder of partition 0 runs the store-wide gap deadline checks (consumer.h);
// the other loops do not.
//
// Thread-safety: RunGroup is one thread's; it starts the partition loops on threads of its own.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "evident/cancel.h"
#include "evident/clock.h"
#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/registry.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

struct GroupOptions {
  // The store the members share (OpenStore URI: postgresql://...), and how to open it. The
  // leases' connection waits at most a third of the lease for a lock; each partition's loop
  // opens its own connection whose transactions the server ends when idle for a lease
  // (StoreOptions::idle_transaction_timeout_ms), so that a stalled member cannot hold the locks
  // of a batch it will never commit while another member takes the partition over.
  std::string store;
  StoreOptions store_options;
  std::string group;
  // This process's name in the group, unique per process run (a restarted process must not pass
  // for its earlier self). Empty: "<host>-<pid>-<random>".
  std::string member;
  // The stream's partitions: the relay's --partitions. The first member records it; a member
  // started with another count is refused.
  int64_t partition_count = 0;
  // How long a lease lasts without renewal.
  int64_t lease_ms = 10'000;
  // The source the partitions are of (registry.h: a URI, nats://HOST:PORT or kafka://..., and
  // its options). Its backend says how partitions are shared (GroupPartitions): leased through
  // the store (JetStream: one source per partition held), or assigned by the broker (Kafka's
  // group protocol: one source, the group's member; partition_count is then the topic's own and
  // lease_ms the member's session timeout). A broker-assigned partition is seized in the store
  // (Transaction::SeizeLease) before its position is read, in a transaction of its own, and
  // every batch is fenced by the epochs seized, partition by partition; a store that keeps
  // groups serves (PostgreSQL, or SQLite for the processes of one machine).
  std::string from;
  SourceOptions source;
  // Each partition's consume loop runs with these (its cancel token, resume, the fence and the
  // progress output are the group's own).
  ConsumeOptions consume;
  // Cancelled to stop: the loops commit the batches in hand, the leases are released and the
  // member leaves the group.
  const CancelToken* cancel = nullptr;
  Clock* clock = nullptr;  // null: the system clock
};

struct GroupSummary {
  std::string member;
  ConsumeSummary total;             // over every partition loop of the run
  int64_t partitions_taken = 0;     // leases acquired (a partition taken twice counts twice)
  int64_t partitions_given_up = 0;  // released for balance, or revoked by the broker
  int64_t leases_lost = 0;          // loops ended by a fence or a renewal that found another holder
  std::string last_error;           // of the last loop that ended on an error; empty when none
};

// Runs this process as a member of options.group until options.cancel. Errors: the store or its
// group refused (another partition count, a store without groups), the config's pipeline.
Result<GroupSummary> RunGroup(const Config& config, const GroupOptions& options);

// "jetstream:<stream>/<group>/p<partition>": a partition's position in the store (the word
// "jetstream" kept for the positions stores already hold, whatever the broker).
std::string GroupPositionName(const GroupOptions& options, int64_t partition);

}  // namespace evident
