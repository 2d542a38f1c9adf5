#include "core/digest.h"

#include <openssl/evp.h>

#include <array>

namespace evident {

std::string Sha256Digest(std::string_view bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  // EVP_Digest fails only when OpenSSL cannot allocate its context: no digest is then written,
  // and the text says so rather than naming a wrong one.
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
    return "sha256:unavailable";
  }
  const std::basic_string_view<unsigned char> out(digest.data(), size);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "sha256:";
  text.reserve(text.size() + 2 * out.size());
  for (const unsigned char byte : out) {
    text.push_back(kHex[byte >> 4]);
    text.push_back(kHex[byte & 0xF]);
  }
  return text;
}

}  // namespace evident
