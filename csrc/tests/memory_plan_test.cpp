// The arena planner on lifetimes whose right placement can be worked out by hand, and on
// random lifetimes against the properties every plan must have.

#include "runtime/cpu_graph/memory_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace graphdispatch {
namespace {

TEST(MemoryPlanTest, DisjointLifetimesShareAndOverlappingOnesDoNot) {
  // a and b overlap (steps 0–2, 1–3); c (4–5) reuses a's place; d lives to the end.
  const std::vector<Lifetime> blocks{{0, 2, 100}, {1, 3, 64}, {4, 5, 100}, {2, 9, 10}};
  const auto plan = plan_memory(blocks, 64);
  auto disjoint = [&](std::size_t i, std::size_t j) {
    const auto end = [&](std::size_t k) {
      return plan.offsets[k] + ((blocks[k].bytes + 63) & ~63);
    };
    return end(i) <= plan.offsets[j] || end(j) <= plan.offsets[i];
  };
  EXPECT_TRUE(disjoint(0, 1));
  EXPECT_TRUE(disjoint(0, 3));
  EXPECT_TRUE(disjoint(1, 3));
  EXPECT_TRUE(disjoint(2, 3));
  EXPECT_EQ(plan.offsets[2], plan.offsets[0]);  // the largest free place first
  EXPECT_EQ(plan.bytes, 128 + 64 + 64);
  for (auto offset : plan.offsets) EXPECT_EQ(offset % 64, 0);
}

TEST(MemoryPlanTest, RandomLifetimesNeverShareAByteWhileBothLive) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const std::int64_t alignment = std::int64_t{1} << std::uniform_int_distribution<int>(0, 7)(rng);
    const int steps = std::uniform_int_distribution<int>(1, 40)(rng);
    std::vector<Lifetime> blocks(std::uniform_int_distribution<std::size_t>(1, 60)(rng));
    for (auto& b : blocks) {
      b.first = std::uniform_int_distribution<std::int64_t>(0, steps - 1)(rng);
      b.last = std::uniform_int_distribution<std::int64_t>(b.first, steps - 1)(rng);
      b.bytes = std::uniform_int_distribution<std::int64_t>(0, 5000)(rng);
    }
    const auto plan = plan_memory(blocks, alignment);
    ASSERT_EQ(plan.offsets.size(), blocks.size());
    // The peak of live bytes, each block rounded up to the alignment: no plan needs less.
    const auto rounded = [&](std::int64_t bytes) {
      return (bytes + alignment - 1) / alignment * alignment;
    };
    std::int64_t peak = 0;
    for (int step = 0; step < steps; ++step) {
      std::int64_t live = 0;
      for (const auto& b : blocks) live += b.first <= step && step <= b.last ? rounded(b.bytes) : 0;
      peak = std::max(peak, live);
    }
    EXPECT_GE(plan.bytes, peak);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(plan.offsets[i] % alignment, 0) << "round " << round << " block " << i;
      EXPECT_LE(plan.offsets[i] + blocks[i].bytes, plan.bytes) << "round " << round;
      for (std::size_t j = i + 1; j < blocks.size(); ++j) {
        const auto& a = blocks[i];
        const auto& b = blocks[j];
        const bool both_live = a.first <= b.last && b.first <= a.last;
        const bool bytes_overlap = plan.offsets[i] < plan.offsets[j] + b.bytes &&
                                   plan.offsets[j] < plan.offsets[i] + a.bytes;
        EXPECT_FALSE(both_live && bytes_overlap)
            << "round " << round << ": blocks " << i << " and " << j << " share a byte";
      }
    }
  }
}

}  // namespace
}  // namespace graphdispatch
