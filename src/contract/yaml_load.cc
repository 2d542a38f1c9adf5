// Loading YAML for evident's readers: syntax errors and repeated keys become InvalidArgument.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "contract/contract_yaml.h"

namespace evident {
namespace {

// Identifies a collection node of one loaded document by where it starts and its kind. An alias
// has the mark of the node it names, which is how a node reached twice is walked once (yaml-cpp
// shares aliased nodes and exposes no identity). A flow mapping used as the first key of a mapping
// starts where that mapping does and is not walked; every reader refuses such keys anyway.
int64_t CollectionKey(const YAML::Node& node) {
  return int64_t{node.Mark().pos} * 2 + (node.IsMap() ? 1 : 0);
}

std::string Line(const YAML::Node& node) { return std::to_string(node.Mark().line + 1); }

// Checks the keys of one mapping and queues its keys and values for the walk.
Status CheckMapping(const YAML::Node& mapping, std::string_view origin,
                    std::vector<YAML::Node>& pending) {
  std::unordered_map<std::string, YAML::Node> first;  // key text -> the key's first node
  for (const auto& entry : mapping) {
    pending.push_back(entry.first);  // a complex key is a collection of its own
    pending.push_back(entry.second);
    if (!entry.first.IsScalar()) continue;
    const auto [it, inserted] = first.emplace(entry.first.Scalar(), entry.first);
    if (!inserted) {
      return Status::InvalidArgument(std::string(origin) + ":" + Line(entry.first) +
                                     ": duplicate key '" + entry.first.Scalar() + "' at line " +
                                     Line(entry.first) + " (first at line " + Line(it->second) +
                                     ")");
    }
  }
  return Status::Ok();
}

// One collection being measured: its children, the next to look at, the size so far.
struct Measuring {
  YAML::Node node;
  std::vector<YAML::Node> children;
  size_t next = 0;
  uint64_t size = 1;
};

void StartMeasuring(const YAML::Node& node, std::vector<Measuring>& stack) {
  Measuring m;
  m.node.reset(node);
  if (node.IsMap()) {
    for (const auto& entry : node) {
      m.children.push_back(entry.first);
      m.children.push_back(entry.second);
    }
  } else {
    for (const YAML::Node& item : node) m.children.push_back(item);
  }
  stack.push_back(std::move(m));
}

}  // namespace

Status CheckExpandedSize(const YAML::Node& root, std::string_view origin) {
  const auto too_large = [&] {
    return Status::InvalidArgument(
        std::string(origin) + ": the document expands (through its aliases) to more than " +
        std::to_string(kYamlExpandedBytesMax >> 20) + " MiB; no reader of evident expands it");
  };
  std::unordered_map<int64_t, uint64_t> measured;  // by collection: its expanded size
  std::unordered_set<int64_t> open;                // collections on the stack
  std::vector<Measuring> stack;
  // The size of `node` when it is known (a scalar, a collection measured before), else it is
  // pushed to be measured; nullopt also for an alias of a collection that contains it.
  const auto size_of = [&](const YAML::Node& node, bool& cycle) -> std::optional<uint64_t> {
    if (!node.IsMap() && !node.IsSequence()) {
      return 1 + (node.IsScalar() ? node.Scalar().size() : 0);
    }
    const int64_t key = CollectionKey(node);
    if (const auto found = measured.find(key); found != measured.end()) return found->second;
    if (!open.insert(key).second) {
      cycle = true;
      return std::nullopt;
    }
    StartMeasuring(node, stack);
    return std::nullopt;
  };
  bool cycle = false;
  std::optional<uint64_t> total = size_of(root, cycle);
  while (!stack.empty() && !cycle) {
    const size_t top = stack.size() - 1;
    if (stack[top].next < stack[top].children.size()) {
      const YAML::Node child = stack[top].children[stack[top].next++];
      if (const std::optional<uint64_t> size = size_of(child, cycle)) stack[top].size += *size;
    } else {
      const uint64_t size = stack[top].size;
      const int64_t key = CollectionKey(stack[top].node);
      measured[key] = size;
      open.erase(key);
      stack.pop_back();
      if (stack.empty()) {
        total = size;
      } else {
        stack.back().size += size;
      }
    }
    if (!stack.empty() && stack.back().size > kYamlExpandedBytesMax) return too_large();
  }
  if (cycle) {
    return Status::InvalidArgument(std::string(origin) + ": an alias names a node that holds it");
  }
  if (total.value_or(0) > kYamlExpandedBytesMax) return too_large();
  return Status::Ok();
}

Status CheckUniqueKeys(const YAML::Node& root, std::string_view origin) {
  std::vector<YAML::Node> pending{root};
  std::unordered_set<int64_t> walked;
  while (!pending.empty()) {
    const YAML::Node node = pending.back();  // copy-constructed: a handle to the same node
    pending.pop_back();
    if (!node.IsMap() && !node.IsSequence()) continue;
    if (!walked.insert(CollectionKey(node)).second) continue;  // an alias, or seen already
    if (node.IsMap()) {
      EVIDENT_RETURN_IF_ERROR(CheckMapping(node, origin, pending));
    } else {
      for (const YAML::Node& item : node) pending.push_back(item);
    }
  }
  return Status::Ok();
}

Result<YAML::Node> LoadYaml(std::string_view yaml_text, std::string_view origin,
                            ContractProblem* problem) {
  if (problem != nullptr) *problem = ContractProblem::kInvalid;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(std::string(origin) + ": " + e.what());
  }
  if (Status size = CheckExpandedSize(root, origin); !size.ok()) return size;
  Status unique = CheckUniqueKeys(root, origin);
  if (!unique.ok()) {
    if (problem != nullptr) *problem = ContractProblem::kDuplicateKey;
    return unique;
  }
  if (problem != nullptr) *problem = ContractProblem::kNone;
  return root;
}

}  // namespace evident
