// core/base64.h — RFC 4648 base64 with padding, for original bytes in JSON output. Written
// here because none of the project's libraries encodes base64 (simdjson only decodes it).
#pragma once

#include <string>
#include <string_view>

namespace evident {

inline void AppendBase64(std::string_view bytes, std::string& out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i]) << 16 |
                                         static_cast<unsigned char>(bytes[i + 1]) << 8 |
                                         static_cast<unsigned char>(bytes[i + 2]));
    out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63],
            kAlphabet[n & 63]};
  }
  const size_t left = bytes.size() - i;
  if (left == 0) return;
  uint32_t n = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i]) << 16);
  if (left == 2) n |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1]) << 8);
  out += {kAlphabet[n >> 18], kAlphabet[(n >> 12) & 63], left == 2 ? kAlphabet[(n >> 6) & 63] : '=',
          '='};
}

}  // namespace evident
