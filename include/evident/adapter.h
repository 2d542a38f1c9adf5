// evident/adapter.h — version adapters: declarative rewrites of an event payload (the JSON `data`
// of an event) from one schema version of its type to another.
//
// An adapter is data, reviewable in git (`<contracts>/adapters/<id>.yaml`): the type, the schema
// versions it maps `from` and `to`, and a list of steps applied in order to the payload:
//
//   move     {from: /a, to: /b, required: false}   a member moves (absent source: no change,
//                                                  or the step fails when `required`)
//   set      {at: /p, value: <YAML value>}         a constant; the parent object must exist
//   map      {at: /p, values: {a: b}, unmapped: refuse|keep}   an enum value is replaced
//   convert  {at: /p, factor: f, round: r, digits: d}          a number is scaled and rounded
//   drop     /p                                    a member goes (absent: no change)
//
// The YAML format, the typing of map keys and the rounding rule are documented in
// src/adapter/README.md. Parsing refuses anything it does not understand; applying is pure.
//
// Value types: copy freely; all functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "evident/compat.h"
#include "evident/contract.h"
#include "evident/status.h"

namespace evident {

enum class AdapterStepKind : uint8_t { kMove, kSet, kMap, kConvert, kDrop };

// How `convert` rounds its product to `digits` decimal places.
enum class Rounding : uint8_t {
  kNone,      // no rounding (the default)
  kHalfUp,    // to nearest; a half goes away from zero (-2.5 -> -3)
  kHalfEven,  // to nearest; a half goes to the even neighbour (2.5 -> 2, 3.5 -> 4)
  kDown,      // toward zero
  kUp,        // away from zero
  kFloor,     // toward negative infinity
  kCeiling,   // toward positive infinity
};

// One step. Which fields matter depends on `kind`; the others keep their defaults.
struct AdapterStep {
  AdapterStepKind kind = AdapterStepKind::kMove;
  std::string at;          // JSON Pointer into the payload; the source of a move
  std::string to;          // move: the destination pointer
  bool required = false;   // move: an absent source fails the step
  std::string value_json;  // set: the constant, compact JSON text
  // map: JSON text of a value -> JSON text of its replacement, in file order. Compact, with
  // numbers as AdapterFromYaml writes them (integers in decimal, others as their shortest text:
  // 1.0 is "1"): a payload value matches a key when it is written the same way.
  std::vector<std::pair<std::string, std::string>> values;
  bool keep_unmapped = false;  // map: a value without a mapping stays (false: the step fails)
  double factor = 1;           // convert: finite, non-zero
  Rounding rounding = Rounding::kNone;  // convert
  int digits = 0;                       // convert: decimal places kept when rounding (0..15)
  int line = 0;                         // line of the step in its file (1-based), for messages
};

struct Adapter {
  std::string id;  // [a-z0-9][a-z0-9._-]*, at most 128 characters
  std::string type;
  std::string description;
  int64_t from = 0;                // schema version the adapter reads
  int64_t to = 0;                  // schema version it produces (from != to)
  std::vector<AdapterStep> steps;  // at least one, at most kAdapterStepsMax
  std::string origin;              // where it was read from, for messages
};

// The largest adapter file read, in bytes.
inline constexpr size_t kAdapterBytesMax = size_t{64} << 10;
// The most steps one adapter may hold.
inline constexpr size_t kAdapterStepsMax = 64;

// Parses one adapter from YAML text; `origin` names the file in messages. Fails with
// InvalidArgument "origin:line: what" for malformed YAML, a repeated or unknown key, a step that
// names no kind or two, an invalid or empty JSON Pointer, out-of-range numbers, from == to.
Result<Adapter> AdapterFromYaml(std::string_view yaml_text, std::string_view origin = "adapter");

// Applies the steps in order to the payload JSON text; returns the adapted payload as compact JSON
// (member order kept, new members appended). A step that cannot apply (convert on a non-number, an
// unmapped value with unmapped: refuse, move/set into a missing parent or through a non-object, a
// required move whose source is absent) fails with InvalidArgument whose message names the step
// (1-based index and kind) and the pointer. Malformed payload JSON is InvalidArgument too.
Result<std::string> ApplyAdapter(const Adapter& adapter, std::string_view payload_json);

// A short human description of the adapter's steps, one per line, e.g. "move /state -> /status".
std::string DescribeSteps(const Adapter& adapter);

// ---- Adapters of a contracts directory, and the chains consumers declare (chains.cc) ---------

// Reads every file of `dir.adapter_files`. Fails on an unreadable or malformed file, an id
// declared twice, or an adapter whose `from` or `to` version has no schema in the directory.
Result<std::vector<Adapter>> LoadAdapters(const ContractsDir& dir);

// The adapter named `id`, or nullptr.
const Adapter* FindAdapter(const std::vector<Adapter>& adapters, std::string_view id);

// Checks each via_adapter entry of `contract` (contract.h) against `adapters`, and fills an
// entry that names no adapter with the one adapter from that version to an accepted one.
// Refused: an unknown adapter, one of another type or version, several candidates, and a chain
// that ends at a version the consumer does not accept (a chain is declared in full, never
// found).
Status ResolveAdapterChains(const std::vector<Adapter>& adapters, ConsumerContract& contract);

// The separate check of the adapters of the contracts directory `dir` (lint.cc), as findings:
// ADAPTER_UNREADABLE, ADAPTER_INVALID, ADAPTER_ID_MISMATCH, DUPLICATE_ADAPTER_ID,
// ADAPTER_SCHEMA_MISSING, ADAPTER_UNCHECKED (nothing to try it on), ADAPTER_STEP_FAILS (a payload
// its source schema accepts fails a step), ADAPTER_OUTPUT_INVALID (its output for such a payload
// breaks the target schema; tried on the source schema's `examples` and on generated payloads),
// CONSUMER_ADAPTER_INVALID (a via_adapter entry that does not hold). Fails only when `dir` is
// not a directory.
Result<std::vector<LintFinding>> LintAdapters(const std::string& dir);

// Backs AnalyzeImpact's `safe-through-adapter` (compat.h) with a run of the adapters: for each
// consumer `report` calls safe through an adapter chain, the chain is run on the payloads
// `new_schema_json` accepts (its `examples` and generated ones) and each output checked against
// the accepted version's schema of the contracts directory (the one AnalyzeImpact read). A failure
// makes the consumer contract-update-required, with the reason ADAPTER_OUTPUT_INVALID,
// ADAPTER_STEP_FAILS or ADAPTER_UNCHECKED (nothing to try it on), and all_safe is recomputed.
Status CheckImpactThroughAdapters(const ContractsDir& contracts, std::string_view new_schema_json,
                                  ImpactReport& report);

}  // namespace evident
