#include "json/files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace evident {

Result<std::string> ReadFileToString(const std::string& path, size_t bytes_max) {
  FILE* file = path == "-" ? stdin : std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return Status::IoError("cannot open " + path + ": " + std::strerror(errno));
  }
  std::string out;
  char buffer[1 << 16];
  size_t n = 0;
  Status status;
  while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0) {
    if (out.size() + n > bytes_max) {
      status =
          Status::LimitExceeded(path + " is larger than " + std::to_string(bytes_max) + " bytes");
      break;
    }
    out.append(buffer, n);
  }
  if (status.ok() && std::ferror(file)) {
    status = Status::IoError("cannot read " + path + ": " + std::strerror(errno));
  }
  if (file != stdin) std::fclose(file);
  if (!status.ok()) return status;
  return out;
}

}  // namespace evident
