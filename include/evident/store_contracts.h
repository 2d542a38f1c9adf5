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
#include <vector>

#include "evident/status.h"

namespace evident {

// One pushed set of contracts.
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
  // The latest set's version; 0 when no set was ever pushed.
  virtual Result<int64_t> LatestContractsVersion() = 0;
  // The set of `version`, or the latest when `version` is 0; nullopt when there is none.
  virtual Result<std::optional<StoredContracts>> ContractsAt(int64_t version) = 0;
  // Up to `rows_max` sets, newest first, each without its files (`files` empty).
  virtual Result<std::vector<StoredContracts>> ContractsHistory(int64_t rows_max) = 0;
};

class ContractWrites {
 public:
  virtual ~ContractWrites() = default;
  // Keeps `contracts` as set number `contracts.version`, which must be one past the latest (the
  // set a pusher checked against is still the latest), and returns that number. kAborted, with
  // nothing kept, when it is not: another push took the number first (two pushes racing on a
  // shared store: the one that commits second is refused, never stored unchecked).
  virtual Result<int64_t> PushContracts(const StoredContracts& contracts) = 0;
};

}  // namespace evident
