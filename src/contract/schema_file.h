// contract/schema_file.h — which payload schema a file of a contracts directory is, by its path
// in the directory: the loader's rule (LoadContractsDir), for the sets a store keeps
// (stored_contracts) and the Outbox that compiles them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "evident/contract.h"

namespace evident {

struct SchemaFile {
  std::string type;
  int64_t version = 0;  // >= 0 (v0 is lint's VERSION_ZERO, not another file)
};

// "<type>/v<N>.schema.json" -> (type, N); nullopt for any other path: consumers/ and adapters/,
// a hidden directory, a path one level deeper or shallower, another file name.
inline std::optional<SchemaFile> SchemaFileOf(std::string_view path) {
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos || path.find('/', slash + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  const std::string_view type = path.substr(0, slash);
  if (type == "consumers" || type == "adapters" || type.starts_with('.')) return std::nullopt;
  const int64_t version = SchemaVersionOfFileName(path.substr(slash + 1));
  if (version < 0) return std::nullopt;
  return SchemaFile{.type = std::string(type), .version = version};
}

}  // namespace evident
