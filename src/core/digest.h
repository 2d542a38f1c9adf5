// core/digest.h — "sha256:<hex>" digests of bytes, as evident writes them everywhere it names
// content by its digest (an effect's answer, a conflicting payload).
#pragma once

#include <string>
#include <string_view>

namespace evident {

// "sha256:" and the 64 lowercase hex digits of SHA-256 over `bytes` (OpenSSL).
std::string Sha256Digest(std::string_view bytes);

}  // namespace evident
