// pg_ext/spi_connection.h — the PostgreSQL store's Connection inside a server backend, over
// SPI, for the functions of evident_pg.so: the store's statements run in the caller's own
// transaction.
//
// A store transaction ("BEGIN ..." from PgTransaction or PgSnapshot) is an internal
// subtransaction of the caller's, "COMMIT" releases it into the caller's transaction and
// "ROLLBACK" rolls it back; a statement outside one runs in a subtransaction of its own. A
// statement the server refuses rolls its subtransaction back at once (the caller's transaction
// carries on, without anything of the store's transaction) and is the connection's failure,
// as a refused statement on libpq; later statements of that transaction are not run.
//
// Every call into PostgreSQL that can raise an error runs under PG_TRY in a frame that holds no
// C++ object: the error's longjmp never crosses a C++ frame, and no C++ exception is thrown
// while PG_TRY is active. Call between SPI_connect and SPI_finish, in one backend, no threads.
#pragma once

#include <memory>

#include "store/postgres/pg_connection.h"

namespace evident::postgres {

std::unique_ptr<Connection> NewSpiConnection();

}  // namespace evident::postgres
