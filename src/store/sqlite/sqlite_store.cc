// SQLite backend of the consumer store: one file, WAL, durable commits, every statement
// prepared once and bound (never string-built).
#include <fcntl.h>
#include <simdjson.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "core/fault_point.h"
#include "evident/store.h"
#include "json/writer.h"

namespace evident {
namespace {

// Per-subject tables (projection, deferred, the journal's index) lead their keys with the
// subject: keys then usually differ in their first column, which SQLite compares on a fast path
// (a key led by the consumer id repeats it in every comparison), and one subject's rows for all
// its consumers share a page. A store created with the earlier (consumer, subject) order keeps
// it: every query here names both columns, so either order serves it.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS ledger(
  consumer TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL,
  state TEXT NOT NULL, type TEXT NOT NULL, subject TEXT NOT NULL,
  subject_version INTEGER, input_schema_version INTEGER NOT NULL,
  result_version INTEGER NOT NULL, projection_version INTEGER,
  committed_at_ms INTEGER NOT NULL, duplicates INTEGER NOT NULL DEFAULT 0,
  last_duplicate_at_ms INTEGER,
  PRIMARY KEY(consumer, source, event_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ledger_by_subject ON ledger(subject, consumer);
CREATE TABLE IF NOT EXISTS projection(
  consumer TEXT NOT NULL, subject TEXT NOT NULL, version INTEGER NOT NULL,
  state TEXT NOT NULL, fields_json TEXT NOT NULL, owner_source TEXT NOT NULL,
  owner_version_seen INTEGER NOT NULL, updated_at_ms INTEGER NOT NULL,
  evidence_json TEXT NOT NULL DEFAULT '{}',
  PRIMARY KEY(subject, consumer)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS deferred(
  consumer TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER NOT NULL,
  source TEXT NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
  schema_version INTEGER NOT NULL, expected_version INTEGER NOT NULL, raw BLOB NOT NULL,
  received_at_ms INTEGER NOT NULL, deadline_at_ms INTEGER NOT NULL, route TEXT NOT NULL,
  input_index INTEGER NOT NULL,
  PRIMARY KEY(subject, consumer, subject_version)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kept(
  seq INTEGER PRIMARY KEY, consumer TEXT NOT NULL, outcome TEXT NOT NULL, reason TEXT NOT NULL,
  message TEXT NOT NULL, source TEXT NOT NULL, event_id TEXT NOT NULL, type TEXT NOT NULL,
  subject TEXT NOT NULL, subject_version INTEGER, raw BLOB NOT NULL,
  received_at_ms INTEGER NOT NULL, input_index INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS kept_by_subject ON kept(subject);
CREATE TABLE IF NOT EXISTS journal(
  seq INTEGER PRIMARY KEY, consumer TEXT NOT NULL, outcome TEXT NOT NULL, source TEXT NOT NULL,
  event_id TEXT NOT NULL, subject TEXT NOT NULL, subject_version INTEGER,
  at_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS journal_by_subject ON journal(subject, consumer);
CREATE TABLE IF NOT EXISTS checkpoint(
  input TEXT PRIMARY KEY, position INTEGER NOT NULL, bytes INTEGER, prefix_hash INTEGER)
  WITHOUT ROWID;
)sql";

// Runs WAL checkpoints on a thread with a connection of its own, the pattern SQLite documents
// for keeping checkpoints off the writer (https://sqlite.org/wal.html#ckpt): the committing
// thread neither copies pages into the database file nor waits for that file's fsync (about
// 12 ms per checkpoint on the disks measured). A checkpoint is PASSIVE: it copies what no
// reader still needs and never blocks the writer; durability is unchanged, since the commit
// itself still syncs the WAL at synchronous=FULL. The checkpointing connection uses the same
// `synchronous` setting, so it syncs the WAL before copying and the database file after.
class Checkpointer {
 public:
  // Opens the checkpointing connection to the database file at `path` (on the caller's thread;
  // the checkpoint thread starts on the first request and is the only one to use it after).
  static Result<std::unique_ptr<Checkpointer>> Open(const std::string& path,
                                                    const std::string& synchronous) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) !=
        SQLITE_OK) {
      std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
      sqlite3_close_v2(db);
      return Status::IoError("cannot open the checkpoint connection to " + path + ": " + message);
    }
    auto checkpointer = std::unique_ptr<Checkpointer>(new Checkpointer(db));
    // The page cache is bypassed by checkpoint copies: a small one is enough.
    for (const std::string& pragma :
         {"PRAGMA synchronous=" + synchronous, std::string("PRAGMA cache_size=16")}) {
      if (sqlite3_exec(db, pragma.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
        return Status::IoError("checkpoint connection: " + pragma + ": " + sqlite3_errmsg(db));
      }
    }
    return checkpointer;
  }
  ~Checkpointer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable()) thread_.join();
    sqlite3_close_v2(db_);
  }
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // Asks for a checkpoint and returns at once; false when the thread cannot be started (the
  // caller then checkpoints itself). Called from SQLite's WAL hook: nothing may throw.
  bool Request() noexcept {
    {
      std::lock_guard lock(mutex_);
      if (!thread_.joinable()) {
        try {
          thread_ = std::thread([this] { Run(); });
        } catch (const std::system_error&) {
          return false;
        }
      }
      if (requested_) return true;
      requested_ = true;
    }
    wake_.notify_one();
    return true;
  }

  // Drops a request not yet started and waits for a running checkpoint to end, so that the
  // caller's own checkpoint is not refused as busy.
  void WaitIdle() noexcept {
    std::unique_lock lock(mutex_);
    requested_ = false;
    idle_.wait(lock, [this] { return !running_; });
  }

 private:
  explicit Checkpointer(sqlite3* db) : db_(db) {}

  void Run() {
    std::unique_lock lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || requested_; });
      if (stop_) break;
      requested_ = false;
      running_ = true;
      lock.unlock();
      // SQLITE_BUSY (another checkpoint is running) and I/O errors are left as SQLite's own
      // automatic checkpoint leaves them: the frames stay in the WAL, the next request retries.
      FaultPoint("before-wal-checkpoint");
      sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
      FaultPoint("after-wal-checkpoint");
      lock.lock();
      running_ = false;
      idle_.notify_all();
    }
  }

  sqlite3* const db_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  bool requested_ = false;
  bool running_ = false;
  bool stop_ = false;
  std::thread thread_;
};

// A prepared statement, reset after each use. Binds are 1-based, in call order.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr);
    prepare_error_ = rc == SQLITE_OK ? "" : sqlite3_errmsg(db);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  const std::string& prepare_error() const { return prepare_error_; }

  Statement& Bind(std::string_view text) {
    sqlite3_bind_text(stmt_, ++index_, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& BindBlob(std::string_view bytes) {
    sqlite3_bind_blob(stmt_, ++index_, bytes.data(), static_cast<int>(bytes.size()), SQLITE_STATIC);
    return *this;
  }
  Statement& Bind(int64_t value) {
    sqlite3_bind_int64(stmt_, ++index_, value);
    return *this;
  }
  Statement& Bind(const std::optional<int64_t>& value) {
    if (value) return Bind(*value);
    sqlite3_bind_null(stmt_, ++index_);
    return *this;
  }

  // Runs a statement that returns no rows.
  Status Run() {
    NullUnbound();
    const int rc = sqlite3_step(stmt_);
    Reset();
    if (rc == SQLITE_DONE) return Status::Ok();
    return Error(rc);
  }
  // Steps once: true with a row, false when done; errors in `status`.
  bool Step(Status& status) {
    NullUnbound();
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) status = Error(rc);
    return false;
  }
  void Reset() {
    sqlite3_reset(stmt_);
    index_ = 0;
  }

  std::string Text(int column) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return p == nullptr ? std::string()
                        : std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  std::string Blob(int column) const {
    const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, column));
    return p == nullptr ? std::string()
                        : std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }
  int64_t Int(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::optional<int64_t> OptionalInt(int column) const {
    if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
    return Int(column);
  }

 private:
  // Parameters this use did not bind are NULL, never the previous use's values. (Cheaper than
  // sqlite3_clear_bindings on every reset: every built-in statement binds all its parameters.)
  void NullUnbound() {
    const int count = sqlite3_bind_parameter_count(stmt_);
    while (index_ < count) sqlite3_bind_null(stmt_, ++index_);
  }

  Status Error(int rc) const {
    const std::string message = std::string("sqlite: ") + sqlite3_errmsg(db_);
    const int primary = rc & 0xff;  // extended result codes are on
    if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Unavailable(message);
    if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB) return Status::Corruption(message);
    // Only a unique key says "already there"; NOT NULL or CHECK failures are bugs.
    if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
      return Status::AlreadyExists(message);
    }
    return Status::IoError(message);
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int index_ = 0;
  std::string prepare_error_;
};

constexpr const char* kLedgerColumns =
    "consumer, source, event_id, state, type, subject, subject_version, input_schema_version, "
    "result_version, projection_version, committed_at_ms, duplicates, last_duplicate_at_ms";
constexpr const char* kDeferredColumns =
    "consumer, subject, subject_version, source, event_id, type, schema_version, "
    "expected_version, raw, received_at_ms, deadline_at_ms, route, input_index";
constexpr const char* kProjectionColumns =
    "consumer, subject, version, state, fields_json, owner_source, owner_version_seen, "
    "updated_at_ms, evidence_json";

LedgerEntry ReadLedger(const Statement& s) {
  LedgerEntry e;
  e.consumer = s.Text(0);
  e.source = s.Text(1);
  e.event_id = s.Text(2);
  e.state = s.Text(3);
  e.type = s.Text(4);
  e.subject = s.Text(5);
  e.subject_version = s.OptionalInt(6);
  e.input_schema_version = s.Int(7);
  e.result_version = s.Int(8);
  e.projection_version = s.OptionalInt(9);
  e.committed_at_ms = s.Int(10);
  e.duplicates = s.Int(11);
  e.last_duplicate_at_ms = s.OptionalInt(12);
  return e;
}

DeferredEvent ReadDeferred(const Statement& s) {
  DeferredEvent d;
  d.consumer = s.Text(0);
  d.subject = s.Text(1);
  d.subject_version = s.Int(2);
  d.source = s.Text(3);
  d.event_id = s.Text(4);
  d.type = s.Text(5);
  d.schema_version = s.Int(6);
  d.expected_version = s.Int(7);
  d.raw = s.Blob(8);
  d.received_at_ms = s.Int(9);
  d.deadline_at_ms = s.Int(10);
  d.route = s.Text(11);
  d.input_index = s.Int(12);
  return d;
}

Projection ReadProjection(const Statement& s) {
  Projection p;
  p.consumer = s.Text(0);
  p.subject = s.Text(1);
  p.version = s.Int(2);
  p.state = s.Text(3);
  p.fields_json = s.Text(4);
  p.owner_source = s.Text(5);
  p.owner_version_seen = s.Int(6);
  p.updated_at_ms = s.Int(7);
  return p;
}

// Who holds the write lock of the WAL database at `path`: SQLite (unix VFS) takes it as a POSIX
// lock on byte 120 of the -shm file (the first of its eight lock bytes), and fcntl(F_GETLK)
// names the process holding a lock that conflicts. Empty when no process is found.
std::string WriteLockHolder(const std::string& path) {
  const int fd = open((path + "-shm").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 120;
  lock.l_len = 1;
  const bool found = fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  close(fd);
  if (!found) return "";
  std::string holder = "process " + std::to_string(lock.l_pid);
  std::ifstream cmdline("/proc/" + std::to_string(lock.l_pid) + "/cmdline", std::ios::binary);
  std::string command;
  char c = 0;
  while (command.size() < 200 && cmdline.get(c)) command.push_back(c == '\0' ? ' ' : c);
  while (!command.empty() && command.back() == ' ') command.pop_back();
  if (!command.empty()) holder += " (" + command + ")";
  return holder;
}

std::string LockedMessage(const char* path) {
  const std::string file = path != nullptr ? path : "";
  const std::string holder = file.empty() ? "" : WriteLockHolder(file);
  return "the store " + file + " is locked by another writer" +
         (holder.empty() ? "" : ": " + holder) +
         ", which holds a transaction open for longer than this process waits (busy_timeout_ms)";
}

class SqliteStore final : public Store {
 public:
  // Evidence lives in its projection's row (one B-tree write per subject and batch, not one
  // per evidence record); the cache keeps it beside the Projection the pipeline reads and puts.
  struct CachedProjection {
    std::optional<Projection> value;
    bool exists = false;    // in the table, or put in this transaction
    bool in_table = false;  // in the table: a write updates the row rather than inserting one
    // Evidence records, one per name, sorted by name. Kept as values so that recording evidence
    // neither parses nor serializes; the row's evidence_json is built when the row is written.
    std::vector<EvidenceRecord> evidence;
    bool dirty = false;
  };

  // Builds the evidence_json column, one compact entry per name:
  //   {"name": ["id", subject_version or null, recorded_at_ms], ...}
  // with the source as a fourth element only when it is not the row's owner_source (nearly
  // always it is: an ordered consumer's events come from the owner). The row is then about half
  // the size it was with named members, and so are the pages each batch writes. LoadEvidence
  // also reads the earlier form, {"name": {"source": ..., "id": ..., "subject_version": ...,
  // "recorded_at_ms": ...}}.
  static void EvidenceJson(const CachedProjection& cached, std::string& out) {
    out.clear();
    json::Writer w(out);
    w.BeginObject();
    for (const EvidenceRecord& r : cached.evidence) {
      w.Key(r.name).BeginArray().String(r.event_id);
      r.subject_version ? w.Int(*r.subject_version) : w.Null();
      w.Int(r.recorded_at_ms);
      if (r.source != cached.value->owner_source) w.String(r.source);
      w.EndArray();
    }
    w.EndObject();
  }

  // Reads an evidence_json column back into records.
  Status LoadEvidence(std::string_view text, CachedProjection& cached) {
    if (text == "{}") return Status::Ok();
    const auto corrupt = [&](std::string_view what) {
      return Status::Corruption("evidence of " + cached.value->consumer + "/" +
                                cached.value->subject + " " + std::string(what));
    };
    simdjson::dom::object records;
    if (json_parser_.parse(text.data(), text.size()).get(records) != simdjson::SUCCESS) {
      return corrupt("is not a JSON object");
    }
    for (auto field : records) {
      EvidenceRecord r;
      r.consumer = cached.value->consumer;
      r.subject = cached.value->subject;
      r.name = std::string(field.key);
      r.source = cached.value->owner_source;
      std::string_view text_value;
      int64_t number = 0;
      simdjson::dom::array entry;
      if (field.value.get(entry) == simdjson::SUCCESS) {
        const size_t size = entry.size();
        if (size < 3 || size > 4 || entry.at(0).get(text_value) != simdjson::SUCCESS ||
            entry.at(2).get(r.recorded_at_ms) != simdjson::SUCCESS) {
          return corrupt("record '" + r.name + "' is not [id, version, time(, source)]");
        }
        r.event_id = std::string(text_value);
        if (entry.at(1).get(number) == simdjson::SUCCESS) r.subject_version = number;
        if (size == 4) {
          if (entry.at(3).get(text_value) != simdjson::SUCCESS) {
            return corrupt("record '" + r.name + "' has a source that is not a string");
          }
          r.source = std::string(text_value);
        }
      } else {  // the earlier form, with named members
        if (field.value["source"].get(text_value) == simdjson::SUCCESS) {
          r.source = std::string(text_value);
        }
        if (field.value["id"].get(text_value) == simdjson::SUCCESS) {
          r.event_id = std::string(text_value);
        }
        if (field.value["subject_version"].get(number) == simdjson::SUCCESS) {
          r.subject_version = number;
        }
        if (field.value["recorded_at_ms"].get(number) == simdjson::SUCCESS) {
          r.recorded_at_ms = number;
        }
      }
      cached.evidence.push_back(std::move(r));
    }
    std::sort(cached.evidence.begin(), cached.evidence.end(),
              [](const EvidenceRecord& a, const EvidenceRecord& b) { return a.name < b.name; });
    return Status::Ok();
  }

  // The transaction's projection cache: consumer, then subject. Heterogeneous lookup, so a
  // cache hit allocates nothing.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using SubjectCache =
      std::unordered_map<std::string, CachedProjection, StringHash, std::equal_to<>>;
  explicit SqliteStore(sqlite3* db) : db_(db) {}
  ~SqliteStore() override {
    checkpointer_.reset();  // its connection closes first: this one then removes the WAL
    statements_.clear();
    sqlite3_close_v2(db_);
  }

  // Replaces SQLite's automatic checkpoint (itself a WAL hook; a later PRAGMA
  // wal_autocheckpoint on this connection would replace this one in turn).
  Status ConfigureCheckpoints(const SqliteOptions& options) {
    checkpoint_wal_pages_ = options.checkpoint_wal_pages;
    checkpoint_thread_commit_pages_ = options.checkpoint_thread_commit_pages;
    wal_pages_max_ = options.wal_pages_max;
    // The file SQLite resolved at open (empty for an in-memory database, which has no WAL).
    const char* file = sqlite3_db_filename(db_, "main");
    if (options.checkpoint_thread && file != nullptr && file[0] != '\0') {
      EVIDENT_ASSIGN_OR_RETURN(checkpointer_, Checkpointer::Open(file, options.synchronous));
    }
    sqlite3_wal_hook(db_, &SqliteStore::OnWalCommit, this);
    return Status::Ok();
  }

  // After each commit, once the WAL holds `checkpoint_wal_pages` (pages already copied count:
  // while commits keep coming the WAL cannot restart, since it restarts only when a transaction
  // begins with every page copied), a checkpoint runs: on the thread after a commit that wrote
  // `checkpoint_thread_commit_pages` or more, which is bound by CPU the thread frees; on this
  // connection after a smaller one, as SQLite would, since a stream of small commits is bound
  // by each commit's own fsync, which a concurrent fsync of the database file lengthens
  // (measured in docs/BENCHMARKS.md). From `wal_pages_max` on, this connection waits for the
  // thread's checkpoint to end and copies the rest itself, which lets the WAL restart.
  static int OnWalCommit(void* self_pointer, sqlite3* db, const char* schema, int wal_pages) {
    auto* self = static_cast<SqliteStore*>(self_pointer);
    int written = 0;  // pages this commit wrote to the WAL (the counter is reset here)
    int unused = 0;
    sqlite3_db_status(db, SQLITE_DBSTATUS_CACHE_WRITE, &written, &unused, 1);
    if (wal_pages < self->checkpoint_wal_pages_) return SQLITE_OK;
    Checkpointer* thread = self->checkpointer_.get();
    if (thread != nullptr && wal_pages < self->wal_pages_max_ &&
        written >= self->checkpoint_thread_commit_pages_ && thread->Request()) {
      return SQLITE_OK;
    }
    if (thread != nullptr && wal_pages >= self->wal_pages_max_) thread->WaitIdle();
    FaultPoint("before-wal-checkpoint");
    sqlite3_wal_checkpoint_v2(db, schema, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    FaultPoint("after-wal-checkpoint");
    return SQLITE_OK;
  }

  // Whether the projection table leads its key with the subject (see kSchema).
  Status DetectLayout() {
    static const std::string kSql =
        "SELECT pk FROM pragma_table_info('projection') WHERE name='subject'";
    auto rows = Rows<int64_t>(kSql, {}, [](const Statement& s) { return s.Int(0); });
    if (!rows.ok()) return rows.status();
    subject_first_ = rows->size() == 1 && rows->front() == 1;
    return Status::Ok();
  }

  // Stores created before checkpoints identified their input get the two columns; their
  // existing checkpoints stay unidentified (NULL), and a resume from one is refused.
  Status AddCheckpointIdentity() {
    EVIDENT_ASSIGN_OR_RETURN(
        const int64_t present,
        Count("SELECT count(*) FROM pragma_table_info('checkpoint') WHERE name='bytes'"));
    if (present != 0) return Status::Ok();
    return Exec(
        "ALTER TABLE checkpoint ADD COLUMN bytes INTEGER;"
        "ALTER TABLE checkpoint ADD COLUMN prefix_hash INTEGER;");
  }

  // The single integer a query answers (a count). Prepared here, not cached: on a file that is
  // not a database even preparing fails, and that is an answer, not a programmer error.
  Result<int64_t> Count(const char* sql) {
    sqlite3_stmt* statement = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql, -1, &statement, nullptr);
    int64_t count = 0;
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(statement);
      if (rc == SQLITE_ROW) count = sqlite3_column_int64(statement, 0);
    }
    sqlite3_finalize(statement);
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) {
      return Status::IoError(std::string("sqlite: ") + sqlite3_errmsg(db_));
    }
    return count;
  }

  Status Exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string message = error != nullptr ? error : "unknown";
      sqlite3_free(error);
      if ((sqlite3_extended_errcode(db_) & 0xFF) == SQLITE_BUSY) {
        return Status::Unavailable(LockedMessage(sqlite3_db_filename(db_, "main")));
      }
      return Status::IoError("sqlite: " + message);
    }
    return Status::Ok();
  }

  Status Begin() override {
    EVIDENT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));  // busy: names the lock's holder
    in_transaction_ = true;
    projections_.clear();
    subjects_read_.clear();
    pending_deferred_.clear();
    return Status::Ok();
  }
  Status Commit() override {
    EVIDENT_RETURN_IF_ERROR(Flush());
    FaultPoint("before-commit");
    EVIDENT_RETURN_IF_ERROR(Exec("COMMIT"));
    FaultPoint("after-commit");
    in_transaction_ = false;
    projections_.clear();
    subjects_read_.clear();
    return Status::Ok();
  }
  Status Rollback() override {
    in_transaction_ = false;
    projections_.clear();
    subjects_read_.clear();
    pending_deferred_.clear();
    return Exec("ROLLBACK");
  }

  Result<std::optional<LedgerEntry>> FindLedger(std::string_view consumer, std::string_view source,
                                                std::string_view event_id) override {
    static const std::string kSql = std::string("SELECT ") + kLedgerColumns +
                                    " FROM ledger WHERE consumer=?1 AND source=?2 AND event_id=?3";
    Statement& s = Prepared(kSql);
    s.Bind(consumer).Bind(source).Bind(event_id);
    Status status;
    std::optional<LedgerEntry> out;
    if (s.Step(status)) out = ReadLedger(s);
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  Status InsertLedger(const LedgerEntry& e) override {
    static const std::string kSql = std::string("INSERT INTO ledger(") + kLedgerColumns +
                                    ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)";
    Statement& s = Prepared(kSql);
    return s.Bind(e.consumer)
        .Bind(e.source)
        .Bind(e.event_id)
        .Bind(e.state)
        .Bind(e.type)
        .Bind(e.subject)
        .Bind(e.subject_version)
        .Bind(e.input_schema_version)
        .Bind(e.result_version)
        .Bind(e.projection_version)
        .Bind(e.committed_at_ms)
        .Bind(e.duplicates)
        .Bind(e.last_duplicate_at_ms)
        .Run();
  }

  Status MarkApplied(std::string_view consumer, std::string_view source, std::string_view event_id,
                     int64_t projection_version, int64_t committed_at_ms) override {
    static const std::string kSql =
        "UPDATE ledger SET state='applied', projection_version=?4, committed_at_ms=?5 "
        "WHERE consumer=?1 AND source=?2 AND event_id=?3 AND state='deferred'";
    Statement& s = Prepared(kSql);
    EVIDENT_RETURN_IF_ERROR(s.Bind(consumer)
                                .Bind(source)
                                .Bind(event_id)
                                .Bind(projection_version)
                                .Bind(committed_at_ms)
                                .Run());
    if (sqlite3_changes(db_) != 1) return Status::Internal("no deferred ledger row to apply");
    return Status::Ok();
  }

  Status CountDuplicate(std::string_view consumer, std::string_view source,
                        std::string_view event_id, int64_t at_ms) override {
    static const std::string kSql =
        "UPDATE ledger SET duplicates=duplicates+1, last_duplicate_at_ms=?4 "
        "WHERE consumer=?1 AND source=?2 AND event_id=?3";
    Statement& s = Prepared(kSql);
    return s.Bind(consumer).Bind(source).Bind(event_id).Bind(at_ms).Run();
  }

  // Inside a transaction, projections are read once and written once per batch: consecutive
  // events of one subject (v1, v2, v3 of an order) then cost one read and one write in all.
  Result<std::optional<Projection>> FindProjection(std::string_view consumer,
                                                   std::string_view subject) override {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(consumer, subject));
    if (!cached->exists) return std::optional<Projection>();
    return cached->value;
  }

  Result<ProjectionRef> EditProjection(std::string_view consumer,
                                       std::string_view subject) override {
    if (!in_transaction_) return Status::FailedPrecondition("EditProjection needs a transaction");
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(consumer, subject));
    if (!cached->value) {
      cached->value.emplace();
      cached->value->consumer = std::string(consumer);
      cached->value->subject = std::string(subject);
    }
    return ProjectionRef{&*cached->value, cached->exists};
  }

  // The cache entry of (consumer, subject), read from the table on first use in a transaction.
  // Outside a transaction the entry is a scratch copy, valid until the next call.
  Result<CachedProjection*> Cached(std::string_view consumer, std::string_view subject) {
    SubjectCache* subjects = nullptr;
    if (in_transaction_) {
      auto consumer_it = projections_.find(consumer);
      if (consumer_it == projections_.end()) {
        consumer_it = projections_.emplace(std::string(consumer), SubjectCache{}).first;
      }
      subjects = &consumer_it->second;
      const auto it = subjects->find(subject);
      if (it != subjects->end()) return &it->second;
      if (subject_first_) return CachedBySubject(*subjects, subject);
    }
    static const std::string kSql = std::string("SELECT ") + kProjectionColumns +
                                    " FROM projection WHERE consumer=?1 AND subject=?2";
    Statement& s = Prepared(kSql);
    s.Bind(consumer).Bind(subject);
    Status status;
    CachedProjection entry;
    std::string evidence_json;
    if (s.Step(status)) {
      entry.value = ReadProjection(s);
      entry.exists = true;
      entry.in_table = true;
      evidence_json = s.Text(8);
    }
    s.Reset();
    if (!status.ok()) return status;
    if (entry.value) EVIDENT_RETURN_IF_ERROR(LoadEvidence(evidence_json, entry));
    if (subjects == nullptr) {
      scratch_ = std::move(entry);
      return &scratch_;
    }
    return &subjects->emplace(std::string(subject), std::move(entry)).first->second;
  }

  // A transaction's first look-up of a subject reads every consumer's row of it at once (one
  // B-tree seek where the key leads with the subject): consumers of one event, or of one
  // subject's events, then find their projections cached. Rows already cached are not replaced.
  Result<CachedProjection*> CachedBySubject(SubjectCache& subjects, std::string_view subject) {
    if (subjects_read_.find(subject) == subjects_read_.end()) {
      subjects_read_.emplace(subject);
      static const std::string kSql =
          std::string("SELECT ") + kProjectionColumns + " FROM projection WHERE subject=?1";
      Statement& s = Prepared(kSql);
      s.Bind(subject);
      Status status;
      while (s.Step(status)) {
        CachedProjection entry;
        entry.value = ReadProjection(s);
        entry.exists = true;
        entry.in_table = true;
        if (Status loaded = LoadEvidence(s.Text(8), entry); !loaded.ok()) {
          s.Reset();
          return loaded;
        }
        auto consumer_it = projections_.find(entry.value->consumer);
        if (consumer_it == projections_.end()) {
          consumer_it = projections_.emplace(entry.value->consumer, SubjectCache{}).first;
        }
        consumer_it->second.try_emplace(entry.value->subject, std::move(entry));
      }
      s.Reset();
      if (!status.ok()) return status;
    }
    // Absent from the table: a new, empty entry.
    return &subjects.try_emplace(std::string(subject)).first->second;
  }

  Status PutProjection(const Projection& p) override {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(p.consumer, p.subject));
    if (!cached->value || &*cached->value != &p) cached->value = p;  // edited in place: no copy
    cached->exists = true;
    cached->dirty = true;
    return in_transaction_ ? Status::Ok() : WriteProjection(*cached);
  }

  Status WriteProjection(CachedProjection& cached) {
    static const std::string kInsert = std::string("INSERT INTO projection(") + kProjectionColumns +
                                       ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)";
    static const std::string kUpdate =
        "UPDATE projection SET version=?3, state=?4, fields_json=?5, owner_source=?6, "
        "owner_version_seen=?7, updated_at_ms=?8, evidence_json=?9 WHERE consumer=?1 AND "
        "subject=?2";
    Statement& s = Prepared(cached.in_table ? kUpdate : kInsert);
    const Projection& p = *cached.value;
    cached.dirty = false;
    cached.in_table = true;
    EvidenceJson(cached, evidence_json_);
    return s.Bind(p.consumer)
        .Bind(p.subject)
        .Bind(p.version)
        .Bind(p.state)
        .Bind(p.fields_json)
        .Bind(p.owner_source)
        .Bind(p.owner_version_seen)
        .Bind(p.updated_at_ms)
        .Bind(evidence_json_)
        .Run();
  }

  // Writes what the transaction holds back: dirty projections and deferred events still waiting.
  Status Flush() {
    EVIDENT_RETURN_IF_ERROR(FlushProjections());
    for (const auto& [key, deferred] : pending_deferred_) {
      EVIDENT_RETURN_IF_ERROR(WriteDeferred(deferred));
    }
    pending_deferred_.clear();
    return Status::Ok();
  }

  Status FlushProjections() {
    // In key order (subject, then consumer), so that the B-tree is written front to back.
    std::vector<std::pair<const std::string*, CachedProjection*>> dirty;
    for (auto& [consumer, subjects] : projections_) {
      for (auto& [subject, cached] : subjects) {
        // Evidence without a projection row is not written: the pipeline records evidence only
        // while it applies an event, and every apply puts its projection.
        if (cached.dirty && cached.exists) dirty.emplace_back(&consumer, &cached);
      }
    }
    std::sort(dirty.begin(), dirty.end(), [](const auto& a, const auto& b) {
      const std::string& a_subject = a.second->value->subject;
      const std::string& b_subject = b.second->value->subject;
      if (a_subject != b_subject) return a_subject < b_subject;
      return *a.first < *b.first;
    });
    for (auto& [consumer, cached] : dirty) EVIDENT_RETURN_IF_ERROR(WriteProjection(*cached));
    return Status::Ok();
  }

  Result<std::optional<DeferredEvent>> FindDeferred(std::string_view consumer,
                                                    std::string_view subject,
                                                    int64_t subject_version) override {
    if (const auto it = pending_deferred_.find(DeferredView(consumer, subject, subject_version));
        it != pending_deferred_.end()) {
      return std::optional<DeferredEvent>(it->second);
    }
    static const std::string kSql =
        std::string("SELECT ") + kDeferredColumns +
        " FROM deferred WHERE consumer=?1 AND subject=?2 AND subject_version=?3";
    Statement& s = Prepared(kSql);
    s.Bind(consumer).Bind(subject).Bind(subject_version);
    Status status;
    std::optional<DeferredEvent> out;
    if (s.Step(status)) out = ReadDeferred(s);
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  // Inside a transaction a deferred event is held until commit: most gaps close within the
  // batch that opened them (v2 arrives just before v1), and then the row is never written.
  Status InsertDeferred(const DeferredEvent& d) override {
    if (!in_transaction_) return WriteDeferred(d);
    const auto [it, inserted] =
        pending_deferred_.try_emplace(DeferredKey(d.consumer, d.subject, d.subject_version), d);
    if (!inserted) return Status::AlreadyExists("deferred event already waits: " + d.subject);
    return Status::Ok();
  }

  Status WriteDeferred(const DeferredEvent& d) {
    static const std::string kSql = std::string("INSERT INTO deferred(") + kDeferredColumns +
                                    ") VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)";
    Statement& s = Prepared(kSql);
    return s.Bind(d.consumer)
        .Bind(d.subject)
        .Bind(d.subject_version)
        .Bind(d.source)
        .Bind(d.event_id)
        .Bind(d.type)
        .Bind(d.schema_version)
        .Bind(d.expected_version)
        .BindBlob(d.raw)
        .Bind(d.received_at_ms)
        .Bind(d.deadline_at_ms)
        .Bind(d.route)
        .Bind(d.input_index)
        .Run();
  }

  Status DeleteDeferred(std::string_view consumer, std::string_view subject,
                        int64_t subject_version) override {
    if (const auto it = pending_deferred_.find(DeferredView(consumer, subject, subject_version));
        it != pending_deferred_.end()) {
      pending_deferred_.erase(it);
      return Status::Ok();
    }
    static const std::string kSql =
        "DELETE FROM deferred WHERE consumer=?1 AND subject=?2 AND subject_version=?3";
    Statement& s = Prepared(kSql);
    return s.Bind(consumer).Bind(subject).Bind(subject_version).Run();
  }

  Status Keep(const KeptInput& k) override {
    static const std::string kSql =
        "INSERT INTO kept(consumer, outcome, reason, message, source, event_id, type, subject, "
        "subject_version, raw, received_at_ms, input_index) "
        "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)";
    Statement& s = Prepared(kSql);
    return s.Bind(k.consumer)
        .Bind(k.outcome)
        .Bind(k.reason)
        .Bind(k.message)
        .Bind(k.source)
        .Bind(k.event_id)
        .Bind(k.type)
        .Bind(k.subject)
        .Bind(k.subject_version)
        .BindBlob(k.raw)
        .Bind(k.received_at_ms)
        .Bind(k.input_index)
        .Run();
  }

  Status Journal(const JournalEntry& j) override {
    static const std::string kSql =
        "INSERT INTO journal(consumer, outcome, source, event_id, subject, subject_version, "
        "at_ms) VALUES(?1,?2,?3,?4,?5,?6,?7)";
    Statement& s = Prepared(kSql);
    return s.Bind(j.consumer)
        .Bind(j.outcome)
        .Bind(j.source)
        .Bind(j.event_id)
        .Bind(j.subject)
        .Bind(j.subject_version)
        .Bind(j.at_ms)
        .Run();
  }

  Status PutEvidence(const EvidenceRecord& r) override {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(r.consumer, r.subject));
    // One record per name: the latest proof replaces an earlier one.
    auto& records = cached->evidence;
    const auto it = std::lower_bound(
        records.begin(), records.end(), r.name,
        [](const EvidenceRecord& a, const std::string& name) { return a.name < name; });
    if (it != records.end() && it->name == r.name) {
      it->source.assign(r.source);
      it->event_id.assign(r.event_id);
      it->subject_version = r.subject_version;
      it->recorded_at_ms = r.recorded_at_ms;
    } else {
      records.insert(it, r);
    }
    cached->dirty = true;
    if (in_transaction_ || !cached->exists) return Status::Ok();
    return WriteProjection(*cached);
  }

  Status SetCheckpoint(std::string_view input, const InputCheckpoint& checkpoint) override {
    assert(checkpoint.identified && checkpoint.lines >= 0 && checkpoint.bytes >= checkpoint.lines);
    static const std::string kSql =
        "INSERT OR REPLACE INTO checkpoint(input, position, bytes, prefix_hash) "
        "VALUES(?1,?2,?3,?4)";
    Statement& s = Prepared(kSql);
    return s.Bind(input)
        .Bind(checkpoint.lines)
        .Bind(checkpoint.bytes)
        .Bind(static_cast<int64_t>(checkpoint.prefix_hash))  // the same 64 bits
        .Run();
  }

  Result<std::optional<InputCheckpoint>> GetCheckpoint(std::string_view input) override {
    static const std::string kSql =
        "SELECT position, bytes, prefix_hash FROM checkpoint WHERE input=?1";
    Statement& s = Prepared(kSql);
    s.Bind(input);
    Status status;
    std::optional<InputCheckpoint> checkpoint;
    if (s.Step(status)) {
      checkpoint = InputCheckpoint{.lines = s.Int(0),
                                   .bytes = s.Int(1),
                                   .prefix_hash = static_cast<uint64_t>(s.Int(2)),
                                   .identified = s.OptionalInt(1).has_value()};
    }
    s.Reset();
    if (!status.ok()) return status;
    return checkpoint;
  }

  Result<std::vector<Projection>> ProjectionsOf(std::string_view subject) override {
    EVIDENT_RETURN_IF_ERROR(Flush());
    // Through the ledger's subject index: projection has no index of its own on subject, which
    // keeps every projection write to one B-tree.
    static const std::string kSql =
        std::string("SELECT ") + kProjectionColumns +
        " FROM projection WHERE subject=?1 AND consumer IN "
        "(SELECT DISTINCT consumer FROM ledger WHERE subject=?1) ORDER BY consumer";
    return Rows<Projection>(kSql, {subject}, ReadProjection);
  }
  Result<std::vector<LedgerEntry>> LedgerOf(std::string_view consumer,
                                            std::string_view subject) override {
    // INDEXED BY: without it SQLite chose the primary key's consumer prefix and read every
    // receipt of the consumer for each subject (the kill -9 test's reads of a 24,000-receipt
    // store took about 25 s; now under half a second).
    static const std::string kSql = std::string("SELECT ") + kLedgerColumns +
                                    " FROM ledger INDEXED BY ledger_by_subject"
                                    " WHERE consumer=?1 AND subject=?2"
                                    " ORDER BY subject_version, committed_at_ms";
    return Rows<LedgerEntry>(kSql, {consumer, subject}, ReadLedger);
  }
  Result<std::vector<DeferredEvent>> DeferredOf(std::string_view consumer,
                                                std::string_view subject) override {
    EVIDENT_RETURN_IF_ERROR(Flush());
    static const std::string kSql = std::string("SELECT ") + kDeferredColumns +
                                    " FROM deferred WHERE consumer=?1 AND subject=?2 "
                                    "ORDER BY subject_version";
    return Rows<DeferredEvent>(kSql, {consumer, subject}, ReadDeferred);
  }
  Result<std::vector<DeferredEvent>> AllDeferred() override {
    EVIDENT_RETURN_IF_ERROR(Flush());
    static const std::string kSql = std::string("SELECT ") + kDeferredColumns +
                                    " FROM deferred ORDER BY deadline_at_ms, consumer, subject";
    return Rows<DeferredEvent>(kSql, {}, ReadDeferred);
  }
  Result<std::vector<KeptInput>> KeptOf(std::string_view subject) override {
    static const std::string kSql =
        "SELECT seq, consumer, outcome, reason, message, source, event_id, type, subject, "
        "subject_version, raw, received_at_ms, input_index FROM kept WHERE subject=?1 ORDER BY seq";
    return Rows<KeptInput>(kSql, {subject}, [](const Statement& s) {
      KeptInput k;
      k.seq = s.Int(0);
      k.consumer = s.Text(1);
      k.outcome = s.Text(2);
      k.reason = s.Text(3);
      k.message = s.Text(4);
      k.source = s.Text(5);
      k.event_id = s.Text(6);
      k.type = s.Text(7);
      k.subject = s.Text(8);
      k.subject_version = s.OptionalInt(9);
      k.raw = s.Blob(10);
      k.received_at_ms = s.Int(11);
      k.input_index = s.Int(12);
      return k;
    });
  }
  Result<std::vector<JournalEntry>> JournalOf(std::string_view consumer,
                                              std::string_view subject) override {
    static const std::string kSql =
        "SELECT seq, consumer, outcome, source, event_id, subject, subject_version, at_ms "
        "FROM journal WHERE consumer=?1 AND subject=?2 ORDER BY seq";
    return Rows<JournalEntry>(kSql, {consumer, subject}, [](const Statement& s) {
      JournalEntry j;
      j.seq = s.Int(0);
      j.consumer = s.Text(1);
      j.outcome = s.Text(2);
      j.source = s.Text(3);
      j.event_id = s.Text(4);
      j.subject = s.Text(5);
      j.subject_version = s.OptionalInt(6);
      j.at_ms = s.Int(7);
      return j;
    });
  }
  Result<std::vector<EvidenceRecord>> EvidenceOf(std::string_view consumer,
                                                 std::string_view subject) override {
    EVIDENT_ASSIGN_OR_RETURN(CachedProjection * cached, Cached(consumer, subject));
    return cached->evidence;  // sorted by name
  }

  Result<std::vector<std::pair<std::string, int64_t>>> Counts() override {
    EVIDENT_RETURN_IF_ERROR(Flush());
    std::vector<std::pair<std::string, int64_t>> out;
    static const std::string kTables[] = {"ledger", "projection", "deferred", "kept", "journal"};
    static const std::string kSql[] = {"SELECT count(*) FROM ledger",
                                       "SELECT count(*) FROM projection",
                                       "SELECT count(*) FROM deferred", "SELECT count(*) FROM kept",
                                       "SELECT count(*) FROM journal"};
    for (size_t i = 0; i < std::size(kTables); ++i) {
      auto rows = Rows<int64_t>(kSql[i], {}, [](const Statement& s) { return s.Int(0); });
      if (!rows.ok()) return rows.status();
      out.emplace_back(kTables[i], rows->at(0));
    }
    return out;
  }

 private:
  // `sql` must have static storage: statements are cached by its address, so the hot path
  // neither hashes nor compares SQL text.
  Statement& Prepared(const std::string& sql) {
    auto it = statements_.find(&sql);
    if (it == statements_.end()) {
      it = statements_.emplace(&sql, std::make_unique<Statement>(db_, sql.c_str())).first;
      assert(it->second->prepare_error().empty() && "a built-in statement failed to prepare");
    }
    return *it->second;
  }

  template <typename T, typename Reader>
  Result<std::vector<T>> Rows(const std::string& sql, std::initializer_list<std::string_view> args,
                              Reader read) {
    Statement& s = Prepared(sql);  // sql has static storage (see Prepared)
    for (std::string_view a : args) s.Bind(a);
    std::vector<T> out;
    Status status;
    while (s.Step(status)) out.push_back(read(s));
    s.Reset();
    if (!status.ok()) return status;
    return out;
  }

  sqlite3* db_;
  std::unique_ptr<Checkpointer> checkpointer_;
  int64_t checkpoint_wal_pages_ = SqliteOptions{}.checkpoint_wal_pages;
  int64_t checkpoint_thread_commit_pages_ = SqliteOptions{}.checkpoint_thread_commit_pages;
  int64_t wal_pages_max_ = SqliteOptions{}.wal_pages_max;
  std::unordered_map<const std::string*, std::unique_ptr<Statement>> statements_;
  bool in_transaction_ = false;
  // The projection key leads with the subject (stores created since the key order changed).
  bool subject_first_ = false;
  // Subjects whose projection rows this transaction has read, for every consumer at once.
  std::unordered_set<std::string, StringHash, std::equal_to<>> subjects_read_;
  CachedProjection scratch_;           // Cached() outside a transaction
  simdjson::dom::parser json_parser_;  // evidence records
  std::string evidence_json_;          // scratch: the evidence_json column being written
  // This transaction's projections, by (consumer, subject); bounded by the batch size.
  std::unordered_map<std::string, SubjectCache, StringHash, std::equal_to<>> projections_;
  // This transaction's deferred events not yet written, by (consumer, subject, version); looked
  // up by views, without building the key.
  using DeferredKey = std::tuple<std::string, std::string, int64_t>;
  using DeferredView = std::tuple<std::string_view, std::string_view, int64_t>;
  struct DeferredKeyLess {
    using is_transparent = void;
    static DeferredView View(const DeferredKey& k) {
      return {std::get<0>(k), std::get<1>(k), std::get<2>(k)};
    }
    static DeferredView View(const DeferredView& v) { return v; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return View(a) < View(b);
    }
  };
  std::map<DeferredKey, DeferredEvent, DeferredKeyLess> pending_deferred_;
};

// Every table an evident store has; a database without them is not one.
constexpr const char* kStoreTablesSql =
    "SELECT count(*) FROM sqlite_master WHERE type='table' AND name IN "
    "('ledger','projection','deferred','kept','journal','checkpoint')";
constexpr int64_t kStoreTableCount = 6;

// Opens `path` with SQLITE_OPEN_READONLY: nothing is created or changed. A WAL store whose
// directory cannot hold the -shm file (a read-only mount) is opened immutable instead, which is
// exact when no other process writes it (none can, on such a mount).
Result<std::unique_ptr<Store>> OpenSqliteStoreForReading(const std::string& path,
                                                         const SqliteOptions& options) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return Status::NotFound("no evident store at " + path + " (nothing is created on reading)");
  }
  Status last;
  for (const bool immutable : {false, true}) {
    std::string uri = "file:";
    for (const char c : path) {  // a URI: '?', '#' and '%' in the path are escaped
      if (c == '?' || c == '#' || c == '%') {
        char escaped[4];
        std::snprintf(escaped, sizeof escaped, "%%%02X", static_cast<unsigned char>(c));
        uri += escaped;
      } else {
        uri.push_back(c);
      }
    }
    uri += immutable ? "?mode=ro&immutable=1" : "?mode=ro";
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(
        uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    auto store = std::make_unique<SqliteStore>(db);  // closes db on every path below
    if (rc != SQLITE_OK) {
      last = Status::IoError("cannot open sqlite store " + path + ": " + sqlite3_errmsg(db));
      continue;
    }
    sqlite3_busy_timeout(db, static_cast<int>(options.busy_timeout_ms));
    sqlite3_extended_result_codes(db, 1);
    auto tables = store->Count(kStoreTablesSql);
    if (!tables.ok()) {
      const int code = sqlite3_extended_errcode(db) & 0xFF;
      if (code == SQLITE_NOTADB) {
        return Status::FailedPrecondition(path + " is not an evident store (not a SQLite file)");
      }
      last = tables.status();
      if (code == SQLITE_CANTOPEN || code == SQLITE_READONLY) continue;  // try immutable
      return last;
    }
    if (*tables != kStoreTableCount) {
      return Status::FailedPrecondition(path +
                                        " is not an evident store (it lacks evident's tables)");
    }
    EVIDENT_RETURN_IF_ERROR(store->DetectLayout());
    return std::unique_ptr<Store>(std::move(store));
  }
  return last.Annotate("opening " + path + " for reading");
}

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const std::string& path,
                                               const SqliteOptions& options) {
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL" &&
      options.synchronous != "OFF") {
    return Status::InvalidArgument("synchronous must be FULL, NORMAL or OFF");
  }
  if (options.checkpoint_wal_pages < 1 || options.checkpoint_thread_commit_pages < 1 ||
      options.wal_pages_max < options.checkpoint_wal_pages) {
    return Status::InvalidArgument(
        "checkpoint_wal_pages and checkpoint_thread_commit_pages must be at least 1, and "
        "wal_pages_max at least checkpoint_wal_pages");
  }
  if (options.read_only) return OpenSqliteStoreForReading(path, options);
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close_v2(db);
    return Status::IoError("cannot open sqlite store " + path + ": " + message);
  }
  auto store = std::make_unique<SqliteStore>(db);
  sqlite3_busy_timeout(db, static_cast<int>(options.busy_timeout_ms));
  sqlite3_extended_result_codes(db, 1);  // tells a duplicate key from other constraint failures
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA journal_mode=WAL"));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA synchronous=" + options.synchronous));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA cache_size=-" + std::to_string(options.cache_kib)));
  EVIDENT_RETURN_IF_ERROR(store->Exec("PRAGMA foreign_keys=ON"));
  EVIDENT_RETURN_IF_ERROR(store->Exec(kSchema));
  EVIDENT_RETURN_IF_ERROR(store->AddCheckpointIdentity());
  EVIDENT_RETURN_IF_ERROR(store->DetectLayout());
  EVIDENT_RETURN_IF_ERROR(store->ConfigureCheckpoints(options));
  return std::unique_ptr<Store>(std::move(store));
}

bool ConfigureSqliteProcess() { return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0) == SQLITE_OK; }

Result<std::unique_ptr<Store>> OpenStore(std::string_view uri, const SqliteOptions& sqlite) {
  constexpr std::string_view kSqlite = "sqlite:";
  if (uri.substr(0, kSqlite.size()) == kSqlite && uri.size() > kSqlite.size()) {
    return OpenSqliteStore(std::string(uri.substr(kSqlite.size())), sqlite);
  }
  return Status::InvalidArgument("unknown store '" + std::string(uri) + "' (expected sqlite:PATH)");
}

}  // namespace evident
