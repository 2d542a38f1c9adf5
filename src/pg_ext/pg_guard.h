// pg_ext/pg_guard.h — the one way evident_pg.so calls into PostgreSQL where an error can be
// raised: `fn(arg)` runs under PG_TRY in a frame of its own that holds no C++ object, and an
// error it raises (ereport's longjmp) comes back as a value. `fn` is plain C-style code: it
// throws no C++ exception (one leaving PG_TRY would leave PostgreSQL's error stack pointing at
// a dead frame), and allocates with palloc.
#pragma once

#include <string>

extern "C" {
struct ErrorData;
}

namespace evident::postgres {

struct PgError {
  bool failed = false;
  std::string sqlstate;  // five characters, e.g. "23505"
  std::string message;
  // The error itself (palloc'd in the memory context of the call), to be raised again as it was
  // (ReThrowError) once the C++ frames above it have returned.
  ErrorData* data = nullptr;
};

PgError PgCall(void (*fn)(void*), void* arg);

}  // namespace evident::postgres
