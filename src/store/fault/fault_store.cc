// FaultStore (store_memory.h): any Store, with chosen calls failed or delayed. It derives from the
// forwarding bases (store_wrapper.h), so every call of the Store, its Transactions and its
// Snapshots reaches the wrapped store after FaultStore::State::Enter, which counts it and fires
// the faults set for that count: no call is left to a default of store.h by omission.
#include "evident/fault_store.h"

#include <array>
#include <cassert>
#include <utility>
#include <vector>

namespace evident {
namespace {

constexpr std::array<std::string_view, kStoreCallCount> kStoreCallNames = {
    "begin",
    "read",
    "commit",
    "load",
    "find-ledger",
    "insert-ledger",
    "mark-applied",
    "count-duplicate",
    "delete-ledger",
    "applied-after",
    "read-projection",
    "put-projection",
    "find-deferred",
    "insert-deferred",
    "delete-deferred",
    "quarantine",
    "journal",
    "put-evidence",
    "set-position",
    "get-position",
    "find-projection",
    "projections-of",
    "ledger-of",
    "deferred-of",
    "all-deferred",
    "quarantine-of",
    "journal-of",
    "evidence-of",
    "counts",
    "append-outbox",
    "pending-outbox",
    "mark-outbox-sent",
    "record-outbox-attempt",
    "delete-sent-outbox",
    "outbox-rows",
    "outbox-stats-now",
    "find-outbox",
    "outbox-of-subject",
    "find-quarantine",
    "set-quarantine-status",
    "audit-quarantine",
    "list-quarantine",
    "audit-of",
    "find-gap",
    "insert-gap",
    "close-gaps",
    "update-gap",
    "gap-records-of",
    "open-gap-records",
    "insert-intent",
    "find-intent",
    "due-intents",
    "update-intent",
    "log-intent",
    "latest-intent-of",
    "insert-compensation",
    "update-compensation",
    "compensations-of-intent",
    "list-intents",
    "intent-log-of",
    "list-compensations",
    "insert-correction",
    "corrections-of",
    "will-decide",
    "read-projection-locked",
    "park-outbox",
    "unpark-outbox",
    "claim-outbox",
    "join-group",
    "leave-group",
    "acquire-lease",
    "renew-lease",
    "release-lease",
    "fence-lease",
    "seize-lease",
    "intend-once",
    "record-compensation",
    "record-gap",
    "group-leases",
    "group-members",
    "group-partition-count",
    "wait-for-outbox",
    "remove-retained",
    "record-retention",
    "retainable",
    "count-retainable",
    "latest-retention",
    "space-now",
    "return-space",
    "compact",
    "push-set",
    "latest-set-version",
    "set-at",
    "set-history",
    "will-decide-subject",
    "forget-ledger-digests",
    "retainable-ledger",
    "count-ledger-digests",
};

}  // namespace

std::string_view StoreCallName(StoreCall call) {
  return kStoreCallNames[static_cast<size_t>(call)];
}

struct FaultStore::State {
  // Counts the call, sleeps the delays of the faults set for this count, and returns the first
  // of their errors (OK when none fails it); `after` (may be null) says whether that error comes
  // after the call took effect (StoreFault::after_call).
  Status Enter(StoreCall call, bool* after = nullptr) {
    const int64_t count = ++calls[static_cast<size_t>(call)];
    Status failure;
    for (const StoreFault& fault : faults) {
      if (fault.call != call || fault.nth != count) continue;
      ++fired;
      if (fault.delay_ms > 0 && sleep_ms) sleep_ms(fault.delay_ms);
      if (fault.code != Code::kOk && failure.ok()) {
        failure = Status(fault.code, "injected fault: " + std::string(StoreCallName(call)) + " #" +
                                         std::to_string(count) +
                                         (fault.after_call ? " (after it took effect)" : ""));
        if (after != nullptr) *after = fault.after_call;
      }
    }
    return failure;
  }

  std::function<void(int64_t)> sleep_ms;
  std::vector<StoreFault> faults;
  std::array<int64_t, kStoreCallCount> calls{};
  int64_t fired = 0;
};

namespace {

using FaultState = FaultStore::State;

// Every call forwarded, each counted first (Enter); only Commit and Rollback are its own.
class FaultTransaction final : public TransactionWrapper {
 public:
  FaultTransaction(std::unique_ptr<Transaction> inner, std::shared_ptr<FaultState> state)
      : TransactionWrapper(std::move(inner)), state_(std::move(state)) {}

  // A failed commit drops the work, as a crash before the commit record would; one failed after
  // the call (StoreFault::after_call) keeps it, and says it failed all the same.
  Status Commit() override {
    assert(target_ != nullptr && "transaction used after Commit or Rollback");
    bool after = false;
    Status injected = state_->Enter(StoreCall::kCommit, &after);
    std::unique_ptr<Transaction> inner = std::move(target_);
    if (!injected.ok() && after) {
      const Status committed = inner->Commit();
      return committed.ok() ? injected : committed;
    }
    if (!injected.ok()) {
      (void)inner->Rollback();  // the injected failure is the answer either way
      return injected;
    }
    return inner->Commit();
  }
  Status Rollback() override {
    assert(target_ != nullptr && "transaction used after Commit or Rollback");
    std::unique_ptr<Transaction> inner = std::move(target_);
    return inner->Rollback();
  }

 private:
  Status Enter(StoreCall call) override { return state_->Enter(call); }

  std::shared_ptr<FaultState> state_;
};

class FaultSnapshot final : public SnapshotWrapper {
 public:
  FaultSnapshot(std::unique_ptr<Snapshot> inner, std::shared_ptr<FaultState> state)
      : SnapshotWrapper(std::move(inner)), state_(std::move(state)) {}

 private:
  Status Enter(StoreCall call) override { return state_->Enter(call); }

  std::shared_ptr<FaultState> state_;
};

}  // namespace

FaultStore::FaultStore(std::unique_ptr<Store> inner, std::function<void(int64_t)> sleep_ms)
    : StoreWrapper(std::move(inner)), state_(std::make_shared<State>()) {
  assert(target_ != nullptr);
  state_->sleep_ms = std::move(sleep_ms);
}

FaultStore::~FaultStore() = default;

void FaultStore::Add(const StoreFault& fault) {
  assert(fault.nth >= 1 && fault.delay_ms >= 0);
  state_->faults.push_back(fault);
}

void FaultStore::Clear() { state_->faults.clear(); }

int64_t FaultStore::calls(StoreCall call) const { return state_->calls[static_cast<size_t>(call)]; }

int64_t FaultStore::faults_fired() const { return state_->fired; }

Status FaultStore::Enter(StoreCall call) { return state_->Enter(call); }

Result<std::unique_ptr<Transaction>> FaultStore::Begin() {
  EVIDENT_RETURN_IF_ERROR(state_->Enter(StoreCall::kBegin));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> inner, target_->Begin());
  return std::unique_ptr<Transaction>(new FaultTransaction(std::move(inner), state_));
}

Result<std::unique_ptr<Snapshot>> FaultStore::Read() {
  EVIDENT_RETURN_IF_ERROR(state_->Enter(StoreCall::kRead));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> inner, target_->Read());
  return std::unique_ptr<Snapshot>(new FaultSnapshot(std::move(inner), state_));
}

}  // namespace evident
