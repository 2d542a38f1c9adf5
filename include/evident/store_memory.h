// evident/store_memory.h — the in-memory backend of evident/store.h, for tests, embedding and
// the deterministic simulation (its fault-injecting wrapper, around any backend, is
// fault_store.h); nothing here touches a disk.
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

}  // namespace evident
