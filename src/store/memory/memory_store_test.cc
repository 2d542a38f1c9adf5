// The memory backend beyond the conformance suite: named databases, snapshot versions while
// commits change tables in place, and readers on other threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "evident/store_memory.h"

namespace evident {
namespace {

// prefix + n, appended piecewise: GCC 12 warns falsely (-Wrestrict) about "e" + std::to_string(n).
std::string Numbered(std::string_view prefix, int64_t n) {
  std::string out(prefix);
  out += std::to_string(n);
  return out;
}

std::unique_ptr<Store> Open(std::shared_ptr<MemoryDatabase> database) {
  auto store = OpenMemoryStore(std::move(database));
  EXPECT_TRUE(store.ok());
  return std::move(store).value();
}

// One commit: a receipt and a kept input numbered `i`, so every version has as many of each.
void CommitOne(Store& store, int i) {
  auto tx = std::move(store.Begin()).value();
  const LedgerEntry e{.consumer = "c",
                      .source = "s",
                      .event_id = Numbered("e", i),
                      .subject = Numbered("order-", i % 7)};
  ASSERT_EQ(tx->InsertLedger(e).value(), Insert::kInserted);
  ASSERT_TRUE(
      tx->Quarantine(QuarantineRecord{.source = "s", .event_id = e.event_id, .subject = e.subject})
          .ok());
  ASSERT_TRUE(tx->Commit().ok());
}

int64_t Count(Snapshot& snapshot, std::string_view table) {
  for (const auto& [name, count] : snapshot.Counts().value()) {
    if (name == table) return count;
  }
  return -1;
}

TEST(MemoryStore, OpeningNeedsADatabase) {
  EXPECT_EQ(OpenMemoryStore(nullptr).status().code(), Code::kInvalidArgument);
}

TEST(MemoryStore, ANamedDatabaseIsOnePerName) {
  EXPECT_EQ(NamedMemoryDatabase("memory-store-test-a"), NamedMemoryDatabase("memory-store-test-a"));
  EXPECT_NE(NamedMemoryDatabase("memory-store-test-a"), NamedMemoryDatabase("memory-store-test-b"));
  auto writer = Open(NamedMemoryDatabase("memory-store-test-a"));
  CommitOne(*writer, 0);
  auto reader = Open(NamedMemoryDatabase("memory-store-test-a"));
  EXPECT_EQ(Count(*std::move(reader->Read()).value(), "ledger"), 1);
}

// The view is the state committed when Read() returned, before any read through it.
TEST(MemoryStore, ASnapshotIsTakenWhenReadReturns) {
  auto database = NewMemoryDatabase();
  auto reader = Open(database);
  auto writer = Open(database);
  auto snapshot = std::move(reader->Read()).value();
  CommitOne(*writer, 0);
  EXPECT_EQ(Count(*snapshot, "ledger"), 0);
}

// Snapshots of many versions stay exact while later commits copy the tables they share and
// change the others in place.
TEST(MemoryStore, SnapshotsOfEveryVersionStayExact) {
  auto database = NewMemoryDatabase();
  auto writer = Open(database);
  std::vector<std::unique_ptr<Store>> readers;
  std::vector<std::unique_ptr<Snapshot>> snapshots;
  for (int i = 0; i < 200; ++i) {
    if (i % 20 == 0) {
      readers.push_back(Open(database));
      snapshots.push_back(std::move(readers.back()->Read()).value());
    }
    if (i % 40 == 0 && snapshots.size() >= 2) snapshots[snapshots.size() - 2].reset();
    CommitOne(*writer, i);
  }
  for (size_t k = 0; k < snapshots.size(); ++k) {
    if (snapshots[k] == nullptr) continue;
    const int64_t expected = static_cast<int64_t>(k) * 20;
    EXPECT_EQ(Count(*snapshots[k], "ledger"), expected);
    EXPECT_EQ(Count(*snapshots[k], "quarantine"), expected);
    EXPECT_EQ(snapshots[k]->LedgerOf("c", "order-0").value().rows.size(),
              static_cast<size_t>((expected + 6) / 7));
  }
  auto latest = std::move(writer->Read()).value();
  EXPECT_EQ(Count(*latest, "ledger"), 200);
}

// Readers on other threads open snapshots while one thread commits: each view is one version
// (as many receipts as kept inputs, never fewer receipts than an earlier view). Halfway, the
// writer waits until each reader has seen a version between the first and the last, so the
// readers are known to have overlapped the commits (however the threads are scheduled) and the
// checks above were made on views taken while the store was changing.
TEST(MemoryStore, ReadersOnOtherThreadsSeeWholeVersions) {
  auto database = NewMemoryDatabase();
  constexpr int kCommits = 2000;
  constexpr int kReaders = 2;
  std::atomic<bool> done = false;
  std::atomic<int64_t> views_wrong = 0;
  std::atomic<int64_t> views_between = 0;  // views with 0 < ledger < kCommits
  std::atomic<int> readers_between = 0;    // readers that took at least one such view
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      auto store = Open(database);
      int64_t last = 0;
      bool seen_between = false;
      while (!done.load()) {
        auto snapshot = std::move(store->Read()).value();
        const int64_t ledger = Count(*snapshot, "ledger");
        if (ledger != Count(*snapshot, "quarantine") || ledger < last) views_wrong.fetch_add(1);
        if (ledger > 0 && ledger < kCommits) {
          views_between.fetch_add(1);
          if (!seen_between) readers_between.fetch_add(1);
          seen_between = true;
        }
        last = ledger;
      }
    });
  }
  auto writer = Open(database);
  for (int i = 0; i < kCommits / 2; ++i) CommitOne(*writer, i);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (readers_between.load() < kReaders && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(readers_between.load(), kReaders) << "a reader saw no version while the writer paused";
  for (int i = kCommits / 2; i < kCommits; ++i) CommitOne(*writer, i);
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(views_wrong.load(), 0);
  EXPECT_GT(views_between.load(), 0);
  EXPECT_EQ(Count(*std::move(writer->Read()).value(), "ledger"), kCommits);
}

}  // namespace
}  // namespace evident
