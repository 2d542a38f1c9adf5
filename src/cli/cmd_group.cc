// `evident group status`: who holds which partition of a consumer group (group.h), since when,
// and how far behind the stream each partition was at its holder's last commit.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/text.h"
#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/registry.h"
#include "evident/store.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct StatusFlags {
  std::string store, group;
  std::string format = "text";
  // A group whose broker assigns the partitions (Kafka): where to ask it.
  std::string from, topic;
  std::vector<std::string> broker_config;
};

struct GroupView {
  int64_t partition_count = 0;
  std::vector<GroupMember> members;
  std::vector<GroupLease> leases;
  // With --from: each partition as the broker keeps it for the group (by partition).
  std::map<int64_t, BrokerPartition> broker;
};

Result<GroupView> ReadGroup(const StatusFlags& flags) {
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                           OpenStore(flags.store, {.read_only = true}));
  EVIDENT_ASSIGN_OR_RETURN(std::unique_ptr<Snapshot> snapshot, store->Read());
  GroupView view;
  EVIDENT_ASSIGN_OR_RETURN(view.partition_count, snapshot->GroupPartitionCount(flags.group));
  if (view.partition_count == 0) {
    return Status::NotFound("no consumer group " + flags.group + " in this store");
  }
  EVIDENT_ASSIGN_OR_RETURN(view.members, snapshot->GroupMembers(flags.group));
  EVIDENT_ASSIGN_OR_RETURN(view.leases, snapshot->GroupLeases(flags.group));
  if (!flags.from.empty()) {
    const SourceOptions source{
        .stream = flags.topic, .consumer = flags.group, .properties = flags.broker_config};
    Result<std::vector<BrokerPartition>> broker = DescribeBrokerGroup(flags.from, source);
    if (!broker.ok()) {
      return Status(broker.status().code(), "--from " + broker.status().message());
    }
    for (const BrokerPartition& b : *broker) view.broker[b.partition] = b;
  }
  return view;
}

// "held", "expired" (its holder stopped renewing; another member may take it) or "released".
std::string_view LeaseState(const GroupLease& l, int64_t now_ms) {
  if (l.expires_at_ms == 0) return "released";
  return l.expires_at_ms >= now_ms ? "held" : "expired";
}

// The lease's lag: as its holder recorded it, or, where the broker was asked, the records of the
// partition past the store's position.
std::optional<int64_t> Lag(const GroupLease& l, const GroupView& v) {
  const auto broker = v.broker.find(l.partition);
  if (broker == v.broker.end() || !l.position.has_value()) return l.lag;
  return std::max<int64_t>(0, broker->second.end - *l.position);
}

std::string OptText(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : std::string("-");
}

std::string Text(const StatusFlags& flags, const GroupView& v, int64_t now_ms) {
  int64_t alive = 0;
  for (const GroupMember& m : v.members) alive += m.expires_at_ms >= now_ms ? 1 : 0;
  std::string out = "group " + flags.group + ": " + std::to_string(v.partition_count) +
                    " partitions, " + std::to_string(alive) + " members alive\n\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-32s %-24s %s\n", "member", "joined", "state");
  out += line;
  for (const GroupMember& m : v.members) {
    std::snprintf(line, sizeof(line), "%-32s %-24s %s\n", Printable(m.member).c_str(),
                  rfc3339::FormatMs(m.joined_at_ms).c_str(),
                  m.expires_at_ms >= now_ms ? "alive" : "gone");
    out += line;
  }
  std::snprintf(line, sizeof(line), "\n%-9s %-32s %6s %-24s %-8s %10s %8s%s\n", "partition",
                "holder", "epoch", "since", "state", "position", "lag",
                v.broker.empty() ? "" : "  committed        end");
  out += line;
  std::vector<const GroupLease*> by_partition(static_cast<size_t>(v.partition_count), nullptr);
  for (const GroupLease& l : v.leases) {
    if (l.partition >= 0 && l.partition < v.partition_count) {
      by_partition[static_cast<size_t>(l.partition)] = &l;
    }
  }
  for (int64_t p = 0; p < v.partition_count; ++p) {
    const GroupLease* l = by_partition[static_cast<size_t>(p)];
    const auto broker = v.broker.find(p);
    if (l == nullptr) {
      std::snprintf(line, sizeof(line), "%-9lld %-32s\n", static_cast<long long>(p),
                    "(never taken)");
    } else {
      std::snprintf(line, sizeof(line), "%-9lld %-32s %6lld %-24s %-8s %10s %8s",
                    static_cast<long long>(p), Printable(l->holder).c_str(),
                    static_cast<long long>(l->epoch), rfc3339::FormatMs(l->acquired_at_ms).c_str(),
                    std::string(LeaseState(*l, now_ms)).c_str(), OptText(l->position).c_str(),
                    OptText(Lag(*l, v)).c_str());
      out += line;
      line[0] = '\0';
      if (broker != v.broker.end()) {
        std::snprintf(line, sizeof(line), "  %9s %10lld", OptText(broker->second.committed).c_str(),
                      static_cast<long long>(broker->second.end));
      }
      out += line;
      std::snprintf(line, sizeof(line), "\n");
    }
    out += line;
  }
  return out;
}

std::string Json(const StatusFlags& flags, const GroupView& v, int64_t now_ms) {
  std::string out;
  json::Writer w(out);
  const auto optional_int = [&](std::string_view key, const std::optional<int64_t>& value) {
    w.Key(key);
    value ? w.Int(*value) : w.Null();
  };
  w.BeginObject().Field("group", flags.group).Key("partitions").Int(v.partition_count);
  w.Key("members").BeginArray();
  for (const GroupMember& m : v.members) {
    w.BeginObject().Field("member", m.member).Key("joined_at_ms").Int(m.joined_at_ms);
    w.Key("expires_at_ms").Int(m.expires_at_ms).Key("alive").Bool(m.expires_at_ms >= now_ms);
    w.EndObject();
  }
  w.EndArray().Key("leases").BeginArray();
  for (const GroupLease& l : v.leases) {
    w.BeginObject().Key("partition").Int(l.partition).Field("holder", l.holder);
    w.Key("epoch").Int(l.epoch).Key("acquired_at_ms").Int(l.acquired_at_ms);
    w.Key("expires_at_ms").Int(l.expires_at_ms).Field("state", LeaseState(l, now_ms));
    optional_int("position", l.position);
    optional_int("lag", Lag(l, v));
    if (const auto broker = v.broker.find(l.partition); broker != v.broker.end()) {
      optional_int("committed", broker->second.committed);
      w.Key("end").Int(broker->second.end);
    }
    w.EndObject();
  }
  w.EndArray().EndObject();
  out.push_back('\n');
  return out;
}

int RunStatus(const StatusFlags& flags) {
  const Result<GroupView> view = ReadGroup(flags);
  if (!view.ok()) {
    std::cerr << "evident group status: " << view.status().ToString() << "\n";
    return view.status().code() == Code::kNotFound ? kExitNegative : kExitUsage;
  }
  const int64_t now_ms = SystemClock().NowMs();
  const std::string out =
      flags.format == "json" ? Json(flags, *view, now_ms) : Text(flags, *view, now_ms);
  return WriteStdout(out) ? kExitOk : kExitUsage;
}

}  // namespace

void AddGroupCommands(CLI::App& app, Runner& run) {
  CLI::App* group =
      app.add_subcommand("group", "Consumer groups: `consume --group` processes sharing a stream.");
  group->require_subcommand(1);
  auto flags = std::make_shared<StatusFlags>();
  CLI::App* cmd = group->add_subcommand(
      "status",
      "Who holds which partition, since when, its epoch, and its position and lag at the "
      "holder's last commit; the members and whether they are alive. Exit 0, 1 when the store "
      "has no such group, 2 on errors.");
  cmd->add_option("--store", flags->store, StoreHelp() + " (the one the members share)")
      ->required();
  cmd->add_option("--group", flags->group, "The group's name")->required();
  cmd->add_option("--from", flags->from,
                  "A group whose broker assigns the partitions (kafka://...): ask it too for each "
                  "partition's committed offset and end; the lag is then the end past the store's "
                  "position");
  cmd->add_option("--stream,--topic", flags->topic, "The topic (with --from)");
  cmd->add_option("--broker-config,--kafka-config", flags->broker_config,
                  "KEY=VALUE: a property of the broker's client library; repeatable (with --from)");
  AddFormatOption(*cmd, flags->format);
  cmd->callback([flags, &run] { run = [flags] { return RunStatus(*flags); }; });
}

}  // namespace evident::cli
