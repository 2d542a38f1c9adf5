// evident/contract.h — consumer contracts: what a consumer accepts, reads and produces.
//
// A consumer contract is data, reviewable in git: `id`, `resultversion`, the accepted
// (type, schema version) pairs with the payload fields read for each type (JSON Pointers into
// `data`), the source boundary, where the schema version lives, the outcome for an unknown
// version, ordering (none, or by subject with the owner's version), and the gap policy.
// The YAML format is documented in docs/contracts.md; the same format is used in a contracts
// directory (`contracts/consumers/<id>.yaml`) and inside `evident.yaml` (`consumers:` entries).
//
// Value types: copy freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "evident/outcome.h"
#include "evident/status.h"

namespace evident {

class Env;  // evident/env.h

struct AcceptedType {
  std::string type;
  std::vector<int64_t> versions;   // accepted schema versions, ascending, no repeats
  std::vector<std::string> reads;  // JSON Pointers into `data` the consumer reads
  // Schema versions read through version adapters (adapter.h), none of them in `versions`:
  // version -> the adapter ids applied in turn, ending at an accepted version. An empty list
  // stands for the one adapter of the contracts directory from that version to an accepted one
  // (LoadConfig resolves it). A chain is never found: it is declared, id by id.
  std::map<int64_t, std::vector<std::string>> via_adapter;
  // Seed 000's explicit default rule for the schema version: an event of this type that carries
  // none is read as this version (one of `versions` or `via_adapter`), and its receipt and
  // decision say so. Without one, such an event is rejected (missing-schema-version).
  std::optional<int64_t> default_schema_version;
};
// The longest adapter chain a consumer may declare for one version.
inline constexpr size_t kAdapterChainMax = 8;
// A chain's name as receipts, decisions and impact reports record it: the ids joined by ','.
std::string ChainName(const std::vector<std::string>& chain);

struct Ordering {
  bool by_subject = false;
  // Where the subject is: empty means the `subject` attribute; else a canonical JSON Pointer
  // such as "/data/orderId".
  std::string subject_at;
  // Where the owner's version is: empty means the `subjectversion` attribute; else a canonical
  // JSON Pointer such as "/data/orderVersion".
  std::string version_at;
  // How a subject's first version is taken when the consumer has no projection of it (and no
  // baseline was imported for it, `evident baseline import`): version 1 (`start: 1`, the
  // default: anything later waits for it), or the first version seen (`start: first-seen`: a
  // consumer that joins a stream late takes the version it first sees as its baseline, recorded
  // as evidence `baseline`; an earlier version arriving after it is stale).
  enum class Start : uint8_t { kOne, kFirstSeen } start = Start::kOne;
};

struct GapPolicy {
  int64_t deadline_seconds = 300;  // how long a gap may stay open before it is overdue
  GapRoute route = GapRoute::kWait;
};

// What happens to an event of a known type whose schema version the consumer does not accept.
enum class UnknownVersionOutcome { kContractUpdateRequired, kManual };

struct ConsumerContract {
  std::string id;
  int64_t result_version = 1;
  std::vector<std::string> boundary;  // allowed source prefixes (see envelope.h); empty: any
  // An ordered projection's owner is the source of its first applied event (or of its
  // baseline): an event of that subject from another source is rejected (owner-mismatch), unless
  // both are listed here, as sources that share the ownership of the consumer's subjects.
  std::vector<std::string> owners;
  // Canonical JSON Pointer of the schema version (e.g. "/data/schemaVersion"); empty means the
  // `schemaversion` attribute.
  std::string schema_version_at;
  UnknownVersionOutcome unknown_version = UnknownVersionOutcome::kContractUpdateRequired;
  std::vector<AcceptedType> accepts;
  Ordering ordering;
  GapPolicy gap;

  // The entry for `type`, or nullptr when the consumer does not subscribe to it.
  const AcceptedType* Find(std::string_view type) const;
  // True when the consumer accepts `type` at schema `version`.
  bool Accepts(std::string_view type, int64_t version) const;
};

// Why a consumer contract's text was refused, for callers that report kinds (lint codes); the
// message of the Status says the rest.
enum class ContractProblem {
  kNone,
  kDuplicateKey,  // a mapping holds one key twice (YAML would silently keep the first)
  kInvalid,       // any other refusal: YAML syntax, an unknown key, a bad value
};

// Parses one consumer contract from YAML text. `origin` names the file in messages. Fails with
// InvalidArgument; when `problem` is given it is set to the kind of refusal (kNone on success).
Result<ConsumerContract> ConsumerContractFromYaml(std::string_view yaml_text,
                                                  std::string_view origin = "contract",
                                                  ContractProblem* problem = nullptr);

// A contracts directory:
//   <dir>/<type>/v<N>.schema.json      payload schema of <type> at schema version N
//   <dir>/consumers/<id>.yaml          one consumer contract each
//   <dir>/adapters/<id>.yaml           one version adapter each (adapter.h)
struct ContractsDir {
  std::string path;
  // type -> schema version -> path of the schema file.
  std::map<std::string, std::map<int64_t, std::string>> schemas;
  std::vector<ConsumerContract> consumers;
  std::vector<std::string>
      adapter_files;  // <dir>/adapters/*.yaml, read by LoadAdapters (adapter.h)
  // What the directory was read through, and its schema and adapter files are: the real file
  // system when null; otherwise it must outlive their reading (a stored set's files in memory).
  Env* env = nullptr;

  // The schema file for (type, version), or empty when there is none.
  std::string SchemaPath(std::string_view type, int64_t version) const;
};

// Loads a contracts directory. Fails on unreadable files, on consumer contracts over
// `kContractBytesMax` and on malformed contracts; semantic problems (a consumer accepting a
// version that has no schema) are lint findings, not errors.
Result<ContractsDir> LoadContractsDir(const std::string& dir, Env* env = nullptr);

// The largest consumer contract file read, in bytes.
inline constexpr size_t kContractBytesMax = size_t{1} << 20;
// The longest gap deadline a contract may set: 100 years. A deadline is added to a time in
// milliseconds, so an unbounded one would overflow into the past (an instant "overdue").
inline constexpr int64_t kGapDeadlineSecondsMax = int64_t{100} * 366 * 24 * 3600;

// The schema version a file name in a type folder stands for ("v12.schema.json" -> 12), or -1
// when the name is not one (at most 9 digits). The loader and the linter both read names so.
int64_t SchemaVersionOfFileName(std::string_view file_name);

}  // namespace evident
