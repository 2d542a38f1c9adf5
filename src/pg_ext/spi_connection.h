// pg_ext/spi_connection.h — the PostgreSQL store's Connection inside a server backend, over
// SPI, for the functions of evident_pg.so: the store's statements run in the caller's own
// transaction, as the caller's own statements would.
//
// No subtransaction of evident's: a store transaction ("BEGIN ..." from PgTransaction or
// PgSnapshot) is a span of the caller's transaction ("COMMIT" ends the span; its writes commit
// when the caller's transaction does). A statement the server refuses cannot be undone apart
// from the caller's transaction, so nothing more runs after it: its error is kept
// (SpiCall::server_error) and the entry point raises it again, as it was, once the C++ frames
// above have returned; the caller's transaction (or its savepoint) is aborted with everything
// of the call. A store transaction rolled back after it wrote (no server error) is kept too
// (SpiCall::undo_needed): the entry point then raises an error of its own.
//
// Every call into PostgreSQL that can raise an error runs under PG_TRY in a frame that holds no
// C++ object (pg_guard.h): the error's longjmp never crosses a C++ frame. Call between
// SPI_connect and SPI_finish, in one backend, no threads.
#pragma once

#include <memory>

#include "pg_ext/pg_guard.h"
#include "store/postgres/pg_connection.h"

namespace evident::postgres {

// What the call in progress in this backend left for its entry point to raise.
struct SpiCall {
  ErrorData* server_error = nullptr;  // the first statement the server refused
  bool undo_needed = false;           // a store transaction rolled back after it wrote
};
// The backend's call in progress (one at a time: no threads); BeginSpiCall resets it.
SpiCall& CurrentSpiCall();
void BeginSpiCall();

std::unique_ptr<Connection> NewSpiConnection();

}  // namespace evident::postgres
