// pg_ext/spi_proxy.h — for tests only: the PostgreSQL store with every statement run inside the
// server through SpiConnection (evident_pg_spi_test.so's evident_spi_statement), in the
// transaction of a libpq connection of the store's own: the store conformance suite's backend
// "postgresql_spi". BEGIN, COMMIT and ROLLBACK go to that connection as they are; every other
// statement of the store goes through SPI inside its transaction, as the functions of
// evident_pg.so run the store inside a caller's transaction.
#pragma once

#include <memory>
#include <string>

#include "evident/store.h"

namespace evident {

// `uri`'s schema must hold a store and the function evident_spi_statement
// (InstallSpiStatementFunction).
Result<std::unique_ptr<Store>> OpenSpiProxyStore(const std::string& uri, bool deciders_shared);

// Creates evident_spi_statement in `uri`'s schema from the test module at `library` (a path the
// server can read).
Status InstallSpiStatementFunction(const std::string& uri, const std::string& library);

}  // namespace evident
