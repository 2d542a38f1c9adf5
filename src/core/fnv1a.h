// core/fnv1a.h — 64-bit FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/), the one hash the
// project writes by hand: an NDJSON input's prefix identity, an outbox row's partition. Stable
// across builds and platforms (std::hash is not), streaming (a prefix hashes alike however it
// is read in chunks). Not for adversarial use.
#pragma once

#include <cstdint>
#include <string_view>

namespace evident {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;

// Continues the hash `hash` over `data`; start from kFnv1aOffset.
inline uint64_t Fnv1a(uint64_t hash, std::string_view data) {
  for (const char c : data) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace evident
