// evident/stored_contracts.h — contracts kept in the store: `evident contracts push` checks a
// contracts directory and keeps it whole, with the settings of `outbox append`, as the store's
// next numbered set (store_contracts.h); producers then check each event against the latest set
// their transaction sees, without a restart and never against a partial set.
//
// A push is refused, with every finding at once, when the directory fails `contracts lint`
// (adapters included), when a new schema version breaks the compatibility mode declared for its
// type, or when it changes or drops a schema version an earlier set holds (a version, once
// pushed, is what producers already wrote against). Pushing what the latest set holds already
// is `unchanged` and numbers nothing.
//
// Compatibility modes are declared in the directory's optional `compatibility.yaml`:
//
//   default: backward                 # every type's mode unless named below (default: backward)
//   types:
//     order.status.changed: full-transitive
//
// Thread-safety: the functions are reentrant; a StoredOutbox is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "evident/compat.h"
#include "evident/outbox.h"
#include "evident/profile.h"
#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// The settings `outbox append` takes, kept with a set.
struct AppendSettings {
  std::string profile = "cloudevents";  // a built-in profile's name, when profile_json is empty
  std::string profile_json;             // a profile as JSON (profile.h), else empty
  std::string schema_version_at;        // JSON Pointers; empty: the profile's own
  std::string subject_version_at;
  int64_t partition_count = 1;
  int64_t event_bytes_max = int64_t{1} << 20;
};
std::string AppendSettingsJson(const AppendSettings& settings);
Result<AppendSettings> ParseAppendSettings(std::string_view json_text);
// The profile the settings describe (the named or given profile, then the two pointers).
Result<Profile> ProfileOf(const AppendSettings& settings);

struct ContractsPushOptions {
  AppendSettings settings;
  // The directory's files kept (every .json, .yaml and .yml below it, hidden ones aside) and
  // their bytes in all.
  int64_t files_max = 10'000;
  int64_t bytes_max = int64_t{64} << 20;
  DiffOptions diff;  // bounds of the compatibility checks
  // A push may change the partition count (PARTITIONS_CHANGED otherwise): a subject's rows
  // still pending in its old partition could then be published after its new ones.
  bool repartition = false;
};

enum class PushOutcome : uint8_t {
  kPushed,     // the next set
  kUnchanged,  // the latest set holds these files and settings already
  kRefused,    // findings; nothing kept
};
std::string_view PushOutcomeName(PushOutcome outcome);  // "pushed", "unchanged", "refused"

struct ContractsPush {
  PushOutcome outcome = PushOutcome::kRefused;
  int64_t version = 0;  // the set pushed, or the latest when unchanged; 0 when refused
  std::string digest;   // of the directory's files and settings
  int64_t files = 0;
  // Lint's codes (docs/contracts.md), and COMPATIBILITY_INVALID,
  // COMPATIBILITY_CHANGED_WITH_VERSION, INCOMPATIBLE_VERSION,
  // SCHEMA_VERSION_CHANGED, SCHEMA_VERSION_REMOVED, PARTITIONS_CHANGED, SET_UNUSABLE,
  // FILE_NOT_UTF8, SYMLINK, TOO_MANY_FILES.
  std::vector<LintFinding> findings;
};

// Checks the directory `dir` against the store's latest set (read in a snapshot, so no write
// lock is held while lint and the diffs run) and, when it passes, keeps it as the next set in a
// short transaction. An error is a failure to read or to write, not a finding; kAborted when
// another push committed meanwhile or the directory changed while it was checked (push again).
Result<ContractsPush> PushContractsDir(Store& store, const std::string& dir,
                                       const ContractsPushOptions& options, int64_t now_ms);

// The files a set keeps of the directory `dir`: every .json, .yaml and .yml below it (hidden
// ones aside), by path relative to `dir`, within the options' files_max and bytes_max. A link
// is a finding (SYMLINK), so is a file that is not UTF-8 (FILE_NOT_UTF8) or a bound passed
// (TOO_MANY_FILES, and `cut` set: the files read are then not the directory).
Result<std::map<std::string, std::string>> ReadSetFiles(const std::string& dir,
                                                        const ContractsPushOptions& options,
                                                        std::vector<LintFinding>& findings,
                                                        bool& cut);
// The files as a set keeps them (StoredContracts::files).
std::string SetFilesJson(const std::map<std::string, std::string>& files);

// The files of a set (path in the directory -> text).
Result<std::map<std::string, std::string>> FilesOf(const StoredContracts& contracts);
// The Outbox options a set stands for: its files and settings.
Result<OutboxOptions> OutboxOptionsOf(const StoredContracts& contracts);

// An Outbox that follows the store's contracts: For(tx) reads the latest set's version in `tx`
// and, when it is not the one in hand, builds the Outbox of that set; every event appended with
// the result in `tx` is therefore checked against the whole set that transaction sees.
class StoredOutbox {
 public:
  // kFailedPrecondition when the store holds no contracts.
  Result<Outbox*> For(Transaction& transaction);
  int64_t version() const { return version_; }  // of the set in hand; 0 before the first For

 private:
  std::unique_ptr<Outbox> outbox_;
  int64_t version_ = 0;
};

}  // namespace evident
