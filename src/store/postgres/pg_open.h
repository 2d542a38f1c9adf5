// store/postgres/pg_open.h — the PostgreSQL store over a Connection the caller made: the SPI
// connection of evident_pg.so, inside a server backend (pg_ext/). Internal to evident.
#pragma once

#include <memory>
#include <string>

#include "evident/store.h"
#include "store/postgres/pg_connection.h"

namespace evident::postgres {

// The store over `connection`, as it is: no schema created or migrated, no layout read (the
// caller checks it, LayoutOver). It cannot wait for outbox rows (WaitForOutbox fails).
std::unique_ptr<Store> OpenStoreOver(std::unique_ptr<Connection> connection);

// What a database holds, read over `connection` in one statement: the schema its unqualified
// names resolve to (current_schema()) and the store's layout there (0: no evident store).
struct LayoutFound {
  std::string schema;
  int64_t layout = 0;
};
Result<LayoutFound> LayoutOver(Connection& connection);

}  // namespace evident::postgres
