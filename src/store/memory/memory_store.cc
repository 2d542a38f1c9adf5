// The memory backend of evident/store.h (store_memory.h): committed state as versions that never
// change once published, and each transaction's writes in a private overlay applied at Commit.
//
// A version (State) holds one shared_ptr per table. A Snapshot keeps the State it opened on; a
// Commit publishes the next State. A table the commit changes is copied only while an older
// State still holds it (a snapshot is open); otherwise it is changed in place, so that without
// open snapshots a commit costs what it writes, not the size of the store. (A commit made while
// a snapshot is open copies each table it changes: O(rows of the table).)
//
// Rules and orders are the SQLite backend's (src/store/sqlite/sqlite_store.cc); the conformance
// suite (src/store/store_conformance_test.cc) holds both backends to them.
#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <type_traits>

#include "core/digest.h"
#include "core/fnv1a.h"
#include "evident/store_memory.h"
#include "store/outbox_rules.h"
#include "store/projection_copy.h"
#include "store/quarantine_rules.h"
#include "store/retained_entry.h"

namespace evident {
namespace memory_store {

// Orders tuple keys element by element, strings as views: a stored key of strings and a probe of
// string_views compare without building a key. (std::less<> would compare tuple<string> with
// tuple<string_view> through operator<=>, which clang 14 with libstdc++ 12 does not provide.)
struct KeyLess {
  using is_transparent = void;
  template <typename T>
  static auto View(const T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      return std::string_view(value);
    } else {
      return value;
    }
  }
  template <typename... Parts>
  static auto Views(const std::tuple<Parts...>& key) {
    return std::apply([](const auto&... parts) { return std::make_tuple(View(parts)...); }, key);
  }
  template <typename Single>
  static auto Views(const Single& key) {
    return View(key);
  }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    return Views(a) < Views(b);
  }
};

// Table keys, in the order each table is listed by.
using LedgerId = std::tuple<std::string, std::string, std::string>;  // consumer, source, event id
using LedgerIdView = std::tuple<std::string_view, std::string_view, std::string_view>;
// subject, consumer, source, event id: a subject's ledger rows, for LedgerOf and ProjectionsOf.
using LedgerBySubject =
    std::set<std::tuple<std::string, std::string, std::string, std::string>, KeyLess>;
using ProjectionId = std::tuple<std::string, std::string>;         // subject, consumer
using DeferredId = std::tuple<std::string, std::string, int64_t>;  // consumer, subject, version
using JournalId = std::tuple<std::string, std::string, int64_t>;   // consumer, subject, seq

using OutboxId = std::tuple<std::string, std::string>;  // source, event id

constexpr int64_t kSeqMin = std::numeric_limits<int64_t>::min();

template <typename Key, typename Row>
using Table = std::map<Key, Row, KeyLess>;

// A projection and the evidence that belongs to it. In a committed State `value` is always
// set; in a transaction's overlay it is absent while only evidence was put (and evidence without
// a projection is not committed, as on SQLite, where it lives in the projection's row).
struct ProjectionRow {
  std::optional<Projection> value;
  std::vector<EvidenceRecord> evidence;  // one per name, sorted by name
};

// The outbox: rows by seq, and the seq of each (source, id).
struct OutboxTable {
  Table<int64_t, OutboxRow> rows;
  Table<OutboxId, int64_t> ids;
};

// The quarantine: records by id, with an index of each record's identity (consumer, source and
// id when both are set, and a hash of the exact bytes; see Transaction::Quarantine) and of each
// subject's records, and the audit entries by record.
using QuarantineIdent = std::tuple<std::string, std::string, std::string, uint64_t>;
struct QuarantineTable {
  Table<int64_t, QuarantineRecord> records;
  std::multimap<QuarantineIdent, int64_t, KeyLess> by_ident;
  std::set<std::tuple<std::string, int64_t>, KeyLess> by_subject;
  Table<std::tuple<int64_t, int64_t>, QuarantineAudit> audit;  // record id, seq
};

// The identity Transaction::Quarantine merges deliveries by: source and id count only together.
QuarantineIdent IdentOf(const QuarantineRecord& r) {
  const bool identified = !r.source.empty() && !r.event_id.empty();
  return QuarantineIdent(r.consumer, identified ? r.source : std::string(),
                         identified ? r.event_id : std::string(), Fnv1a(kFnv1aOffset, r.raw));
}

using GapId = std::tuple<std::string, std::string, int64_t>;  // consumer, subject, expected

// Effect intents by seq with the seq of each key, their logs by (key, seq), and compensations
// by seq with the seq of each key.
struct EffectTable {
  Table<int64_t, EffectIntent> intents;
  Table<std::string, int64_t> intent_keys;
  Table<std::tuple<std::string, int64_t>, EffectLogEntry> log;
  Table<int64_t, CompensationRecord> compensations;
  Table<std::tuple<std::string, std::string>, int64_t> compensation_keys;  // consumer, key
  // Retained intents by their key's digest (IntentKeyDigest), in RetainedIntentEntry's form
  // without the key.
  Table<std::string, EffectIntent> intent_digests;
};

// One committed version of the database.
struct State {
  std::shared_ptr<Table<LedgerId, LedgerEntry>> ledger;
  std::shared_ptr<LedgerBySubject> ledger_by_subject;
  // Retained receipts' key digests (LedgerKeyDigest) and the second each was committed in.
  std::shared_ptr<Table<std::string, int64_t>> ledger_digests;
  std::shared_ptr<Table<ProjectionId, ProjectionRow>> projections;
  std::shared_ptr<Table<DeferredId, DeferredEvent>> deferred;
  std::shared_ptr<QuarantineTable> quarantine;
  std::shared_ptr<Table<GapId, GapRecord>> gaps;
  std::shared_ptr<Table<JournalId, JournalEntry>> journal;
  std::shared_ptr<Table<std::string, std::string>> positions;
  int64_t quarantine_id_last = 0;  // records are never deleted: the next id is the last plus one
  int64_t audit_seq_last = 0;
  int64_t journal_seq_last = 0;
  std::shared_ptr<OutboxTable> outbox;
  int64_t outbox_seq_last = 0;  // seqs are never reused, though sent rows are deleted
  std::shared_ptr<EffectTable> effects;
  int64_t intent_seq_last = 0, effect_log_seq_last = 0, compensation_seq_last = 0;
  std::shared_ptr<Table<std::tuple<std::string, std::string, int64_t>, ProjectionCorrection>>
      corrections;  // by consumer, subject, seq
  int64_t correction_seq_last = 0;
  std::shared_ptr<const RetentionRun> retention;  // the latest run that removed anything
  int64_t forgot_before_ms_max = 0;               // of every run
  // Pushed contract and consumer sets by SetKind, oldest first (version i + 1 at index i); sets
  // never change.
  std::array<std::shared_ptr<const std::vector<std::shared_ptr<const StoredContracts>>>,
             kSetKindCount>
      sets = {std::make_shared<const std::vector<std::shared_ptr<const StoredContracts>>>(),
              std::make_shared<const std::vector<std::shared_ptr<const StoredContracts>>>()};
};

State EmptyState() {
  return State{
      .ledger = std::make_shared<Table<LedgerId, LedgerEntry>>(),
      .ledger_by_subject = std::make_shared<LedgerBySubject>(),
      .ledger_digests = std::make_shared<Table<std::string, int64_t>>(),
      .projections = std::make_shared<Table<ProjectionId, ProjectionRow>>(),
      .deferred = std::make_shared<Table<DeferredId, DeferredEvent>>(),
      .quarantine = std::make_shared<QuarantineTable>(),
      .gaps = std::make_shared<Table<GapId, GapRecord>>(),
      .journal = std::make_shared<Table<JournalId, JournalEntry>>(),
      .positions = std::make_shared<Table<std::string, std::string>>(),
      .outbox = std::make_shared<OutboxTable>(),
      .effects = std::make_shared<EffectTable>(),
      .corrections = std::make_shared<
          Table<std::tuple<std::string, std::string, int64_t>, ProjectionCorrection>>(),
  };
}

// A transaction's writes, applied to the next State at Commit. Rows are whole: a changed ledger
// row or projection is copied here from the base first, so applying never reads the base.
struct Overlay {
  Table<LedgerId, LedgerEntry> ledger;         // inserted or changed
  std::set<LedgerId, KeyLess> ledger_deleted;  // deleted (and not inserted again since)
  Table<std::string, std::optional<int64_t>> ledger_digests;  // kept, or nullopt: forgotten
  Table<ProjectionId, ProjectionRow> projections;             // put, or given evidence
  Table<DeferredId, std::optional<DeferredEvent>> deferred;   // nullopt: deleted
  Table<int64_t, QuarantineRecord> quarantine;                // opened or changed records
  std::multimap<QuarantineIdent, int64_t, KeyLess> quarantine_opened;  // identities of new ones
  int64_t quarantine_opened_count = 0;  // ids base.quarantine_id_last + 1 .. + this
  std::vector<QuarantineAudit> audit;   // seq assigned
  Table<GapId, GapRecord> gaps;         // inserted or changed
  std::vector<JournalEntry> journal;    // seq assigned
  Table<std::string, std::string> positions;
  Table<int64_t, std::optional<OutboxRow>> outbox;     // appended or changed; nullopt: deleted
  Table<OutboxId, std::optional<int64_t>> outbox_ids;  // nullopt: deleted
  int64_t outbox_appended = 0;              // seqs base.outbox_seq_last + 1 .. + outbox_appended
  Table<int64_t, EffectIntent> intents;     // inserted or changed
  Table<std::string, int64_t> intent_keys;  // of the inserted ones
  std::vector<EffectLogEntry> effect_log;   // seq assigned
  Table<int64_t, CompensationRecord> compensations;                        // inserted or changed
  Table<std::tuple<std::string, std::string>, int64_t> compensation_keys;  // inserted ones
  std::vector<ProjectionCorrection> corrections;                           // seq assigned
  // Removed by retention (store_retention.h); outbox rows go as deleted rows above.
  std::set<JournalId, KeyLess> journal_removed;
  std::set<int64_t> quarantine_removed;  // with their audit entries
  std::set<GapId, KeyLess> gaps_removed;
  std::set<std::tuple<std::string, int64_t>, KeyLess> effect_log_removed;
  Table<int64_t, EffectIntent> intents_removed;     // by seq, in their retained form
  Table<std::string, EffectIntent> intent_digests;  // of the removed ones
  std::optional<RetentionRun> retention;
  std::array<std::vector<StoredContracts>, kSetKindCount> sets;  // pushed, version assigned
};

// The table itself when no other State holds it, else a copy of it put in its place. Called
// under the database's mutex, under which every State reference is also dropped (see
// MemoryDatabase): a count of 1 read here means every earlier reader of the table is done.
template <typename T>
T& Writable(std::shared_ptr<T>& table) {
  if (table.use_count() != 1) table = std::make_shared<T>(*table);
  assert(table.use_count() == 1);
  return *table;
}

void ApplyLedger(Overlay& overlay, State& state) {
  if (!overlay.ledger_digests.empty()) {
    auto& digests = Writable(state.ledger_digests);
    for (const auto& [digest, second] : overlay.ledger_digests) {
      if (second) {
        digests.insert_or_assign(digest, *second);
      } else {
        digests.erase(digest);
      }
    }
  }
  if (overlay.ledger.empty() && overlay.ledger_deleted.empty()) return;
  auto& ledger = Writable(state.ledger);
  for (const LedgerId& id : overlay.ledger_deleted) {
    const auto it = ledger.find(id);
    if (it == ledger.end()) continue;
    const LedgerEntry& e = it->second;
    Writable(state.ledger_by_subject)
        .erase(std::make_tuple(e.subject, e.consumer, e.source, e.event_id));
    ledger.erase(it);
  }
  for (auto& [id, row] : overlay.ledger) {
    const auto [it, inserted] = ledger.insert_or_assign(id, std::move(row));
    if (inserted) {
      const LedgerEntry& e = it->second;
      Writable(state.ledger_by_subject).emplace(e.subject, e.consumer, e.source, e.event_id);
    }
  }
}

// In seq order: a row deleted and its (source, id) appended again in one transaction ends with
// the new row's seq.
void ApplyOutbox(Overlay& overlay, State& state) {
  state.outbox_seq_last += overlay.outbox_appended;
  if (overlay.outbox.empty()) return;
  OutboxTable& outbox = Writable(state.outbox);
  for (auto& [seq, row] : overlay.outbox) {
    if (row) {
      outbox.ids.insert_or_assign(OutboxId(row->source, row->event_id), seq);
      outbox.rows.insert_or_assign(seq, std::move(*row));
      continue;
    }
    const auto it = outbox.rows.find(seq);
    if (it == outbox.rows.end()) continue;  // appended and deleted in the same transaction
    const auto id = outbox.ids.find(OutboxId(it->second.source, it->second.event_id));
    if (id != outbox.ids.end() && id->second == seq) outbox.ids.erase(id);
    outbox.rows.erase(it);
  }
}

void ApplyQuarantine(Overlay& overlay, State& state) {
  state.quarantine_id_last += overlay.quarantine_opened_count;
  if (overlay.quarantine.empty() && overlay.audit.empty()) return;
  QuarantineTable& table = Writable(state.quarantine);
  for (auto& [id, record] : overlay.quarantine) {
    const auto there = table.records.find(id);
    if (there == table.records.end()) {
      table.by_ident.emplace(IdentOf(record), id);
    } else {
      assert(IdentOf(there->second) == IdentOf(record));  // an identity never changes
      table.by_subject.erase(std::make_tuple(there->second.subject, id));
    }
    table.by_subject.emplace(record.subject, id);
    table.records.insert_or_assign(id, std::move(record));
  }
  for (QuarantineAudit& a : overlay.audit) {
    assert(a.seq == state.audit_seq_last + 1);
    state.audit_seq_last = a.seq;
    table.audit.emplace(std::make_tuple(a.record_id, a.seq), std::move(a));
  }
}

void ApplyEffects(Overlay& overlay, State& state) {
  state.intent_seq_last += static_cast<int64_t>(overlay.intent_keys.size());
  state.compensation_seq_last += static_cast<int64_t>(overlay.compensation_keys.size());
  if (overlay.intents.empty() && overlay.effect_log.empty() && overlay.compensations.empty()) {
    return;
  }
  EffectTable& table = Writable(state.effects);
  for (auto& [key, seq] : overlay.intent_keys) table.intent_keys.insert_or_assign(key, seq);
  for (auto& [seq, intent] : overlay.intents)
    table.intents.insert_or_assign(seq, std::move(intent));
  for (EffectLogEntry& e : overlay.effect_log) {
    assert(e.seq == state.effect_log_seq_last + 1);
    state.effect_log_seq_last = e.seq;
    table.log.emplace(std::make_tuple(e.key, e.seq), std::move(e));
  }
  for (auto& [key, seq] : overlay.compensation_keys) {
    table.compensation_keys.insert_or_assign(key, seq);
  }
  for (auto& [seq, record] : overlay.compensations) {
    table.compensations.insert_or_assign(seq, std::move(record));
  }
}

void ApplyCorrections(Overlay& overlay, State& state) {
  for (ProjectionCorrection& c : overlay.corrections) {
    assert(c.seq == state.correction_seq_last + 1);
    state.correction_seq_last = c.seq;
    Writable(state.corrections)
        .emplace(std::make_tuple(c.consumer, c.subject, c.seq), std::move(c));
  }
}

void ApplyGaps(Overlay& overlay, State& state) {
  if (overlay.gaps.empty()) return;
  auto& gaps = Writable(state.gaps);
  for (auto& [id, record] : overlay.gaps) gaps.insert_or_assign(id, std::move(record));
}

Status SetTaken(SetKind kind, int64_t version) {
  return Status::Aborted(std::string(SetKindName(kind)) + " set v" + std::to_string(version) +
                         " is not the next: another push came first; push again");
}

void ApplyContracts(Overlay& overlay, State& state) {
  for (int kind = 0; kind < kSetKindCount; ++kind) {
    std::vector<StoredContracts>& pushed = overlay.sets[kind];
    if (pushed.empty()) continue;
    auto sets =
        std::make_shared<std::vector<std::shared_ptr<const StoredContracts>>>(*state.sets[kind]);
    for (StoredContracts& c : pushed) {
      assert(c.version == static_cast<int64_t>(sets->size()) + 1);
      sets->push_back(std::make_shared<const StoredContracts>(std::move(c)));
    }
    state.sets[kind] = std::move(sets);
  }
}

// The contract reads of store_contracts.h over `sets` and the sets `pushed` after them.
struct ContractsView {
  const std::vector<std::shared_ptr<const StoredContracts>>& sets;
  const std::vector<StoredContracts>& pushed;

  int64_t Latest() const { return static_cast<int64_t>(sets.size() + pushed.size()); }
  const StoredContracts* At(int64_t version) const {
    if (version == 0) version = Latest();
    if (version < 1 || version > Latest()) return nullptr;
    const auto index = static_cast<size_t>(version - 1);
    return index < sets.size() ? sets[index].get() : &pushed[index - sets.size()];
  }
  std::optional<StoredContracts> Copy(int64_t version) const {
    const StoredContracts* c = At(version);
    return c == nullptr ? std::nullopt : std::optional<StoredContracts>(*c);
  }
  std::vector<StoredContracts> History(int64_t rows_max) const {
    std::vector<StoredContracts> out;
    for (int64_t v = Latest(); v >= 1 && static_cast<int64_t>(out.size()) < rows_max; --v) {
      out.push_back(*At(v));
      out.back().files.clear();
    }
    return out;
  }
};

void ApplyRetained(const Overlay& overlay, State& state) {
  if (overlay.retention) {
    RetentionRun run = *overlay.retention;
    // A run is recorded again by each of its transactions: the same start time, the same seq.
    const bool same = state.retention && state.retention->at_ms == run.at_ms;
    run.seq = state.retention ? state.retention->seq + (same ? 0 : 1) : 1;
    state.forgot_before_ms_max = std::max(state.forgot_before_ms_max, run.forgot_before_ms);
    state.retention = std::make_shared<const RetentionRun>(std::move(run));
  }
  for (const JournalId& id : overlay.journal_removed) Writable(state.journal).erase(id);
  for (const GapId& id : overlay.gaps_removed) Writable(state.gaps).erase(id);
  for (const auto& id : overlay.effect_log_removed) Writable(state.effects).log.erase(id);
  for (const auto& [seq, intent] : overlay.intents_removed) {
    EffectTable& table = Writable(state.effects);
    table.intent_keys.erase(intent.key);
    table.intents.erase(seq);
  }
  for (const auto& [digest, intent] : overlay.intent_digests) {
    Writable(state.effects).intent_digests.insert_or_assign(digest, intent);
  }
  for (const int64_t id : overlay.quarantine_removed) {
    QuarantineTable& table = Writable(state.quarantine);
    const auto it = table.records.find(id);
    if (it == table.records.end()) continue;
    for (auto [i, end] = table.by_ident.equal_range(IdentOf(it->second)); i != end; ++i) {
      if (i->second == id) {
        table.by_ident.erase(i);
        break;
      }
    }
    table.by_subject.erase(std::make_tuple(it->second.subject, id));
    table.audit.erase(table.audit.lower_bound(std::make_tuple(id, kSeqMin)),
                      table.audit.lower_bound(std::make_tuple(id + 1, kSeqMin)));
    table.records.erase(it);
  }
}

void ApplyRows(Overlay& overlay, State& state) {
  if (!overlay.projections.empty()) {
    auto& projections = Writable(state.projections);
    for (auto& [id, row] : overlay.projections) {
      if (row.value) projections.insert_or_assign(id, std::move(row));
    }
  }
  if (!overlay.deferred.empty()) {
    auto& deferred = Writable(state.deferred);
    for (auto& [id, row] : overlay.deferred) {
      if (row) {
        deferred.insert_or_assign(id, std::move(*row));
      } else {
        deferred.erase(id);
      }
    }
  }
  ApplyQuarantine(overlay, state);
  ApplyGaps(overlay, state);
  ApplyEffects(overlay, state);
  ApplyCorrections(overlay, state);
  for (JournalEntry& j : overlay.journal) {
    assert(j.seq == state.journal_seq_last + 1);
    state.journal_seq_last = j.seq;
    Writable(state.journal).emplace(JournalId(j.consumer, j.subject, j.seq), std::move(j));
  }
  for (auto& [source, position] : overlay.positions) {
    Writable(state.positions).insert_or_assign(source, std::move(position));
  }
  ApplyOutbox(overlay, state);
  ApplyRetained(overlay, state);
  ApplyContracts(overlay, state);
}

// Which handle a store has open (one at a time); shared with that handle, which may outlive
// the store.
struct Session {
  enum class Open : uint8_t { kNone, kWrite, kRead };
  Open open = Open::kNone;
};

}  // namespace memory_store

using memory_store::State;

// Committed state and the one-writer flag, guarded by a mutex: stores on several threads may
// share a database. A State is never changed while anyone but the database holds it: handles
// take their State (Current, BeginWrite) and drop it (Release, Commit, EndWrite) under the
// mutex, so that Commit's reference counts are exact and its in-place writes come after every
// read of a released State.
class MemoryDatabase {
 public:
  MemoryDatabase() : committed_(std::make_shared<State>(memory_store::EmptyState())) {}

  std::shared_ptr<const State> Current() {
    std::lock_guard lock(mutex_);
    return committed_;
  }
  void Release(std::shared_ptr<const State>& state) {
    std::lock_guard lock(mutex_);
    state.reset();
  }

  // Opens the database's one write transaction, whose base is the current state: no other
  // commit can happen before this writer ends.
  Result<std::shared_ptr<const State>> BeginWrite() {
    std::lock_guard lock(mutex_);
    if (writer_open_) {
      return Status::Unavailable(
          "the memory database has a transaction open in another store; one writer at a time");
    }
    writer_open_ = true;
    return std::shared_ptr<const State>(committed_);
  }

  // Publishes the writer's overlay over its base (the current state) and ends the writer. With
  // the base released, the current State and its tables are shared only with snapshots.
  void Commit(std::shared_ptr<const State>& base, memory_store::Overlay&& overlay) {
    std::lock_guard lock(mutex_);
    assert(writer_open_ && base == committed_);
    base.reset();
    std::shared_ptr<State> next =
        committed_.use_count() == 1 ? std::move(committed_) : std::make_shared<State>(*committed_);
    memory_store::ApplyLedger(overlay, *next);
    memory_store::ApplyRows(overlay, *next);
    committed_ = std::move(next);
    writer_open_ = false;
  }

  void EndWrite(std::shared_ptr<const State>& base) {
    std::lock_guard lock(mutex_);
    assert(writer_open_ && base == committed_);
    base.reset();
    writer_open_ = false;
  }

 private:
  std::mutex mutex_;
  std::shared_ptr<State> committed_;  // guarded by mutex_
  bool writer_open_ = false;          // guarded by mutex_
};

namespace memory_store {
namespace {

// A list cut at `rows_max` rows; one row more marks it truncated.
template <typename T>
class RowsCut {
 public:
  explicit RowsCut(int64_t rows_max) : rows_max_(rows_max) { assert(rows_max >= 0); }
  // False once the list is full: the row offered is left out and the list is truncated.
  bool Add(const T& row) {
    if (static_cast<int64_t>(out_.rows.size()) >= rows_max_) {
      out_.truncated = true;
      return false;
    }
    out_.rows.push_back(row);
    return true;
  }
  Rows<T> Take() { return std::move(out_); }

 private:
  int64_t rows_max_;
  Rows<T> out_;
};

// Calls `add(row)` for the rows of `table` from key `from` on while `in_range(key)` holds, until
// `add` returns false.
template <typename Map, typename From, typename InRange, typename Add>
void ForRange(const Map& table, const From& from, InRange in_range, Add add) {
  for (auto it = table.lower_bound(from); it != table.end() && in_range(it->first); ++it) {
    if (!add(it->second)) return;
  }
}

// The rules of store_retention.h, as the memory backend applies them.
bool QuarantineSettled(const QuarantineTable& table, const QuarantineRecord& r, int64_t before_ms) {
  if (r.status == QuarantineStatus::kOpen || r.last_seen_ms >= before_ms) return false;
  for (auto it = table.audit.lower_bound(std::make_tuple(r.id, kSeqMin));
       it != table.audit.end() && std::get<0>(it->first) == r.id; ++it) {
    if (it->second.at_ms >= before_ms) return false;
  }
  return true;
}
bool GapSettled(const GapRecord& g, int64_t before_ms) {
  return g.state == GapState::kClosed && g.closed_at_ms && *g.closed_at_ms < before_ms;
}
// Whether an event of (consumer, subject) waits in `deferred`: a closed gap record of a subject
// whose events still wait (a person closed it) stays, or its deadline would be acted on again.
template <typename Map>
bool AnyDeferred(const Map& deferred, std::string_view consumer, std::string_view subject) {
  const auto it = deferred.lower_bound(
      std::tuple<std::string_view, std::string_view, int64_t>(consumer, subject, kSeqMin));
  return it != deferred.end() && std::get<0>(it->first) == consumer &&
         std::get<1>(it->first) == subject;
}
bool IntentSettledBefore(const EffectTable& table, std::string_view key, int64_t before_ms) {
  const auto seq = table.intent_keys.find(key);
  if (seq == table.intent_keys.end()) return false;
  const EffectIntent& intent = table.intents.at(seq->second);
  return Settled(intent.state) && intent.settled_at_ms && *intent.settled_at_ms < before_ms;
}

// Looks at the candidates (sorted in the kind's order, past the cursor) as
// RetentionReads::Retainable does: the first `rows_max`, keeping those `settled` says.
template <typename Row, typename Settled>
void Look(std::vector<const Row*> candidates, int64_t rows_max, Settled settled,
          std::vector<Row>& out, RetainedRows& rows) {
  rows.end = static_cast<int64_t>(candidates.size()) < rows_max;
  if (!rows.end) candidates.resize(static_cast<size_t>(rows_max));
  for (const Row* row : candidates) {
    if (settled(*row)) out.push_back(*row);
  }
  if (candidates.empty()) return;
  if constexpr (std::is_same_v<Row, QuarantineRecord>) {
    rows.next = candidates.back()->id;
  } else if constexpr (std::is_same_v<Row, JournalEntry> || std::is_same_v<Row, EffectLogEntry> ||
                       std::is_same_v<Row, EffectIntent>) {
    rows.next = candidates.back()->seq;
  }
}

template <typename Row, typename Map, typename Take>
std::vector<const Row*> Candidates(const Map& table, Take take) {
  std::vector<const Row*> out;
  for (const auto& [key, row] : table) {
    if (take(row)) out.push_back(&row);
  }
  return out;
}

// The looks of RetainableOf, one per kind.
void LookJournal(const State& state, int64_t before_ms, int64_t after, int64_t rows_max,
                 RetainedRows& out) {
  auto c = Candidates<JournalEntry>(*state.journal,
                                    [&](const JournalEntry& j) { return j.seq > after; });
  std::sort(c.begin(), c.end(), [](const auto* a, const auto* b) { return a->seq < b->seq; });
  const int64_t newest = c.empty() ? 0 : c.back()->seq;  // stays: its seq is never reused
  Look(
      c, rows_max, [&](const JournalEntry& j) { return j.at_ms < before_ms && j.seq < newest; },
      out.journal, out);
}

void LookQuarantine(const State& state, int64_t before_ms, int64_t after, int64_t rows_max,
                    RetainedRows& out) {
  const QuarantineTable& table = *state.quarantine;
  const auto c = Candidates<QuarantineRecord>(
      table.records, [&](const QuarantineRecord& r) { return r.id > after; });
  const int64_t newest = c.empty() ? 0 : c.back()->id;
  Look(
      c, rows_max,
      [&](const QuarantineRecord& r) {
        return r.id < newest && QuarantineSettled(table, r, before_ms);
      },
      out.quarantine, out);
  for (const QuarantineRecord& r : out.quarantine) {
    ForRange(
        table.audit, std::make_tuple(r.id, kSeqMin),
        [&](const std::tuple<int64_t, int64_t>& key) { return std::get<0>(key) == r.id; },
        [&](const QuarantineAudit& a) {
          out.audit.push_back(a);
          return true;
        });
  }
}

void LookEffectLog(const State& state, int64_t before_ms, int64_t after, int64_t rows_max,
                   RetainedRows& out) {
  auto c = Candidates<EffectLogEntry>(state.effects->log,
                                      [&](const EffectLogEntry& e) { return e.seq > after; });
  std::sort(c.begin(), c.end(), [](const auto* a, const auto* b) { return a->seq < b->seq; });
  const int64_t newest = c.empty() ? 0 : c.back()->seq;
  Look(
      c, rows_max,
      [&](const EffectLogEntry& e) {
        return e.seq < newest && IntentSettledBefore(*state.effects, e.key, before_ms);
      },
      out.effect_log, out);
}

// A retained intent as kept (without its key), with the key it was found by.
std::optional<EffectIntent> WithKey(EffectIntent retained, std::string_view key) {
  retained.key = key;
  return retained;
}

// What decides whether a settled intent is retainable (store_retention.h, kIntent): the latest
// seq of each (consumer, subject, effect), and the keys compensations name.
struct IntentFacts {
  std::map<std::tuple<std::string, std::string, std::string>, int64_t, KeyLess> latest;
  std::set<std::string, KeyLess> named;
};
IntentFacts FactsOf(const EffectTable& table) {
  IntentFacts facts;
  for (const auto& [seq, e] : table.intents) {
    int64_t& latest = facts.latest[std::make_tuple(e.consumer, e.subject, e.effect)];
    latest = std::max(latest, seq);
  }
  for (const auto& [seq, c] : table.compensations) {
    if (!c.covers.empty()) facts.named.insert(c.covers);
    if (!c.compensating_key.empty()) facts.named.insert(c.compensating_key);
  }
  return facts;
}
bool IntentRetainable(const EffectTable& table, const IntentFacts& facts, const EffectIntent& e,
                      int64_t before_ms) {
  if (!Settled(e.state) || !e.settled_at_ms || *e.settled_at_ms >= before_ms) return false;
  const auto log = table.log.lower_bound(std::make_tuple(e.key, kSeqMin));
  if (log != table.log.end() && std::get<0>(log->first) == e.key) return false;
  const auto latest = facts.latest.find(std::make_tuple(e.consumer, e.subject, e.effect));
  return latest != facts.latest.end() && latest->second > e.seq && facts.named.count(e.key) == 0;
}

void LookIntents(const State& state, int64_t before_ms, int64_t after, int64_t rows_max,
                 RetainedRows& out) {
  const EffectTable& table = *state.effects;
  const IntentFacts facts = FactsOf(table);
  std::vector<const EffectIntent*> c;  // by seq: the table's order
  for (auto it = table.intents.upper_bound(after); it != table.intents.end(); ++it) {
    c.push_back(&it->second);
  }
  Look(
      c, rows_max,
      [&](const EffectIntent& e) { return IntentRetainable(table, facts, e, before_ms); },
      out.intents, out);
}

// Gaps and outbox rows: every candidate is retainable, so no cursor.
void LookGapsAndOutbox(const State& state, int64_t before_ms, int64_t rows_max, RetainedRows& out) {
  const auto all = [](const auto&) { return true; };
  if (out.kind == RetainedKind::kGap) {
    auto c = Candidates<GapRecord>(*state.gaps, [&](const GapRecord& g) {
      return GapSettled(g, before_ms) && !AnyDeferred(*state.deferred, g.consumer, g.subject);
    });
    std::stable_sort(c.begin(), c.end(), [](const GapRecord* a, const GapRecord* b) {
      return *a->closed_at_ms < *b->closed_at_ms;  // ties stay in key order
    });
    Look(c, rows_max, all, out.gaps, out);
    return;
  }
  auto c = Candidates<OutboxRow>(state.outbox->rows, [&](const OutboxRow& row) {
    return row.sent_at_ms && *row.sent_at_ms < before_ms;
  });
  std::stable_sort(c.begin(), c.end(), [](const OutboxRow* a, const OutboxRow* b) {
    return *a->sent_at_ms < *b->sent_at_ms;  // ties stay in seq order
  });
  Look(c, rows_max, all, out.outbox, out);
  out.next = 0;
}

// The (consumer, subject) pairs with an intended or unknown intent: their receipts stay.
std::set<std::tuple<std::string, std::string>, KeyLess> OpenIntentSubjects(
    const EffectTable& table, const Table<int64_t, EffectIntent>* overlay) {
  std::set<std::tuple<std::string, std::string>, KeyLess> out;
  const auto consider = [&](const EffectIntent& intent) {
    if (!Settled(intent.state)) out.emplace(intent.consumer, intent.subject);
  };
  for (const auto& [seq, intent] : table.intents) {
    if (overlay == nullptr || overlay->count(seq) == 0) consider(intent);
  }
  if (overlay != nullptr) {
    for (const auto& [seq, intent] : *overlay) consider(intent);
  }
  return out;
}

bool ReceiptRetainable(const LedgerEntry& e, int64_t before_ms,
                       const std::set<std::tuple<std::string, std::string>, KeyLess>& open) {
  return e.state == LedgerState::kApplied && e.committed_at_ms < before_ms &&
         open.count(std::tuple<std::string_view, std::string_view>(e.consumer, e.subject)) == 0;
}

RetainedRows RetainableLedgerOf(const State& state, int64_t before_ms, const LedgerKey& after,
                                int64_t rows_max) {
  assert(rows_max > 0);
  RetainedRows out{.kind = RetainedKind::kLedger};
  const auto open = OpenIntentSubjects(*state.effects, nullptr);
  const auto& ledger = *state.ledger;
  auto it = after.consumer.empty()
                ? ledger.begin()
                : ledger.upper_bound(LedgerIdView(after.consumer, after.source, after.event_id));
  int64_t looked = 0;
  for (; it != ledger.end() && looked < rows_max; ++it, ++looked) {
    if (ReceiptRetainable(it->second, before_ms, open)) out.ledger.push_back(it->second);
    out.next_key = {std::get<0>(it->first), std::get<1>(it->first), std::get<2>(it->first)};
  }
  out.end = it == ledger.end();
  return out;
}

// Digests committed in a second that ended before `before_ms`.
bool DigestForgettable(int64_t committed_s, int64_t before_ms) {
  return committed_s < FloorSeconds(before_ms);
}

RetainedRows RetainableOf(const State& state, RetainedKind kind, int64_t before_ms, int64_t after,
                          int64_t rows_max) {
  assert(rows_max > 0);
  if (kind == RetainedKind::kLedger) return RetainableLedgerOf(state, before_ms, {}, rows_max);
  RetainedRows out{.kind = kind};
  switch (kind) {
    case RetainedKind::kJournal:
      LookJournal(state, before_ms, after, rows_max, out);
      break;
    case RetainedKind::kQuarantine:
      LookQuarantine(state, before_ms, after, rows_max, out);
      break;
    case RetainedKind::kEffectLog:
      LookEffectLog(state, before_ms, after, rows_max, out);
      break;
    case RetainedKind::kIntent:
      LookIntents(state, before_ms, after, rows_max, out);
      break;
    case RetainedKind::kGap:
    case RetainedKind::kOutbox:
      LookGapsAndOutbox(state, before_ms, rows_max, out);
      break;
    case RetainedKind::kLedger:
      break;
  }
  return out;
}

int64_t CountRetainableOf(const State& state, RetainedKind kind, int64_t before_ms) {
  constexpr int64_t kAll = std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(RetainableOf(state, kind, before_ms, kSeqMin, kAll).size());
}

int64_t CountDigestsOf(const State& state, int64_t before_ms) {
  int64_t count = 0;
  for (const auto& [digest, second] : *state.ledger_digests) {
    count += DigestForgettable(second, before_ms) ? 1 : 0;
  }
  return count;
}

// One record per name, sorted by name: the latest record of a name replaces the earlier one.
void PutRecord(const EvidenceRecord& record, std::vector<EvidenceRecord>& records) {
  const auto it = std::lower_bound(
      records.begin(), records.end(), record.name,
      [](const EvidenceRecord& a, const std::string& name) { return a.name < name; });
  if (it != records.end() && it->name == record.name) {
    *it = record;
  } else {
    records.insert(it, record);
  }
}

class MemoryTransaction final : public Transaction {
 public:
  MemoryTransaction(std::shared_ptr<MemoryDatabase> database, std::shared_ptr<const State> base,
                    std::shared_ptr<Session> session)
      : database_(std::move(database)), base_(std::move(base)), session_(std::move(session)) {
    assert(session_->open == Session::Open::kWrite);
  }
  ~MemoryTransaction() override {
    if (base_ != nullptr) (void)Rollback();  // a crash: nothing of the overlay is kept
  }

  Status Commit() override {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    database_->Commit(base_, std::move(overlay_));
    session_->open = Session::Open::kNone;
    return Status::Ok();
  }
  Status Rollback() override {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    database_->EndWrite(base_);
    overlay_ = Overlay{};
    session_->open = Session::Open::kNone;
    return Status::Ok();
  }

  Result<BatchRows> Load(const BatchKeys& keys) override;

  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    const LedgerEntry* row = LedgerRow(LedgerIdView(consumer, source, event_id));
    if (row != nullptr) return std::optional<LedgerEntry>(*row);
    EVIDENT_ASSIGN_OR_RETURN(const bool retained, DigestKept(consumer, source, event_id));
    if (retained)
      return std::optional<LedgerEntry>(RetainedLedgerEntry(consumer, source, event_id));
    return std::optional<LedgerEntry>();
  }
  Result<Insert> InsertLedger(const LedgerEntry& entry) override {
    const LedgerIdView id(entry.consumer, entry.source, entry.event_id);
    if (LedgerRow(id) != nullptr) return Insert::kAlreadyThere;
    EVIDENT_ASSIGN_OR_RETURN(const bool retained,
                             DigestKept(entry.consumer, entry.source, entry.event_id));
    if (retained) return Insert::kAlreadyThere;
    overlay_.ledger.emplace(LedgerId(id), entry);
    return Insert::kInserted;
  }
  Status DeleteLedger(std::string_view consumer, std::string_view source,
                      std::string_view event_id) override {
    const LedgerIdView id(consumer, source, event_id);
    if (LedgerRow(id) == nullptr) return Status::Ok();
    if (const auto it = overlay_.ledger.find(id); it != overlay_.ledger.end()) {
      overlay_.ledger.erase(it);
    }
    if (base_->ledger->find(id) != base_->ledger->end()) overlay_.ledger_deleted.emplace(id);
    return Status::Ok();
  }
  Result<std::optional<LedgerEntry>> AppliedAfter(std::string_view consumer,
                                                  std::string_view subject,
                                                  int64_t after_projection_version,
                                                  const std::vector<std::string>& types) override;
  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) override {
    LedgerEntry* row = WritableLedgerRow(LedgerIdView(consumer, source, event_id));
    if (row == nullptr || row->state != LedgerState::kDeferred) {
      return Status::Internal("no deferred ledger row to apply");
    }
    row->state = LedgerState::kApplied;
    row->projection_version = projection_version;
    row->committed_at_ms = committed_at_ms;
    return Status::Ok();
  }
  // A key with no row counts nothing (an UPDATE that matches no row, on SQLite).
  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) override {
    LedgerEntry* row = WritableLedgerRow(LedgerIdView(consumer, source, event_id));
    if (row == nullptr) return Status::Ok();
    row->duplicates += 1;
    row->last_duplicate_at_ms = at_ms;
    return Status::Ok();
  }

  Result<bool> ReadProjection(std::string_view consumer, std::string_view subject,
                              Projection& out) override {
    const ProjectionRow* row = ProjectionRowOf(consumer, subject);
    if (row == nullptr || !row->value) {
      FreshProjection(consumer, subject, out);
      return false;
    }
    AssignProjection(*row->value, out);
    return true;
  }
  Status PutProjection(const Projection& projection,
                       std::optional<int64_t> expected_version) override;

  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) override {
    const DeferredEvent* row = DeferredRow(consumer, subject, subject_version);
    return row == nullptr ? std::optional<DeferredEvent>() : std::optional<DeferredEvent>(*row);
  }
  Result<Insert> InsertDeferred(const DeferredEvent& event) override {
    if (DeferredRow(event.consumer, event.subject, event.subject_version) != nullptr) {
      return Insert::kAlreadyThere;
    }
    overlay_.deferred.insert_or_assign(
        DeferredId(event.consumer, event.subject, event.subject_version), event);
    return Insert::kInserted;
  }
  // A key with no event deletes nothing.
  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) override {
    if (DeferredRow(consumer, subject, subject_version) == nullptr) return Status::Ok();
    overlay_.deferred.insert_or_assign(DeferredId(consumer, subject, subject_version),
                                       std::nullopt);
    return Status::Ok();
  }

  Result<QuarantineKept> Quarantine(const QuarantineRecord& record) override;
  Result<std::optional<GapRecord>> FindGap(std::string_view consumer, std::string_view subject,
                                           int64_t expected_version) override {
    const GapRecord* row = GapRow(GapId(consumer, subject, expected_version));
    return row == nullptr ? std::optional<GapRecord>() : std::optional<GapRecord>(*row);
  }
  Result<Insert> InsertGap(const GapRecord& record) override {
    const GapId id(record.consumer, record.subject, record.expected_version);
    if (GapRow(id) != nullptr) return Insert::kAlreadyThere;
    overlay_.gaps.emplace(id, record);
    return Insert::kInserted;
  }
  Result<int64_t> CloseGaps(std::string_view consumer, std::string_view subject,
                            int64_t through_version, const GapClosing& closing) override {
    std::vector<GapId> open;
    const auto in_range = [&](const GapId& id) {
      return std::get<0>(id) == consumer && std::get<1>(id) == subject;
    };
    const GapId from(consumer, subject, kSeqMin);
    for (const auto* table : {&std::as_const(*base_->gaps), &std::as_const(overlay_.gaps)}) {
      for (auto it = table->lower_bound(from); it != table->end() && in_range(it->first); ++it) {
        open.push_back(it->first);
      }
    }
    int64_t closed = 0;
    for (const GapId& id : open) {
      const GapRecord* row = GapRow(id);
      if (row == nullptr || row->state == GapState::kClosed) continue;
      if (row->missing_to > through_version) continue;
      GapRecord& draft = overlay_.gaps.insert_or_assign(id, *row).first->second;
      draft.state = GapState::kClosed;
      draft.closed_at_ms = closing.at_ms;
      draft.closed_by.assign(closing.by);
      draft.note.assign(closing.note);
      draft.how = closing.how;
      draft.cause = closing.cause;
      if (!closing.waiting_versions.empty()) {
        draft.waiting_versions = closing.waiting_versions;
        const int64_t lowest =
            *std::min_element(closing.waiting_versions.begin(), closing.waiting_versions.end());
        draft.missing_to = std::max(draft.expected_version, std::min(draft.missing_to, lowest - 1));
      }
      ++closed;
    }
    return closed;
  }
  Status UpdateGap(const GapRecord& record) override {
    const GapId id(record.consumer, record.subject, record.expected_version);
    const GapRecord* row = GapRow(id);
    if (row == nullptr) {
      return Status::NotFound("no gap record of " + record.consumer + "/" + record.subject +
                              " at version " + std::to_string(record.expected_version));
    }
    GapRecord next = record;
    next.opened_at_ms = row->opened_at_ms;  // when it opened never changes
    overlay_.gaps.insert_or_assign(id, std::move(next));
    return Status::Ok();
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    const QuarantineRecord* row = QuarantineRow(id);
    return row == nullptr ? std::optional<QuarantineRecord>()
                          : std::optional<QuarantineRecord>(*row);
  }
  Status SetQuarantineStatus(int64_t id, QuarantineStatus status) override {
    QuarantineRecord* row = DraftQuarantine(id);
    if (row == nullptr) return Status::NotFound("no quarantine record " + std::to_string(id));
    row->status = status;
    return Status::Ok();
  }
  Status AuditQuarantine(const QuarantineAudit& entry) override {
    if (QuarantineRow(entry.record_id) == nullptr) {
      return Status::NotFound("no quarantine record " + std::to_string(entry.record_id));
    }
    QuarantineAudit& audit = overlay_.audit.emplace_back(entry);
    audit.seq = base_->audit_seq_last + static_cast<int64_t>(overlay_.audit.size());
    return Status::Ok();
  }
  Status Journal(const JournalEntry& entry) override {
    JournalEntry& journal = overlay_.journal.emplace_back(entry);
    journal.seq = base_->journal_seq_last + static_cast<int64_t>(overlay_.journal.size());
    return Status::Ok();
  }
  Status PutEvidence(const EvidenceRecord& record) override {
    PutRecord(record, DraftProjection(record.consumer, record.subject).evidence);
    return Status::Ok();
  }

  Status SetPosition(std::string_view source, std::string_view position) override {
    overlay_.positions.insert_or_assign(std::string(source), std::string(position));
    return Status::Ok();
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    if (const auto it = overlay_.positions.find(source); it != overlay_.positions.end()) {
      return std::optional<std::string>(it->second);
    }
    const auto& positions = *base_->positions;
    const auto it = positions.find(source);
    return it == positions.end() ? std::optional<std::string>()
                                 : std::optional<std::string>(it->second);
  }

  Result<Insert> InsertIntent(const EffectIntent& intent) override {
    if (IntentRow(intent.key) != nullptr) return Insert::kAlreadyThere;
    EVIDENT_ASSIGN_OR_RETURN(const std::optional<EffectIntent> retained,
                             RetainedIntent(intent.key));
    if (retained) return Insert::kAlreadyThere;
    const int64_t seq =
        base_->intent_seq_last + static_cast<int64_t>(overlay_.intent_keys.size()) + 1;
    EffectIntent& row = overlay_.intents.insert_or_assign(seq, intent).first->second;
    row.seq = seq;
    row.revision = 1;
    overlay_.intent_keys.emplace(intent.key, seq);
    return Insert::kInserted;
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    const EffectIntent* row = IntentRow(key);
    if (row != nullptr) return std::optional<EffectIntent>(*row);
    return RetainedIntent(key);
  }
  Result<Rows<EffectIntent>> DueIntents(int64_t now_ms, int64_t rows_max) override;
  Status UpdateIntent(const EffectIntent& intent, int64_t expected_revision) override;
  Status LogIntent(const EffectLogEntry& entry) override {
    if (IntentRow(entry.key) == nullptr) return Status::NotFound("no effect intent " + entry.key);
    EffectLogEntry& row = overlay_.effect_log.emplace_back(entry);
    row.seq = base_->effect_log_seq_last + static_cast<int64_t>(overlay_.effect_log.size());
    return Status::Ok();
  }
  Result<std::optional<EffectIntent>> LatestIntentOf(std::string_view consumer,
                                                     std::string_view subject,
                                                     std::string_view effect) override;
  Status UpdateCompensation(const CompensationRecord& record) override {
    const CompensationRecord* row = CompensationRow(record.consumer, record.key);
    if (row == nullptr) return Status::NotFound("no compensation " + record.key);
    CompensationRecord next = *row;
    next.covers = record.covers;
    next.compensating_key = record.compensating_key;
    next.state = record.state;
    next.detail = record.detail;
    next.updated_at_ms = record.updated_at_ms;
    const int64_t seq = next.seq;
    overlay_.compensations.insert_or_assign(seq, std::move(next));
    return Status::Ok();
  }
  Result<std::vector<CompensationRecord>> CompensationsOfIntent(std::string_view key) override;
  Status InsertCorrection(const ProjectionCorrection& correction) override {
    ProjectionCorrection& row = overlay_.corrections.emplace_back(correction);
    row.seq = base_->correction_seq_last + static_cast<int64_t>(overlay_.corrections.size());
    return Status::Ok();
  }
  Result<Insert> InsertCompensation(const CompensationRecord& record) override {
    if (CompensationRow(record.consumer, record.key) != nullptr) return Insert::kAlreadyThere;
    const int64_t seq =
        base_->compensation_seq_last + static_cast<int64_t>(overlay_.compensation_keys.size()) + 1;
    CompensationRecord& row = overlay_.compensations.insert_or_assign(seq, record).first->second;
    row.seq = seq;
    overlay_.compensation_keys.emplace(std::make_tuple(record.consumer, record.key), seq);
    return Insert::kInserted;
  }

  Result<OutboxAppend> AppendOutbox(const OutboxRow& row) override;
  Result<Rows<OutboxRow>> PendingOutbox(int64_t after_seq, int64_t rows_max) override {
    RowsCut<OutboxRow> cut(rows_max);
    ForEachOutbox(after_seq, [&](const OutboxRow& row) {
      return row.sent_at_ms || row.parked_at_ms || cut.Add(row);
    });
    return cut.Take();
  }
  Status MarkOutboxSent(int64_t seq, std::string_view stream,
                        std::optional<int64_t> stream_sequence, int64_t at_ms) override {
    OutboxRow* row = DraftOutbox(seq);
    if (row == nullptr) return Status::NotFound("no outbox row " + std::to_string(seq));
    if (row->sent_at_ms) return Status::Ok();  // the first acknowledgement stays
    row->sent_at_ms = at_ms;
    row->stream.assign(stream);
    row->stream_sequence = stream_sequence;
    row->parked_at_ms.reset();  // parked while a relay had it in hand: it went out
    row->parked_reason.clear();
    return Status::Ok();
  }
  Status RecordOutboxAttempt(int64_t seq, std::string_view error, int64_t at_ms) override {
    OutboxRow* row = DraftOutbox(seq);
    if (row == nullptr) return Status::NotFound("no outbox row " + std::to_string(seq));
    ++row->attempts;
    row->last_error.assign(error);
    row->last_attempt_at_ms = at_ms;
    return Status::Ok();
  }
  Status ParkOutbox(int64_t seq, std::string_view reason, int64_t at_ms) override {
    return SetOutboxParked(seq, reason, at_ms);
  }
  Status UnparkOutbox(int64_t seq) override { return SetOutboxParked(seq, std::nullopt, 0); }
  Result<int64_t> DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) override;
  Result<int64_t> RemoveRetained(const RetainedRows& rows, int64_t before_ms) override;
  Status RecordRetention(const RetentionRun& run) override {
    overlay_.retention = run;
    return Status::Ok();
  }
  Result<ForgottenDigests> ForgetLedgerDigests(int64_t before_ms, std::string_view after,
                                               int64_t rows_max) override;
  Result<int64_t> PushSet(SetKind kind, const StoredContracts& set) override {
    if (set.version != Sets(kind).Latest() + 1) return SetTaken(kind, set.version);
    overlay_.sets[static_cast<int>(kind)].push_back(set);
    return set.version;
  }
  Result<int64_t> LatestSetVersion(SetKind kind) override { return Sets(kind).Latest(); }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override {
    return Sets(kind).Copy(version);
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override {
    return Sets(kind).History(rows_max);
  }

 private:
  ContractsView Sets(SetKind kind) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    const auto k = static_cast<int>(kind);
    return ContractsView{.sets = *base_->sets[k], .pushed = overlay_.sets[k]};
  }
  // Parks the row with `reason`, or (nullopt) makes it pending again.
  Status SetOutboxParked(int64_t seq, std::optional<std::string_view> reason, int64_t at_ms) {
    OutboxRow* row = DraftOutbox(seq);
    if (row == nullptr) return Status::NotFound("no outbox row " + std::to_string(seq));
    EVIDENT_RETURN_IF_ERROR(OutboxParkRefusal(seq, row->sent_at_ms.has_value(),
                                              row->parked_at_ms.has_value(), reason.has_value()));
    row->parked_at_ms = reason ? std::optional<int64_t>(at_ms) : std::nullopt;
    row->parked_reason.assign(reason.value_or(""));
    return Status::Ok();
  }

  const EffectIntent* IntentRow(std::string_view key) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    int64_t seq = 0;
    if (const auto it = overlay_.intent_keys.find(key); it != overlay_.intent_keys.end()) {
      seq = it->second;
    } else if (const auto there = base_->effects->intent_keys.find(key);
               there != base_->effects->intent_keys.end()) {
      seq = there->second;
    } else {
      return nullptr;
    }
    if (const auto it = overlay_.intents.find(seq); it != overlay_.intents.end()) {
      return &it->second;
    }
    if (overlay_.intents_removed.count(seq) > 0) return nullptr;  // its digest answers
    return &base_->effects->intents.at(seq);
  }
  const CompensationRecord* CompensationRow(std::string_view consumer, std::string_view key) const {
    const std::tuple<std::string_view, std::string_view> id(consumer, key);
    int64_t seq = 0;
    if (const auto it = overlay_.compensation_keys.find(id);
        it != overlay_.compensation_keys.end()) {
      seq = it->second;
    } else if (const auto there = base_->effects->compensation_keys.find(id);
               there != base_->effects->compensation_keys.end()) {
      seq = there->second;
    } else {
      return nullptr;
    }
    if (const auto it = overlay_.compensations.find(seq); it != overlay_.compensations.end()) {
      return &it->second;
    }
    return &base_->effects->compensations.at(seq);
  }
  // Calls `visit(row)` for every intent this transaction sees (the overlay's version of a changed
  // one), by seq.
  template <typename Visit>
  void ForEachIntent(Visit visit) const {
    for (const auto& [seq, intent] : base_->effects->intents) {
      if (overlay_.intents.count(seq) == 0) visit(intent);
    }
    for (const auto& [seq, intent] : overlay_.intents) {
      if (base_->effects->intents.count(seq) == 0) visit(intent);
    }
  }
  const GapRecord* GapRow(const GapId& id) const {
    if (overlay_.gaps_removed.count(id) > 0) return nullptr;
    if (const auto it = overlay_.gaps.find(id); it != overlay_.gaps.end()) return &it->second;
    const auto it = base_->gaps->find(id);
    return it == base_->gaps->end() ? nullptr : &it->second;
  }
  const QuarantineRecord* QuarantineRow(int64_t id) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    if (overlay_.quarantine_removed.count(id) > 0) return nullptr;
    if (const auto it = overlay_.quarantine.find(id); it != overlay_.quarantine.end()) {
      return &it->second;
    }
    const auto it = base_->quarantine->records.find(id);
    return it == base_->quarantine->records.end() ? nullptr : &it->second;
  }
  QuarantineRecord* DraftQuarantine(int64_t id) {
    if (const auto it = overlay_.quarantine.find(id); it != overlay_.quarantine.end()) {
      return &it->second;
    }
    const QuarantineRecord* row = QuarantineRow(id);
    if (row == nullptr) return nullptr;
    return &overlay_.quarantine.emplace(id, *row).first->second;
  }
  // The record holding the same input as `record`, if any: same identity, same bytes.
  std::optional<int64_t> SameInput(const QuarantineRecord& record) const {
    const QuarantineIdent ident = IdentOf(record);
    using Index = std::multimap<QuarantineIdent, int64_t, KeyLess>;
    for (const Index* index :
         {&overlay_.quarantine_opened, &std::as_const(base_->quarantine->by_ident)}) {
      for (auto [it, end] = index->equal_range(ident); it != end; ++it) {
        const QuarantineRecord* there = QuarantineRow(it->second);
        if (there != nullptr && there->raw == record.raw) return it->second;
      }
    }
    return std::nullopt;
  }

  // Outbox rows as this transaction sees them.
  const OutboxRow* OutboxRowAt(int64_t seq) const {
    if (const auto it = overlay_.outbox.find(seq); it != overlay_.outbox.end()) {
      return it->second ? &*it->second : nullptr;
    }
    const auto it = base_->outbox->rows.find(seq);
    return it == base_->outbox->rows.end() ? nullptr : &it->second;
  }
  std::optional<int64_t> OutboxSeqOf(std::string_view source, std::string_view event_id) const {
    const std::tuple<std::string_view, std::string_view> id(source, event_id);
    if (const auto it = overlay_.outbox_ids.find(id); it != overlay_.outbox_ids.end()) {
      return it->second;
    }
    const auto it = base_->outbox->ids.find(id);
    return it == base_->outbox->ids.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  OutboxRow* DraftOutbox(int64_t seq) {
    if (const auto it = overlay_.outbox.find(seq); it != overlay_.outbox.end()) {
      return it->second ? &*it->second : nullptr;
    }
    const OutboxRow* row = OutboxRowAt(seq);
    if (row == nullptr) return nullptr;
    return &*overlay_.outbox.emplace(seq, *row).first->second;
  }
  // Calls `visit(row)` for the rows above `after_seq`, by seq, until it returns false.
  template <typename Visit>
  void ForEachOutbox(int64_t after_seq, Visit visit) const {
    const auto& base = base_->outbox->rows;
    auto b = base.upper_bound(after_seq);
    auto o = overlay_.outbox.upper_bound(after_seq);
    while (b != base.end() || o != overlay_.outbox.end()) {
      const bool from_overlay =
          b == base.end() || (o != overlay_.outbox.end() && o->first <= b->first);
      if (from_overlay) {
        if (b != base.end() && b->first == o->first) ++b;  // the overlay's row replaces it
        const auto& row = (o++)->second;
        if (row && !visit(*row)) return;
      } else if (!visit((b++)->second)) {
        return;
      }
    }
  }

  // Whether the key's digest is kept, as this transaction sees the digests.
  Result<bool> DigestKept(std::string_view consumer, std::string_view source,
                          std::string_view event_id) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    if (base_->ledger_digests->empty() && overlay_.ledger_digests.empty()) return false;
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, LedgerKeyDigest(consumer, source, event_id));
    if (const auto it = overlay_.ledger_digests.find(digest); it != overlay_.ledger_digests.end()) {
      return it->second.has_value();
    }
    return base_->ledger_digests->count(digest) > 0;
  }
  Status RemoveRetainedLedger(const std::vector<LedgerEntry>& rows, int64_t before_ms,
                              int64_t& removed);
  Status RemoveRetainedIntents(const std::vector<EffectIntent>& rows, int64_t before_ms,
                               int64_t& removed);
  // The retained form of the intent of `key` when retention kept only its digest.
  Result<std::optional<EffectIntent>> RetainedIntent(std::string_view key) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    const auto& base = base_->effects->intent_digests;
    if (base.empty() && overlay_.intent_digests.empty()) return std::optional<EffectIntent>();
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(key));
    if (const auto it = overlay_.intent_digests.find(digest); it != overlay_.intent_digests.end()) {
      return WithKey(it->second, key);
    }
    if (const auto it = base.find(digest); it != base.end()) return WithKey(it->second, key);
    return std::optional<EffectIntent>();
  }

  // Rows as this transaction sees them: its own writes over the base.
  const LedgerEntry* LedgerRow(const LedgerIdView& id) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    if (const auto it = overlay_.ledger.find(id); it != overlay_.ledger.end()) return &it->second;
    if (!overlay_.ledger_deleted.empty() && overlay_.ledger_deleted.count(id) != 0) return nullptr;
    const auto it = base_->ledger->find(id);
    return it == base_->ledger->end() ? nullptr : &it->second;
  }
  LedgerEntry* WritableLedgerRow(const LedgerIdView& id) {
    if (const auto it = overlay_.ledger.find(id); it != overlay_.ledger.end()) return &it->second;
    const LedgerEntry* row = LedgerRow(id);
    if (row == nullptr) return nullptr;
    return &overlay_.ledger.emplace(LedgerId(id), *row).first->second;
  }
  const ProjectionRow* ProjectionRowOf(std::string_view consumer, std::string_view subject) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    const std::tuple<std::string_view, std::string_view> id(subject, consumer);
    if (const auto it = overlay_.projections.find(id); it != overlay_.projections.end()) {
      return &it->second;
    }
    const auto it = base_->projections->find(id);
    return it == base_->projections->end() ? nullptr : &it->second;
  }
  // The overlay's row of (consumer, subject), a copy of the base's when first written.
  ProjectionRow& DraftProjection(std::string_view consumer, std::string_view subject) {
    const std::tuple<std::string_view, std::string_view> id(subject, consumer);
    if (const auto it = overlay_.projections.find(id); it != overlay_.projections.end()) {
      return it->second;
    }
    const ProjectionRow* base = ProjectionRowOf(consumer, subject);
    return overlay_.projections.emplace(ProjectionId(id), base ? *base : ProjectionRow{})
        .first->second;
  }
  const DeferredEvent* DeferredRow(std::string_view consumer, std::string_view subject,
                                   int64_t subject_version) const {
    assert(base_ != nullptr && "transaction used after Commit or Rollback");
    const std::tuple<std::string_view, std::string_view, int64_t> id(consumer, subject,
                                                                     subject_version);
    if (const auto it = overlay_.deferred.find(id); it != overlay_.deferred.end()) {
      return it->second ? &*it->second : nullptr;
    }
    const auto it = base_->deferred->find(id);
    return it == base_->deferred->end() ? nullptr : &it->second;
  }
  void AppendDeferredOf(std::string_view consumer, std::string_view subject,
                        std::vector<DeferredEvent>& out) const;

  std::shared_ptr<MemoryDatabase> database_;
  std::shared_ptr<const State> base_;  // null once finished
  std::shared_ptr<Session> session_;
  Overlay overlay_;
};

Status MemoryTransaction::PutProjection(const Projection& projection,
                                        std::optional<int64_t> expected_version) {
  const ProjectionRow* row = ProjectionRowOf(projection.consumer, projection.subject);
  const std::optional<int64_t> stored =
      row != nullptr && row->value ? std::optional<int64_t>(row->value->version) : std::nullopt;
  if (stored != expected_version) {
    return Status::Aborted("projection " + projection.consumer + "/" + projection.subject +
                           " is at " +
                           (stored ? "version " + std::to_string(*stored) : "no version") +
                           ", not the one this write expected");
  }
  const int64_t owner_version_seen =
      stored ? std::max(row->value->owner_version_seen, projection.owner_version_seen)
             : projection.owner_version_seen;
  ProjectionRow& draft = DraftProjection(projection.consumer, projection.subject);
  if (!draft.value) draft.value.emplace();
  AssignProjection(projection, *draft.value);
  draft.value->owner_version_seen = owner_version_seen;
  return Status::Ok();
}

// Every deferred event of (consumer, subject) this transaction sees, by subject version.
void MemoryTransaction::AppendDeferredOf(std::string_view consumer, std::string_view subject,
                                         std::vector<DeferredEvent>& out) const {
  std::map<int64_t, const DeferredEvent*> rows;
  const std::tuple<std::string_view, std::string_view, int64_t> from(consumer, subject, kSeqMin);
  const auto in_range = [&](const DeferredId& id) {
    return std::get<0>(id) == consumer && std::get<1>(id) == subject;
  };
  ForRange(*base_->deferred, from, in_range, [&](const DeferredEvent& d) {
    rows[d.subject_version] = &d;
    return true;
  });
  for (auto it = overlay_.deferred.lower_bound(from);
       it != overlay_.deferred.end() && in_range(it->first); ++it) {
    if (it->second) {
      rows[std::get<2>(it->first)] = &*it->second;
    } else {
      rows.erase(std::get<2>(it->first));
    }
  }
  for (const auto& [version, row] : rows) out.push_back(*row);
}

Result<QuarantineKept> MemoryTransaction::Quarantine(const QuarantineRecord& record) {
  assert(record.outcome != Outcome::kApplied && record.outcome != Outcome::kDeferred &&
         record.outcome != Outcome::kDuplicate);
  if (const std::optional<int64_t> id = SameInput(record)) {
    QuarantineRecord* there = DraftQuarantine(*id);
    assert(there != nullptr);
    NoteAttempt(record, *there);
    return QuarantineKept{.id = *id, .added = false};
  }
  const int64_t id = base_->quarantine_id_last + ++overlay_.quarantine_opened_count;
  QuarantineRecord& opened = overlay_.quarantine.insert_or_assign(id, record).first->second;
  OpenedRecord(id, opened);
  overlay_.quarantine_opened.emplace(IdentOf(opened), id);
  return QuarantineKept{.id = id, .added = true};
}

// A (source, id) already there answers duplicate or conflict by its bytes; nothing is written.
Result<OutboxAppend> MemoryTransaction::AppendOutbox(const OutboxRow& row) {
  assert(base_ != nullptr && "transaction used after Commit or Rollback");
  if (const std::optional<int64_t> seq = OutboxSeqOf(row.source, row.event_id)) {
    const OutboxRow* there = OutboxRowAt(*seq);
    assert(there != nullptr);
    return OutboxAppend{
        .outcome = there->bytes == row.bytes ? OutboxOutcome::kDuplicate : OutboxOutcome::kConflict,
        .seq = *seq};
  }
  const int64_t seq = base_->outbox_seq_last + ++overlay_.outbox_appended;
  OutboxRow fresh{.seq = seq,
                  .source = row.source,
                  .event_id = row.event_id,
                  .type = row.type,
                  .subject = row.subject,
                  .subject_version = row.subject_version,
                  .partition = row.partition,
                  .bytes = row.bytes,
                  .created_at_ms = row.created_at_ms};
  overlay_.outbox.insert_or_assign(seq, std::move(fresh));
  overlay_.outbox_ids.insert_or_assign(OutboxId(row.source, row.event_id), seq);
  return OutboxAppend{.outcome = OutboxOutcome::kAppended, .seq = seq};
}

Result<int64_t> MemoryTransaction::DeleteSentOutbox(int64_t sent_before_ms, int64_t rows_max) {
  assert(rows_max >= 0);
  std::vector<std::pair<int64_t, OutboxId>> doomed;
  ForEachOutbox(kSeqMin, [&](const OutboxRow& row) {
    if (static_cast<int64_t>(doomed.size()) >= rows_max) return false;
    if (row.sent_at_ms && *row.sent_at_ms < sent_before_ms) {
      doomed.emplace_back(row.seq, OutboxId(row.source, row.event_id));
    }
    return true;
  });
  for (auto& [seq, id] : doomed) {
    overlay_.outbox.insert_or_assign(seq, std::nullopt);
    overlay_.outbox_ids.insert_or_assign(std::move(id), std::nullopt);
  }
  return static_cast<int64_t>(doomed.size());
}

// Each record is checked again against what this transaction sees: one changed since it was
// read (reopened, delivered again, its intent resolved anew) stays.
Result<int64_t> MemoryTransaction::RemoveRetained(const RetainedRows& rows, int64_t before_ms) {
  int64_t removed = 0;
  for (const JournalEntry& j : rows.journal) {
    if (j.at_ms >= before_ms || j.seq >= base_->journal_seq_last) continue;  // the newest stays
    const JournalId id(j.consumer, j.subject, j.seq);
    removed += base_->journal->count(id) > 0 && overlay_.journal_removed.insert(id).second;
  }
  for (const QuarantineRecord& r : rows.quarantine) {
    const QuarantineRecord* row = QuarantineRow(r.id);
    if (row == nullptr || overlay_.quarantine.count(r.id) > 0) continue;
    if (r.id >= base_->quarantine_id_last) continue;
    if (!QuarantineSettled(*base_->quarantine, *row, before_ms)) continue;
    removed += overlay_.quarantine_removed.insert(r.id).second;
  }
  for (const GapRecord& g : rows.gaps) {
    const GapId id(g.consumer, g.subject, g.expected_version);
    const GapRecord* row = GapRow(id);
    if (row == nullptr || !GapSettled(*row, before_ms)) continue;
    if (AnyDeferred(*base_->deferred, g.consumer, g.subject)) continue;
    if (AnyDeferred(overlay_.deferred, g.consumer, g.subject)) continue;
    removed += overlay_.gaps_removed.insert(id).second;
  }
  for (const EffectLogEntry& e : rows.effect_log) {
    const auto id = std::make_tuple(e.key, e.seq);
    if (base_->effects->log.count(id) == 0 || e.seq >= base_->effect_log_seq_last) continue;
    const EffectIntent* intent = IntentRow(e.key);
    if (intent == nullptr || !Settled(intent->state) || !intent->settled_at_ms ||
        *intent->settled_at_ms >= before_ms) {
      continue;
    }
    removed += overlay_.effect_log_removed.insert(id).second;
  }
  for (const OutboxRow& o : rows.outbox) {
    const OutboxRow* row = OutboxRowAt(o.seq);
    if (row == nullptr || !row->sent_at_ms || *row->sent_at_ms >= before_ms) continue;
    overlay_.outbox_ids.insert_or_assign(OutboxId(row->source, row->event_id), std::nullopt);
    overlay_.outbox.insert_or_assign(o.seq, std::nullopt);
    ++removed;
  }
  EVIDENT_RETURN_IF_ERROR(RemoveRetainedIntents(rows.intents, before_ms, removed));
  EVIDENT_RETURN_IF_ERROR(RemoveRetainedLedger(rows.ledger, before_ms, removed));
  return removed;
}

// An intent goes (checked again against the committed tables: retention removes in a
// transaction of its own), its key's digest stays with what RetainedIntentEntry keeps.
Status MemoryTransaction::RemoveRetainedIntents(const std::vector<EffectIntent>& rows,
                                                int64_t before_ms, int64_t& removed) {
  if (rows.empty()) return Status::Ok();
  const EffectTable& table = *base_->effects;
  const IntentFacts facts = FactsOf(table);
  for (const EffectIntent& e : rows) {
    const auto it = table.intents.find(e.seq);
    if (it == table.intents.end() || overlay_.intents.count(e.seq) > 0) continue;
    const EffectIntent& row = it->second;
    if (!IntentRetainable(table, facts, row, before_ms)) continue;
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(row.key));
    EffectIntent kept = RetainedIntentEntry("", row.effect, row.consumer, row.state,
                                            FloorSeconds(*row.settled_at_ms));
    overlay_.intent_digests.insert_or_assign(digest, kept);
    kept.key = row.key;
    removed += overlay_.intents_removed.emplace(e.seq, std::move(kept)).second;
  }
  return Status::Ok();
}

// A receipt goes, its key's digest stays (with the second it was committed in).
Status MemoryTransaction::RemoveRetainedLedger(const std::vector<LedgerEntry>& rows,
                                               int64_t before_ms, int64_t& removed) {
  if (rows.empty()) return Status::Ok();
  const auto open = memory_store::OpenIntentSubjects(*base_->effects, &overlay_.intents);
  for (const LedgerEntry& e : rows) {
    const LedgerIdView id(e.consumer, e.source, e.event_id);
    const LedgerEntry* row = LedgerRow(id);
    if (row == nullptr || !memory_store::ReceiptRetainable(*row, before_ms, open)) continue;
    EVIDENT_ASSIGN_OR_RETURN(std::string digest, LedgerKeyDigest(e.consumer, e.source, e.event_id));
    overlay_.ledger_digests.insert_or_assign(std::move(digest), FloorSeconds(row->committed_at_ms));
    overlay_.ledger.erase(LedgerId(id));
    if (base_->ledger->count(id) != 0) overlay_.ledger_deleted.emplace(id);
    ++removed;
  }
  return Status::Ok();
}

// Digests in byte order past `after`, as this transaction sees them (its own over the base's).
Result<ForgottenDigests> MemoryTransaction::ForgetLedgerDigests(int64_t before_ms,
                                                                std::string_view after,
                                                                int64_t rows_max) {
  assert(rows_max > 0);
  std::map<std::string, int64_t> seen;  // every digest past `after` (tests' sizes)
  const auto& base = *base_->ledger_digests;
  for (auto it = base.upper_bound(after); it != base.end(); ++it) seen.emplace(*it);
  for (auto it = overlay_.ledger_digests.upper_bound(after); it != overlay_.ledger_digests.end();
       ++it) {
    if (it->second) {
      seen.insert_or_assign(it->first, *it->second);
    } else {
      seen.erase(it->first);
    }
  }
  ForgottenDigests out;
  int64_t looked = 0;
  for (auto it = seen.begin(); it != seen.end() && looked < rows_max; ++it, ++looked) {
    out.next = it->first;
    if (!memory_store::DigestForgettable(it->second, before_ms)) continue;
    overlay_.ledger_digests.insert_or_assign(it->first, std::nullopt);
    ++out.forgotten;
  }
  out.end = static_cast<int64_t>(seen.size()) <= rows_max;
  return out;
}

// Every intent is looked at (no index by due time here), the overlay's version of a changed one.
Result<Rows<EffectIntent>> MemoryTransaction::DueIntents(int64_t now_ms, int64_t rows_max) {
  std::vector<const EffectIntent*> due;
  const auto consider = [&](const EffectIntent& intent) {
    if (intent.next_attempt_at_ms && *intent.next_attempt_at_ms <= now_ms) due.push_back(&intent);
  };
  for (const auto& [seq, intent] : base_->effects->intents) {
    if (overlay_.intents.count(seq) == 0) consider(intent);
  }
  for (const auto& [seq, intent] : overlay_.intents) consider(intent);
  std::sort(due.begin(), due.end(), [](const EffectIntent* a, const EffectIntent* b) {
    return std::tie(*a->next_attempt_at_ms, a->seq) < std::tie(*b->next_attempt_at_ms, b->seq);
  });
  RowsCut<EffectIntent> cut(rows_max);
  for (const EffectIntent* intent : due) {
    if (!cut.Add(*intent)) break;
  }
  return cut.Take();
}

Status MemoryTransaction::UpdateIntent(const EffectIntent& intent, int64_t expected_revision) {
  const EffectIntent* row = IntentRow(intent.key);
  if (row == nullptr) return Status::NotFound("no effect intent " + intent.key);
  if (row->revision != expected_revision) {
    return Status::Aborted("effect intent " + intent.key + " is at revision " +
                           std::to_string(row->revision) + ", not " +
                           std::to_string(expected_revision) + ": changed by another writer");
  }
  EffectIntent next = *row;
  next.state = intent.state;
  next.attempts = intent.attempts;
  next.last_error = intent.last_error;
  next.http_status = intent.http_status;
  next.response_digest = intent.response_digest;
  next.last_attempt_at_ms = intent.last_attempt_at_ms;
  next.next_attempt_at_ms = intent.next_attempt_at_ms;
  next.settled_at_ms = intent.settled_at_ms;
  next.claimed_by = intent.claimed_by;
  next.revision = expected_revision + 1;
  const int64_t seq = next.seq;
  overlay_.intents.insert_or_assign(seq, std::move(next));
  return Status::Ok();
}

// Every ledger row of the subject this transaction sees is looked at: the base's through the
// subject index, the overlay's in full (a batch's rows).
Result<std::optional<LedgerEntry>> MemoryTransaction::AppliedAfter(
    std::string_view consumer, std::string_view subject, int64_t after_projection_version,
    const std::vector<std::string>& types) {
  std::optional<LedgerEntry> first;
  const auto consider = [&](const LedgerEntry& e) {
    if (e.consumer != consumer || e.subject != subject || e.state != LedgerState::kApplied ||
        !e.projection_version || *e.projection_version <= after_projection_version) {
      return;
    }
    if (!types.empty() && std::find(types.begin(), types.end(), e.type) == types.end()) return;
    if (!first || std::tie(*e.projection_version, e.committed_at_ms) <
                      std::tie(*first->projection_version, first->committed_at_ms)) {
      first = e;
    }
  };
  const auto& index = *base_->ledger_by_subject;
  for (auto it = index.lower_bound(
           std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>(
               subject, consumer, std::string_view(), std::string_view()));
       it != index.end() && std::get<0>(*it) == subject && std::get<1>(*it) == consumer; ++it) {
    const LedgerEntry* row =
        LedgerRow(LedgerIdView(std::get<1>(*it), std::get<2>(*it), std::get<3>(*it)));
    if (row != nullptr) consider(*row);
  }
  for (const auto& [id, row] : overlay_.ledger) {
    if (base_->ledger->find(id) == base_->ledger->end()) consider(row);
  }
  return first;
}

Result<std::optional<EffectIntent>> MemoryTransaction::LatestIntentOf(std::string_view consumer,
                                                                      std::string_view subject,
                                                                      std::string_view effect) {
  std::optional<EffectIntent> latest;
  ForEachIntent([&](const EffectIntent& e) {
    if (e.consumer != consumer || e.subject != subject || e.effect != effect) return;
    if (!latest || e.seq > latest->seq) latest = e;
  });
  return latest;
}

Result<std::vector<CompensationRecord>> MemoryTransaction::CompensationsOfIntent(
    std::string_view key) {
  if (key.empty()) return std::vector<CompensationRecord>();  // an owner's record covers none
  std::map<int64_t, const CompensationRecord*> rows;
  for (const auto& [seq, record] : base_->effects->compensations) {
    if (record.covers == key || record.compensating_key == key) rows[seq] = &record;
  }
  for (const auto& [seq, record] : overlay_.compensations) {
    if (record.covers == key || record.compensating_key == key) {
      rows[seq] = &record;
    } else {
      rows.erase(seq);
    }
  }
  std::vector<CompensationRecord> out;
  for (const auto& [seq, record] : rows) {
    if (static_cast<int64_t>(out.size()) >= kCoveringRowsMax) break;
    out.push_back(*record);
  }
  return out;
}

// One answer per distinct key, in the order of the keys (as the SQLite backend answers).
Result<BatchRows> MemoryTransaction::Load(const BatchKeys& keys) {
  BatchRows out;
  std::set<std::tuple<std::string_view, std::string_view, std::string_view>> ledger_seen;
  std::set<std::pair<std::string_view, std::string_view>> subjects_seen;
  for (const LedgerKey& k : keys.ledger) {
    if (!ledger_seen.emplace(k.consumer, k.source, k.event_id).second) continue;
    const LedgerEntry* row = LedgerRow(LedgerIdView(k.consumer, k.source, k.event_id));
    if (row != nullptr) out.ledger.push_back(*row);
  }
  for (const SubjectKey& k : keys.subjects) {
    if (!subjects_seen.emplace(k.consumer, k.subject).second) continue;
    const ProjectionRow* row = ProjectionRowOf(k.consumer, k.subject);
    if (row != nullptr && row->value) out.projections.push_back(*row->value);
    AppendDeferredOf(k.consumer, k.subject, out.deferred);
  }
  return out;
}

class MemorySnapshot final : public Snapshot {
 public:
  MemorySnapshot(std::shared_ptr<MemoryDatabase> database, std::shared_ptr<Session> session)
      : database_(std::move(database)), state_(database_->Current()), session_(std::move(session)) {
    assert(session_->open == Session::Open::kRead);
  }
  ~MemorySnapshot() override {
    database_->Release(state_);
    session_->open = Session::Open::kNone;
  }

  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) override {
    const auto& projections = *state_->projections;
    const auto it =
        projections.find(std::tuple<std::string_view, std::string_view>(subject, consumer));
    if (it == projections.end()) return std::optional<Projection>();
    return it->second.value;
  }
  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    const auto& ledger = *state_->ledger;
    const auto it = ledger.find(LedgerIdView(consumer, source, event_id));
    if (it != ledger.end()) return std::optional<LedgerEntry>(it->second);
    if (state_->ledger_digests->empty()) return std::optional<LedgerEntry>();
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, LedgerKeyDigest(consumer, source, event_id));
    if (state_->ledger_digests->count(digest) == 0) return std::optional<LedgerEntry>();
    return std::optional<LedgerEntry>(RetainedLedgerEntry(consumer, source, event_id));
  }
  Result<Rows<Projection>> ProjectionsOf(std::string_view subject, int64_t rows_max) override;
  Result<Rows<LedgerEntry>> LedgerOf(std::string_view consumer, std::string_view subject,
                                     int64_t rows_max) override;
  Result<Rows<DeferredEvent>> DeferredOf(std::string_view consumer, std::string_view subject,
                                         int64_t rows_max) override {
    RowsCut<DeferredEvent> cut(rows_max);
    ForRange(
        *state_->deferred,
        std::tuple<std::string_view, std::string_view, int64_t>(consumer, subject, kSeqMin),
        [&](const DeferredId& id) {
          return std::get<0>(id) == consumer && std::get<1>(id) == subject;
        },
        [&](const DeferredEvent& d) { return cut.Add(d); });
    return cut.Take();
  }
  Result<Rows<DeferredEvent>> AllDeferred(int64_t rows_max) override;
  Result<Rows<QuarantineRecord>> QuarantineOf(std::string_view subject, int64_t rows_max) override {
    RowsCut<QuarantineRecord> cut(rows_max);
    const QuarantineTable& table = *state_->quarantine;
    for (auto it = table.by_subject.lower_bound(std::make_tuple(subject, kSeqMin));
         it != table.by_subject.end() && std::get<0>(*it) == subject; ++it) {
      if (!cut.Add(table.records.at(std::get<1>(*it)))) break;
    }
    return cut.Take();
  }
  Result<RetainedRows> Retainable(RetainedKind kind, int64_t before_ms, int64_t after,
                                  int64_t rows_max) override {
    return RetainableOf(*state_, kind, before_ms, after, rows_max);
  }
  Result<int64_t> CountRetainable(RetainedKind kind, int64_t before_ms) override {
    return CountRetainableOf(*state_, kind, before_ms);
  }
  Result<RetainedRows> RetainableLedger(int64_t before_ms, const LedgerKey& after,
                                        int64_t rows_max) override {
    return memory_store::RetainableLedgerOf(*state_, before_ms, after, rows_max);
  }
  Result<int64_t> CountLedgerDigests(int64_t before_ms) override {
    return memory_store::CountDigestsOf(*state_, before_ms);
  }
  Result<std::optional<RetentionRun>> LatestRetention() override {
    if (state_->retention == nullptr) return std::optional<RetentionRun>();
    RetentionRun run = *state_->retention;
    run.forgot_before_ms = state_->forgot_before_ms_max;
    return std::optional<RetentionRun>(std::move(run));
  }
  Result<int64_t> LatestSetVersion(SetKind kind) override { return Sets(kind).Latest(); }
  Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) override {
    return Sets(kind).Copy(version);
  }
  Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) override {
    return Sets(kind).History(rows_max);
  }
  ContractsView Sets(SetKind kind) const {
    static const std::vector<StoredContracts> kNone;
    return ContractsView{.sets = *state_->sets[static_cast<int>(kind)], .pushed = kNone};
  }
  Result<std::optional<QuarantineRecord>> FindQuarantine(int64_t id) override {
    const auto& records = state_->quarantine->records;
    const auto it = records.find(id);
    if (it == records.end()) return std::optional<QuarantineRecord>();
    return std::optional<QuarantineRecord>(it->second);
  }
  Result<Rows<QuarantineRecord>> ListQuarantine(const QuarantineFilter& filter,
                                                QuarantineCursor after, int64_t rows_max) override;
  Result<Rows<GapRecord>> GapRecordsOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    RowsCut<GapRecord> cut(rows_max);
    ForRange(
        *state_->gaps,
        std::tuple<std::string_view, std::string_view, int64_t>(consumer, subject, kSeqMin),
        [&](const GapId& id) { return std::get<0>(id) == consumer && std::get<1>(id) == subject; },
        [&](const GapRecord& g) { return cut.Add(g); });
    return cut.Take();
  }
  Result<Rows<GapRecord>> OpenGapRecords(int64_t rows_max) override {
    std::vector<const GapRecord*> rows;
    for (const auto& [id, g] : *state_->gaps) {
      if (g.state != GapState::kClosed) rows.push_back(&g);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const GapRecord* a, const GapRecord* b) {
      return a->deadline_at_ms < b->deadline_at_ms;  // ties stay in key order
    });
    RowsCut<GapRecord> cut(rows_max);
    for (const GapRecord* g : rows) {
      if (!cut.Add(*g)) break;
    }
    return cut.Take();
  }
  Result<Rows<QuarantineAudit>> AuditOf(int64_t record_id, int64_t rows_max) override {
    RowsCut<QuarantineAudit> cut(rows_max);
    ForRange(
        state_->quarantine->audit, std::make_tuple(record_id, kSeqMin),
        [&](const std::tuple<int64_t, int64_t>& key) { return std::get<0>(key) == record_id; },
        [&](const QuarantineAudit& a) { return cut.Add(a); });
    return cut.Take();
  }
  Result<Rows<JournalEntry>> JournalOf(std::string_view consumer, std::string_view subject,
                                       int64_t rows_max) override {
    RowsCut<JournalEntry> cut(rows_max);
    ForRange(
        *state_->journal,
        std::tuple<std::string_view, std::string_view, int64_t>(consumer, subject, kSeqMin),
        [&](const JournalId& id) {
          return std::get<0>(id) == consumer && std::get<1>(id) == subject;
        },
        [&](const JournalEntry& j) { return cut.Add(j); });
    return cut.Take();
  }
  Result<Rows<EvidenceRecord>> EvidenceOf(std::string_view consumer, std::string_view subject,
                                          int64_t rows_max) override {
    RowsCut<EvidenceRecord> cut(rows_max);
    const auto& projections = *state_->projections;
    const auto it =
        projections.find(std::tuple<std::string_view, std::string_view>(subject, consumer));
    if (it == projections.end()) return cut.Take();
    for (const EvidenceRecord& r : it->second.evidence) {
      if (!cut.Add(r)) break;
    }
    return cut.Take();
  }
  Result<std::optional<std::string>> GetPosition(std::string_view source) override {
    const auto& positions = *state_->positions;
    const auto it = positions.find(source);
    return it == positions.end() ? std::optional<std::string>()
                                 : std::optional<std::string>(it->second);
  }
  Result<Rows<OutboxRow>> OutboxRows(OutboxSelect select, int64_t after_seq,
                                     int64_t rows_max) override {
    RowsCut<OutboxRow> cut(rows_max);
    const auto& rows = state_->outbox->rows;
    for (auto it = rows.upper_bound(after_seq); it != rows.end(); ++it) {
      const OutboxRow& row = it->second;
      if (select == OutboxSelect::kPending && (row.sent_at_ms || row.parked_at_ms)) continue;
      if (select == OutboxSelect::kParked && !row.parked_at_ms) continue;
      if (!cut.Add(it->second)) break;
    }
    return cut.Take();
  }
  Result<OutboxStats> OutboxStatsNow(int64_t now_ms) override {
    OutboxStats stats;
    for (const auto& [seq, row] : state_->outbox->rows) {
      if (row.sent_at_ms) {
        ++stats.sent;
        continue;
      }
      if (row.parked_at_ms) {
        ++stats.parked;
        continue;
      }
      ++stats.pending;
      stats.attempts_max = std::max(stats.attempts_max, row.attempts);
      stats.oldest_pending_age_ms =
          std::max(stats.oldest_pending_age_ms.value_or(0), now_ms - row.created_at_ms);
    }
    return stats;
  }
  Result<std::optional<OutboxRow>> FindOutbox(std::string_view source,
                                              std::string_view event_id) override {
    const OutboxTable& outbox = *state_->outbox;
    const auto id =
        outbox.ids.find(std::tuple<std::string_view, std::string_view>(source, event_id));
    if (id == outbox.ids.end()) return std::optional<OutboxRow>();
    return std::optional<OutboxRow>(outbox.rows.at(id->second));
  }
  Result<Rows<OutboxRow>> OutboxOfSubject(std::string_view source, std::string_view subject,
                                          int64_t from_version, int64_t rows_max) override {
    std::vector<const OutboxRow*> rows;
    for (const auto& [seq, row] : state_->outbox->rows) {
      if (row.source == source && row.subject == subject && row.subject_version &&
          *row.subject_version >= from_version) {
        rows.push_back(&row);
      }
    }
    std::stable_sort(rows.begin(), rows.end(), [](const OutboxRow* a, const OutboxRow* b) {
      return *a->subject_version < *b->subject_version;  // ties stay in seq order
    });
    RowsCut<OutboxRow> cut(rows_max);
    for (const OutboxRow* row : rows) {
      if (!cut.Add(*row)) break;
    }
    return cut.Take();
  }
  Result<Rows<ProjectionCorrection>> CorrectionsOf(std::string_view consumer,
                                                   std::string_view subject,
                                                   int64_t rows_max) override {
    RowsCut<ProjectionCorrection> cut(rows_max);
    ForRange(
        *state_->corrections,
        std::tuple<std::string_view, std::string_view, int64_t>(consumer, subject, kSeqMin),
        [&](const std::tuple<std::string, std::string, int64_t>& id) {
          return std::get<0>(id) == consumer && std::get<1>(id) == subject;
        },
        [&](const ProjectionCorrection& c) { return cut.Add(c); });
    return cut.Take();
  }
  Result<std::vector<std::pair<std::string, int64_t>>> Counts() override {
    const auto count = [](const auto& table) { return static_cast<int64_t>(table.size()); };
    return std::vector<std::pair<std::string, int64_t>>{
        {"ledger", count(*state_->ledger)},
        {"projection", count(*state_->projections)},
        {"deferred", count(*state_->deferred)},
        {"quarantine", count(state_->quarantine->records)},
        {"journal", count(*state_->journal)},
        {"effect", count(state_->effects->intents)},
        {"compensation", count(state_->effects->compensations)},
    };
  }
  Result<std::optional<EffectIntent>> FindIntent(std::string_view key) override {
    const EffectTable& table = *state_->effects;
    const auto it = table.intent_keys.find(key);
    if (it != table.intent_keys.end()) {
      return std::optional<EffectIntent>(table.intents.at(it->second));
    }
    if (table.intent_digests.empty()) return std::optional<EffectIntent>();
    EVIDENT_ASSIGN_OR_RETURN(const std::string digest, IntentKeyDigest(key));
    const auto kept = table.intent_digests.find(digest);
    if (kept == table.intent_digests.end()) return std::optional<EffectIntent>();
    return WithKey(kept->second, key);
  }
  Result<Rows<EffectIntent>> ListIntents(const EffectFilter& filter, int64_t after_seq,
                                         int64_t rows_max) override {
    RowsCut<EffectIntent> cut(rows_max);
    const auto& intents = state_->effects->intents;
    for (auto it = intents.upper_bound(after_seq); it != intents.end(); ++it) {
      const EffectIntent& e = it->second;
      if ((filter.state && e.state != *filter.state) ||
          (filter.consumer && e.consumer != *filter.consumer) ||
          (filter.effect && e.effect != *filter.effect) ||
          (filter.subject && e.subject != *filter.subject)) {
        continue;
      }
      if (!cut.Add(e)) break;
    }
    return cut.Take();
  }
  Result<Rows<EffectLogEntry>> IntentLogOf(std::string_view key, int64_t rows_max) override {
    RowsCut<EffectLogEntry> cut(rows_max);
    ForRange(
        state_->effects->log, std::tuple<std::string_view, int64_t>(key, kSeqMin),
        [&](const std::tuple<std::string, int64_t>& id) { return std::get<0>(id) == key; },
        [&](const EffectLogEntry& e) { return cut.Add(e); });
    return cut.Take();
  }
  Result<Rows<CompensationRecord>> ListCompensations(std::string_view consumer,
                                                     std::string_view subject, int64_t after_seq,
                                                     int64_t rows_max) override {
    RowsCut<CompensationRecord> cut(rows_max);
    const auto& records = state_->effects->compensations;
    for (auto it = records.upper_bound(after_seq); it != records.end(); ++it) {
      const CompensationRecord& c = it->second;
      if ((!consumer.empty() && c.consumer != consumer) ||
          (!subject.empty() && c.subject != subject)) {
        continue;
      }
      if (!cut.Add(c)) break;
    }
    return cut.Take();
  }

 private:
  std::shared_ptr<MemoryDatabase> database_;
  std::shared_ptr<const State> state_;  // released under the database's mutex
  std::shared_ptr<Session> session_;
};

// Every projection of the subject, by consumer.
Result<Rows<Projection>> MemorySnapshot::ProjectionsOf(std::string_view subject, int64_t rows_max) {
  RowsCut<Projection> cut(rows_max);
  ForRange(
      *state_->projections, std::tuple<std::string_view, std::string_view>(subject, ""),
      [&](const ProjectionId& id) { return std::get<0>(id) == subject; },
      [&](const ProjectionRow& row) { return !row.value || cut.Add(*row.value); });
  return cut.Take();
}

// By subject version (a row without one first, as SQLite orders NULL), then commit time; rows
// equal in both by source and event id.
Result<Rows<LedgerEntry>> MemorySnapshot::LedgerOf(std::string_view consumer,
                                                   std::string_view subject, int64_t rows_max) {
  std::vector<const LedgerEntry*> rows;
  const auto& ledger = *state_->ledger;
  const auto& index = *state_->ledger_by_subject;
  for (auto it = index.lower_bound(
           std::tuple<std::string_view, std::string_view, std::string_view, std::string_view>(
               subject, consumer, std::string_view(), std::string_view()));
       it != index.end() && std::get<0>(*it) == subject && std::get<1>(*it) == consumer; ++it) {
    const auto row =
        ledger.find(LedgerIdView(std::get<1>(*it), std::get<2>(*it), std::get<3>(*it)));
    assert(row != ledger.end() && "the subject index names a ledger row that is not there");
    rows.push_back(&row->second);
  }
  std::sort(rows.begin(), rows.end(), [](const LedgerEntry* a, const LedgerEntry* b) {
    return std::tie(a->subject_version, a->committed_at_ms, a->source, a->event_id) <
           std::tie(b->subject_version, b->committed_at_ms, b->source, b->event_id);
  });
  RowsCut<LedgerEntry> cut(rows_max);
  for (const LedgerEntry* row : rows) {
    if (!cut.Add(*row)) break;
  }
  return cut.Take();
}

// By first-seen time, then id: every record is looked at (the filter has no index here).
Result<Rows<QuarantineRecord>> MemorySnapshot::ListQuarantine(const QuarantineFilter& filter,
                                                              QuarantineCursor after,
                                                              int64_t rows_max) {
  std::vector<const QuarantineRecord*> rows;
  for (const auto& [id, r] : state_->quarantine->records) {
    if (std::tie(r.first_seen_ms, r.id) <= std::tie(after.first_seen_ms, after.id)) continue;
    if (filter.consumer && r.consumer != *filter.consumer) continue;
    if (filter.reason && r.reason != *filter.reason) continue;
    if (filter.status && r.status != *filter.status) continue;
    if (!filter.ids.empty() &&
        std::find(filter.ids.begin(), filter.ids.end(), r.id) == filter.ids.end()) {
      continue;
    }
    rows.push_back(&r);
  }
  std::sort(rows.begin(), rows.end(), [](const QuarantineRecord* a, const QuarantineRecord* b) {
    return std::tie(a->first_seen_ms, a->id) < std::tie(b->first_seen_ms, b->id);
  });
  RowsCut<QuarantineRecord> cut(rows_max);
  for (const QuarantineRecord* row : rows) {
    if (!cut.Add(*row)) break;
  }
  return cut.Take();
}

// By deadline, then consumer, subject and subject version.
Result<Rows<DeferredEvent>> MemorySnapshot::AllDeferred(int64_t rows_max) {
  std::vector<const DeferredEvent*> rows;
  rows.reserve(state_->deferred->size());
  for (const auto& [id, row] : *state_->deferred) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const DeferredEvent* a, const DeferredEvent* b) {
    return a->deadline_at_ms < b->deadline_at_ms;  // ties stay in key order
  });
  RowsCut<DeferredEvent> cut(rows_max);
  for (const DeferredEvent* row : rows) {
    if (!cut.Add(*row)) break;
  }
  return cut.Take();
}

class MemoryStore final : public Store {
 public:
  explicit MemoryStore(std::shared_ptr<MemoryDatabase> database)
      : database_(std::move(database)), session_(std::make_shared<Session>()) {}

  Result<std::unique_ptr<Transaction>> Begin() override {
    EVIDENT_RETURN_IF_ERROR(Idle("Begin"));
    EVIDENT_ASSIGN_OR_RETURN(std::shared_ptr<const State> base, database_->BeginWrite());
    session_->open = Session::Open::kWrite;
    return std::unique_ptr<Transaction>(
        new MemoryTransaction(database_, std::move(base), session_));
  }
  Result<std::unique_ptr<Snapshot>> Read() override {
    EVIDENT_RETURN_IF_ERROR(Idle("Read"));
    session_->open = Session::Open::kRead;
    return std::unique_ptr<Snapshot>(new MemorySnapshot(database_, session_));
  }

 private:
  Status Idle(std::string_view call) const {
    if (session_->open == Session::Open::kNone) return Status::Ok();
    return Status::FailedPrecondition(
        std::string(call) + ": this store has a " +
        (session_->open == Session::Open::kWrite ? "transaction" : "snapshot") +
        " open; one at a time per store");
  }

  std::shared_ptr<MemoryDatabase> database_;
  std::shared_ptr<Session> session_;
};

}  // namespace
}  // namespace memory_store

std::shared_ptr<MemoryDatabase> NewMemoryDatabase() { return std::make_shared<MemoryDatabase>(); }

Result<std::unique_ptr<Store>> OpenMemoryStore(std::shared_ptr<MemoryDatabase> database) {
  if (database == nullptr) return Status::InvalidArgument("OpenMemoryStore: no database");
  return std::unique_ptr<Store>(new memory_store::MemoryStore(std::move(database)));
}

std::shared_ptr<MemoryDatabase> NamedMemoryDatabase(std::string_view name) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<MemoryDatabase>, std::less<>> databases;
  std::lock_guard lock(mutex);
  auto it = databases.find(name);
  if (it == databases.end()) it = databases.emplace(std::string(name), NewMemoryDatabase()).first;
  return it->second;
}

}  // namespace evident
