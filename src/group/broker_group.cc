// A member of a consumer group whose broker assigns the partitions (group.h, Kafka's group
// protocol): one source and one consume loop. Each partition the broker assigns is seized in the
// store (Transaction::SeizeLease: its epoch goes up) in a transaction of its own before its
// position is read, and every batch is fenced, partition by partition, by the epochs this member
// seized: a member that lost a partition (its session ended, a pause past it) cannot commit a
// batch for it once the new holder has seized it, and the new holder reads the position of
// whatever committed before. Positions are one per partition ("<source name>/p<k>": the next
// offset), written in each batch's transaction.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "evident/gaps.h"
#include "group/group_parts.h"

namespace evident {
namespace {

// What a run of the loop cannot get past by being run again: the topic, the settings, a
// stored position the topic no longer holds, a group whose partition count changed.
bool EndsTheMember(const Status& s) {
  return s.code() == Code::kInvalidArgument || s.code() == Code::kNotFound ||
         s.code() == Code::kFailedPrecondition || s.code() == Code::kCorruption ||
         s.code() == Code::kInternal;
}

class BrokerMember final : public PartitionOwner {
 public:
  BrokerMember(const Config& config, GroupOptions options)
      : config_(config),
        o_(std::move(options)),
        clock_(o_.clock != nullptr ? *o_.clock : SystemClock()) {
    if (o_.member.empty()) o_.member = DefaultMemberName();
    summary_.member = o_.member;
  }

  Result<GroupSummary> Run() {
    const int64_t start_ms = clock_.MonotonicMs();
    StoreOptions leases = o_.store_options;
    leases.busy_timeout_ms = std::min(leases.busy_timeout_ms, o_.lease_ms);
    leases.deciders = StoreOptions::Deciders::kShared;  // its gap checks run beside the loop's
    EVIDENT_ASSIGN_OR_RETURN(store_, OpenStore(o_.store, leases));
    std::thread keeper([this] { Keep(); });
    Status ended = Status::Ok();
    while (!Cancelled()) {
      ConsumeSummary partial;
      Result<ConsumeSummary> run = RunLoop(partial);
      std::unique_lock<std::mutex> lock(mutex_);
      AddSummary(summary_.total, run.ok() ? *run : partial);
      if (run.ok()) continue;
      if (LostTheLease(run.status())) {
        ++summary_.leases_lost;
        continue;  // joins again at once: the broker assigns it what it may read now
      }
      if (EndsTheMember(run.status())) {
        ended = run.status();
        break;
      }
      summary_.last_error = run.status().ToString();
      lock.unlock();
      Sleep(o_.lease_ms);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_all();
    keeper.join();
    // The partitions held at the end are released (a next holder seizes them anyway), and the
    // member leaves.
    std::map<int64_t, int64_t> held;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      held = epochs_;
    }
    (void)Write([&](Transaction& tx) -> Status {
      for (const auto& [p, epoch] : held) {
        EVIDENT_RETURN_IF_ERROR(tx.ReleaseLease(o_.group, p, o_.member, epoch));
      }
      return tx.LeaveGroup(o_.group, o_.member);
    });
    EVIDENT_RETURN_IF_ERROR(ended);
    summary_.total.seconds = static_cast<double>(clock_.MonotonicMs() - start_ms) / 1000.0;
    return summary_;
  }

  // On the source's reading thread: seizes each partition (one transaction, committed before
  // any position is read), then reads where each begins.
  Result<std::map<int64_t, int64_t>> Assigned(const std::vector<int64_t>& partitions,
                                              int64_t partition_count) override {
    std::lock_guard<std::mutex> store_lock(store_mutex_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      partition_count_ = partition_count;
    }
    std::map<int64_t, int64_t> seized;
    EVIDENT_RETURN_IF_ERROR(WriteLocked([&](Transaction& tx) -> Status {
      seized.clear();
      const int64_t now = clock_.NowMs();
      EVIDENT_RETURN_IF_ERROR(
          tx.JoinGroup(o_.group, o_.member, partition_count, now, now + o_.lease_ms).status());
      for (const int64_t p : partitions) {
        EVIDENT_ASSIGN_OR_RETURN(const GroupLease lease,
                                 tx.SeizeLease(o_.group, p, o_.member, now));
        seized[p] = lease.epoch;
      }
      return Status::Ok();
    }));
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store_->Read());
    std::map<int64_t, int64_t> begin;
    for (const int64_t p : partitions) {
      EVIDENT_ASSIGN_OR_RETURN(const std::optional<std::string> stored,
                               snapshot->GetPosition(PositionName(p)));
      if (!stored.has_value()) continue;
      int64_t next = -1;
      const auto [end, error] =
          std::from_chars(stored->data(), stored->data() + stored->size(), next);
      if (error != std::errc() || end != stored->data() + stored->size() || next < 0) {
        return Status::FailedPrecondition("the stored position '" + *stored + "' of " +
                                          PositionName(p) + " is not a partition's next offset");
      }
      begin[p] = next;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [p, epoch] : seized) epochs_[p] = epoch;
    summary_.partitions_taken += static_cast<int64_t>(partitions.size());
    return begin;
  }

  // The leases are marked free for `group status`, in one transaction; a later holder seizes
  // them whatever this says.
  void Revoked(const std::vector<int64_t>& partitions) override {
    std::map<int64_t, int64_t> given_up;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const int64_t p : partitions) {
        const auto at = epochs_.find(p);
        if (at == epochs_.end()) continue;
        given_up.insert(*at);
        epochs_.erase(at);
      }
      summary_.partitions_given_up += static_cast<int64_t>(given_up.size());
    }
    if (given_up.empty()) return;
    (void)Write([&](Transaction& tx) -> Status {
      for (const auto& [p, epoch] : given_up) {
        EVIDENT_RETURN_IF_ERROR(tx.ReleaseLease(o_.group, p, o_.member, epoch));
      }
      return Status::Ok();
    });
  }

 private:
  bool Cancelled() const { return o_.cancel != nullptr && o_.cancel->cancelled(); }

  std::string PositionName(int64_t partition) const {
    return position_prefix_ + std::to_string(partition);
  }

  // One run of the loop: a store connection, a pipeline and a member source of its own, until
  // the run is cancelled or the loop ends (a partition lost, an error: `partial` then says what
  // it committed before).
  Result<ConsumeSummary> RunLoop(ConsumeSummary& partial) {
    StoreOptions fenced = o_.store_options;
    fenced.idle_transaction_timeout_ms = o_.lease_ms;
    fenced.deciders = StoreOptions::Deciders::kShared;
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenStore(o_.store, fenced));
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> pipeline, Pipeline::Create(config_));
    SourceOptions member = o_.source;
    member.consumer = o_.group;
    member.owner = this;
    member.session_ms = o_.lease_ms;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      epochs_.clear();
      position_prefix_.clear();
    }
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Source> source, OpenSource(o_.from, member));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      position_prefix_ = source->name() + "/p";
    }
    ConsumeOptions options = o_.consume;
    options.resume = false;
    options.record_position = false;
    options.cancel = o_.cancel;
    options.progress = nullptr;
    options.until_idle_ms = -1;
    options.clock = o_.clock;
    options.gap_check_interval_ms = -1;  // the keeper checks, while this member holds partition 0
    options.partial = &partial;
    const Source* from = source.get();
    options.before_commit = [this, from](Transaction& tx, const Cursor& cursor) -> Status {
      EVIDENT_ASSIGN_OR_RETURN(const auto positions, from->PartitionPositions(cursor));
      return Fence(tx, positions);
    };
    return Consume(*pipeline, *store, *source, options);
  }

  // A batch's fence and positions: each partition it holds messages of must still be this
  // member's at the epoch it was seized with.
  // The epochs are read first, all at once: once this batch fences a partition it holds that
  // lease's row, and waiting for mutex_ then could wait for an assignment whose seize waits for
  // this batch.
  Status Fence(Transaction& tx, const std::map<int64_t, int64_t>& positions) {
    std::vector<std::pair<int64_t, std::string>> fences;  // epoch, position name
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [p, next] : positions) {
        const auto at = epochs_.find(p);
        if (at == epochs_.end()) {
          return Status::FailedPrecondition(
              "lease lost: partition " + std::to_string(p) + " of group " + o_.group +
              " was taken back from " + o_.member + " by the broker before its batch committed");
        }
        fences.emplace_back(at->second, PositionName(p));
      }
    }
    size_t i = 0;
    for (const auto& [p, next] : positions) {
      const auto& [epoch, name] = fences[i++];
      EVIDENT_RETURN_IF_ERROR(
          tx.FenceLease(o_.group, p, o_.member, epoch, next, std::nullopt, o_.lease_ms));
      EVIDENT_RETURN_IF_ERROR(tx.SetPosition(name, std::to_string(next)));
    }
    return Status::Ok();
  }

  // Until the run ends: renews this member's row (what `group status` lists) every third of a
  // lease, and runs the store-wide gap deadline checks while this member holds partition 0.
  // The gap checks run on a connection of their own, without mutex_: they may take a while, and
  // neither an assignment nor a batch's fence waits for them.
  void Keep() {
    std::unique_ptr<Store> gaps_store;
    int64_t last_gaps_ms = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_) {
      if (const int64_t count = partition_count_; count > 0) {
        lock.unlock();  // a batch's fence may need mutex_ while its transaction holds the store
        const int64_t now = clock_.NowMs();
        const Status joined = Write([&](Transaction& tx) {
          return tx.JoinGroup(o_.group, o_.member, count, now, now + o_.lease_ms).status();
        });
        lock.lock();
        if (!joined.ok()) summary_.last_error = joined.ToString();
      }
      const int64_t interval = o_.consume.gap_check_interval_ms;
      if (interval >= 0 && epochs_.count(0) > 0 &&
          clock_.MonotonicMs() - last_gaps_ms >= interval) {
        last_gaps_ms = clock_.MonotonicMs();
        lock.unlock();
        const Result<GapCheck> checked = CheckGaps(gaps_store);
        lock.lock();
        if (checked.ok()) {
          GapCheck& total = summary_.total.gap_actions;
          total.requested += checked->requested;
          total.manual += checked->manual;
          total.reported += checked->reported;
          total.closed += checked->closed;
        } else {
          summary_.total.gap_check_error = checked.status().ToString();
        }
      }
      wake_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(o_.lease_ms / 3, 50)));
    }
  }

  // The store-wide gap deadline checks (consumer.h), on `store`, opened on first use.
  Result<GapCheck> CheckGaps(std::unique_ptr<Store>& store) {
    if (store == nullptr) {
      StoreOptions options = o_.store_options;
      options.deciders = StoreOptions::Deciders::kShared;
      EVIDENT_ASSIGN_OR_RETURN(store, OpenStore(o_.store, options));
    }
    return CheckGapDeadlines(*store, clock_.NowMs(),
                             {.partition_count = o_.consume.outbox_partition_count});
  }

  // Sleeps `ms`, or until the run is cancelled.
  void Sleep(int64_t ms) {
    for (int64_t left = ms; left > 0 && !Cancelled(); left -= 50) {
      clock_.SleepMs(std::min<int64_t>(left, 50));
    }
  }

  // A transaction on the leases' store (the reading thread, the keeper and Run share it). Never
  // called with mutex_ held: a batch's fence takes mutex_ while its transaction may hold the
  // store (SQLite's one writer), and this would wait for that transaction.
  template <typename Work>
  Status Write(Work work) {
    std::lock_guard<std::mutex> lock(store_mutex_);
    return WriteLocked(work);
  }
  // The same with store_mutex_ already held.
  template <typename Work>
  Status WriteLocked(Work work) {
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store_->Begin());
    Status s = work(*tx);
    if (!s.ok()) {
      (void)tx->Rollback();
      return s;
    }
    return tx->Commit();
  }

  const Config& config_;
  GroupOptions o_;
  Clock& clock_;
  std::mutex store_mutex_;        // taken before mutex_, never after it
  std::unique_ptr<Store> store_;  // the leases' and the members'; guarded by store_mutex_

  std::mutex mutex_;  // guards what follows
  std::condition_variable wake_;
  bool done_ = false;
  int64_t partition_count_ = 0;        // the topic's, as the last assignment said
  std::map<int64_t, int64_t> epochs_;  // partition -> the epoch this member seized it at
  std::string position_prefix_;        // "<source name>/p"
  GroupSummary summary_;               // partitions_* and last_error change under mutex_
};

}  // namespace

Result<GroupSummary> RunBrokerGroup(const Config& config, const GroupOptions& options) {
  return BrokerMember(config, options).Run();
}

}  // namespace evident
