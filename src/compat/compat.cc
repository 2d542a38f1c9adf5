// DiffSchemas, CheckEvolution and AnalyzeImpact: the public entry points of evident/compat.h.
#include "evident/compat.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "compat/differ.h"
#include "compat/schema_doc.h"
#include "json/files.h"

namespace evident {
namespace {

using compat::Differ;
using compat::SchemaDocument;

struct NamedMode {
  std::string_view name;
  CompatMode mode;
};
constexpr NamedMode kModes[] = {
    {"backward", CompatMode::kBackward},
    {"forward", CompatMode::kForward},
    {"full", CompatMode::kFull},
    {"none", CompatMode::kNone},
    {"backward-transitive", CompatMode::kBackwardTransitive},
    {"forward-transitive", CompatMode::kForwardTransitive},
    {"full-transitive", CompatMode::kFullTransitive},
};

// A subschema reached by two `$ref` paths at one data position (a base schema shared by the
// members of a union) reports its change once per path: the same line twice tells nothing. Keeps
// the first of each.
void DropRepeatedChanges(std::vector<Change>& changes) {
  std::set<std::tuple<ChangeCode, std::string, std::string, bool, bool, std::string>> seen;
  std::erase_if(changes, [&seen](const Change& c) {
    return !seen.emplace(c.code, c.pointer, c.schema_pointer, c.backward, c.forward, c.message)
                .second;
  });
}

Result<std::vector<Change>> DiffDocuments(const SchemaDocument& old_doc,
                                          const SchemaDocument& new_doc,
                                          const DiffOptions& options) {
  std::vector<Change> changes;
  int64_t comparisons = 0;
  Differ differ(old_doc, new_doc, options, comparisons, changes);
  EVIDENT_RETURN_IF_ERROR(
      differ.Compare(&old_doc.root(), "", &new_doc.root(), "", "", Differ::Slot::kGeneral, 0));
  DropRepeatedChanges(changes);
  return changes;
}

Result<std::unique_ptr<SchemaDocument>> LoadSchema(const std::string& path,
                                                   const DiffOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(std::string text,
                           ReadFileToString(path, static_cast<size_t>(options.schema_bytes_max)));
  return SchemaDocument::Parse(text, path, options);
}

// The consumers' `schemaversion_at` (under /data) names the version marker when no option does.
DiffOptions WithVersionMarker(const ContractsDir& dir, DiffOptions options) {
  if (!options.version_at.empty()) return options;
  for (const ConsumerContract& consumer : dir.consumers) {
    constexpr std::string_view kData = "/data/";
    if (consumer.schema_version_at.starts_with(kData)) {
      options.version_at = consumer.schema_version_at.substr(kData.size() - 1);
      break;
    }
  }
  return options;
}

}  // namespace

std::string_view CompatModeName(CompatMode mode) {
  for (const NamedMode& m : kModes) {
    if (m.mode == mode) return m.name;
  }
  return "backward";
}

Result<CompatMode> ParseCompatMode(std::string_view name) {
  for (const NamedMode& m : kModes) {
    if (m.name == name) return m.mode;
  }
  return Status::InvalidArgument("unknown compatibility mode '" + std::string(name) +
                                 "' (backward, forward, full, none, backward-transitive, "
                                 "forward-transitive, full-transitive)");
}

bool IsTransitive(CompatMode mode) {
  return mode == CompatMode::kBackwardTransitive || mode == CompatMode::kForwardTransitive ||
         mode == CompatMode::kFullTransitive;
}

std::string_view StrictnessName(Strictness strictness) {
  return strictness == Strictness::kStrict ? "strict" : "lenient";
}

Result<Strictness> ParseStrictness(std::string_view name) {
  if (name == "lenient") return Strictness::kLenient;
  if (name == "strict") return Strictness::kStrict;
  return Status::InvalidArgument("unknown strictness '" + std::string(name) +
                                 "' (lenient, strict)");
}

// NOLINTNEXTLINE(readability-function-size): a table, one case per ChangeCode (two lines each).
std::string_view ChangeCodeName(ChangeCode code) {
  switch (code) {
    case ChangeCode::kTypeNarrowed:
      return "TYPE_NARROWED";
    case ChangeCode::kTypeWidened:
      return "TYPE_WIDENED";
    case ChangeCode::kTypeChanged:
      return "TYPE_CHANGED";
    case ChangeCode::kRequiredPropertyAdded:
      return "REQUIRED_PROPERTY_ADDED";
    case ChangeCode::kRequiredPropertyRemoved:
      return "REQUIRED_PROPERTY_REMOVED";
    case ChangeCode::kPropertyRemoved:
      return "PROPERTY_REMOVED";
    case ChangeCode::kOptionalPropertyAddedToOpenContentModel:
      return "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL";
    case ChangeCode::kOptionalPropertyAddedToClosedContentModel:
      return "OPTIONAL_PROPERTY_ADDED_TO_CLOSED_CONTENT_MODEL";
    case ChangeCode::kLikelyRename:
      return "LIKELY_RENAME";
    case ChangeCode::kAdditionalPropertiesNarrowed:
      return "ADDITIONAL_PROPERTIES_NARROWED";
    case ChangeCode::kAdditionalPropertiesWidened:
      return "ADDITIONAL_PROPERTIES_WIDENED";
    case ChangeCode::kPatternPropertyAdded:
      return "PATTERN_PROPERTY_ADDED";
    case ChangeCode::kPatternPropertyRemoved:
      return "PATTERN_PROPERTY_REMOVED";
    case ChangeCode::kDependencyAdded:
      return "DEPENDENCY_ADDED";
    case ChangeCode::kDependencyRemoved:
      return "DEPENDENCY_REMOVED";
    case ChangeCode::kDependencyChanged:
      return "DEPENDENCY_CHANGED";
    case ChangeCode::kEnumNarrowed:
      return "ENUM_NARROWED";
    case ChangeCode::kEnumWidened:
      return "ENUM_WIDENED";
    case ChangeCode::kEnumChanged:
      return "ENUM_CHANGED";
    case ChangeCode::kConstAdded:
      return "CONST_ADDED";
    case ChangeCode::kConstRemoved:
      return "CONST_REMOVED";
    case ChangeCode::kConstChanged:
      return "CONST_CHANGED";
    case ChangeCode::kVersionMarkerChanged:
      return "VERSION_MARKER_CHANGED";
    case ChangeCode::kMaxLengthDecreased:
      return "MAX_LENGTH_DECREASED";
    case ChangeCode::kMaxLengthIncreased:
      return "MAX_LENGTH_INCREASED";
    case ChangeCode::kMinLengthIncreased:
      return "MIN_LENGTH_INCREASED";
    case ChangeCode::kMinLengthDecreased:
      return "MIN_LENGTH_DECREASED";
    case ChangeCode::kMaximumDecreased:
      return "MAXIMUM_DECREASED";
    case ChangeCode::kMaximumIncreased:
      return "MAXIMUM_INCREASED";
    case ChangeCode::kMinimumIncreased:
      return "MINIMUM_INCREASED";
    case ChangeCode::kMinimumDecreased:
      return "MINIMUM_DECREASED";
    case ChangeCode::kExclusiveMaximumDecreased:
      return "EXCLUSIVE_MAXIMUM_DECREASED";
    case ChangeCode::kExclusiveMaximumIncreased:
      return "EXCLUSIVE_MAXIMUM_INCREASED";
    case ChangeCode::kExclusiveMinimumIncreased:
      return "EXCLUSIVE_MINIMUM_INCREASED";
    case ChangeCode::kExclusiveMinimumDecreased:
      return "EXCLUSIVE_MINIMUM_DECREASED";
    case ChangeCode::kMultipleOfChanged:
      return "MULTIPLE_OF_CHANGED";
    case ChangeCode::kMaxItemsDecreased:
      return "MAX_ITEMS_DECREASED";
    case ChangeCode::kMaxItemsIncreased:
      return "MAX_ITEMS_INCREASED";
    case ChangeCode::kMinItemsIncreased:
      return "MIN_ITEMS_INCREASED";
    case ChangeCode::kMinItemsDecreased:
      return "MIN_ITEMS_DECREASED";
    case ChangeCode::kMaxPropertiesDecreased:
      return "MAX_PROPERTIES_DECREASED";
    case ChangeCode::kMaxPropertiesIncreased:
      return "MAX_PROPERTIES_INCREASED";
    case ChangeCode::kMinPropertiesIncreased:
      return "MIN_PROPERTIES_INCREASED";
    case ChangeCode::kMinPropertiesDecreased:
      return "MIN_PROPERTIES_DECREASED";
    case ChangeCode::kMaxContainsDecreased:
      return "MAX_CONTAINS_DECREASED";
    case ChangeCode::kMaxContainsIncreased:
      return "MAX_CONTAINS_INCREASED";
    case ChangeCode::kMinContainsIncreased:
      return "MIN_CONTAINS_INCREASED";
    case ChangeCode::kMinContainsDecreased:
      return "MIN_CONTAINS_DECREASED";
    case ChangeCode::kUniqueItemsAdded:
      return "UNIQUE_ITEMS_ADDED";
    case ChangeCode::kUniqueItemsRemoved:
      return "UNIQUE_ITEMS_REMOVED";
    case ChangeCode::kPatternAdded:
      return "PATTERN_ADDED";
    case ChangeCode::kPatternRemoved:
      return "PATTERN_REMOVED";
    case ChangeCode::kPatternChanged:
      return "PATTERN_CHANGED";
    case ChangeCode::kFormatAdded:
      return "FORMAT_ADDED";
    case ChangeCode::kFormatRemoved:
      return "FORMAT_REMOVED";
    case ChangeCode::kFormatChanged:
      return "FORMAT_CHANGED";
    case ChangeCode::kItemsChanged:
      return "ITEMS_CHANGED";
    case ChangeCode::kContainsAdded:
      return "CONTAINS_ADDED";
    case ChangeCode::kContainsRemoved:
      return "CONTAINS_REMOVED";
    case ChangeCode::kAllOfSchemaAdded:
      return "ALL_OF_SCHEMA_ADDED";
    case ChangeCode::kAllOfSchemaRemoved:
      return "ALL_OF_SCHEMA_REMOVED";
    case ChangeCode::kAnyOfBranchAdded:
      return "ANY_OF_BRANCH_ADDED";
    case ChangeCode::kAnyOfBranchRemoved:
      return "ANY_OF_BRANCH_REMOVED";
    case ChangeCode::kOneOfBranchAdded:
      return "ONE_OF_BRANCH_ADDED";
    case ChangeCode::kOneOfBranchRemoved:
      return "ONE_OF_BRANCH_REMOVED";
    case ChangeCode::kCompositionChanged:
      return "COMPOSITION_CHANGED";
    case ChangeCode::kCompositionIntroduced:
      return "COMPOSITION_INTRODUCED";
    case ChangeCode::kCompositionRemoved:
      return "COMPOSITION_REMOVED";
    case ChangeCode::kCombinatorChanged:
      return "COMBINATOR_CHANGED";
    case ChangeCode::kOneOfMemberRepeated:
      return "ONE_OF_MEMBER_REPEATED";
    case ChangeCode::kOneOfMembersMayOverlap:
      return "ONE_OF_MEMBERS_MAY_OVERLAP";
    case ChangeCode::kPropertyAddedToPartiallyOpenContentModel:
      return "PROPERTY_ADDED_TO_PARTIALLY_OPEN_CONTENT_MODEL";
    case ChangeCode::kPropertyRemovedFromPartiallyOpenContentModel:
      return "PROPERTY_REMOVED_FROM_PARTIALLY_OPEN_CONTENT_MODEL";
    case ChangeCode::kNotChanged:
      return "NOT_CHANGED";
    case ChangeCode::kConditionalChanged:
      return "CONDITIONAL_CHANGED";
    case ChangeCode::kUnresolvedRefChanged:
      return "UNRESOLVED_REF_CHANGED";
    case ChangeCode::kMeaningChanged:
      return "MEANING_CHANGED";
  }
  return "UNKNOWN";
}

Result<ChangeCode> ParseChangeCode(std::string_view name) {
  for (int i = 0; i < kChangeCodeCount; ++i) {
    if (ChangeCodeName(static_cast<ChangeCode>(i)) == name) return static_cast<ChangeCode>(i);
  }
  return Status::InvalidArgument("unknown change code '" + std::string(name) + "'");
}

bool Change::CompatibleUnder(CompatMode mode) const {
  // A change of meaning is never structural: no mode, not even `none`, lets it pass.
  if (code == ChangeCode::kMeaningChanged) return false;
  switch (mode) {
    case CompatMode::kBackward:
    case CompatMode::kBackwardTransitive:
      return backward;
    case CompatMode::kForward:
    case CompatMode::kForwardTransitive:
      return forward;
    case CompatMode::kFull:
    case CompatMode::kFullTransitive:
      return backward && forward;
    case CompatMode::kNone:
      return true;
  }
  return false;
}

bool SchemaDiff::CompatibleUnder(CompatMode mode) const {
  return std::all_of(changes.begin(), changes.end(),
                     [mode](const Change& c) { return c.CompatibleUnder(mode); });
}

Result<SchemaDiff> DiffSchemas(std::string_view old_schema_json, std::string_view new_schema_json,
                               const DiffOptions& options) {
  EVIDENT_ASSIGN_OR_RETURN(auto old_doc,
                           SchemaDocument::Parse(old_schema_json, "old schema", options));
  EVIDENT_ASSIGN_OR_RETURN(auto new_doc,
                           SchemaDocument::Parse(new_schema_json, "new schema", options));
  EVIDENT_ASSIGN_OR_RETURN(std::vector<Change> changes, DiffDocuments(*old_doc, *new_doc, options));
  return SchemaDiff{std::move(changes)};
}

Result<EvolutionReport> CheckEvolution(const ContractsDir& dir, std::string_view type,
                                       CompatMode mode, const DiffOptions& options) {
  const auto versions = dir.schemas.find(std::string(type));
  if (versions == dir.schemas.end()) {
    return Status::NotFound("no schemas for type '" + std::string(type) + "' in " + dir.path);
  }
  const DiffOptions effective = WithVersionMarker(dir, options);
  std::vector<std::pair<int64_t, std::unique_ptr<SchemaDocument>>> docs;
  for (const auto& [version, path] : versions->second) {
    EVIDENT_ASSIGN_OR_RETURN(auto doc, LoadSchema(path, effective));
    docs.emplace_back(version, std::move(doc));
  }
  EvolutionReport report;
  report.type = std::string(type);
  report.mode = mode;
  for (size_t i = 1; i < docs.size(); ++i) {
    const size_t first = IsTransitive(mode) ? 0 : i - 1;
    for (size_t j = first; j < i; ++j) {
      EVIDENT_ASSIGN_OR_RETURN(std::vector<Change> changes,
                               DiffDocuments(*docs[j].second, *docs[i].second, effective));
      VersionCheck check{docs[j].first, docs[i].first, SchemaDiff{std::move(changes)}, true};
      check.compatible = check.diff.CompatibleUnder(mode);
      report.compatible = report.compatible && check.compatible;
      report.checks.push_back(std::move(check));
    }
  }
  return report;
}

namespace {

// The reasons why a consumer reading `read` under `old_doc` would not handle data written under
// `new_doc`.
Status FieldReasons(const SchemaDocument& old_doc, const SchemaDocument& new_doc,
                    const std::vector<Change>& whole_diff, const std::string& read, int64_t version,
                    const DiffOptions& options, std::vector<ImpactReason>& reasons) {
  EVIDENT_ASSIGN_OR_RETURN(const compat::FieldLookup old_field, LookupField(old_doc, read));
  if (!old_field.defined) return Status::Ok();  // a lint finding, not an impact of NEW
  EVIDENT_ASSIGN_OR_RETURN(const compat::FieldLookup new_field, LookupField(new_doc, read));
  if (!new_field.defined) {
    for (const Change& change : whole_diff) {
      if (change.code == ChangeCode::kLikelyRename &&
          (read == change.pointer || read.starts_with(change.pointer + "/"))) {
        reasons.push_back({read, "LIKELY_RENAME", version, change.message});
        return Status::Ok();
      }
    }
    reasons.push_back({read, "PROPERTY_REMOVED", version,
                       "the consumer reads " + read + ", which the new schema no longer defines"});
    return Status::Ok();
  }
  if (old_field.required && !new_field.required) {
    reasons.push_back({read, "REQUIRED_PROPERTY_REMOVED", version,
                       read + " was always present under schema version " +
                           std::to_string(version) + " and may be absent under the new one"});
  }
  std::vector<Change> changes;
  int64_t comparisons = 0;
  Differ differ(old_doc, new_doc, options, comparisons, changes);
  EVIDENT_RETURN_IF_ERROR(differ.Compare(old_field.value, old_field.pointer, new_field.value,
                                         new_field.pointer, read, Differ::Slot::kGeneral, 0));
  DropRepeatedChanges(changes);
  // The consumer, written for the old version, reads data written under the new one: what it
  // cannot handle is exactly what is not forward compatible (and any change of meaning).
  for (const Change& change : changes) {
    if (change.forward && change.code != ChangeCode::kMeaningChanged) continue;
    reasons.push_back({read, std::string(ChangeCodeName(change.code)), version, change.message});
  }
  return Status::Ok();
}

}  // namespace

Result<ImpactReport> AnalyzeImpact(const ContractsDir& dir, std::string_view type,
                                   std::string_view new_schema_json, const DiffOptions& options,
                                   int64_t new_version) {
  const DiffOptions effective = WithVersionMarker(dir, options);
  EVIDENT_ASSIGN_OR_RETURN(auto new_doc,
                           SchemaDocument::Parse(new_schema_json, "new schema", effective));
  std::map<int64_t, std::unique_ptr<SchemaDocument>> old_docs;
  std::map<int64_t, std::vector<Change>> whole_diffs;
  ImpactReport report;
  report.type = std::string(type);
  report.version = new_version;
  std::vector<const ConsumerContract*> consumers;
  for (const ConsumerContract& consumer : dir.consumers) {
    if (consumer.Find(type) != nullptr) consumers.push_back(&consumer);
  }
  std::sort(consumers.begin(), consumers.end(),
            [](const auto* a, const auto* b) { return a->id < b->id; });
  for (const ConsumerContract* consumer : consumers) {
    const AcceptedType& accepted = *consumer->Find(type);
    ConsumerImpact impact{consumer->id, true, {}};
    for (const int64_t version : accepted.versions) {
      const std::string path = dir.SchemaPath(type, version);
      if (path.empty()) {
        impact.reasons.push_back({"", "SCHEMA_MISSING", version,
                                  "the consumer accepts schema version " + std::to_string(version) +
                                      ", which has no schema file to compare with"});
        continue;
      }
      if (old_docs.find(version) == old_docs.end()) {
        EVIDENT_ASSIGN_OR_RETURN(auto doc, LoadSchema(path, effective));
        EVIDENT_ASSIGN_OR_RETURN(auto changes, DiffDocuments(*doc, *new_doc, effective));
        old_docs[version] = std::move(doc);
        whole_diffs[version] = std::move(changes);
      }
      for (const std::string& read : accepted.reads) {
        EVIDENT_RETURN_IF_ERROR(FieldReasons(*old_docs[version], *new_doc, whole_diffs[version],
                                             read, version, effective, impact.reasons));
      }
    }
    impact.safe = impact.reasons.empty();
    if (const auto via = accepted.via_adapter.find(new_version);
        new_version > 0 && via != accepted.via_adapter.end()) {
      impact.safe = true;
      const std::string chain = ChainName(via->second);
      impact.through_adapter =
          chain.empty() ? "v" + std::to_string(new_version) + "'s adapter" : chain;
    }
    report.all_safe = report.all_safe && impact.safe;
    report.consumers.push_back(std::move(impact));
  }
  return report;
}

}  // namespace evident
