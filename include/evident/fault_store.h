// evident/fault_store.h — a fault-injecting store around any other (a StoreWrapper), for tests
// and the deterministic simulation: the store's counterpart of fault_transport.h.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "evident/store.h"
#include "evident/store_wrapper.h"

namespace evident {

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
  // kCommit only: the wrapped transaction commits first, and then the error is returned: a
  // commit that took effect but was reported failed (a connection lost after the server
  // committed). The caller must find its work done when it tries again.
  bool after_call = false;
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
