// evident/retained_kind.h — the kinds of record retention removes (store_retention.h says what
// is settled per kind), with the names the CLI, the archive and the configuration use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace evident {

// kLedger: receipts kept past the horizon as digests of their keys (store_retention.h). It comes
// last: a run compacts receipts once the records that name them went.
// kIntent comes after kEffectLog: an intent goes only once its log went.
enum class RetainedKind : uint8_t {
  kJournal,
  kQuarantine,
  kGap,
  kEffectLog,
  kIntent,
  kOutbox,
  kLedger
};
inline constexpr RetainedKind kRetainedKinds[] = {RetainedKind::kJournal, RetainedKind::kQuarantine,
                                                  RetainedKind::kGap,     RetainedKind::kEffectLog,
                                                  RetainedKind::kIntent,  RetainedKind::kOutbox,
                                                  RetainedKind::kLedger};
inline constexpr size_t kRetainedKindCount = std::size(kRetainedKinds);

// "journal", "quarantine", "gap", "effect-log", "intent", "outbox", "ledger", in kRetainedKinds'
// order.
inline constexpr std::array<std::string_view, kRetainedKindCount> kRetainedKindNames = {
    "journal", "quarantine", "gap", "effect-log", "intent", "outbox", "ledger"};

inline std::string_view RetainedKindName(RetainedKind kind) {
  return kRetainedKindNames[static_cast<size_t>(kind)];
}

// The kind of that name; none for any other text.
inline std::optional<RetainedKind> RetainedKindNamed(std::string_view name) {
  for (const RetainedKind kind : kRetainedKinds) {
    if (RetainedKindName(kind) == name) return kind;
  }
  return std::nullopt;
}

}  // namespace evident
