#include "pg_ext/pg_guard.h"

extern "C" {
#include <postgres.h>
// postgres.h first
#include <utils/elog.h>
#include <utils/memutils.h>
}

namespace evident::postgres {
namespace {

struct Caught {
  bool failed;
  ErrorData* data;  // palloc'd in the caller's memory context
};

// No C++ object lives in this frame: ereport's longjmp lands in it and unwinds nothing.
void CallC(void (*fn)(void*), void* arg, Caught* caught) {
  MemoryContext context = CurrentMemoryContext;
  PG_TRY();
  { fn(arg); }
  PG_CATCH();
  {
    MemoryContextSwitchTo(context);
    caught->data = CopyErrorData();
    FlushErrorState();
    caught->failed = true;
  }
  PG_END_TRY();
}

}  // namespace

PgError PgCall(void (*fn)(void*), void* arg) {
  Caught caught{.failed = false, .data = nullptr};
  CallC(fn, arg, &caught);
  if (!caught.failed) return {};
  PgError error{.failed = true,
                .sqlstate = unpack_sql_state(caught.data->sqlerrcode),
                .message = caught.data->message != nullptr ? caught.data->message : "(no message)",
                .data = caught.data};
  return error;
}

}  // namespace evident::postgres
