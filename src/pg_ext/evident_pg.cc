// evident_pg.so — evident's producer functions inside PostgreSQL: the event checked against the
// contracts the store holds and appended to the outbox inside the caller's own transaction, so
// a refused event rolls the business change back with it (installed by `evident store
// install-functions`; docs/any-language.md).
//
//   evident_append(event bytea) -> bigint    the row's seq (the existing row's for a duplicate
//                                            with the same bytes); a refusal raises an error
//                                            whose message starts with its reason code:
//                                            SQLSTATE EV001 (refused by its contract) or EV002
//                                            (its id holds other bytes)
//   evident_try_append(event bytea) -> TABLE(outcome, reason, seq, message): never an error for
//                                            a refused event
//   evident_compensate(key, subject, owner_source, owner_version, decision) -> boolean
//                                            seed 002's owner compensation, inserted once
//   evident_decide(consumer text, event bytea) -> TABLE(position, outcome, reason, key, subject,
//                                            subject_version, schema_version, event, drained,
//                                            adapter): the events to apply now, in order,
//                                            decided with the store's consumer set
//                                            (stored_consumers.h); every decision is written in
//                                            the caller's transaction. It locks its (consumer,
//                                            subject), not the consumer: two transactions
//                                            deciding one subject take turns, and two deciding
//                                            overlapping subjects in different orders may
//                                            deadlock (40P01, retryable)
//
// Other failures: EV003 (no store in the functions' schema, another layout, no contracts
// pushed, a database not in UTF8), 22023 (an argument evident refuses), XX000 (internal), and
// the server's own errors with their own SQLSTATEs (40001, 55P03, 57014, 42501, ..).
//
// The store runs over SPI (pg_ext/spi_connection.h) in the caller's own transaction; its tables
// are those of the schema the functions were installed in (their SET search_path), and every
// call checks their layout against this module's. A statement the server refuses (a lock
// timeout, a serialization failure, a permission) is raised again as it was, SQLSTATE and all. No
// C++ exception crosses an entry point (Guarded catches every one) and no PostgreSQL error crosses
// a C++ frame (PgCall); the entry points raise their error only once every C++ frame they called
// has returned. No threads.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <string_view>

#include "evident/clock.h"
#include "evident/outbox.h"
#include "evident/store_postgres.h"
#include "evident/stored_consumers.h"
#include "evident/stored_contracts.h"
#include "pg_ext/pg_guard.h"
#include "pg_ext/spi_connection.h"
#include "store/postgres/pg_open.h"

// The module is built with hidden visibility: PostgreSQL 15 marks what it must find (the magic
// block, each function's info and entry point) with PGDLLEXPORT, empty on Linux unless defined.
#define PGDLLEXPORT __attribute__((visibility("default")))
extern "C" {
#include <postgres.h>
// postgres.h first
#include <access/xact.h>
#include <catalog/namespace.h>
#include <executor/spi.h>
#include <fmgr.h>
#include <funcapi.h>
#include <mb/pg_wchar.h>
#include <nodes/pg_list.h>
#include <utils/builtins.h>
#include <utils/lsyscache.h>
#include <utils/tuplestore.h>

PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(evident_append);
PG_FUNCTION_INFO_V1(evident_try_append);
PG_FUNCTION_INFO_V1(evident_compensate);
PG_FUNCTION_INFO_V1(evident_decide);
}

namespace evident::postgres {
namespace {

constexpr int kRefused = MAKE_SQLSTATE('E', 'V', '0', '0', '1');
constexpr int kIdConflict = MAKE_SQLSTATE('E', 'V', '0', '0', '2');
constexpr int kStoreNotReady = MAKE_SQLSTATE('E', 'V', '0', '0', '3');

// What an entry point raises once the C++ frames it called are gone: plain data, filled
// without allocating (an exception's path may be out of memory).
struct Raise {
  bool set;
  int code;
  char message[8192];
  ErrorData* rethrow;  // a statement's error, raised again as it was
};

// Cut at a character's start: a message quoting an event is UTF-8 to its last byte.
void CopyText(char* out, size_t size, std::string_view text) noexcept {
  size_t n = std::min(text.size(), size - 1);
  while (n > 0 && n < text.size() && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

void SetRaise(Raise* raise, int code, std::string_view message) noexcept {
  if (raise->set) return;
  raise->set = true;
  raise->code = code;
  CopyText(raise->message, sizeof(raise->message), message);
}

int SqlStateOf(const Status& status) {
  switch (status.code()) {
    case Code::kAborted:
      return ERRCODE_T_R_SERIALIZATION_FAILURE;
    case Code::kUnavailable:
      return ERRCODE_LOCK_NOT_AVAILABLE;
    case Code::kFailedPrecondition:
      return kStoreNotReady;
    case Code::kInvalidArgument:
      return ERRCODE_INVALID_PARAMETER_VALUE;
    case Code::kNotFound:  // no consumer set, or no such consumer in it
      return ERRCODE_UNDEFINED_OBJECT;
    default:
      return ERRCODE_INTERNAL_ERROR;
  }
}

void ConnectC(void*) {
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "evident: SPI_connect failed");
}
void FinishC(void*) { SPI_finish(); }

// Runs `body` (which returns the Status to raise, or OK) between SPI_connect and SPI_finish;
// every exception becomes an error to raise. A statement the server refused is raised again as
// it was (its SQLSTATE, message, detail and hint), with SPI left to the transaction's abort.
template <typename Body>
void Guarded(Raise* raise, Body&& body) noexcept {
  BeginSpiCall();
  if (GetDatabaseEncoding() != PG_UTF8) {
    return SetRaise(raise, kStoreNotReady,
                    "evident: the database's encoding is not UTF8: events are UTF-8 and stored "
                    "unconverted, so evident_pg.so works in UTF8 databases only");
  }
  bool connected = false;
  try {
    const PgError connect = PgCall(&ConnectC, nullptr);
    if (connect.failed) return SetRaise(raise, ERRCODE_INTERNAL_ERROR, connect.message);
    connected = true;
    const Status status = body();
    if (!status.ok()) SetRaise(raise, SqlStateOf(status), "evident: " + status.ToString());
  } catch (const std::bad_alloc&) {
    SetRaise(raise, ERRCODE_OUT_OF_MEMORY, "evident: out of memory");
  } catch (const std::exception& e) {
    SetRaise(raise, ERRCODE_INTERNAL_ERROR, "evident: internal error: ");
    const size_t used = std::strlen(raise->message);
    CopyText(raise->message + used, sizeof(raise->message) - used, e.what());
  } catch (...) {
    SetRaise(raise, ERRCODE_INTERNAL_ERROR, "evident: internal error");
  }
  const SpiCall& call = CurrentSpiCall();
  if (call.server_error != nullptr) {
    raise->set = true;
    raise->rethrow = call.server_error;
    return;
  }
  if (call.undo_needed) {
    SetRaise(raise, ERRCODE_INTERNAL_ERROR,
             "evident: a store transaction was rolled back after it wrote; the caller's "
             "transaction must not commit");
  }
  if (connected) {
    try {
      (void)PgCall(&FinishC, nullptr);
    } catch (...) {  // bad_alloc copying an error's text: SPI is ended by the transaction's end
    }
  }
}

// The first schema of the search_path (the functions' own, by their SET clause) and which of
// the store's tables it holds, from the catalog's caches: no statement.
struct Probe {
  bool found;
  char schema[NAMEDATALEN];
  bool has_store;
  bool has_sets;
  Oid consumer_sets;  // the consumer_set table's, InvalidOid without one
};

void ProbeC(void* arg) {
  auto* probe = static_cast<Probe*>(arg);
  List* path = fetch_search_path(false);
  if (path == NIL) return;
  const Oid space = linitial_oid(path);
  list_free(path);
  const char* name = get_namespace_name(space);
  if (name == nullptr) return;
  strlcpy(probe->schema, name, sizeof(probe->schema));
  probe->has_store = OidIsValid(get_relname_relid("evident_schema", space));
  probe->has_sets = OidIsValid(get_relname_relid("contract_set", space));
  probe->consumer_sets = get_relname_relid("consumer_set", space);
  probe->found = true;
}

// The store of the functions' schema (their search_path), over SPI, at this module's layout.
// `by_subject`: its deciders lock (consumer, subject), not the consumer (evident_decide).
Result<std::unique_ptr<Store>> CallerStore(LayoutFound* where, bool by_subject = false,
                                           Oid* consumer_sets = nullptr) {
  std::unique_ptr<Connection> connection = NewSpiConnection();
  Probe probe{.found = false,
              .schema = {},
              .has_store = false,
              .has_sets = false,
              .consumer_sets = InvalidOid};
  if (const PgError e = PgCall(&ProbeC, &probe); e.failed) {
    return Status::Internal("the search_path: " + e.message);
  }
  if (!probe.found) {
    return Status::FailedPrecondition("the search_path names no schema that exists");
  }
  EVIDENT_ASSIGN_OR_RETURN(const LayoutFound found,
                           LayoutIn(*connection, probe.schema, probe.has_store, probe.has_sets));
  if (found.layout == 0) {
    return Status::FailedPrecondition(
        "no evident store in schema \"" + found.schema +
        "\", where these functions were installed: create it with `evident store migrate "
        "--store URL`");
  }
  if (found.layout != kPostgresLayoutVersion) {
    return Status::FailedPrecondition(
        "the store in schema \"" + found.schema + "\" has layout " + std::to_string(found.layout) +
        "; this evident_pg.so works on layout " + std::to_string(kPostgresLayoutVersion) +
        (found.layout < kPostgresLayoutVersion
             ? ": run `evident store migrate` once every process runs this build"
             : ": install the functions of the evident that wrote it"));
  }
  *where = found;
  if (consumer_sets != nullptr) *consumer_sets = probe.consumer_sets;
  return OpenStoreOver(std::move(connection), /*deciders_shared=*/false, by_subject);
}

// The backend's contract sets in hand, one per store schema and latest set it has appended
// under: keyed by the set's digest too, so that a store created again in a schema of the same
// name, with other contracts numbered alike, is never checked against the earlier one's.
StoredOutbox& OutboxFor(const LayoutFound& found) {
  static auto* outboxes = new std::map<std::string, StoredOutbox>();
  constexpr size_t kSetsMax = 64;
  const std::string key = found.schema + '\n' + found.contracts_digest;
  if (outboxes->size() >= kSetsMax && outboxes->count(key) == 0) outboxes->clear();
  return (*outboxes)[key];
}

Result<OutboxDecision> Append(std::string_view event) {
  LayoutFound found;
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, CallerStore(&found));
  StoredOutbox& stored = OutboxFor(found);
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store->Begin());
  EVIDENT_ASSIGN_OR_RETURN(Outbox * outbox, stored.For(*tx));
  EVIDENT_ASSIGN_OR_RETURN(OutboxDecision decision,
                           outbox->Append(*tx, event, SystemClock().NowMs()));
  EVIDENT_RETURN_IF_ERROR(tx->Commit());
  return decision;
}

// The backend's deciders, one per store: keyed by the schema and its consumer_set table (a
// store created again in a schema of the same name has another table, and sets numbered alike).
Decider& DeciderFor(const LayoutFound& found, Oid consumer_sets) {
  static auto* deciders = new std::map<std::string, Decider>();
  constexpr size_t kDecidersMax = 64;
  const std::string key = found.schema + '\n' + std::to_string(consumer_sets);
  if (deciders->size() >= kDecidersMax && deciders->count(key) == 0) deciders->clear();
  return (*deciders)[key];
}

bool Taken(const OutboxDecision& decision) {
  return decision.outcome == OutboxDecisionOutcome::kAppended ||
         decision.outcome == OutboxDecisionOutcome::kDuplicate;
}

// What evident_try_append returns, in plain data for the entry point's tuple.
struct TryOutcome {
  char outcome[32];
  char reason[256];
  bool has_reason;
  int64_t seq;
  bool has_seq;
  char message[8192];
};

// One row of evident_decide, in plain data for PutRowC.
struct DecidedRow {
  ReturnSetInfo* result;
  const DecidedEvent* event;
  int32_t position;
};

Datum TextDatum(std::string_view text) {
  return PointerGetDatum(cstring_to_text_with_len(text.data(), static_cast<int>(text.size())));
}

void PutRowC(void* arg) {
  const auto* row = static_cast<const DecidedRow*>(arg);
  const DecidedEvent& e = *row->event;
  const Decision& d = e.decision;
  auto* bytes = static_cast<bytea*>(palloc(VARHDRSZ + e.event.size()));
  SET_VARSIZE(bytes, VARHDRSZ + e.event.size());
  std::memcpy(VARDATA(bytes), e.event.data(), e.event.size());
  Datum values[10] = {Int32GetDatum(row->position),
                      TextDatum(OutcomeName(d.outcome)),
                      TextDatum(d.reason),
                      TextDatum(d.key),
                      TextDatum(d.subject),
                      Int64GetDatum(d.subject_version.value_or(0)),
                      Int64GetDatum(e.schema_version.value_or(0)),
                      PointerGetDatum(bytes),
                      BoolGetDatum(d.drained),
                      TextDatum(d.adapter)};
  bool nulls[10] = {
      false, false, d.reason.empty(), false, false, !d.subject_version, !e.schema_version,
      false, false, d.adapter.empty()};
  tuplestore_putvalues(row->result->setResult, row->result->setDesc, values, nulls);
}

}  // namespace

void DecideEntry(std::string_view consumer, std::string_view event, ReturnSetInfo* result,
                 Raise* raise) noexcept {
  Guarded(raise, [&]() -> Status {
    LayoutFound found;
    Oid consumer_sets = InvalidOid;
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                             CallerStore(&found, /*by_subject=*/true, &consumer_sets));
    Decider& decider = DeciderFor(found, consumer_sets);
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store->Begin());
    EVIDENT_ASSIGN_OR_RETURN(const std::vector<DecidedEvent> events,
                             decider.Decide(*tx, consumer, event, SystemClock().NowMs()));
    EVIDENT_RETURN_IF_ERROR(tx->Commit());
    int32_t position = 0;
    for (const DecidedEvent& e : events) {
      DecidedRow row{.result = result, .event = &e, .position = ++position};
      if (const PgError put = PgCall(&PutRowC, &row); put.failed) {
        return Status::Internal("returning a row: " + put.message);
      }
    }
    return Status::Ok();
  });
}

void AppendEntry(std::string_view event, int64_t* seq, Raise* raise) noexcept {
  Guarded(raise, [&]() -> Status {
    EVIDENT_ASSIGN_OR_RETURN(const OutboxDecision decision, Append(event));
    if (Taken(decision)) {
      *seq = *decision.seq;
      return Status::Ok();
    }
    // The reason code first, so that a caller can branch on the message's first word.
    const bool conflict = decision.outcome == OutboxDecisionOutcome::kConflict;
    SetRaise(raise, conflict ? kIdConflict : kRefused,
             decision.reason + ": " + std::string(OutboxDecisionName(decision.outcome)) + ": " +
                 decision.message);
    return Status::Ok();
  });
}

void TryAppendEntry(std::string_view event, TryOutcome* out, Raise* raise) noexcept {
  Guarded(raise, [&]() -> Status {
    EVIDENT_ASSIGN_OR_RETURN(const OutboxDecision decision, Append(event));
    CopyText(out->outcome, sizeof(out->outcome), OutboxDecisionName(decision.outcome));
    out->has_reason = !decision.reason.empty();
    CopyText(out->reason, sizeof(out->reason), decision.reason);
    out->has_seq = decision.seq.has_value();
    out->seq = decision.seq.value_or(0);
    CopyText(out->message, sizeof(out->message), decision.message);
    return Status::Ok();
  });
}

void CompensateEntry(std::string_view key, std::string_view subject, std::string_view owner,
                     bool has_version, int64_t version, std::string_view decision_words,
                     bool* inserted, Raise* raise) noexcept {
  Guarded(raise, [&]() -> Status {
    OwnerCompensation c{.key = std::string(key),
                        .subject = std::string(subject),
                        .owner_source = std::string(owner),
                        .decision = std::string(decision_words)};
    if (has_version) c.owner_version = version;
    LayoutFound found;
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, CallerStore(&found));
    EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Transaction> tx, store->Begin());
    EVIDENT_ASSIGN_OR_RETURN(*inserted, RecordOwnerCompensation(*tx, c, SystemClock().NowMs()));
    return tx->Commit();
  });
}

}  // namespace evident::postgres

// An assertion of evident's that fails inside a backend (evident is built with its assertions
// on) ends that backend's session with FATAL, as PostgreSQL ends a session it cannot trust,
// instead of abort(): after a backend aborts, the postmaster restarts every backend of the
// cluster. Hidden: it answers the module's own assert() calls only (the server's are its own).
extern "C" __attribute__((visibility("hidden"), noreturn)) void __assert_fail(
    const char* assertion, const char* file, unsigned int line, const char* function) noexcept {
  ereport(FATAL, (errcode(ERRCODE_INTERNAL_ERROR),
                  errmsg_internal("evident: assertion failed: %s (%s:%u, %s)", assertion, file,
                                  line, function)));
  pg_unreachable();
}

namespace {

std::string_view BytesOf(const struct varlena* value) {
  return {VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value)};
}

}  // namespace

// The entry points hold plain data only: the error they raise (a longjmp) unwinds no C++ object.
extern "C" PGDLLEXPORT Datum evident_append(PG_FUNCTION_ARGS) {
  bytea* event = PG_GETARG_BYTEA_PP(0);
  evident::postgres::Raise raise;
  raise.set = false;
  raise.rethrow = nullptr;
  int64_t seq = 0;
  evident::postgres::AppendEntry(BytesOf(event), &seq, &raise);
  if (raise.rethrow != nullptr) ReThrowError(raise.rethrow);
  if (raise.set) ereport(ERROR, (errcode(raise.code), errmsg_internal("%s", raise.message)));
  PG_RETURN_INT64(seq);
}

extern "C" PGDLLEXPORT Datum evident_try_append(PG_FUNCTION_ARGS) {
  bytea* event = PG_GETARG_BYTEA_PP(0);
  InitMaterializedSRF(fcinfo, 0);
  evident::postgres::Raise raise;
  evident::postgres::TryOutcome out = {};
  raise.set = false;
  raise.rethrow = nullptr;
  evident::postgres::TryAppendEntry(BytesOf(event), &out, &raise);
  if (raise.rethrow != nullptr) ReThrowError(raise.rethrow);
  if (raise.set) ereport(ERROR, (errcode(raise.code), errmsg_internal("%s", raise.message)));
  auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  Datum values[4] = {CStringGetTextDatum(out.outcome), CStringGetTextDatum(out.reason),
                     Int64GetDatum(out.seq), CStringGetTextDatum(out.message)};
  bool nulls[4] = {false, !out.has_reason, !out.has_seq, out.message[0] == '\0'};
  tuplestore_putvalues(result->setResult, result->setDesc, values, nulls);
  return static_cast<Datum>(0);
}

extern "C" PGDLLEXPORT Datum evident_compensate(PG_FUNCTION_ARGS) {
  for (const int i : {0, 1, 2, 4}) {
    if (PG_ARGISNULL(i)) {
      ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                      errmsg("evident_compensate: key, subject, owner_source and decision are "
                             "required; owner_version may be NULL")));
    }
  }
  text* key = PG_GETARG_TEXT_PP(0);
  text* subject = PG_GETARG_TEXT_PP(1);
  text* owner = PG_GETARG_TEXT_PP(2);
  text* decision = PG_GETARG_TEXT_PP(4);
  const bool has_version = !PG_ARGISNULL(3);
  const int64 version = has_version ? PG_GETARG_INT64(3) : 0;
  evident::postgres::Raise raise;
  raise.set = false;
  raise.rethrow = nullptr;
  bool inserted = false;
  evident::postgres::CompensateEntry(BytesOf(key), BytesOf(subject), BytesOf(owner), has_version,
                                     version, BytesOf(decision), &inserted, &raise);
  if (raise.rethrow != nullptr) ReThrowError(raise.rethrow);
  if (raise.set) ereport(ERROR, (errcode(raise.code), errmsg_internal("%s", raise.message)));
  PG_RETURN_BOOL(inserted);
}

extern "C" PGDLLEXPORT Datum evident_decide(PG_FUNCTION_ARGS) {
  // A NULL is an error, not zero rows: a caller would commit and acknowledge an undecided event.
  if (PG_ARGISNULL(0) || PG_ARGISNULL(1)) {
    ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
                    errmsg("evident_decide: the consumer and the event are required")));
  }
  // The subject's lock is taken inside the call: a transaction snapshot taken before it would
  // read what another transaction committed on the subject meanwhile as absent.
  if (IsolationUsesXactSnapshot()) {
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("evident_decide runs in READ COMMITTED transactions: at REPEATABLE READ or "
                    "SERIALIZABLE its reads would predate the subject's lock"),
             errhint("BEGIN ISOLATION LEVEL READ COMMITTED, or SET TRANSACTION before the call")));
  }
  text* consumer = PG_GETARG_TEXT_PP(0);
  bytea* event = PG_GETARG_BYTEA_PP(1);
  InitMaterializedSRF(fcinfo, 0);
  evident::postgres::Raise raise;
  raise.set = false;
  raise.rethrow = nullptr;
  evident::postgres::DecideEntry(BytesOf(consumer), BytesOf(event),
                                 reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo), &raise);
  if (raise.rethrow != nullptr) ReThrowError(raise.rethrow);
  if (raise.set) ereport(ERROR, (errcode(raise.code), errmsg_internal("%s", raise.message)));
  return static_cast<Datum>(0);
}
