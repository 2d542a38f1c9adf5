#include "pg_ext/spi_connection.h"

#include <cassert>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

extern "C" {
#include <postgres.h>
// postgres.h first
#include <catalog/pg_type.h>
#include <executor/spi.h>
#include <nodes/params.h>
#include <nodes/parsenodes.h>
#include <parser/parse_param.h>
#include <utils/lsyscache.h>
#include <utils/memutils.h>
#include <utils/plancache.h>
}

namespace evident::postgres {
namespace {

// Parameters one statement may have: the store's statements have at most 17. The types array
// is given this size up front so that parse_param never reallocates it (it lives with the
// backend; parse_param would reallocate it in a short-lived context).
constexpr int kParamsMax = 64;

// One statement's plan, kept for the backend's life (SPI_keepplan), and the types PostgreSQL
// gave its parameters as it planned them (parse_param's variable parameters: the type each
// parameter's use implies, as libpq's unspecified parameter types).
struct Statement {
  SPIPlanPtr plan = nullptr;
  Oid* types = nullptr;  // kParamsMax entries, in TopMemoryContext
  int count = kParamsMax;
  bool writes = false;  // an INSERT, UPDATE or DELETE, or a query with one in a WITH
};

void SetupParameters(ParseState* pstate, void* arg) {
  auto* statement = static_cast<Statement*>(arg);
  setup_parse_variable_parameters(pstate, &statement->types, &statement->count);
}

// A statement's run, in plain data: what PgCall's functions read and fill under PG_TRY.
struct Run {
  Statement* statement;
  const char* sql;
  int param_count;
  const char* const* values;
  const int* lengths;
  const int* formats;
  // The rows, palloc'd: rows x columns cells (NULL for a NULL value), their lengths, and per
  // column whether it holds bytes (bytea) rather than text.
  uint64 rows;
  int columns;
  char** cells;
  int* cell_lengths;
  bool* raw_bytes;
  uint64 processed;
};

void PlanC(Statement* statement, const char* sql) {
  if (statement->types == nullptr) {
    statement->types =
        static_cast<Oid*>(MemoryContextAllocZero(TopMemoryContext, sizeof(Oid) * kParamsMax));
  }
  memset(statement->types, 0, sizeof(Oid) * kParamsMax);  // a failed plan's guesses forgotten
  statement->count = kParamsMax;
  // A generic plan from the start: the store's statements are key lookups and inserts, and a
  // custom plan (PostgreSQL's choice for the first executions, and for good when it costs no
  // more) plans the statement again at every call.
  SPIPlanPtr plan = SPI_prepare_params(sql, &SetupParameters, statement, CURSOR_OPT_GENERIC_PLAN);
  if (plan == nullptr) {
    elog(ERROR, "evident: cannot plan a statement: %s", SPI_result_code_string(SPI_result));
  }
  if (SPI_keepplan(plan) != 0) elog(ERROR, "evident: cannot keep a statement's plan");
  statement->writes = false;
  ListCell* source_cell = nullptr;
  foreach (source_cell, SPI_plan_get_plan_sources(plan)) {
    auto* source = static_cast<CachedPlanSource*>(lfirst(source_cell));
    ListCell* query_cell = nullptr;
    foreach (query_cell, source->query_list) {
      const auto* query = static_cast<const Query*>(lfirst(query_cell));
      statement->writes =
          statement->writes || query->commandType != CMD_SELECT || query->hasModifyingCTE;
    }
  }
  statement->plan = plan;
}

// Text parameters through their type's input function, bytes as bytea.
ParamListInfo ParamsC(const Run* run) {
  ParamListInfo list = makeParamList(run->param_count);
  for (int i = 0; i < run->param_count; ++i) {
    ParamExternData* param = &list->params[i];
    Oid type = run->statement->types[i];
    if (type == InvalidOid || type == UNKNOWNOID) type = TEXTOID;
    param->ptype = type;
    param->pflags = PARAM_FLAG_CONST;
    param->isnull = run->values[i] == nullptr;
    param->value = static_cast<Datum>(0);
    if (param->isnull) continue;
    if (run->formats[i] == 1) {
      if (type != BYTEAOID) elog(ERROR, "evident: parameter $%d holds bytes, not bytea", i + 1);
      auto* bytes = static_cast<bytea*>(palloc(static_cast<Size>(run->lengths[i]) + VARHDRSZ));
      SET_VARSIZE(bytes, run->lengths[i] + VARHDRSZ);
      memcpy(VARDATA(bytes), run->values[i], static_cast<size_t>(run->lengths[i]));
      param->value = PointerGetDatum(bytes);
      continue;
    }
    Oid input = InvalidOid;
    Oid io_param = InvalidOid;
    getTypeInputInfo(type, &input, &io_param);
    param->value = OidInputFunctionCall(input, const_cast<char*>(run->values[i]), io_param, -1);
  }
  return list;
}

void CopyRowsC(Run* run) {
  SPITupleTable* table = SPI_tuptable;
  TupleDesc desc = table->tupdesc;
  run->rows = SPI_processed;
  run->columns = desc->natts;
  const Size cells = static_cast<Size>(run->rows) * static_cast<Size>(run->columns);
  run->cells = static_cast<char**>(palloc0(sizeof(char*) * (cells + 1)));
  run->cell_lengths = static_cast<int*>(palloc0(sizeof(int) * (cells + 1)));
  run->raw_bytes =
      static_cast<bool*>(palloc0(sizeof(bool) * (static_cast<Size>(run->columns) + 1)));
  for (int c = 0; c < run->columns; ++c) run->raw_bytes[c] = SPI_gettypeid(desc, c + 1) == BYTEAOID;
  for (uint64 r = 0; r < run->rows; ++r) {
    for (int c = 0; c < run->columns; ++c) {
      const Size cell = r * static_cast<Size>(run->columns) + static_cast<Size>(c);
      bool is_null = false;
      const Datum value = SPI_getbinval(table->vals[r], desc, c + 1, &is_null);
      if (is_null) continue;
      if (run->raw_bytes[c]) {
        bytea* bytes = DatumGetByteaPP(value);
        run->cell_lengths[cell] = static_cast<int>(VARSIZE_ANY_EXHDR(bytes));
        run->cells[cell] =
            static_cast<char*>(palloc(static_cast<Size>(run->cell_lengths[cell]) + 1));
        memcpy(run->cells[cell], VARDATA_ANY(bytes), static_cast<size_t>(run->cell_lengths[cell]));
      } else {
        run->cells[cell] = SPI_getvalue(table->vals[r], desc, c + 1);
        run->cell_lengths[cell] = static_cast<int>(strlen(run->cells[cell]));
      }
    }
  }
  SPI_freetuptable(table);
}

void RunC(void* arg) {
  auto* run = static_cast<Run*>(arg);
  if (run->statement->plan == nullptr) PlanC(run->statement, run->sql);
  const ParamListInfo params = ParamsC(run);
  const int rc = SPI_execute_plan_with_paramlist(run->statement->plan, params, false, 0);
  if (rc < 0) elog(ERROR, "evident: statement not run: %s", SPI_result_code_string(rc));
  run->processed = SPI_processed;
  if (SPI_tuptable != nullptr) CopyRowsC(run);
}

void FreeRowsC(void* arg) {
  auto* run = static_cast<Run*>(arg);
  if (run->cells == nullptr) return;
  const Size cells = static_cast<Size>(run->rows) * static_cast<Size>(run->columns);
  for (Size i = 0; i < cells; ++i) {
    if (run->cells[i] != nullptr) pfree(run->cells[i]);
  }
  pfree(run->cells);
  pfree(run->cell_lengths);
  pfree(run->raw_bytes);
  run->cells = nullptr;
}

bool IsBegin(const std::string& sql) { return sql.rfind("BEGIN", 0) == 0; }

class SpiConnection final : public Connection {
 public:
  void Send(const std::string& sql, const Params& params, Expect expect) override {
    (void)Execute(sql, params, expect, nullptr);
  }
  void SendWanted(const std::string& sql, const Params& params) override {
    std::optional<Rowset> rows;
    if (Execute(sql, params, Expect(), &rows).ok() && rows) wanted_.push_back(std::move(*rows));
  }
  Result<std::vector<Rowset>> Fetch() override {
    EVIDENT_RETURN_IF_ERROR(std::exchange(unsynced_, Status::Ok()));
    return std::exchange(wanted_, {});
  }
  Result<Rowset> Query(const std::string& sql, const Params& params) override {
    std::optional<Rowset> rows;
    const Status ran = Execute(sql, params, Expect(), &rows);
    EVIDENT_RETURN_IF_ERROR(std::exchange(unsynced_, Status::Ok()));
    EVIDENT_RETURN_IF_ERROR(ran);
    if (!rows) return Status::Internal("evident: a statement answered no rows");
    return std::move(*rows);
  }
  Status Sync() override { return std::exchange(unsynced_, Status::Ok()); }
  bool broken() const override { return refused_; }
  Status Reset() override {
    in_transaction_ = false;
    wrote_ = false;
    unsynced_ = Status::Ok();
    wanted_.clear();
    // After a refused statement nothing more runs in this call: the failure stays.
    if (!refused_) failure_ = Status::Ok();
    return failure_;
  }
  Result<PGconn*> Lend() override {
    return Status::FailedPrecondition(
        "inside the server the caller's statements already share evident's transaction");
  }
  Status Resume() override { return Status::Ok(); }
  int64_t round_trips() const override { return 0; }
  bool InCallersTransaction() const override { return true; }

 private:
  Status Execute(const std::string& sql, const Params& params, const Expect& expect,
                 std::optional<Rowset>* rows);
  Status Control(const std::string& sql);
  Status Record(Status status) {
    if (!status.ok() && failure_.ok()) failure_ = status;
    if (!status.ok() && unsynced_.ok()) unsynced_ = status;
    return status;
  }
  static Rowset RowsOf(const Run& run);

  std::unordered_map<const std::string*, Statement*>& Statements() {
    // The backend's plans, kept for its life (one backend, no threads).
    static auto* statements = new std::unordered_map<const std::string*, Statement*>();
    return *statements;
  }

  bool in_transaction_ = false;  // between a store transaction's BEGIN and its end
  bool wrote_ = false;           // a statement of the open store transaction wrote
  bool refused_ = false;         // the server refused a statement: nothing more runs
  Status unsynced_;              // the first failure since the last Sync, Fetch or Query
  std::vector<Rowset> wanted_;
};

Status SpiConnection::Control(const std::string& sql) {
  if (IsBegin(sql)) {
    in_transaction_ = true;
    wrote_ = false;
    return Status::Ok();
  }
  assert((sql == "COMMIT" || sql == "ROLLBACK") &&
         "a transaction statement SpiConnection does not know");
  // A rollback of writes that the caller's transaction still holds: only the caller's
  // transaction can undo them, so the entry point raises an error (unless the server refused a
  // statement, whose own error it raises).
  if (sql == "ROLLBACK" && wrote_ && !refused_) CurrentSpiCall().undo_needed = true;
  in_transaction_ = false;
  wrote_ = false;
  return Status::Ok();
}

Rowset SpiConnection::RowsOf(const Run& run) {
  Table table;
  table.rows = static_cast<int>(run.rows);
  table.columns = run.columns;
  table.affected = static_cast<int64_t>(run.processed);
  table.raw_bytes.assign(run.raw_bytes, run.raw_bytes + run.columns);
  const size_t cells = static_cast<size_t>(run.rows) * static_cast<size_t>(run.columns);
  table.cells.reserve(cells);
  for (size_t i = 0; i < cells; ++i) {
    if (run.cells[i] == nullptr) {
      table.cells.emplace_back();
    } else {
      table.cells.emplace_back(std::string(run.cells[i], static_cast<size_t>(run.cell_lengths[i])));
    }
  }
  return Rowset(std::move(table));
}

Status SpiConnection::Execute(const std::string& sql, const Params& params, const Expect& expect,
                              std::optional<Rowset>* rows) {
  if (!params.status().ok()) return Record(params.status());
  if (IsBegin(sql) || sql == "COMMIT" || sql == "ROLLBACK") return Control(sql);
  if (refused_) return Record(failure_);
  if (params.count() > kParamsMax) {
    return Record(Status::Internal("evident: a statement with more than " +
                                   std::to_string(kParamsMax) + " parameters"));
  }
  Statement*& statement = Statements()[&sql];
  if (statement == nullptr) statement = new Statement();
  Run run{.statement = statement,
          .sql = sql.c_str(),
          .param_count = params.count(),
          .values = params.values(),
          .lengths = params.lengths(),
          .formats = params.formats(),
          .rows = 0,
          .columns = 0,
          .cells = nullptr,
          .cell_lengths = nullptr,
          .raw_bytes = nullptr,
          .processed = 0};
  if (PgError e = PgCall(&RunC, &run); e.failed) {
    refused_ = true;
    SpiCall& call = CurrentSpiCall();
    if (call.server_error == nullptr) call.server_error = e.data;
    return Record(ExpectedStatusOf(e.sqlstate, std::move(e.message), expect));
  }
  wrote_ = wrote_ || (in_transaction_ && statement->writes);
  if (rows != nullptr) {
    // Copied out with C++ allocations: freed first if one throws.
    try {
      *rows = run.cells != nullptr ? RowsOf(run)
                                   : Rowset(Table{.affected = static_cast<int64_t>(run.processed)});
    } catch (...) {
      (void)PgCall(&FreeRowsC, &run);
      throw;
    }
  }
  (void)PgCall(&FreeRowsC, &run);
  return Status::Ok();
}

}  // namespace

SpiCall& CurrentSpiCall() {
  static SpiCall call;
  return call;
}

void BeginSpiCall() { CurrentSpiCall() = SpiCall(); }

std::unique_ptr<Connection> NewSpiConnection() { return std::make_unique<SpiConnection>(); }

}  // namespace evident::postgres
