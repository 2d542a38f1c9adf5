// group/group_parts.h — what the two kinds of consumer group member share (group.h): a member
// whose partitions the store leases (group.cc) and one whose broker assigns them
// (broker_group.cc).
#pragma once

#include <string>

#include "evident/config.h"
#include "evident/consumer.h"
#include "evident/group.h"
#include "evident/status.h"

namespace evident {

// "<host>-<pid>-<random>": a name no earlier run of this process had.
std::string DefaultMemberName();

// A loop's summary into the member's: counts summed, and the troubles it recovered from (a
// failed gap check, unconfirmed acknowledgements, an unreachable broker) kept, the last of each.
void AddSummary(ConsumeSummary& total, const ConsumeSummary& one);

// Whether a loop ended because a partition is no longer this member's (a fenced-off commit, or
// a batch held open past the lease), as the store reports it.
bool LostTheLease(const Status& status);

// A member of a group whose broker assigns the partitions (GroupPartitions::kAssignedByBroker).
Result<GroupSummary> RunBrokerGroup(const Config& config, const GroupOptions& options);

}  // namespace evident
