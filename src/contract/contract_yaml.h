// contract/contract_yaml.h — the consumer-contract parser at the level of a parsed YAML node, for
// a contract that sits inside a larger document (a consumer entry of evident.yaml): errors then
// cite the lines of that document.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string_view>

#include "evident/contract.h"

namespace evident {

// Parses one consumer contract from `root`; `origin` names the file in messages. Besides the
// contract's own keys, `projection` and `guards` are allowed (and ignored here).
Result<ConsumerContract> ConsumerContractFromNode(const YAML::Node& root, std::string_view origin);

}  // namespace evident
