// evident/store_memory.h — the in-memory backend of evident/store.h, and a fault-injecting
// wrapper around any backend. For tests and the deterministic simulation; nothing here touches
// a disk.
//
// A memory store keeps its committed state in a MemoryDatabase; stores opened on the same
// database see the same state (as processes sharing a database file do), so "restarting" a
// consumer is opening a new store on the old database. A transaction's writes are private to it
// until Commit; a crash (the transaction or store destroyed without Commit) drops them.
// One writer per database, like SQLite: Begin while another store's transaction is open on the
// same database is refused at once with kUnavailable (the caller retries with backoff). A
// Snapshot sees the state committed when Read() returned, whatever commits after it.
//
// Thread-safety: a MemoryDatabase may be shared by stores on any threads; each store, like any
// Store, is used by one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "evident/store.h"
#include "evident/store_wrapper.h"

namespace evident {

class MemoryDatabase;  // committed state; shared by the stores opened on it

std::shared_ptr<MemoryDatabase> NewMemoryDatabase();
Result<std::unique_ptr<Store>> OpenMemoryStore(std::shared_ptr<MemoryDatabase> database);

// The process-wide database of that name, created empty on first use and kept for the life of
// the process ("memory:NAME" opens a store on it). Thread-safe.
std::shared_ptr<MemoryDatabase> NamedMemoryDatabase(std::string_view name);

// A fault-injecting store around any backend: fails or delays a chosen call. A failed call does
// not reach the wrapped store (nothing is written); a failed Commit also rolls the wrapped
// transaction back, dropping its work as a crash before the commit record would, and ends the
// transaction. Several faults may name the same call: their delays add up and the first error
// listed wins.
struct StoreFault {
  StoreCall call = StoreCall::kCommit;
  int64_t nth = 1;  // the nth call of that kind (counted from 1 over the store's life)
  Code code = Code::kUnavailable;  // the error returned (kOk: no error, only the delay)
  int64_t delay_ms = 0;            // slept (through the sleep function) before the call runs
};

// Lifecycle: transactions and snapshots handed out share the counters and faults with the store
// and may outlive it (the wrapped store's own rules then apply). Thread-safety: like any Store,
// one thread at a time, its transactions and snapshots included.
class FaultStore final : public StoreWrapper {
 public:
  // `sleep_ms` does the delays (a manual clock's advance in simulations); null: no delays.
  explicit FaultStore(std::unique_ptr<Store> inner,
                      std::function<void(int64_t)> sleep_ms = nullptr);
  ~FaultStore() override;

  void Add(const StoreFault& fault);    // nth >= 1, delay_ms >= 0
  void Clear();                         // drops every fault; the counts stay
  int64_t calls(StoreCall call) const;  // calls of that kind so far
  int64_t faults_fired() const;

  Result<std::unique_ptr<Transaction>> Begin() override;
  Result<std::unique_ptr<Snapshot>> Read() override;

  struct State;  // shared with the wrapped transactions

 private:
  Status Enter(StoreCall call) override;  // WaitForOutbox, the calls not overridden here

  std::shared_ptr<State> state_;
};

}  // namespace evident
