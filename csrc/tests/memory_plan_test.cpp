// The arena planner on lifetimes whose right placement can be worked out by hand.

#include "runtime/memory_plan.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace graphdispatch
