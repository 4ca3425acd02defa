#include "runtime/entry_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace graphdispatch {
namespace {

using Cache = EntryCache<int, std::string>;

std::shared_ptr<std::string> value(const char* s) { return std::make_shared<std::string>(s); }

TEST(EntryCache, UnboundedKeepsEverything) {
  Cache cache(0, Eviction::kFifo);
  for (int k = 0; k < 100; ++k) EXPECT_EQ(cache.insert(k, value("v")), nullptr);
  EXPECT_EQ(cache.size(), 100u);
}

TEST(EntryCache, FifoEvictsOldestInsertedEvenIfUsed) {
  Cache cache(2, Eviction::kFifo);
  cache.insert(1, value("one"));
  cache.insert(2, value("two"));
  ASSERT_NE(cache.find(1), nullptr);  // a use does not protect it under FIFO
  auto victim = cache.insert(3, value("three"));
  ASSERT_NE(victim, nullptr);
  EXPECT_EQ(*victim, "one");
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_NE(cache.find(2), nullptr);
  EXPECT_NE(cache.find(3), nullptr);
}

TEST(EntryCache, LruEvictsLeastRecentlyUsed) {
  Cache cache(2, Eviction::kLru);
  cache.insert(1, value("one"));
  cache.insert(2, value("two"));
  ASSERT_NE(cache.find(1), nullptr);
  auto victim = cache.insert(3, value("three"));
  ASSERT_NE(victim, nullptr);
  EXPECT_EQ(*victim, "two");
  EXPECT_NE(cache.find(1), nullptr);
}

TEST(EntryCache, EvictedValueOutlivesTheCacheWhileHeld) {
  Cache cache(1, Eviction::kFifo);
  cache.insert(1, value("one"));
  auto held = cache.find(1);
  cache.insert(2, value("two"));
  EXPECT_EQ(cache.find(1), nullptr);
  EXPECT_EQ(*held, "one");
}

TEST(EntryCache, ReinsertReplacesWithoutEviction) {
  Cache cache(1, Eviction::kFifo);
  cache.insert(1, value("one"));
  auto replaced = cache.insert(1, value("uno"));
  ASSERT_NE(replaced, nullptr);
  EXPECT_EQ(*replaced, "one");
  EXPECT_EQ(*cache.find(1), "uno");
  EXPECT_EQ(cache.size(), 1u);
}

TEST(EntryCache, TakeAllEmptiesAndHandsOverValues) {
  Cache cache(0, Eviction::kFifo);
  cache.insert(1, value("one"));
  cache.insert(2, value("two"));
  auto values = cache.take_all();
  EXPECT_EQ(values.size(), 2u);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_EQ(cache.find(1), nullptr);
}

TEST(EntryCache, ByteBudgetEvictsOldestUntilUnderAndKeepsTheNewEntry) {
  Cache cache(0, Eviction::kFifo, /*max_bytes=*/100);
  cache.insert(1, value("one"), 40);
  cache.insert(2, value("two"), 40);
  EXPECT_TRUE(cache.evict_over_budget(2).empty());
  cache.find(1);  // FIFO ignores use
  cache.insert(3, value("three"), 40);
  auto victims = cache.evict_over_budget(3);
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(*victims[0], "one");
  EXPECT_EQ(cache.bytes(), 80u);
  // An entry alone over the budget evicts every other one and stays.
  cache.insert(4, value("four"), 500);
  EXPECT_EQ(cache.evict_over_budget(4).size(), 2u);
  EXPECT_EQ(cache.size(), 1u);
  EXPECT_EQ(cache.bytes(), 500u);
}

TEST(EntryCache, ByteBudgetWithLruEvictsLeastRecentlyUsed) {
  Cache cache(0, Eviction::kLru, /*max_bytes=*/100);
  cache.insert(1, value("one"), 40);
  cache.insert(2, value("two"), 40);
  cache.find(1);
  cache.insert(3, value("three"), 40);
  auto victims = cache.evict_over_budget(3);
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(*victims[0], "two");
}

TEST(EntryCache, ByteBudgetKeepsEntriesOfNoBytes) {
  Cache cache(0, Eviction::kFifo, /*max_bytes=*/100);
  cache.insert(1, value("refused"), 0);  // a negative entry: evicting it frees nothing
  cache.insert(2, value("two"), 60);
  cache.insert(3, value("three"), 60);
  auto victims = cache.evict_over_budget(3);
  ASSERT_EQ(victims.size(), 1u);
  EXPECT_EQ(*victims[0], "two");
  EXPECT_NE(cache.find(1), nullptr);
  cache.insert(4, value("four"), 200);
  EXPECT_EQ(cache.evict_over_budget(4).size(), 1u);  // "three"; "refused" stays
  EXPECT_EQ(cache.size(), 2u);
}

TEST(EntryCache, BytesFollowReplacementAndTakeAll) {
  Cache cache(0, Eviction::kFifo, 0);
  cache.insert(1, value("one"), 40);
  cache.insert(1, value("uno"), 10);
  EXPECT_EQ(cache.bytes(), 10u);
  EXPECT_TRUE(cache.evict_over_budget(1).empty());  // no budget
  cache.take_all();
  EXPECT_EQ(cache.bytes(), 0u);
}

}  // namespace
}  // namespace graphdispatch
