// evident/store_rows.h — what every part of the store contract (store.h) shares: an insert's
// outcome and a bounded list.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace evident {

// What an insert found: the key was free and the row is written, or a row holds the key already
// (nothing written; the transaction goes on).
enum class Insert : uint8_t { kInserted, kAlreadyThere };

// A bounded list: at most the `rows_max` asked for, and whether more rows exist.
template <typename T>
struct Rows {
  std::vector<T> rows;
  bool truncated = false;
};

// Rows returned by one Snapshot list call unless the caller asks otherwise.
inline constexpr int64_t kReadRowsMaxDefault = 10000;

}  // namespace evident
