// libFuzzer target: JSON Schema compile + validate (src/schema).
//
// Input: schema bytes, a NUL byte, instance bytes (no NUL: the whole input is the schema and
// the instance is `null`). Small limits keep each run fast; the registry is empty, so any
// remote $ref must fail cleanly. Invariants checked: no crash, no sanitizer report, the fast
// path (IsValid) agrees with the collecting path (Validate), and no input takes long: one that
// spends more than a second of this thread's CPU time is a finding (a trap, below), so
// compilation must be linear and validation bounded by validation_steps_max (here 200,000
// steps, which even three passes under the sanitizers finish well inside a second). CPU time,
// not wall time: on a machine shared with other work, a fast input can wait a second for a
// core; libFuzzer's wall-clock -timeout (10 s, tests/CMakeLists.txt) catches a hang.
//
// The seed corpus holds recursive schemas that were exponential before memoization and the step
// budget (fuzz/corpus/schema/recursive-*, doubling-*): a oneOf/anyOf whose branches both recurse
// through $ref, and $defs that are each an allOf of two $refs to the next. Each seed is fast; one
// changed digit (a const no branch matches) made the old collecting pass take minutes.
#include <simdjson.h>
#include <time.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "evident/schema.h"

namespace {

int64_t ThreadCpuNs() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Traps when this input has spent more than a second of CPU time since `started_ns`.
void CheckCpuTime(int64_t started_ns, const char* where) {
  const int64_t spent_ns = ThreadCpuNs() - started_ns;
  if (spent_ns > 1'000'000'000) {
    std::fprintf(stderr, "schema_fuzz: %lld ms of CPU time by the end of %s\n",
                 static_cast<long long>(spent_ns / 1'000'000), where);
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace evident::schema;
  const int64_t started_ns = ThreadCpuNs();
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t separator = input.find('\0');
  const std::string_view schema_json = input.substr(0, separator);
  const std::string_view instance_json =
      separator == std::string_view::npos ? std::string_view("null") : input.substr(separator + 1);

  static const Registry registry;
  CompileOptions options;
  options.schema_nodes_max = 5'000;
  options.documents_max = 8;
  options.validation_depth_max = 128;
  options.validation_steps_max = 200'000;
  options.format_assertion = size % 2 == 0;  // exercise the format checks on half the inputs
  auto schema = Schema::Compile(schema_json, registry, options);
  CheckCpuTime(started_ns, "the compilation");
  if (!schema.ok()) return 0;

  simdjson::dom::parser parser;
  simdjson::dom::element instance;
  if (parser.parse(instance_json.data(), instance_json.size()).get(instance)) return 0;
  const bool fast = (*schema)->IsValid(instance);
  const Output output = (*schema)->Validate(instance, 8);
  if (fast != output.valid) __builtin_trap();
  if (output.budget_exceeded && output.valid) __builtin_trap();  // the budget fails closed
  if (!output.valid && output.errors.empty() && !output.errors_truncated) __builtin_trap();
  if (output.errors.size() > 8) __builtin_trap();
  CheckCpuTime(started_ns, "the validation");
  return 0;
}
