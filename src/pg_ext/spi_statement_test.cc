// evident_pg_spi_test.so, for tests only: one statement of the PostgreSQL store run through
// SpiConnection (spi_connection.h) inside the calling backend, in the caller's transaction. The
// store conformance suite's backend "postgresql_spi" (spi_proxy.h) sends every statement of a
// store through it, so that the suite runs the whole store over SPI: parameters typed by
// PostgreSQL as it plans, values through their input functions, bytea both ways, results read
// from SPI, and the server's errors raised again as they were.
//
//   evident_spi_statement(sql text, params text[], bytes boolean[]) RETURNS SETOF text[]
//
// params[i] is parameter $i+1's text, or its bytes as hex ("\x...") when bytes[i]; NULL for
// NULL. The first row answered is [affected, then "b" (bytes) or "t" (text) per column]; each
// row of the result follows, a bytes column's values as hex.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pg_ext/pg_guard.h"
#include "pg_ext/spi_connection.h"

#define PGDLLEXPORT __attribute__((visibility("default")))
extern "C" {
#include <postgres.h>
// postgres.h first
#include <catalog/pg_type.h>
#include <executor/spi.h>
#include <fmgr.h>
#include <funcapi.h>
#include <utils/array.h>
#include <utils/builtins.h>
#include <utils/tuplestore.h>

PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(evident_spi_statement);
}

namespace evident::postgres {
namespace {

struct Failure {
  ErrorData* rethrow;
  char message[4096];
  bool set;
};

// The rows of the last call, kept in static storage: the entry point reads them with no C++
// object of its own.
std::vector<std::vector<std::optional<std::string>>>& Answer() {
  static auto* rows = new std::vector<std::vector<std::optional<std::string>>>();
  return *rows;
}

// The statement's text at a stable address (SpiConnection keeps plans by it).
const std::string& Interned(std::string_view sql) {
  static auto* texts = new std::map<std::string, std::unique_ptr<std::string>, std::less<>>();
  auto it = texts->find(sql);
  if (it == texts->end()) {
    it = texts->emplace(std::string(sql), std::make_unique<std::string>(sql)).first;
  }
  return *it->second;
}

std::string Hex(std::string_view bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out = "\\x";
  for (const char c : bytes) {
    out += kDigits[(static_cast<unsigned char>(c) >> 4) & 0xF];
    out += kDigits[static_cast<unsigned char>(c) & 0xF];
  }
  return out;
}

Result<std::string> Unhex(std::string_view text) {
  if (text.size() < 2 || text.substr(0, 2) != "\\x" || text.size() % 2 != 0) {
    return Status::InvalidArgument("a bytes parameter not in hex form");
  }
  const auto digit = [](char c) {
    return c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
  };
  std::string out;
  for (size_t i = 2; i + 1 < text.size(); i += 2) {
    out += static_cast<char>((digit(text[i]) << 4) | digit(text[i + 1]));
  }
  return out;
}

Status Run(std::string_view sql, int count, const char* const* texts, const bool* bytes) {
  Params params;
  for (int i = 0; i < count; ++i) {
    if (texts[i] == nullptr) {
      params.Null();
    } else if (bytes[i]) {
      EVIDENT_ASSIGN_OR_RETURN(const std::string raw, Unhex(texts[i]));
      params.Bytes(raw);
    } else {
      params.Text(texts[i]);
    }
  }
  std::unique_ptr<Connection> connection = NewSpiConnection();
  EVIDENT_ASSIGN_OR_RETURN(const Rowset rows, connection->Query(Interned(sql), params));
  auto& answer = Answer();
  answer.clear();
  std::vector<std::optional<std::string>> header{std::to_string(rows.affected())};
  for (int c = 0; c < rows.columns(); ++c) header.emplace_back(rows.RawBytes(c) ? "b" : "t");
  answer.push_back(std::move(header));
  for (int r = 0; r < rows.rows(); ++r) {
    std::vector<std::optional<std::string>>& row = answer.emplace_back();
    for (int c = 0; c < rows.columns(); ++c) {
      if (rows.IsNull(r, c)) {
        row.emplace_back();
      } else {
        row.emplace_back(rows.RawBytes(c) ? Hex(rows.Text(r, c)) : std::string(rows.Text(r, c)));
      }
    }
  }
  return Status::Ok();
}

void ConnectC(void*) {
  if (SPI_connect() != SPI_OK_CONNECT) elog(ERROR, "SPI_connect failed");
}
void FinishC(void*) { SPI_finish(); }

void SetFailure(Failure* failure, std::string_view message) noexcept {
  const size_t n = std::min(message.size(), sizeof(failure->message) - 1);
  std::memcpy(failure->message, message.data(), n);
  failure->message[n] = '\0';
  failure->set = true;
}

}  // namespace

void RunGuarded(std::string_view sql, int count, const char* const* texts, const bool* bytes,
                Failure* failure) noexcept {
  BeginSpiCall();
  try {
    if (PgCall(&ConnectC, nullptr).failed) return SetFailure(failure, "SPI_connect failed");
    const Status status = Run(sql, count, texts, bytes);
    if (CurrentSpiCall().server_error != nullptr) {
      failure->rethrow = CurrentSpiCall().server_error;
      return;
    }
    if (!status.ok()) SetFailure(failure, status.ToString());
    (void)PgCall(&FinishC, nullptr);
  } catch (const std::exception& e) {
    SetFailure(failure, e.what());
  }
}

}  // namespace evident::postgres

namespace {

// One text[] row of the answer, built from the static rows (no C++ object in this frame).
void PutRow(ReturnSetInfo* result, size_t index) {
  const auto& row = evident::postgres::Answer()[index];
  const int n = static_cast<int>(row.size());
  auto* elements = static_cast<Datum*>(palloc0(sizeof(Datum) * (static_cast<size_t>(n) + 1)));
  auto* nulls = static_cast<bool*>(palloc0(sizeof(bool) * (static_cast<size_t>(n) + 1)));
  for (int i = 0; i < n; ++i) {
    const auto& cell = row[static_cast<size_t>(i)];
    nulls[i] = !cell.has_value();
    if (cell) {
      elements[i] =
          PointerGetDatum(cstring_to_text_with_len(cell->data(), static_cast<int>(cell->size())));
    }
  }
  int dims[1] = {n};
  int lower[1] = {1};
  ArrayType* array =
      construct_md_array(elements, nulls, 1, dims, lower, TEXTOID, -1, false, TYPALIGN_INT);
  Datum value = PointerGetDatum(array);
  bool value_null = false;
  tuplestore_putvalues(result->setResult, result->setDesc, &value, &value_null);
}

}  // namespace

extern "C" PGDLLEXPORT Datum evident_spi_statement(PG_FUNCTION_ARGS) {
  text* sql = PG_GETARG_TEXT_PP(0);
  Datum* values = nullptr;
  bool* nulls = nullptr;
  int count = 0;
  deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT, &values, &nulls,
                    &count);
  Datum* flags = nullptr;
  bool* flag_nulls = nullptr;
  int flag_count = 0;
  deconstruct_array(PG_GETARG_ARRAYTYPE_P(2), BOOLOID, 1, true, TYPALIGN_CHAR, &flags, &flag_nulls,
                    &flag_count);
  if (flag_count != count) elog(ERROR, "params and bytes differ in length");
  auto** texts = static_cast<char**>(palloc0(sizeof(char*) * (static_cast<size_t>(count) + 1)));
  auto* bytes = static_cast<bool*>(palloc0(sizeof(bool) * (static_cast<size_t>(count) + 1)));
  for (int i = 0; i < count; ++i) {
    texts[i] = nulls[i] ? nullptr : text_to_cstring(DatumGetTextPP(values[i]));
    bytes[i] = DatumGetBool(flags[i]);
  }
  // A set of one scalar column: its description is the caller's (the function is in FROM).
  InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
  evident::postgres::Failure failure{};
  evident::postgres::RunGuarded({VARDATA_ANY(sql), VARSIZE_ANY_EXHDR(sql)}, count, texts, bytes,
                                &failure);
  if (failure.rethrow != nullptr) ReThrowError(failure.rethrow);
  if (failure.set) elog(ERROR, "evident_spi_statement: %s", failure.message);
  auto* result = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
  for (size_t i = 0; i < evident::postgres::Answer().size(); ++i) PutRow(result, i);
  return static_cast<Datum>(0);
}
