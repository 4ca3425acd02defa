#include "runtime/cpu_graph/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace graphdispatch {

MemoryPlan plan_memory(const std::vector<Lifetime>& blocks, std::int64_t alignment) {
  auto align = [alignment](std::int64_t n) { return (n + alignment - 1) & ~(alignment - 1); };
  std::vector<std::size_t> order(blocks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return blocks[a].bytes > blocks[b].bytes; });
  MemoryPlan plan;
  plan.offsets.assign(blocks.size(), 0);
  struct Placed {
    std::int64_t begin, end;
  };
  std::vector<std::size_t> placed;
  for (auto i : order) {
    const auto& block = blocks[i];
    // The placed blocks alive at the same time, by offset: take the first gap that fits.
    std::vector<Placed> busy;
    for (auto j : placed) {
      const auto& other = blocks[j];
      if (other.last < block.first || block.last < other.first) continue;
      busy.push_back({plan.offsets[j], plan.offsets[j] + align(other.bytes)});
    }
    std::sort(busy.begin(), busy.end(),
              [](const Placed& a, const Placed& b) { return a.begin < b.begin; });
    std::int64_t offset = 0;
    for (const auto& b : busy) {
      if (offset + align(block.bytes) <= b.begin) break;
      offset = std::max(offset, b.end);
    }
    plan.offsets[i] = offset;
    plan.bytes = std::max(plan.bytes, offset + align(block.bytes));
    placed.push_back(i);
  }
  return plan;
}

}  // namespace graphdispatch
