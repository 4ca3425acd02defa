#pragma once

#include "runtime/entry_cache.h"
#include "runtime/signature.h"

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace graphdispatch {

class Entry;
class GraphRunner;

// Note [Process byte budget]
// max_entry_bytes bounds one compiled graph. A pipeline holds many: two experts (Wan 2.2's
// transformer and transformer_2), one graph per block kind under regional compilation, a new
// set per recompile (case C49). max_total_entry_bytes bounds them all together: every runner of
// the process is a member here, and when a capture brings the members' entries over the
// budget, entries are evicted across all of them, in the capturing runner's `eviction` order
// (the oldest captured for FIFO, the least recently used for LRU; EntryCache stamps both from
// one clock), never the entry just captured and never a negative one. Bytes are the entries'
// measured ones (Entry::bytes: input buffers plus what the capture added to the graph pool, or
// the static outputs where there is no pool), plus the CPU graph's shared workspace once (Note
// [Shared workspace]): the bytes of its live blocks, which evicting does not lower until an
// entry's last block goes.

/// The registry of every live GraphRunner, and the eviction across them.
///
/// Owns nothing but its list: a runner joins when it is built and leaves when destroyed
/// (pointers are not owned). Thread-safe: one mutex guards the list; `enforce` holds it while
/// it takes each member's cache lock in turn, and no runner holds its cache lock while it
/// calls in here, so the order is always registry, then one runner.
class ProcessBudget final {
 public:
  static ProcessBudget& get();

  void join(GraphRunner* runner);
  void leave(GraphRunner* runner);
  /// Evicts across every member, in `eviction` order, until their entries hold at most `limit`
  /// bytes, never `keep` of `keeper`. Returns the evicted entries, for the caller to destroy
  /// outside every lock (destroying one may need the GIL).
  std::vector<std::shared_ptr<Entry>> enforce(std::size_t limit, Eviction eviction,
                                              const GraphRunner* keeper, const Signature& keep);
  /// In a forked child: a new mutex (Note [Fork] in _once.py). The members stay: the child's
  /// runners are the parent's objects.
  void reset_after_fork();

 private:
  ProcessBudget() = default;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  std::vector<GraphRunner*> runners_;  // not owned
};

}  // namespace graphdispatch
