#pragma once

#include <cstdint>
#include <vector>

namespace graphdispatch {

/// A block of memory a recorded program needs from its first write to its last use: steps
/// `first` to `last` (inclusive, in program order), `bytes` long.
struct Lifetime final {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t bytes = 0;
};

/// Where each block lies in one arena, and the arena's size.
struct MemoryPlan final {
  std::vector<std::int64_t> offsets;  // bytes from the arena's start, per block
  std::int64_t bytes = 0;
};

/// Places blocks whose lifetimes overlap at disjoint offsets and lets the others share memory,
/// as a device's caching allocator reuses blocks freed during a capture. Greedy by size
/// (largest first, each at the lowest aligned offset free for its lifetime), the strategy of
/// TorchScript's Static Runtime and TFLite's arena planner; not optimal, near the peak of live
/// bytes on feed-forward graphs. `alignment` in bytes, a power of two. O(n²) in the blocks.
MemoryPlan plan_memory(const std::vector<Lifetime>& blocks, std::int64_t alignment);

}  // namespace graphdispatch
