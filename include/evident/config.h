// evident/config.h — the consumer runtime's configuration file (evident.yaml).
//
//   contracts: contracts            # payload schemas + consumer contracts (docs/contracts.md)
//   profile: cloudevents            # envelope profile of the input (cloudevents | flat)
//   batch_count_max: 1000           # events per store transaction (group commit)
//   linger_ms: 5                    # commit a partial batch when input pauses this long
//   batch_ms_max: 50                # .. and at the latest this long after its first event
//   consumers:
//     - id: fulfillment             # contract from contracts/consumers/fulfillment.yaml, or
//       projection: {...}           #   written inline here in the same format
//       guards: {...}
//
// Each consumers entry is a consumer contract (same format as contracts/consumers/*.yaml; when
// it has no `accepts`, the contract of that id is taken from the contracts directory) plus:
//   projection: per event type, the state it sets (`state: cancelled`) or the payload field it
//               takes the state from (`state_from: /status`), payload fields it copies
//               (`copy: [/orderId]`) and named evidence it records (`evidence: [payment]`);
//   guards:     per action, `in_sync` (projection version equals the highest owner version seen
//               and no gap is open), allowed `states`, required `evidence`.
// Full reference with examples: docs/consume.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "evident/contract.h"
#include "evident/profile.h"
#include "evident/status.h"

namespace evident {

struct ProjectionStep {
  std::string state;                  // constant state, or empty
  std::string state_from;             // JSON Pointer into data, or empty
  std::vector<std::string> copy;      // JSON Pointers into data
  std::vector<std::string> evidence;  // names recorded when the event applies
};

struct Guard {
  std::string action;
  bool in_sync = true;
  std::vector<std::string> states;    // empty: any state
  std::vector<std::string> evidence;  // names that must have been recorded
};

struct ConsumerConfig {
  ConsumerContract contract;
  std::map<std::string, ProjectionStep> projection;  // by event type
  std::map<std::string, Guard> guards;               // by action
};

// The ranges of the batch settings, in the file and on the command line alike.
inline constexpr int64_t kBatchCountMaxLimit = 1'000'000;  // batch_count_max: 1 ..
inline constexpr int64_t kLingerMsLimit = 60'000;          // linger_ms: 0 ..
inline constexpr int64_t kBatchMsMaxLimit = 600'000;       // batch_ms_max: 1 ..
inline constexpr int64_t kEventBytesFloor = 65'536;        // event_bytes_max: CloudEvents' minimum
inline constexpr int64_t kEventBytesLimit = int64_t{64} << 20;  // .. to 64 MiB

struct Config {
  std::string path;           // the file it was read from
  std::string contracts_dir;  // resolved against the file's directory
  ContractsDir contracts;
  Profile profile = Profile::CloudEvents();
  size_t batch_count_max = 1000;  // events per transaction
  int64_t linger_ms = 5;          // a partial batch commits after this long without input
  // A batch commits at the latest this long after its first event was decided, however steadily
  // events keep coming: a steady trickle that never pauses for linger_ms would otherwise hold
  // decided events until batch_count_max of them gathered.
  int64_t batch_ms_max = 50;
  size_t event_bytes_max = size_t{1} << 20;
  std::vector<ConsumerConfig> consumers;

  const ConsumerConfig* Find(std::string_view consumer_id) const;
};

// Reads and checks a configuration file: every consumer has a contract, every accepted
// (type, version) has a schema file, every projection type is accepted, pointers are valid.
Result<Config> LoadConfig(const std::string& path);
// The same from text; relative paths resolve against `base_dir`.
Result<Config> ConfigFromYaml(std::string_view yaml_text, const std::string& base_dir,
                              const std::string& origin = "evident.yaml");

}  // namespace evident
