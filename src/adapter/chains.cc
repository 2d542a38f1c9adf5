// LoadAdapters and ResolveAdapterChains: a contracts directory's adapters, and the chains a
// consumer contract declares through them (contract.h, via_adapter).
#include <algorithm>
#include <map>

#include "core/join.h"
#include "evident/adapter.h"
#include "json/files.h"

namespace evident {
namespace {

std::string Versioned(const std::string& type, int64_t version) {
  return type + " v" + std::to_string(version);
}

// The one adapter of `type` from `version` to a version `accepted` lists, for a via_adapter
// entry that names none.
Result<std::string> FindOne(const std::vector<Adapter>& adapters, const AcceptedType& accepted,
                            int64_t version, const std::string& who) {
  std::vector<std::string> found;
  for (const Adapter& a : adapters) {
    if (a.type == accepted.type && a.from == version &&
        std::binary_search(accepted.versions.begin(), accepted.versions.end(), a.to)) {
      found.push_back(a.id);
    }
  }
  if (found.size() == 1) return found.front();
  if (found.empty()) {
    return Status::InvalidArgument(who + " reads " + Versioned(accepted.type, version) +
                                   " via_adapter, but no adapter leads from it to a version it "
                                   "accepts (a chain through other versions must be declared)");
  }
  const std::string names = Join(found);
  return Status::InvalidArgument(
      who + " reads " + Versioned(accepted.type, version) +
      " via_adapter, and several adapters lead to an accepted version (" + names + "): name one");
}

// Each adapter of a chain exists, is of the type, and takes the version the one before gave;
// the last gives an accepted version. Nothing is chained that was not declared.
Status CheckChain(const std::vector<Adapter>& adapters, const AcceptedType& accepted,
                  int64_t version, const std::vector<std::string>& chain, const std::string& who) {
  int64_t at = version;
  for (size_t i = 0; i < chain.size(); ++i) {
    const Adapter* adapter = FindAdapter(adapters, chain[i]);
    if (adapter == nullptr) {
      return Status::InvalidArgument(who + ": no adapter '" + chain[i] +
                                     "' in the contracts directory's adapters/");
    }
    if (adapter->type != accepted.type || adapter->from != at) {
      return Status::InvalidArgument(who + ": adapter '" + chain[i] + "' maps " +
                                     Versioned(adapter->type, adapter->from) + ", not " +
                                     Versioned(accepted.type, at));
    }
    at = adapter->to;
    const bool last = i + 1 == chain.size();
    if (last && !std::binary_search(accepted.versions.begin(), accepted.versions.end(), at)) {
      return Status::InvalidArgument(
          who + ": adapter '" + chain[i] + "' leads to " + Versioned(accepted.type, at) +
          ", which is not accepted; a chain on through another adapter must be declared in full " +
          "(via_adapter: {" + std::to_string(version) + ": [a, b]})");
    }
  }
  return Status::Ok();
}

}  // namespace

const Adapter* FindAdapter(const std::vector<Adapter>& adapters, std::string_view id) {
  for (const Adapter& a : adapters) {
    if (a.id == id) return &a;
  }
  return nullptr;
}

Result<std::vector<Adapter>> LoadAdapters(const ContractsDir& dir) {
  std::vector<Adapter> out;
  std::map<std::string, std::string> files_by_id;
  for (const std::string& file : dir.adapter_files) {
    EVIDENT_ASSIGN_OR_RETURN(const std::string text,
                             ReadWholeFile(EnvOr(dir.env), file, kAdapterBytesMax));
    EVIDENT_ASSIGN_OR_RETURN(Adapter adapter, AdapterFromYaml(text, file));
    if (const auto [it, inserted] = files_by_id.emplace(adapter.id, file); !inserted) {
      return Status::InvalidArgument(file + ": adapter id '" + adapter.id +
                                     "' is also declared in " + it->second);
    }
    if (dir.SchemaPath(adapter.type, adapter.from).empty() ||
        dir.SchemaPath(adapter.type, adapter.to).empty()) {
      return Status::InvalidArgument(file + ": adapter '" + adapter.id + "' maps " +
                                     Versioned(adapter.type, adapter.from) + " to v" +
                                     std::to_string(adapter.to) +
                                     ", and both need a schema in the contracts directory");
    }
    out.push_back(std::move(adapter));
  }
  return out;
}

Status ResolveAdapterChains(const std::vector<Adapter>& adapters, ConsumerContract& contract) {
  const std::string who = "consumer '" + contract.id + "'";
  for (AcceptedType& accepted : contract.accepts) {
    for (auto& [version, chain] : accepted.via_adapter) {
      if (chain.empty()) {
        EVIDENT_ASSIGN_OR_RETURN(std::string id, FindOne(adapters, accepted, version, who));
        chain.push_back(std::move(id));
      }
      EVIDENT_RETURN_IF_ERROR(CheckChain(adapters, accepted, version, chain, who));
    }
  }
  return Status::Ok();
}

}  // namespace evident
