// effects/compensation.h — what a compensation does about the effect it compensates, on facts
// only (seed 002: "an unknown result leads to reconciliation, not to an assumption"), and what
// follows once that effect's outcome becomes known. Shared by the pipeline, which records a
// consumer's compensation in the transaction of the deciding event, and by the effects runner
// and a person's resolution, which settle the compensations waiting on an intent.
//
//   compensated intent   compensation state          then
//   done                 compensating                the compensating effect is intended once
//                                                    (performed, when none is declared)
//   unknown              waits-for-reconciliation    nothing, until its outcome is recorded
//   intended (pending)   nothing-performed           the pending intent is withdrawn
//   withdrawn, failed    nothing-performed           nothing
//   none                 nothing-to-compensate       nothing
//
// Every function runs inside the caller's transaction; none commits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "evident/status.h"
#include "evident/store.h"

namespace evident {

// Withdraws a pending intent (intended or unknown: a caller decides which may be), settled now
// and never sent: its last error and its log say why, its revision rises. The compensations
// waiting on it then find nothing performed.
Status WithdrawIntent(EffectWrites& tx, EffectIntent& intent, std::string_view by,
                      const std::string& why, int64_t now_ms);

// The intent a compensation's compensating effect sends, from what the record kept.
EffectIntent CompensatingIntent(const CompensationRecord& record, int64_t now_ms);

// Inserts a consumer's compensation record (its key once: false, nothing acted on, when the key
// is there already) and, when it names the effect it compensates, acts on the subject's latest
// intent of that effect as the table above says. `record.state`, `covers` and `detail` are
// decided here.
Result<bool> RecordConsumerCompensation(EffectWrites& tx, CompensationRecord record,
                                        int64_t now_ms);

// `intent` has just become done, failed or withdrawn: every compensation of its consumer that
// covers it and waits for reconciliation acts now (done: the compensating effect is intended;
// otherwise nothing was performed), and one that intended it as its compensating effect ends
// compensated (done) or compensation-failed. Returns how many acted.
Result<int64_t> SettleCompensations(EffectWrites& tx, const EffectIntent& intent, int64_t now_ms);

// The compensation of the intent's consumer that covers it, if any: its operation is being
// compensated, so it must not be attempted any more (the runner's basis check).
Result<std::optional<CompensationRecord>> CompensationCovering(EffectWrites& tx,
                                                               const EffectIntent& intent);

}  // namespace evident
