// URIs as a message may show them (evident/redact.h).
#include "evident/redact.h"

#include <algorithm>

namespace evident {

std::vector<std::string_view> UriListEntries(std::string_view uri) {
  std::vector<std::string_view> entries;
  for (size_t at = 0; at <= uri.size();) {
    const size_t comma = std::min(uri.find(',', at), uri.size());
    entries.push_back(uri.substr(at, comma - at));
    at = comma + 1;
  }
  return entries;
}

std::string RedactUri(std::string_view uri) {
  std::string out;
  const std::vector<std::string_view> entries = UriListEntries(uri);
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string_view one = entries[i];
    if (i > 0) out += ',';
    const size_t scheme = one.find("://");
    const size_t host = scheme == std::string_view::npos ? 0 : scheme + 3;
    const size_t user_end = one.find('@', host);
    if (user_end != std::string_view::npos) {
      out += std::string(one.substr(0, host)) + "***" + std::string(one.substr(user_end));
    } else {
      out += one;
    }
  }
  return out;
}

}  // namespace evident
