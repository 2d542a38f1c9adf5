// evident_sqlite.so — evident's producer functions for any SQLite connection (Python's sqlite3,
// Go, Node, the sqlite3 shell): the event checked against the contracts the store holds and
// appended to the outbox inside the caller's own transaction, so a refused event rolls the
// business change back with it.
//
//   evident_append(event)             -> the row's seq (the existing row's for a duplicate with
//                                        the same bytes); a refusal is an SQL error whose message
//                                        starts with its reason code
//   evident_try_append(event)         -> {"outcome","reason","seq"} as JSON text; never an error
//                                        for a refused event
//   evident_compensate(key, subject, owner_source, owner_version, decision)
//                                     -> 1 inserted, 0 already there (seed 002's owner side)
//   evident_decide(consumer, event)   -> a JSON array: the events to apply now, in order (the
//                                        input's own decision first, then each deferred event it
//                                        made applicable), decided with the store's consumer set
//                                        (stored_consumers.h); every decision is written in the
//                                        caller's transaction
//
// Every call runs inside the caller's transaction (BEGIN IMMEDIATE ... COMMIT): a call outside
// one is refused, since a failing statement in autocommit mode would not undo a write made
// under it. The calls reach SQLite only through the extension API's table (this module links
// no libsqlite3: two copies of SQLite in one process do not see each other's file locks). The
// connection must be in WAL mode at synchronous FULL or EXTRA, on a store of this build's
// layout (`evident store migrate --store sqlite:PATH` prepares a file); each call says which
// when it is not. No C++ exception crosses into SQLite: each function's body runs under one
// guard that turns any into an SQL error.
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <simdjson.h>

#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "core/base64.h"
#include "evident/clock.h"
#include "evident/outbox.h"
#include "evident/store_sqlite.h"
#include "evident/stored_consumers.h"
#include "evident/stored_contracts.h"
#include "json/writer.h"

namespace evident {
namespace {

// What a connection keeps between calls: the Outbox of the contract set it last used, built
// again when a call's transaction sees a newer set (StoredOutbox), never stale.
struct ConnectionState {
  StoredOutbox outbox;
  Decider decider;
  SqliteConnectionCache layout;  // what the store learnt of the file, by its schema cookie
};

void Fail(sqlite3_context* context, const std::string& message, int code = SQLITE_ERROR) {
  sqlite3_result_error(context, message.c_str(), static_cast<int>(message.size()));
  sqlite3_result_error_code(context, code);
}

// An error whose text is a constant: nothing allocated (for an exception's path).
void FailConstant(sqlite3_context* context, const char* message) {
  sqlite3_result_error(context, message, -1);
  sqlite3_result_error_code(context, SQLITE_ERROR);
}

// Runs `body`, which sets the function's result; an exception becomes an SQL error. Out of
// memory is reported as an error of evident's (SQLITE_ERROR), not as SQLite's own NOMEM, which
// would make SQLite roll back the caller's whole transaction (evident's savepoint was already
// undone as the exception left it).
template <typename Body>
void Guarded(sqlite3_context* context, Body&& body) noexcept {
  try {
    body();
  } catch (const std::bad_alloc&) {
    FailConstant(context, "evident: out of memory");
  } catch (const std::exception& e) {
    try {
      Fail(context, std::string("evident: internal error: ") + e.what());
    } catch (...) {
      FailConstant(context, "evident: internal error");
    }
  } catch (...) {
    FailConstant(context, "evident: internal error");
  }
}

// The store over the calling connection, inside the caller's transaction.
Result<std::unique_ptr<Store>> CallerStore(sqlite3_context* context, std::string_view function) {
  sqlite3* db = sqlite3_context_db_handle(context);
  if (sqlite3_get_autocommit(db) != 0) {
    return Status::FailedPrecondition(
        std::string(function) +
        " joins your transaction: call it between BEGIN IMMEDIATE and COMMIT, so that its row "
        "commits or rolls back with your writes");
  }
  // SQLite opens no savepoint while a writing statement runs (an INSERT whose values call the
  // function, an unfinished INSERT ... RETURNING).
  for (sqlite3_stmt* s = sqlite3_next_stmt(db, nullptr); s != nullptr;
       s = sqlite3_next_stmt(db, s)) {
    if (sqlite3_stmt_busy(s) != 0 && sqlite3_stmt_readonly(s) == 0) {
      return Status::InvalidArgument(
          std::string(function) +
          " runs in a SELECT of its own, not inside a statement that writes (or while one is "
          "unfinished): SELECT " +
          std::string(function) + "(?), then use the answer");
    }
  }
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(context));
  return OpenSqliteStoreOnConnection(db, &state->layout);
}

std::string_view TextArgument(sqlite3_value* value) {
  const auto* bytes = static_cast<const char*>(sqlite3_value_blob(value));
  const int size = sqlite3_value_bytes(value);
  return bytes == nullptr ? std::string_view() : std::string_view(bytes, static_cast<size_t>(size));
}

// Checks and appends `event` in the caller's transaction (a savepoint of it: a failure leaves
// nothing of the call).
Result<OutboxDecision> Append(sqlite3_context* context, std::string_view function,
                              std::string_view event) {
  auto* state = static_cast<ConnectionState*>(sqlite3_user_data(context));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, CallerStore(context, function));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store->Begin());
  EVIDENT_ASSIGN_OR_RETURN(Outbox * outbox, state->outbox.For(*tx));
  EVIDENT_ASSIGN_OR_RETURN(OutboxDecision decision,
                           outbox->Append(*tx, event, SystemClock().NowMs()));
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  return decision;
}

// A store failure as an SQL error: "evident: <code>: <message>".
void FailStatus(sqlite3_context* context, const Status& status) {
  const bool busy = status.code() == Code::kUnavailable;
  Fail(context, "evident: " + status.ToString(), busy ? SQLITE_BUSY : SQLITE_ERROR);
}

void AppendFunction(sqlite3_context* context, int, sqlite3_value** args) {
  Guarded(context, [&] {
    const Result<OutboxDecision> decision =
        Append(context, "evident_append", TextArgument(args[0]));
    if (!decision.ok()) return FailStatus(context, decision.status());
    const bool taken = decision->outcome == OutboxDecisionOutcome::kAppended ||
                       decision->outcome == OutboxDecisionOutcome::kDuplicate;
    if (taken) return sqlite3_result_int64(context, *decision->seq);
    // The reason code first, so that a caller can branch on the message's first word.
    Fail(context,
         decision->reason + ": " + std::string(OutboxDecisionName(decision->outcome)) + ": " +
             decision->message,
         SQLITE_CONSTRAINT);
  });
}

void TryAppendFunction(sqlite3_context* context, int, sqlite3_value** args) {
  Guarded(context, [&] {
    const Result<OutboxDecision> decision =
        Append(context, "evident_try_append", TextArgument(args[0]));
    if (!decision.ok()) return FailStatus(context, decision.status());
    std::string out;
    json::Writer w(out);
    w.BeginObject().Field("outcome", OutboxDecisionName(decision->outcome)).Key("reason");
    decision->reason.empty() ? w.Null() : w.String(decision->reason);
    w.Key("seq");
    decision->seq ? w.Int(*decision->seq) : w.Null();
    if (!decision->message.empty()) w.Field("message", decision->message);
    w.EndObject();
    sqlite3_result_text(context, out.data(), static_cast<int>(out.size()), SQLITE_TRANSIENT);
  });
}

void CompensateFunction(sqlite3_context* context, int, sqlite3_value** args) {
  Guarded(context, [&] {
    OwnerCompensation c{.key = std::string(TextArgument(args[0])),
                        .subject = std::string(TextArgument(args[1])),
                        .owner_source = std::string(TextArgument(args[2])),
                        .decision = std::string(TextArgument(args[4]))};
    if (sqlite3_value_type(args[3]) != SQLITE_NULL) c.owner_version = sqlite3_value_int64(args[3]);
    const auto record = [&]() -> Result<bool> {
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                               CallerStore(context, "evident_compensate"));
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store->Begin());
      EVIDENT_ASSIGN_OR_RETURN(const bool inserted,
                               RecordOwnerCompensation(*tx, c, SystemClock().NowMs()));
      EVIDENT_RETURN_IF_ERROR(tx->Commit());
      return inserted;
    }();
    if (!record.ok()) return FailStatus(context, record.status());
    sqlite3_result_int(context, *record ? 1 : 0);
  });
}

// The answer of evident_decide: one object per event to apply, in order.
std::string DecidedJson(const std::vector<DecidedEvent>& events) {
  std::string out;
  json::Writer w(out);
  w.BeginArray();
  int64_t position = 0;
  for (const DecidedEvent& e : events) {
    const Decision& d = e.decision;
    w.BeginObject().Key("position").Int(++position).Field("outcome", OutcomeName(d.outcome));
    w.Key("reason");
    d.reason.empty() ? w.Null() : w.String(d.reason);
    w.Field("key", d.key).Field("subject", d.subject).Key("subject_version");
    d.subject_version ? w.Int(*d.subject_version) : w.Null();
    w.Key("schema_version");
    e.schema_version ? w.Int(*e.schema_version) : w.Null();
    if (simdjson::validate_utf8(e.event.data(), e.event.size())) {
      w.Field("event", e.event);
    } else {
      std::string encoded;
      AppendBase64(e.event, encoded);
      w.Field("event_base64", encoded);
    }
    w.Field("drained", d.drained).Key("adapter");
    d.adapter.empty() ? w.Null() : w.String(d.adapter);
    if (!d.message.empty()) w.Field("message", d.message);
    w.EndObject();
  }
  w.EndArray();
  return out;
}

void DecideFunction(sqlite3_context* context, int, sqlite3_value** args) {
  Guarded(context, [&] {
    auto* state = static_cast<ConnectionState*>(sqlite3_user_data(context));
    const auto decide = [&]() -> Result<std::vector<DecidedEvent>> {
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                               CallerStore(context, "evident_decide"));
      EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store->Begin());
      EVIDENT_ASSIGN_OR_RETURN(std::vector<DecidedEvent> events,
                               state->decider.Decide(*tx, TextArgument(args[0]),
                                                     TextArgument(args[1]), SystemClock().NowMs()));
      EVIDENT_RETURN_IF_ERROR(tx->Commit());
      return events;
    }();
    if (!decide.ok()) return FailStatus(context, decide.status());
    const std::string out = DecidedJson(*decide);
    sqlite3_result_text(context, out.data(), static_cast<int>(out.size()), SQLITE_TRANSIENT);
  });
}

void DeleteState(void* state) { delete static_cast<ConnectionState*>(state); }

}  // namespace
}  // namespace evident

// The entry point SQLite derives from the file name evident_sqlite.so. Each function keeps its
// own state (deleted when the connection closes or the function is replaced).
extern "C" __attribute__((visibility("default"))) int sqlite3_evidentsqlite_init(
    sqlite3* db, char** error, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  struct Function {
    const char* name;
    int arguments;
    void (*call)(sqlite3_context*, int, sqlite3_value**);
  };
  static const Function kFunctions[] = {{"evident_append", 1, &evident::AppendFunction},
                                        {"evident_try_append", 1, &evident::TryAppendFunction},
                                        {"evident_compensate", 5, &evident::CompensateFunction},
                                        {"evident_decide", 2, &evident::DecideFunction}};
  for (const Function& f : kFunctions) {
    auto* state = new (std::nothrow) evident::ConnectionState();
    // On failure SQLite calls the destructor itself (sqlite3_create_function_v2).
    const int rc = state == nullptr ? SQLITE_NOMEM
                                    : sqlite3_create_function_v2(
                                          db, f.name, f.arguments, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                          state, f.call, nullptr, nullptr, &evident::DeleteState);
    if (rc != SQLITE_OK) {
      if (error != nullptr) *error = sqlite3_mprintf("evident: cannot register %s", f.name);
      return rc;
    }
  }
  return SQLITE_OK;
}
