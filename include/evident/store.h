// evident/store.h — the consumer store: ledger with receipts, projections, deferred events,
// quarantine, journal, evidence, source positions, the outbox, effects and consumer groups.
//
// The contract is composed of one interface pair per concern, each in its own header: the
// decision core (store_decisions.h: DecisionWrites, DecisionReads), quarantine
// (store_quarantine.h), the outbox (store_outbox.h), effects and compensations
// (store_effects.h), consumer groups (store_groups.h) and retention (store_retention.h). A
// Transaction is all the write interfaces and Commit; a Snapshot all the read ones; a module that
// needs one concern takes that interface (the relay's outbox calls, a runner's effect calls). A
// backend implements Transaction, Snapshot and Store whole; a wrapper derives from store_wrapper.h.
//
// Writes happen through a Transaction (Store::Begin): the pipeline puts every write of a batch
// in one — receipts + ledger + projection + deferred + quarantine + journal + source position
// commit together or not at all — and a caller's own writes can join it (an outbox row, a business
// table) through the backend's native handle (store_sqlite.h). Reads for evidence, gaps and
// guards go through a Snapshot (Store::Read): one consistent view, every list bounded.
//
// Outcomes of the write path are values: an insert that finds its key reports kAlreadyThere and
// the transaction stays usable on every database; a projection put whose expected version no
// longer holds fails with Code::kAborted (another writer got there first: roll back and retry the
// batch). Everything else that fails is the store failing.
//
// Backends: SQLite (embedded default, store_sqlite.h), PostgreSQL (store_postgres.h), memory
// (store_memory.h); wrappers of any of them derive from store_wrapper.h. OpenStore(uri)
// dispatches on the URI's scheme. One conformance suite (src/store/store_conformance_test.cc)
// runs against every backend.
//
// Thread-safety: a Store, its Transaction and its Snapshot are used by one thread at a time; a
// process with several workers opens one Store per worker. A Store has at most one open
// Transaction or Snapshot at a time (Begin or Read while one is open: kFailedPrecondition);
// this is the one statement of that rule, the backends' headers refer to it.
// A Transaction or Snapshot may outlive its Store: it still ends cleanly.
// Times are milliseconds since the Unix epoch (UTC).
#pragma once

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/outbox.h"
#include "evident/outcome.h"
#include "evident/status.h"
#include "evident/store_contracts.h"
#include "evident/store_decisions.h"
#include "evident/store_effects.h"
#include "evident/store_groups.h"
#include "evident/store_outbox.h"
#include "evident/store_quarantine.h"
#include "evident/store_retention.h"
#include "evident/store_rows.h"

namespace evident {

// One open write transaction. Destroying it without Commit rolls it back.
class Transaction : public DecisionWrites,
                    public QuarantineWrites,
                    public OutboxWrites,
                    public EffectWrites,
                    public GroupWrites,
                    public RetentionWrites,
                    public ContractReads,
                    public ContractWrites {
 public:
  ~Transaction() override = default;

  // Makes every write durable (per the backend's durability setting) or none of them. After
  // Commit or Rollback the transaction is finished; any further call is a programmer error.
  virtual Status Commit() = 0;
  virtual Status Rollback() = 0;
};

// One consistent read view, taken when Read() returns: every call sees the same committed state.
// Destroy it to release the view (on SQLite it holds the WAL from being checkpointed past it).
// rows_max must be >= 0.
class Snapshot : public DecisionReads,
                 public QuarantineReads,
                 public OutboxReads,
                 public EffectReads,
                 public GroupReads,
                 public RetentionReads,
                 public ContractReads {
 public:
  ~Snapshot() override = default;

  // Rows per table, for tests and summaries: ledger, projection, deferred, quarantine, journal,
  // effect, compensation.
  virtual Result<std::vector<std::pair<std::string, int64_t>>> Counts() = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual Result<std::unique_ptr<Transaction>> Begin() = 0;
  virtual Result<std::unique_ptr<Snapshot>> Read() = 0;
  // True when reading a batch's rows at once (Transaction::Load) saves round trips to a server:
  // the consume loop then loads each batch before deciding it. An embedded store answers row by
  // row as fast, and a Load would only read everything twice.
  virtual bool BatchLoadPays() const { return false; }
  // True when several relays (relay.h) may run on this store at once: each takes its rows with
  // Transaction::ClaimOutbox and publishes them inside that transaction. False: one relay per
  // store, reading pending rows from snapshots so that its publishing holds no write lock.
  virtual bool RelaysShare() const { return false; }
  // Waits until an outbox row may have been committed since the last call (true), or until
  // `timeout_ms` passed (false), for an idle relay. Default: sleeps `timeout_ms` and says false
  // (the relay then looks again); a store that can be told of commits returns at once.
  virtual Result<bool> WaitForOutbox(int64_t timeout_ms);

  // The store's file and what of it is free (pages left by removed rows), for a store that
  // keeps one file (SQLite); `applies` false for a store whose server manages its own space
  // (PostgreSQL's autovacuum reuses the space of removed rows).
  struct Space {
    bool applies = false;
    bool incremental = false;  // free pages can be given back without a rewrite
    int64_t file_bytes = 0, free_bytes = 0;
  };
  virtual Result<Space> SpaceNow() { return Space{}; }
  // Gives up to `pages_max` free pages back to the file system, in short steps that never
  // rewrite the file (SQLite's incremental vacuum); returns the bytes given back. 0 where it
  // does not apply or the store was created without incremental vacuum.
  virtual Result<int64_t> ReturnSpace(int64_t pages_max) {
    (void)pages_max;
    return int64_t{0};
  }
  // Rewrites the whole store so that it holds no free page and, from then on, gives free pages
  // back incrementally (SQLite: VACUUM, which locks the store for its whole run and needs as
  // much free disk as the store's size). kFailedPrecondition where it does not apply.
  virtual Status Compact() {
    return Status::FailedPrecondition("this store manages its own space");
  }
};

// Options every backend understands; a backend's own header adds its own.
struct StoreOptions {
  // How long to wait for a lock held by another process or connection, in milliseconds. A
  // writer that finds the store locked past this is refused (kUnavailable, naming the holder
  // when the backend can).
  int64_t busy_timeout_ms = 5000;
  // A write transaction left open without a word to the store for this long is ended by the
  // store, so that a stalled process (stopped, cut off) cannot hold the locks of its writes
  // while another takes its work over; 0: never. PostgreSQL only (a consumer group sets it to
  // its lease); an embedded store ends with its process.
  int64_t idle_transaction_timeout_ms = 0;
  // Open an existing store for reading only: never create it, never change it. A missing
  // store, or one that is not an evident store, is refused (kNotFound, kFailedPrecondition).
  bool read_only = false;
  // Create the store when it is absent. false: a missing store is refused (kNotFound), for a
  // program that only works on a store others made (a relay: a mistyped path must not become
  // an empty store it then watches forever).
  bool create = true;
  // How deciders of one consumer in several processes keep apart (PostgreSQL; an embedded
  // store has one writer at a time). kExclusive: a write transaction takes its consumers' lock
  // before it reads their ledger, projections or deferred events, and holds it to its end, so
  // two processes deciding for one consumer take turns batch by batch and never decide a subject
  // from rows the other is changing. kShared: the caller keeps them apart itself (a consumer
  // group's leases give each subject to one member); its transactions run side by side, and
  // wait only for an exclusive holder (a replay, a consume outside the group).
  enum class Deciders : uint8_t { kExclusive, kShared };
  Deciders deciders = Deciders::kExclusive;
  // SQLite's PRAGMA synchronous ("FULL", "NORMAL", "OFF"; empty: FULL). A server store keeps its
  // own durability settings and does not read it.
  std::string synchronous;
};

// Opens a store from a URI, dispatching on its scheme through the registry (registry.h):
// "sqlite:PATH" (store_sqlite.h), "memory:NAME" (store_memory.h; one process-wide store per
// name), "postgresql://..." (store_postgres.h). kInvalidArgument for a URI of no known scheme.
Result<std::unique_ptr<Store>> OpenStore(std::string_view uri, const StoreOptions& options = {});

// What MigrateStore did: the layout the store had (nullopt when the backend does not say, or 0
// for a store it created) and the layout it has now.
struct StoreMigration {
  std::optional<int64_t> layout_before;
  int64_t layout = 0;
};
// Brings the store at `uri` to the layout this build writes, creating it when absent; refuses a
// store of a newer layout (kFailedPrecondition). A SQLite store migrates whenever it is opened
// for writing; a PostgreSQL store, shared by processes that may run an older build, only here.
Result<StoreMigration> MigrateStore(std::string_view uri);

}  // namespace evident
