// evident/compat.h — contract evolution: the structural and meaning diff of two payload schema
// versions, compatibility modes, and the impact of a new version on consumer contracts.
//
// DiffSchemas compares two JSON Schema documents (draft 2020-12 or draft 7; `$ref` resolved
// inside the document, `$defs`/`definitions`, `$anchor`; a cyclic `$ref` terminates) and lists
// every change with a stable code, where it happens, and whether it is backward compatible (the
// new schema reads data written under the old one) and forward compatible (the old schema reads
// data written under the new one). The codes are documented in docs/contracts.md.
//
// Every function is pure: no I/O except the *Dir functions, which read a contracts directory.
// Work is bounded by DiffOptions; a schema whose diff would explode combinatorially yields a
// kLimitExceeded status, never a hang. Value types; thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evident/contract.h"
#include "evident/status.h"

namespace evident {

// Which readers must keep working. The transitive modes compare a version with every earlier
// version of its type (CheckEvolution); for a single pair they equal their base mode.
enum class CompatMode {
  kBackward,  // the new schema reads data written under the old one (default)
  kForward,   // the old schema reads data written under the new one
  kFull,      // both
  kNone,      // structure is not checked; MEANING_CHANGED still fails
  kBackwardTransitive,
  kForwardTransitive,
  kFullTransitive,
};
std::string_view CompatModeName(CompatMode mode);  // "backward", "full-transitive", ...
Result<CompatMode> ParseCompatMode(std::string_view name);
bool IsTransitive(CompatMode mode);

enum class Strictness {
  // The everyday rule: producers send only the properties their schema declares, so adding an
  // optional property (or removing one) is compatible.
  kLenient,
  // JSON Schema's open content model taken literally: an object without
  // `additionalProperties: false` may already hold anything under a new name, so an optional
  // property added to it is backward incompatible (and a removed one forward incompatible).
  kStrict,
};
std::string_view StrictnessName(Strictness strictness);
Result<Strictness> ParseStrictness(std::string_view name);

// The change codes. Each names one kind of difference; docs/contracts.md has an example of each.
enum class ChangeCode {
  kTypeNarrowed,
  kTypeWidened,
  kTypeChanged,
  kRequiredPropertyAdded,
  kRequiredPropertyRemoved,
  kPropertyRemoved,
  kOptionalPropertyAddedToOpenContentModel,
  kOptionalPropertyAddedToClosedContentModel,
  kLikelyRename,
  kAdditionalPropertiesNarrowed,
  kAdditionalPropertiesWidened,
  kPatternPropertyAdded,
  kPatternPropertyRemoved,
  kDependencyAdded,
  kDependencyRemoved,
  kDependencyChanged,
  kEnumNarrowed,
  kEnumWidened,
  kEnumChanged,
  kConstAdded,
  kConstRemoved,
  kConstChanged,
  kVersionMarkerChanged,
  kMaxLengthDecreased,
  kMaxLengthIncreased,
  kMinLengthIncreased,
  kMinLengthDecreased,
  kMaximumDecreased,
  kMaximumIncreased,
  kMinimumIncreased,
  kMinimumDecreased,
  kExclusiveMaximumDecreased,
  kExclusiveMaximumIncreased,
  kExclusiveMinimumIncreased,
  kExclusiveMinimumDecreased,
  kMultipleOfChanged,
  kMaxItemsDecreased,
  kMaxItemsIncreased,
  kMinItemsIncreased,
  kMinItemsDecreased,
  kMaxPropertiesDecreased,
  kMaxPropertiesIncreased,
  kMinPropertiesIncreased,
  kMinPropertiesDecreased,
  kMaxContainsDecreased,
  kMaxContainsIncreased,
  kMinContainsIncreased,
  kMinContainsDecreased,
  kUniqueItemsAdded,
  kUniqueItemsRemoved,
  kPatternAdded,
  kPatternRemoved,
  kPatternChanged,
  kFormatAdded,
  kFormatRemoved,
  kFormatChanged,
  kItemsChanged,
  kContainsAdded,
  kContainsRemoved,
  kAllOfSchemaAdded,
  kAllOfSchemaRemoved,
  kAnyOfBranchAdded,
  kAnyOfBranchRemoved,
  kOneOfBranchAdded,
  kOneOfBranchRemoved,
  kCompositionChanged,
  kCompositionIntroduced,
  kCompositionRemoved,
  kCombinatorChanged,
  kOneOfMemberRepeated,
  kOneOfMembersMayOverlap,
  kPropertyAddedToPartiallyOpenContentModel,
  kPropertyRemovedFromPartiallyOpenContentModel,
  kNotChanged,
  kConditionalChanged,
  kUnresolvedRefChanged,
  kMeaningChanged,
};
inline constexpr int kChangeCodeCount = static_cast<int>(ChangeCode::kMeaningChanged) + 1;
std::string_view ChangeCodeName(ChangeCode code);  // "TYPE_NARROWED", ...
Result<ChangeCode> ParseChangeCode(std::string_view name);

struct Change {
  ChangeCode code = ChangeCode::kTypeChanged;
  // Where in the data: a JSON Pointer into the payload (`/status`); "*" stands for every array
  // item or every additional property name; "" is the whole payload.
  std::string pointer;
  // Where in the schema: a JSON Pointer into the new document (into the old one when the
  // keyword exists only there), after `$ref` resolution.
  std::string schema_pointer;
  bool backward = false;  // the new schema reads data written under the old one
  bool forward = false;   // the old schema reads data written under the new one
  std::string message;
  // What would bridge the change, when something can: for LIKELY_RENAME the version adapter step
  // that gives readers of the old version the member back under its old name (adapter.h).
  std::string suggestion;

  // Whether this change is acceptable under `mode`.
  bool CompatibleUnder(CompatMode mode) const;
};

struct DiffOptions {
  Strictness strictness = Strictness::kLenient;
  // Data JSON Pointer of the version marker (a property whose `const` is the schema version and
  // so differs between every two versions by design). Empty: a top-level property named
  // schemaVersion, schema_version or schemaversion.
  std::string version_at;
  // Pairs of (old, new) subschemas compared, all in all: bounds deep or wide anyOf/oneOf nesting
  // whose branch matching would otherwise grow without limit.
  int64_t comparisons_max = 200000;
  // Nesting of the comparison (properties, items, `$ref` hops) before the diff gives up.
  int64_t depth_max = 128;
  // Nesting of the JSON documents themselves.
  int64_t nesting_depth_max = 256;
  // Largest schema document accepted, in bytes.
  int64_t schema_bytes_max = int64_t{16} << 20;
};

struct SchemaDiff {
  std::vector<Change> changes;  // in document order of the new schema
  bool CompatibleUnder(CompatMode mode) const;
};

// Diffs two schema documents given as JSON text. Fails (kInvalidArgument) when a document is not
// JSON, not a schema (an object or a boolean), names an unsupported `$schema`, or has a local
// `$ref` that does not resolve; fails (kLimitExceeded) when a bound of `options` is reached.
Result<SchemaDiff> DiffSchemas(std::string_view old_schema_json, std::string_view new_schema_json,
                               const DiffOptions& options = {});

// One compared pair in a contracts directory.
struct VersionCheck {
  int64_t old_version = 0;
  int64_t new_version = 0;
  SchemaDiff diff;
  bool compatible = true;  // under the mode it was checked with
};

struct EvolutionReport {
  std::string type;
  CompatMode mode = CompatMode::kBackward;
  std::vector<VersionCheck> checks;  // by new version, then old version
  bool compatible = true;
};

// Checks every schema version of `type` in `dir` against its predecessor, or against every
// earlier version under a transitive mode.
Result<EvolutionReport> CheckEvolution(const ContractsDir& dir, std::string_view type,
                                       CompatMode mode, const DiffOptions& options = {});

// ---- Consumer impact -------------------------------------------------------------------------

struct ImpactReason {
  std::string pointer;  // the field the consumer reads
  // A ChangeCode name (TYPE_CHANGED, LIKELY_RENAME, ...), or SCHEMA_MISSING when an accepted
  // version has no schema file to compare with.
  std::string code;
  int64_t accepted_version = 0;  // the accepted schema version compared with
  std::string message;
};

struct ConsumerImpact {
  std::string consumer;
  bool safe = true;  // "safe"; false: "contract-update-required"
  std::vector<ImpactReason> reasons;
  // The consumer reads the new version through version adapters (via_adapter): it is safe
  // however the fields differ, because lint checks the adapters' output against the schema it
  // accepts ("safe-through-adapter"); the reasons say what the adapters bridge. The chain's
  // name, or "vN's adapter" when the contract leaves it to the directory.
  std::string through_adapter;
};

struct ImpactReport {
  std::string type;
  int64_t version = 0;                    // the new schema's version, when known
  std::vector<ConsumerImpact> consumers;  // every consumer subscribing to `type`, by id
  bool all_safe = true;
};

// For each consumer of `type`: whether every field it reads keeps its type, presence and meaning
// in `new_schema_json` compared with every schema version the consumer accepts, i.e. whether the
// consumer may add the new version to its accepted list. A reason is any change to a read field
// that a reader written for the old version would not handle (forward incompatible, see
// docs/contracts.md), a field that disappeared, or an accepted version without a schema.
// `new_version`, when known (> 0), is the schema version the new schema stands for: a consumer
// that reads it via_adapter is safe through its adapters.
Result<ImpactReport> AnalyzeImpact(const ContractsDir& dir, std::string_view type,
                                   std::string_view new_schema_json,
                                   const DiffOptions& options = {}, int64_t new_version = 0);

// ---- Lint ------------------------------------------------------------------------------------

struct LintFinding {
  std::string code;  // e.g. "UNKNOWN_TYPE"; the list is in docs/contracts.md
  std::string file;  // the file concerned, or the directory
  std::string message;
};

// Every problem in a contracts directory: unreadable or malformed consumer contracts, schema
// files that are not JSON or not schemas, gaps in version numbering, consumers that accept an
// unknown type or a version without a schema, read pointers no accepted version defines, ...
// Fails only when `dir` cannot be listed.
Result<std::vector<LintFinding>> LintContractsDir(const std::string& dir,
                                                  const DiffOptions& options = {});

}  // namespace evident
