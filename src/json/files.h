// json/files.h — reading whole files and standard input into memory, with a size cap.
#pragma once

#include <cstddef>
#include <string>

#include "evident/status.h"

namespace evident {

// Reads the file at `path` ("-" is standard input). Fails with kLimitExceeded past `bytes_max`.
Result<std::string> ReadFileToString(const std::string& path, size_t bytes_max);

}  // namespace evident
