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
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "compat/schema_doc.h"
#include "evident/compat.h"

namespace re2 {
class RE2;
}

namespace evident::compat {

// The combinators a node uses, as bits: 1 anyOf, 2 oneOf, 4 allOf (composition.cc).
unsigned CombinatorsOf(const Node& node);
// Whether no value is valid under both `a` and `b` of `doc`, from their keywords alone
// (composition.cc); `cost` grows by the work done.
bool ProvablyDisjoint(const SchemaDocument& doc, const Node& a, const Node& b, int64_t& cost);
// Whether, in 2020-12, combinators sit both on a `$ref` site and on what it refers to (or on two
// sites): all of them apply, while Node::Keyword sees only the outermost.
bool CombinatorsStacked(const Node& node);

// The array form of a node: tuple positions (prefixItems, or draft 7's items array) and the
// schema for the rest.
struct ArrayForm {
  const JsonValue* prefix = nullptr;  // an array, or null
  std::string prefix_pointer;
  const JsonValue* rest = nullptr;
  std::string rest_pointer;
  bool rest_is_unevaluated = false;  // unevaluatedItems, standing in for an absent rest
};

ArrayForm ArrayFormOf(const Node& node);

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
    unsigned types;  // the instance types either side admits (differ.cc's TypeBit)
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
  struct Verdict;
  Result<Verdict> JudgePattern(const Side& s, const std::string& pattern, const JsonValue* schema,
                               const std::string& at, bool added);
  const re2::RE2* RegexOf(const std::string& pattern);
  Status CompareDependencies(const Side& s);
  struct PropertyDiff;  // both sides' properties and required, and what was found (differ.cc)
  Status CompareProperties(const Side& s);
  Status CompareCommonProperties(const Side& s, PropertyDiff& p);
  void ReportLikelyRenames(const Side& s, PropertyDiff& p);
  Status ReportAddedProperties(const Side& s, const PropertyDiff& p);
  Status ReportRemovedProperties(const Side& s, const PropertyDiff& p);
  struct Coverage {
    enum class Kind { kOpen, kClosed, kPartial, kUnknown };
    Kind kind = Kind::kOpen;
    std::vector<const JsonValue*> schemas;  // kPartial: every schema the name falls under
    std::vector<std::string> pointers;
    std::string text;  // what covers the name, for messages
  };
  Status CompareRequiredness(const Side& s, const PropertyDiff& p);
  Status CompareArrays(const Side& s);
  Status CompareComposition(const Side& s, size_t own_from);
  Status CompareCombinators(const Side& s);
  Status CompareNotAndConditional(const Side& s);

  // composition.cc: a plain schema against a composed one, or two combinators.
  struct Verdict {
    bool backward = true;
    bool forward = true;
    std::vector<Change> meaning;   // MEANING_CHANGED found on the way (never hidden)
    std::string why_not_backward;  // the first change that is not backward compatible
    std::string why_not_forward;
  };
  struct Composed;  // one side as combinator, members and base (composition.cc)
  // Diffs a pair on the side (a scratch Differ sharing the bounds, the comparison stack and
  // the merged members) and sums its changes up. `data` is where in the payload they apply.
  Result<Verdict> Probe(const JsonValue* old_value, const std::string& old_pointer,
                        const JsonValue* new_value, const std::string& new_pointer,
                        const std::string& data, int64_t depth);
  Result<Coverage> CoverageOf(const SchemaDocument& doc, const Node& node, const std::string& name);
  // context.cc: what the other levels at the current data position say of a property. A level
  // is one comparison on the stack; the levels with the current data pointer (the parent of an
  // allOf member, of a `then`, ...) and their allOf members constrain the same value.
  struct Level {
    const Node* old_node;
    const Node* new_node;
    const std::string* data;
    bool scope_start;  // reached through `not` or `propertyNames`: the levels above do not apply
  };
  struct Context {
    std::vector<const JsonValue*> schemas;  // declarations and covering schemas: each applies
    std::vector<std::string> pointers;
    // Declarations in anyOf/oneOf members, then/else and dependentSchemas values: they apply to
    // some values only, so each must agree on its own.
    std::vector<const JsonValue*> maybe_schemas;
    std::vector<std::string> maybe_pointers;
    bool required = false;
    bool closed = false;   // some level rejects the name
    bool unknown = false;  // some level's verdict depends on the value (unevaluatedProperties)
    std::string text;      // where, for messages
    bool Empty() const {
      return schemas.empty() && maybe_schemas.empty() && !required && !closed && !unknown;
    }
    void Note(const std::string& what) {  // the first three findings name the context
      if (notes++ < 3) text += (text.empty() ? "" : "; ") + what;
    }
    int notes = 0;
    // Whether `node` is gathered for the first time in this way (`kind`) at `depth` or
    // shallower; records it. A graph of allOf references that reaches one base by many paths
    // is then gathered once per schema, not once per path (a 1.7 KB schema six members wide
    // and eight deep ran out of steps).
    bool FirstVisit(int kind, const Node& node, int64_t depth) {
      const auto key =
          std::make_tuple(kind, node.value, node.sites.empty() ? nullptr : node.sites.front());
      const auto [it, inserted] = visited.emplace(key, depth);
      if (inserted) return true;
      if (depth >= it->second) return false;
      it->second = depth;
      return true;
    }
    std::map<std::tuple<int, const JsonValue*, const JsonValue*>, int64_t> visited;
  };
  Result<Context> ContextOf(bool old_side, const std::string& name);
  struct TokenKind {
    bool item = false;        // an array item (else a member)
    size_t rest_from = 0;     // for an item "*": where the compared rest begins
    bool named_star = false;  // a property named "*"
  };
  Result<TokenKind> KindOf(bool old_side, size_t i, const std::string& token);
  Status ContextStep();
  // Whether the in-place applicators of `node` (itself, allOf/anyOf/oneOf members, if/then/else,
  // dependentSchemas) evaluate property `name` for every value, for none, or depending on the
  // value: what decides whether `node`'s unevaluatedProperties applies to the name. Looks at no
  // more than `steps_left` subschemas and patterns; past that, kSometimes.
  enum class Evaluation { kAlways, kNever, kSometimes };
  Evaluation EvaluationOf(const SchemaDocument& doc, const Node& node, const std::string& name,
                          int64_t depth, int64_t& steps_left);
  enum class Match { kNo, kYes, kCannotTell };
  Match PatternsMatch(const Node& node, const std::string& name, int64_t& steps_left);
  Status GatherSiblings(const SchemaDocument& doc, const Node& node, const std::string& token,
                        const std::string& name, const JsonValue* through, int64_t depth,
                        Context& c);
  // The same for an array item: `token` is its position ("*": at or past rest_from).
  Status GatherItemSiblings(const SchemaDocument& doc, const Node& node, const std::string& token,
                            size_t rest_from, const std::string& name, const JsonValue* through,
                            bool some, int64_t depth, Context& c);
  Status GatherLevel(const SchemaDocument& doc, const Node& node, const std::string& name,
                     const JsonValue* skip, int64_t depth, Context& c);
  Status GatherMembers(const SchemaDocument& doc, const Node& node, const std::string& name,
                       const JsonValue* skip, int64_t depth, Context& c);
  Status GatherBranches(const SchemaDocument& doc, const Node& node, const std::string& name,
                        const JsonValue* skip, int64_t depth, Context& c);
  Status GatherMaybe(const SchemaDocument& doc, const Node& node, const std::string& name,
                     int64_t depth, Context& c);
  // The verdict of an added (removed) property's schema against its context's schemas.
  Result<Verdict> JudgeInContext(const Context& ctx, bool added, const JsonValue* schema,
                                 const std::string& at, const std::string& data, int64_t depth);
  Status ReportAddedInContext(const Side& s, const PropertyDiff& p, size_t j, const Context& ctx);
  Status ReportRemovedInContext(const Side& s, const PropertyDiff& p, size_t k, const Context& ctx);
  Result<Verdict> JudgeCoverage(const Coverage& c, bool old_is_coverage, const JsonValue* schema,
                                const std::string& pointer, const std::string& data, int64_t depth);
  Result<Verdict> JudgeCovered(const Coverage& c, bool old_is_coverage, const JsonValue* schema,
                               const std::string& pointer, const std::string& data, int64_t depth);
  void AddMeaning(std::vector<Change> meaning);
  Result<Composed> CompositionOf(const SchemaDocument& doc, const Node& node);
  Result<Composed> MembersOf(const SchemaDocument& doc, const Node& node);
  Status SplitTypes(const SchemaDocument& doc, Composed& c);
  Status CompareLifted(const Side& s, size_t own_from);
  void SettleOwnChanges(size_t own_from, bool old_exact, bool new_exact);
  void ReportLifted(const Side& s, const Composed& olds, const Composed& news,
                    const std::vector<Verdict>& verdicts, bool backward, bool forward,
                    bool blocked);
  // A duplicate-free list of a combinator's members; `repeats` counts the dropped copies.
  struct Members {
    std::vector<const JsonValue*> values;
    std::vector<std::string> pointers;
    size_t repeats = 0;
  };
  // A oneOf whose members can now overlap where they could not before rejects a value matching
  // two of them: reported as ONE_OF_MEMBERS_MAY_OVERLAP. `old_of[j]` is the old member the new
  // member j continues, or the old count for an added one.
  Status CheckOneOfOverlap(const Side& s, const Members& olds, const Members& news,
                           const std::vector<size_t>& old_of);
  Status CheckOneOfMemberChange(const Side& s, const Members& olds, const Members& news,
                                size_t old_i, size_t new_i, size_t changes_from);
  Members UniqueMembers(const JsonValue* list, const std::string& list_pointer) const;
  Status ReportUnpaired(const Side& s, const char* keyword, const Members& olds,
                        const Members& news, const std::vector<size_t>& removed,
                        const std::vector<size_t>& added, ChangeCode added_code,
                        ChangeCode removed_code, bool added_backward);
  bool EvaluatesBesideUnevaluated(const SchemaDocument& doc, const Node& node,
                                  const Members& members, size_t k) const;
  Result<std::string> OverlapWithOthers(const Members& members, size_t k);
  void PairByType(const Members& olds, const Members& news, std::vector<size_t>& old_left,
                  std::vector<size_t>& new_left) const;
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
  bool negated_ = false;           // inside `not`: narrowing there widens the whole
  bool under_not_ = false;         // a probe made inside `not`: no lenient assumption (not swapped)
  std::vector<Level> levels_;      // the comparisons on the stack, outermost first
  bool next_scope_start_ = false;  // the next Compare enters `not` or `propertyNames`
  // A comparison on the stack: the pair and the polarity. A recursive schema that meets the
  // same pair again under `not` (or back out of it) is compared again there, where its changes
  // weigh the other way; with the same polarity it is a cycle, reported where it was entered.
  // The other levels around the pair are not part of the key (a deeper occurrence beside other
  // allOf members is not judged again: docs/contracts.md).
  struct ProgressKey {
    const JsonValue* old_value;
    const JsonValue* new_value;
    bool negated;
    bool under_not;
    auto operator<=>(const ProgressKey&) const = default;
  };
  std::set<ProgressKey> in_progress_;
  // Members of a composition with the keywords beside the combinator merged in, by (schema,
  // member): stable addresses, so that a recursive schema compared through them still meets
  // itself in in_progress_. Shared with the probes.
  // patternProperties patterns, compiled (null: RE2 cannot evaluate it); shared with probes.
  std::shared_ptr<std::map<std::string, std::shared_ptr<const re2::RE2>>> regexes_ =
      std::make_shared<std::map<std::string, std::shared_ptr<const re2::RE2>>>();
  using MergeKey = std::pair<const JsonValue*, const JsonValue*>;
  std::shared_ptr<std::map<MergeKey, std::unique_ptr<JsonValue>>> merges_ =
      std::make_shared<std::map<MergeKey, std::unique_ptr<JsonValue>>>();
};

}  // namespace evident::compat
