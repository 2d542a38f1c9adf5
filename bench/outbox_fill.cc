#include "outbox_fill.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "evident/outbox.h"
#include "evident/store_sqlite.h"

namespace evident::bench {
namespace {

constexpr size_t kAppendBatch = 256;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "outbox fill: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace

std::unique_ptr<Store> FillOutbox(const std::filesystem::path& path,
                                  const std::vector<std::string>& events) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  auto store = OpenSqliteStore(path.string());
  if (!store.ok()) Die(store.status().ToString());
  auto outbox = Outbox::Create(
      {.contracts_dir = std::string(EVIDENT_SOURCE_DIR) + "/examples/orders/contracts"});
  if (!outbox.ok()) Die(outbox.status().ToString());
  for (size_t i = 0; i < events.size(); i += kAppendBatch) {
    auto tx = (*store)->Begin();
    if (!tx.ok()) Die(tx.status().ToString());
    for (size_t j = i; j < std::min(events.size(), i + kAppendBatch); ++j) {
      auto decision = (*outbox)->Append(**tx, events[j], 1'785'000'000'000);
      if (!decision.ok()) Die(decision.status().ToString());
      if (decision->outcome != OutboxDecisionOutcome::kAppended) {
        Die("event " + std::to_string(j) + " not appended: " + decision->reason + " " +
            decision->message);
      }
    }
    if (auto s = (*tx)->Commit(); !s.ok()) Die(s.ToString());
  }
  store->reset();
  auto reopened = OpenSqliteStore(path.string());
  if (!reopened.ok()) Die(reopened.status().ToString());
  return std::move(reopened).value();
}

}  // namespace evident::bench
