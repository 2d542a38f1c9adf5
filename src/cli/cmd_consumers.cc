// `evident consumers push|list`: consumers kept in a store (stored_consumers.h). Push checks a
// configuration and keeps it, with its contracts directory and profile, as the store's next
// consumer set; list reads the sets back.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/rfc3339.h"
#include "evident/clock.h"
#include "evident/store.h"
#include "evident/stored_consumers.h"
#include "json/writer.h"

namespace evident::cli {
namespace {

struct PushFlags {
  std::string store, config, format = "text";
};

struct ListFlags {
  std::string store, format = "text";
  int64_t rows_max = 100;
};

int Fail(std::string_view command, const Status& status) {
  std::cerr << "evident consumers " << command << ": " << status.ToString() << "\n";
  return kExitUsage;
}

std::string ConsumersText(const std::vector<std::string>& consumers) {
  std::string out;
  for (const std::string& id : consumers) out += (out.empty() ? "" : ", ") + id;
  return out;
}

std::string PushText(const ConsumersPush& push) {
  switch (push.outcome) {
    case PushOutcome::kPushed:
      return "pushed consumers v" + std::to_string(push.version) + " (" +
             ConsumersText(push.consumers) + "; " + push.digest + ")\n";
    case PushOutcome::kUnchanged:
      return "unchanged: the store's consumers v" + std::to_string(push.version) +
             " hold this configuration (" + push.digest + ")\n";
    case PushOutcome::kRefused:
      break;
  }
  std::string out;
  for (const ConfigProblem& p : push.problems) {
    out += p.file + (p.line > 0 ? ":" + std::to_string(p.line) : "") + ": " + p.code + ": " +
           p.message + "\n";
  }
  return out + "refused: nothing was pushed\n";
}

std::string PushJson(const ConsumersPush& push) {
  std::string out;
  json::Writer w(out);
  w.BeginObject().Field("outcome", PushOutcomeName(push.outcome));
  w.Key("version");
  push.version == 0 ? w.Null() : w.Int(push.version);
  w.Field("digest", push.digest).Key("consumers").BeginArray();
  for (const std::string& id : push.consumers) w.String(id);
  w.EndArray().Key("problems").BeginArray();
  for (const ConfigProblem& p : push.problems) {
    w.BeginObject().Field("code", p.code).Field("file", p.file).Key("line").Int(p.line);
    w.Field("message", p.message).EndObject();
  }
  w.EndArray().EndObject();
  return out + "\n";
}

int RunPush(const PushFlags& flags) {
  Result<std::unique_ptr<Store>> store = OpenStore(flags.store);
  if (!store.ok()) return Fail("push", store.status());
  const Result<ConsumersPush> push =
      PushConsumersConfig(**store, flags.config, {}, SystemClock().NowMs());
  if (!push.ok()) return Fail("push", push.status());
  if (!WriteStdout(flags.format == "json" ? PushJson(*push) : PushText(*push)) ||
      std::fflush(stdout) != 0) {
    return Fail("push",
                Status::IoError("cannot write the result" +
                                (push->outcome == PushOutcome::kPushed
                                     ? " (consumers v" + std::to_string(push->version) +
                                           " were pushed: evident consumers list shows them)"
                                     : std::string())));
  }
  return push->outcome == PushOutcome::kRefused ? kExitNegative : kExitOk;
}

int RunList(const ListFlags& flags) {
  Result<std::unique_ptr<Store>> store = OpenStore(flags.store, {.read_only = true});
  if (!store.ok()) return Fail("list", store.status());
  Result<std::unique_ptr<Snapshot>> snapshot = (*store)->Read();
  if (!snapshot.ok()) return Fail("list", snapshot.status());
  const Result<std::vector<StoredContracts>> sets =
      (*snapshot)->SetHistory(SetKind::kConsumers, flags.rows_max);
  if (!sets.ok()) return Fail("list", sets.status());
  std::string out;
  if (flags.format != "json") {
    out = sets->empty() ? "no consumers pushed\n" : "VERSION  PUSHED AT                 DIGEST\n";
  }
  for (const StoredContracts& set : *sets) {
    if (flags.format == "json") {
      json::Writer w(out);
      w.BeginObject().Key("version").Int(set.version).Key("pushed_at_ms").Int(set.pushed_at_ms);
      w.Field("pushed_at", rfc3339::FormatMs(set.pushed_at_ms)).Field("digest", set.digest);
      w.Key("settings").Raw(set.settings).EndObject();
      out.push_back('\n');
      continue;
    }
    std::string version = std::to_string(set.version);
    version.resize(std::max<size_t>(version.size() + 1, 9), ' ');
    out += version + rfc3339::FormatMs(set.pushed_at_ms) + "  " + set.digest + "\n";
  }
  return WriteStdout(out) ? kExitOk : Fail("list", Status::IoError("cannot write the list"));
}

}  // namespace

void AddConsumerStoreCommands(CLI::App& app, Runner& run) {
  CLI::App* consumers = app.add_subcommand(
      "consumers",
      "Consumers kept in the store: pushed once, decided with by evident_decide, consume and "
      "serve (docs/any-language.md)");
  consumers->require_subcommand(1);
  auto push = std::make_shared<PushFlags>();
  CLI::App* push_cmd = consumers->add_subcommand(
      "push",
      "Check a configuration (as `config check` does) and keep its consumers, with its contracts "
      "directory and profile, as the store's next consumer set. Exit 0 pushed or unchanged, 1 "
      "refused, 2 usage or I/O.");
  push_cmd->add_option("--store", push->store, StoreHelp())->required();
  push_cmd->add_option("--config", push->config, "The configuration (evident.yaml)")->required();
  AddFormatOption(*push_cmd, push->format);
  push_cmd->callback([push, &run] { run = [push] { return RunPush(*push); }; });

  auto list = std::make_shared<ListFlags>();
  CLI::App* list_cmd =
      consumers->add_subcommand("list", "The consumer sets a store keeps, newest first.");
  list_cmd->add_option("--store", list->store, StoreHelp())->required();
  list_cmd->add_option("--limit", list->rows_max, "Sets shown at most")
      ->check(IntegerFrom(1, 1'000'000))
      ->capture_default_str();
  AddFormatOption(*list_cmd, list->format);
  list_cmd->callback([list, &run] { run = [list] { return RunList(*list); }; });
}

}  // namespace evident::cli
