// tests/paid_contracts.h — the configuration and events of the quarantine end-to-end tests
// (quarantine_cli_test, replay_crash_test): an ordered consumer of order.paid whose contract
// accepts the schema versions a test chooses, so that events of schema version 2 are quarantined
// as contract-update-required under [1] and replay under [1, 2].
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace evident::testing {

// The ordered consumer: follows /data/orderVersion per subject, defers gaps (route wait); each
// version it applies intends the effect `notify` and records a compensation (never performed).
inline constexpr const char* kPaidConsumer = "ledgerist";
// The unordered consumer WritePaidConfig adds with `with_archivist`; it accepts version 1 only.
inline constexpr const char* kArchivist = "archivist";

// Writes `dir`/evident.yaml and `dir`/contracts/ (replacing any earlier contracts): the schemas
// of order.paid versions 1 and 2 (both require an integer orderVersion of at least 1), and
// ledgerist accepting `versions` (a YAML list, "[1]" or "[1, 2]").
void WritePaidConfig(const std::filesystem::path& dir, const std::string& versions,
                     bool with_archivist = false);

// One order.paid event from source "shop" carrying `schema_version`, for `subject` at
// `version`; `extra` is spliced into its data object (e.g. a note that makes it longer).
std::string Paid(const std::string& id, int64_t version, int64_t schema_version,
                 const std::string& subject = "order-1", const std::string& extra = "");

}  // namespace evident::testing
