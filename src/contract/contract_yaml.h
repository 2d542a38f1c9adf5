// contract/contract_yaml.h — loading evident's YAML files, and the consumer-contract parser at the
// level of a parsed YAML node, for a contract that sits inside a larger document (a consumer entry
// of evident.yaml): errors then cite the lines of that document.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string_view>

#include "evident/contract.h"

namespace evident {

// Loads YAML text for one of evident's readers (evident.yaml, consumer contracts). A syntax error
// or a mapping that holds one key twice is InvalidArgument naming `origin` and the line(s); when
// `problem` is given it says which of the two it was. Every reader loads through here: yaml-cpp
// keeps both pairs of a repeated key and a lookup returns the first, so without this check a
// second `boundary:` would be silently ignored.
Result<YAML::Node> LoadYaml(std::string_view yaml_text, std::string_view origin,
                            ContractProblem* problem = nullptr);

// The duplicate-key check alone, over a loaded tree: InvalidArgument "origin:7: duplicate key
// 'boundary' at line 7 (first at line 5)" for the first repeated key found. Keys compare by their
// text ("a" and a are one key to every reader here). Linear in the size of the tree: each mapping
// and sequence is walked once (an alias is the very node it names, so it is not walked again),
// with one hash set per mapping, and without recursion, so deep nesting cannot exhaust the stack.
Status CheckUniqueKeys(const YAML::Node& root, std::string_view origin);

// The document's size with every alias expanded (bytes of scalar text, plus one per node),
// measured once per collection, without expanding anything: InvalidArgument beyond
// kYamlExpandedBytesMax, or for an alias inside the node it names. LoadYaml checks it, so no
// small file (aliases of aliases, or of one large scalar) can make a reader build a huge tree.
inline constexpr uint64_t kYamlExpandedBytesMax = uint64_t{64} << 20;
Status CheckExpandedSize(const YAML::Node& root, std::string_view origin);

// Parses one consumer contract from `root`; `origin` names the file in messages. Besides the
// contract's own keys, `projection` and `guards` are allowed (and ignored here). `root` must come
// from LoadYaml (this does not repeat the duplicate-key check).
Result<ConsumerContract> ConsumerContractFromNode(const YAML::Node& root, std::string_view origin);

}  // namespace evident
