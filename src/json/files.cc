#include "json/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace evident {
namespace {

// Standard input has no path an Env could open.
Result<std::string> ReadStandardInput(size_t bytes_max) {
  std::string out;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, stdin)) > 0) {
    if (out.size() + n > bytes_max) {
      return Status::LimitExceeded("standard input is larger than " + std::to_string(bytes_max) +
                                   " bytes");
    }
    out.append(buffer, n);
  }
  if (std::ferror(stdin)) {
    return Status::IoError(std::string("cannot read standard input: ") + std::strerror(errno));
  }
  return out;
}

}  // namespace

Result<std::string> ReadFileToString(const std::string& path, size_t bytes_max) {
  if (path == "-") return ReadStandardInput(bytes_max);
  return ReadWholeFile(PosixEnv(), path, bytes_max);
}

}  // namespace evident
