// evident/store_contracts.h — contracts kept in the store: each push of a contracts directory is
// one immutable, numbered set (every file of the directory and the append settings), so a
// producer reads one whole set in its own transaction and never a partial one.
//
// The store keeps a set as the pusher built it (evident/contract_store.h builds, checks and reads
// sets); it only numbers them. Part of the Store contract of store.h: a Transaction reads and
// pushes, a Snapshot reads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/status.h"

namespace evident {

// The two kinds of numbered set a store keeps, each numbered on its own: contract sets
// (`contracts push`: payload schemas and append settings, read by producers) and consumer sets
// (`consumers push`: a configuration's consumers with their contracts, read by deciders;
// stored_consumers.h).
enum class SetKind : uint8_t { kContracts = 0, kConsumers = 1 };
inline constexpr int kSetKindCount = 2;
// "contract", "consumer": what a message calls a set of the kind ("consumer set v3").
inline std::string_view SetKindName(SetKind kind) {
  return kind == SetKind::kContracts ? "contract" : "consumer";
}

// One pushed set of contracts (or of consumers: the same shape, SetKind::kConsumers).
struct StoredContracts {
  int64_t version = 0;  // assigned by the store at push: 1, 2, ... in push order
  int64_t pushed_at_ms = 0;
  std::string digest;    // the pusher's digest of files and settings (hex SHA-256)
  std::string settings;  // a JSON object: the append settings (contract_store.h)
  std::string files;     // a JSON object: each file's path in the directory -> its text
};

class ContractReads {
 public:
  virtual ~ContractReads() = default;
  // The latest set's version; 0 when no set of the kind was ever pushed.
  virtual Result<int64_t> LatestSetVersion(SetKind kind) = 0;
  // The set of `version`, or the latest when `version` is 0; nullopt when there is none.
  virtual Result<std::optional<StoredContracts>> SetAt(SetKind kind, int64_t version) = 0;
  // Up to `rows_max` sets, newest first, each without its files (`files` empty).
  virtual Result<std::vector<StoredContracts>> SetHistory(SetKind kind, int64_t rows_max) = 0;

  // The contract sets'.
  Result<int64_t> LatestContractsVersion() { return LatestSetVersion(SetKind::kContracts); }
  Result<std::optional<StoredContracts>> ContractsAt(int64_t version) {
    return SetAt(SetKind::kContracts, version);
  }
  Result<std::vector<StoredContracts>> ContractsHistory(int64_t rows_max) {
    return SetHistory(SetKind::kContracts, rows_max);
  }
};

class ContractWrites {
 public:
  virtual ~ContractWrites() = default;
  // Keeps `contracts` as set number `contracts.version`, which must be one past the latest (the
  // set a pusher checked against is still the latest), and returns that number. kAborted, with
  // nothing kept, when it is not: another push took the number first (two pushes racing on a
  // shared store: the one that commits second is refused, never stored unchecked).
  virtual Result<int64_t> PushSet(SetKind kind, const StoredContracts& set) = 0;

  Result<int64_t> PushContracts(const StoredContracts& contracts) {
    return PushSet(SetKind::kContracts, contracts);
  }
};

}  // namespace evident
