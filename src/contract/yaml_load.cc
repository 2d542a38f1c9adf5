// Loading YAML for evident's readers: syntax errors and repeated keys become InvalidArgument.
#include <cstdint>
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

}  // namespace

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
  Status unique = CheckUniqueKeys(root, origin);
  if (!unique.ok()) {
    if (problem != nullptr) *problem = ContractProblem::kDuplicateKey;
    return unique;
  }
  if (problem != nullptr) *problem = ContractProblem::kNone;
  return root;
}

}  // namespace evident
