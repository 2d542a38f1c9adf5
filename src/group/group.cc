// A member of a consumer group (evident/group.h): leases through the store, one consume loop per
// partition held, each batch fenced by the lease's epoch.
#include "evident/group.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <chrono>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include "evident/retry.h"
#include "group/group_parts.h"

namespace evident {

std::string DefaultMemberName() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device random;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%06x", random() & 0xFFFFFFu);
  return std::string(host[0] != '\0' ? host : "host") + "-" + std::to_string(getpid()) + "-" +
         suffix;
}

// A partition loop's summary into the member's: counts summed, and the troubles it recovered
// from (a failed gap check, unconfirmed acknowledgements, an unreachable broker) kept, the last
// of each, so that the member's exit message says so.
void AddSummary(ConsumeSummary& total, const ConsumeSummary& one) {
  total.events += one.events;
  total.batches += one.batches;
  for (const auto& [consumer, counts] : one.counts) {
    auto& into = total.counts[consumer];
    for (size_t i = 0; i < counts.size(); ++i) into[i] += counts[i];
  }
  total.gap_actions.requested += one.gap_actions.requested;
  total.gap_actions.manual += one.gap_actions.manual;
  total.gap_actions.reported += one.gap_actions.reported;
  total.gap_actions.closed += one.gap_actions.closed;
  for (const auto& [into, from] : {std::pair{&total.gap_check_error, &one.gap_check_error},
                                   {&total.acknowledgement_error, &one.acknowledgement_error},
                                   {&total.unreachable_error, &one.unreachable_error}}) {
    if (!from->empty()) *into = *from;
  }
}

// Whether a partition's loop ended because its lease is no longer this member's: a commit fenced
// off by the epoch, or a batch held open past the lease (the loop's transactions are held for
// one lease at most, so the server ending one means the lease ran out and another member may
// have taken the partition). Both are reported by message, as the store reports them.
bool LostTheLease(const Status& status) {
  return (status.code() == Code::kFailedPrecondition &&
          status.message().find("lease lost") != std::string::npos) ||
         (status.code() == Code::kUnavailable &&
          status.message().find("idle past its hold") != std::string::npos);
}

namespace {

// One partition's consume loop, on a thread of its own.
struct Worker {
  int64_t partition = 0;
  int64_t epoch = 0;
  CancelToken cancel;
  std::atomic<bool> done{false};
  Result<ConsumeSummary> result = Status::Internal("not finished");
  ConsumeSummary partial;  // what a loop that ended on an error committed before
  std::thread thread;
};

class Member {
 public:
  Member(const Config& config, GroupOptions options)
      : config_(config),
        o_(std::move(options)),
        clock_(o_.clock != nullptr ? *o_.clock : SystemClock()) {
    if (o_.member.empty()) o_.member = DefaultMemberName();
    // The partitions' loops run on threads of their own and write one outcomes file.
    if (o_.consume.outcomes != nullptr) {
      shared_outcomes_ = SharedWritableFile(*o_.consume.outcomes);
      o_.consume.outcomes = shared_outcomes_.get();
    }
    summary_.member = o_.member;
  }

  Result<GroupSummary> Run() {
    const int64_t start_ms = clock_.MonotonicMs();
    StoreOptions leases = o_.store_options;
    leases.busy_timeout_ms = std::min(leases.busy_timeout_ms, o_.lease_ms / 3);
    EVIDENT_ASSIGN_OR_RETURN(store_, OpenStore(o_.store, leases));
    Status ended = Status::Ok();
    while (!Cancelled()) {
      ended = Tick();
      if (!ended.ok() && !Transient(ended)) break;
      if (!ended.ok()) summary_.last_error = ended.ToString();
      ended = Status::Ok();
      WaitTick();
    }
    for (auto& [partition, w] : workers_) w->cancel.Cancel();
    for (auto& [partition, w] : workers_) Reap(*w, /*lost=*/false);
    workers_.clear();
    (void)Write([&](Transaction& tx) { return tx.LeaveGroup(o_.group, o_.member); });
    EVIDENT_RETURN_IF_ERROR(ended);
    summary_.total.seconds = static_cast<double>(clock_.MonotonicMs() - start_ms) / 1000.0;
    return summary_;
  }

 private:
  static bool Transient(const Status& s) {
    return s.code() == Code::kUnavailable || s.code() == Code::kAborted;
  }
  bool Cancelled() const { return o_.cancel != nullptr && o_.cancel->cancelled(); }

  // Sleeps a third of the lease, or until a loop ended or the run was cancelled.
  void WaitTick() {
    for (int64_t left = std::max<int64_t>(o_.lease_ms / 3, 1); left > 0 && !Cancelled();) {
      const int64_t slice = std::min<int64_t>(left, 50);
      clock_.SleepMs(slice);
      left -= slice;
      for (const auto& [partition, w] : workers_) {
        if (w->done.load()) return;
      }
    }
  }

  template <typename Work>
  Status Write(Work work) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store_->Begin());
    Status s = work(*tx);
    if (!s.ok()) {
      (void)tx->Rollback();
      return s;
    }
    return tx->Commit();
  }

  // One round: renew membership and leases, collect ended loops, then balance.
  Status Tick() {
    std::vector<GroupMember> members;
    EVIDENT_RETURN_IF_ERROR(Write([&](Transaction& tx) -> Status {
      const int64_t now = clock_.NowMs();
      EVIDENT_ASSIGN_OR_RETURN(
          members, tx.JoinGroup(o_.group, o_.member, o_.partition_count, now, now + o_.lease_ms));
      return Status::Ok();
    }));
    EVIDENT_RETURN_IF_ERROR(Renew());
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (!it->second->done.load()) {
        ++it;
        continue;
      }
      Reap(*it->second, /*lost=*/false);
      it = workers_.erase(it);
    }
    // The members alive, by name, share the partitions: the first (count % alive) one more.
    const int64_t alive = std::max<int64_t>(static_cast<int64_t>(members.size()), 1);
    const auto self = std::find_if(members.begin(), members.end(),
                                   [&](const GroupMember& m) { return m.member == o_.member; });
    const int64_t rank = self == members.end() ? 0 : self - members.begin();
    const int64_t target = o_.partition_count / alive + (rank < o_.partition_count % alive ? 1 : 0);
    EVIDENT_RETURN_IF_ERROR(GiveUpAbove(target));
    return TakeUpTo(target, rank * o_.partition_count / alive);
  }

  // Renews every lease held at the epoch it was taken with; a loop whose lease is no longer
  // this member's is stopped (its next commit would be fenced off anyway).
  Status Renew() {
    if (workers_.empty()) return Status::Ok();
    std::vector<int64_t> lost;
    EVIDENT_RETURN_IF_ERROR(Write([&](Transaction& tx) -> Status {
      lost.clear();
      const int64_t now = clock_.NowMs();
      for (const auto& [partition, w] : workers_) {
        if (w->done.load()) continue;
        EVIDENT_ASSIGN_OR_RETURN(const bool renewed, tx.RenewLease(o_.group, partition, o_.member,
                                                                   w->epoch, now + o_.lease_ms));
        if (!renewed) lost.push_back(partition);
      }
      return Status::Ok();
    }));
    for (const int64_t partition : lost) {
      Worker& w = *workers_.at(partition);
      w.cancel.Cancel();
      Reap(w, /*lost=*/true);
      workers_.erase(partition);
    }
    return Status::Ok();
  }

  // Gives up the highest partitions held above `target`: each loop commits its batch in hand,
  // then the lease is released.
  Status GiveUpAbove(int64_t target) {
    while (static_cast<int64_t>(workers_.size()) > target) {
      auto last = std::prev(workers_.end());
      Worker& w = *last->second;
      w.cancel.Cancel();
      Reap(w, /*lost=*/false);
      ++summary_.partitions_given_up;
      workers_.erase(last);
    }
    return Status::Ok();
  }

  // Takes free or expired partitions, from `first` on, until `target` are held; a partition
  // whose loop failed here lately is left alone for a lease.
  Status TakeUpTo(int64_t target, int64_t first) {
    for (int64_t i = 0; i < o_.partition_count && static_cast<int64_t>(workers_.size()) < target;
         ++i) {
      const int64_t partition = (first + i) % o_.partition_count;
      if (workers_.count(partition) != 0) continue;
      const auto failed = failed_until_ms_.find(partition);
      if (failed != failed_until_ms_.end() && failed->second > clock_.NowMs()) continue;
      std::optional<GroupLease> lease;
      EVIDENT_RETURN_IF_ERROR(Write([&](Transaction& tx) -> Status {
        const int64_t now = clock_.NowMs();
        EVIDENT_ASSIGN_OR_RETURN(
            lease, tx.AcquireLease(o_.group, partition, o_.member, now, now + o_.lease_ms));
        return Status::Ok();
      }));
      if (!lease) continue;
      ++summary_.partitions_taken;
      auto w = std::make_unique<Worker>();
      w->partition = partition;
      w->epoch = lease->epoch;
      Worker* raw = w.get();
      raw->thread = std::thread([this, raw] { RunLoop(*raw); });
      workers_.emplace(partition, std::move(w));
    }
    return Status::Ok();
  }

  // Joins a loop that ended or was cancelled, adds up what it did, and releases its lease
  // unless it was lost.
  void Reap(Worker& w, bool lost) {
    if (w.thread.joinable()) w.thread.join();
    AddSummary(summary_.total, w.result.ok() ? *w.result : w.partial);
    if (w.result.ok()) {
      // ended cleanly (cancelled, or given up for balance)
    } else if (LostTheLease(w.result.status()) || TakenByAnother(w)) {
      lost = true;
    } else {
      summary_.last_error =
          "partition " + std::to_string(w.partition) + ": " + w.result.status().ToString();
      failed_until_ms_[w.partition] = clock_.NowMs() + o_.lease_ms;
    }
    if (lost) {
      ++summary_.leases_lost;
      return;
    }
    (void)Write([&](Transaction& tx) {
      return tx.ReleaseLease(o_.group, w.partition, o_.member, w.epoch);
    });
  }

  // Whether the lease a failed loop held is now another holder's, or was taken again (a new
  // epoch). A loop stopped past its lease may fail in ways its message does not name (the server
  // ended its connection before the client read why); the lease row says what happened. False
  // when the row cannot be read: the failure is then the loop's own.
  bool TakenByAnother(const Worker& w) {
    auto snapshot = store_->Read();
    if (!snapshot.ok()) return false;
    auto leases = (*snapshot)->GroupLeases(o_.group);
    if (!leases.ok()) return false;
    for (const GroupLease& l : *leases) {
      if (l.partition == w.partition) return l.holder != o_.member || l.epoch != w.epoch;
    }
    return false;
  }

  // The consume loop of one partition: a store connection, a pipeline and a broker consumer
  // of its own, from the stored position, every batch fenced by the lease.
  void RunLoop(Worker& w) {
    w.result = [&]() -> Result<ConsumeSummary> {
      StoreOptions fenced = o_.store_options;
      fenced.idle_transaction_timeout_ms = o_.lease_ms;
      // The leases keep the members' subjects apart; a decider outside the group (a replay, a
      // consume without --group) still excludes them all while its batch runs.
      fenced.deciders = StoreOptions::Deciders::kShared;
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(o_.store, fenced));
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> pipeline, Pipeline::Create(config_));
      EVIDENT_ASSIGN_OR_RETURN(
          std::unique_ptr<Source> source,
          OpenPartitionSource(o_.from, o_.source, GroupPositionName(o_, w.partition), w.partition,
                              std::max<int64_t>(o_.lease_ms * 3, 60'000)));
      ConsumeOptions options = o_.consume;
      options.resume = true;
      options.cancel = &w.cancel;
      options.progress = nullptr;
      options.until_idle_ms = -1;
      options.clock = o_.clock;
      options.partial = &w.partial;
      if (w.partition != 0) options.gap_check_interval_ms = -1;  // partition 0's holder checks
      Source* from = source.get();
      options.before_commit = [&, from](Transaction& tx, const Cursor& cursor) {
        return tx.FenceLease(o_.group, w.partition, o_.member, w.epoch,
                             cursor.a > 0 ? std::optional<int64_t>(cursor.a) : std::nullopt,
                             from->backlog(), o_.lease_ms);
      };
      return Consume(*pipeline, *store, *source, options);
    }();
    w.done.store(true);
  }

  const Config& config_;
  std::unique_ptr<WritableFile> shared_outcomes_;  // over the caller's, for the workers' threads
  GroupOptions o_;
  Clock& clock_;
  std::unique_ptr<Store> store_;  // the leases'
  std::map<int64_t, std::unique_ptr<Worker>> workers_;
  std::map<int64_t, int64_t> failed_until_ms_;  // partition -> not taken again before
  GroupSummary summary_;
};

}  // namespace

std::string GroupPositionName(const GroupOptions& options, int64_t partition) {
  return "jetstream:" + options.source.stream + "/" + options.group + "/p" +
         std::to_string(partition);
}

Result<GroupSummary> RunGroup(const Config& config, const GroupOptions& options) {
  if (options.group.empty() || options.lease_ms < 100) {
    return Status::InvalidArgument("a consumer group needs a name and a lease of at least 100 ms");
  }
  EVIDENT_ASSIGN_OR_RETURN(const SourceTraits source, SourceTraitsOf(options.from));
  if (source.group == GroupPartitions::kLeasedByStore &&
      (options.partition_count < 1 || options.partition_count > 65536)) {
    return Status::InvalidArgument("a consumer group of " + options.from +
                                   " needs 1 to 65,536 partitions (the relay's)");
  }
  if (source.group == GroupPartitions::kNone) {
    return Status::FailedPrecondition(
        options.from +
        ": a consumer group reads a source whose partitions are shared out (this one is read "
        "whole, every partition it has, by one process: run it without --group)");
  }
  EVIDENT_RETURN_IF_ERROR(CheckSourceOptions(options.from, options.source));
  if (source.group == GroupPartitions::kAssignedByBroker) return RunBrokerGroup(config, options);
  return Member(config, options).Run();
}

}  // namespace evident
