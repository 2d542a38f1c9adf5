// compat/differ.h — the recursive comparison of two schema documents behind DiffSchemas.
//
// A Differ walks the old and the new document side by side and appends a Change for every
// difference. Its work is bounded: every compared pair of subschemas counts against
// DiffOptions::comparisons_max (shared by the scratch Differs that decide whether two
// anyOf/oneOf branches are equivalent), and the nesting against depth_max. A pair already on the
// comparison stack is not compared again, which terminates cyclic `$ref`s.
// Not thread-safe; one Differ per diff.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compat/schema_doc.h"
#include "evident/compat.h"

namespace evident::compat {

class Differ {
 public:
  // What a subschema position means, for the codes of `true`/`false` transitions.
  enum class Slot { kGeneral, kAdditionalProperties, kItems };

  Differ(const SchemaDocument& old_doc, const SchemaDocument& new_doc, const DiffOptions& options,
         int64_t& comparisons, std::vector<Change>& out)
      : old_doc_(old_doc),
        new_doc_(new_doc),
        options_(options),
        comparisons_(comparisons),
        out_(out) {}

  // Compares `old_value` (at old schema pointer `old_pointer`) with `new_value`. A null value is
  // an absent keyword, i.e. the schema `true`. `data_pointer` is where in the payload it applies.
  Status Compare(const JsonValue* old_value, const std::string& old_pointer,
                 const JsonValue* new_value, const std::string& new_pointer,
                 const std::string& data_pointer, Slot slot, int64_t depth);

  // Makes Compare stop after the first change (equivalence checks need only a yes or no).
  void StopAtFirstChange() { stop_at_first_change_ = true; }

 private:
  struct Side {
    const Node& old_node;
    const Node& new_node;
    const std::string& data;
    int64_t depth;
  };

  void Add(ChangeCode code, const std::string& data_pointer, std::string schema_pointer,
           bool backward, bool forward, std::string message);
  bool Done() const { return stop_at_first_change_ && !out_.empty(); }

  Status CompareNodes(const Node& old_node, const Node& new_node, const std::string& data,
                      Slot slot, int64_t depth);
  void CompareBoolean(const Node& old_node, const Node& new_node, const std::string& data,
                      Slot slot);
  void CompareMeaning(const Side& s);
  void CompareTypes(const Side& s);
  void CompareValues(const Side& s);
  void CompareBounds(const Side& s);
  void CompareStrings(const Side& s);
  Status CompareObjects(const Side& s);
  Status ComparePatternProperties(const Side& s);
  void CompareDependencies(const Side& s);
  struct PropertyDiff;  // both sides' properties and required, and what was found (differ.cc)
  Status CompareProperties(const Side& s);
  Status CompareCommonProperties(const Side& s, PropertyDiff& p);
  void ReportLikelyRenames(const Side& s, PropertyDiff& p);
  void ReportAddedProperties(const Side& s, const PropertyDiff& p);
  void ReportRemovedProperties(const Side& s, const PropertyDiff& p);
  void CompareRequiredness(const Side& s, const PropertyDiff& p);
  Status CompareArrays(const Side& s);
  Status CompareComposition(const Side& s);
  Status CompareList(const Side& s, const char* keyword, ChangeCode added, ChangeCode removed,
                     bool added_backward);
  Result<bool> Equivalent(const JsonValue* old_value, const std::string& old_pointer,
                          const JsonValue* new_value, const std::string& new_pointer,
                          int64_t depth);
  bool IsVersionMarker(const std::string& data_pointer) const;

  const SchemaDocument& old_doc_;
  const SchemaDocument& new_doc_;
  const DiffOptions& options_;
  int64_t& comparisons_;
  std::vector<Change>& out_;
  bool stop_at_first_change_ = false;
  bool negated_ = false;  // inside `not`: narrowing there widens the whole
  std::set<std::pair<const JsonValue*, const JsonValue*>> in_progress_;
};

}  // namespace evident::compat
