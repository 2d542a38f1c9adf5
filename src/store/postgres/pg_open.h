// store/postgres/pg_open.h — the PostgreSQL store over a Connection the caller made: the SPI
// connection of evident_pg.so, inside a server backend (pg_ext/). Internal to evident.
#pragma once

#include <memory>
#include <string>

#include "evident/store.h"
#include "store/postgres/pg_connection.h"

namespace evident::postgres {

// The store over `connection`, as it is: no schema created or migrated, no layout read (the
// caller checks it, LayoutIn). It cannot wait for outbox rows (WaitForOutbox fails).
// `deciders_shared`: consumers' locks taken shared (StoreOptions::deciders); `deciders_by_subject`:
// shared, and each (consumer, subject) decided locked exclusively (Session).
std::unique_ptr<Store> OpenStoreOver(std::unique_ptr<Connection> connection,
                                     bool deciders_shared = false,
                                     bool deciders_by_subject = false);

// What a schema holds: its name, the store's layout there (0: no evident store), and the digest
// of its latest contract set (empty: none).
struct LayoutFound {
  std::string schema;
  int64_t layout = 0;
  std::string contracts_digest;
};
// Read over `connection` in `schema`, whose tables the caller looked up itself (a statement
// naming a table that is not there fails as it is planned): one statement, none without a store.
Result<LayoutFound> LayoutIn(Connection& connection, std::string schema, bool has_store,
                             bool has_sets);

}  // namespace evident::postgres
