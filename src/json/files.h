// json/files.h — reading whole files and standard input into memory, with a size cap.
#pragma once

#include <cstddef>
#include <string>

#include "evident/env.h"
#include "evident/status.h"

namespace evident {

// Reads the file at `path` ("-" is standard input) through the real file system (PosixEnv).
// Fails with kLimitExceeded past `bytes_max`, kNotFound when there is no such file.
Result<std::string> ReadFileToString(const std::string& path, size_t bytes_max);

// The Env given, or the real file system when none is (the loaders' `Env* env` options).
inline Env& EnvOr(Env* env) { return env != nullptr ? *env : PosixEnv(); }

}  // namespace evident
