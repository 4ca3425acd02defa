#pragma once

#include "runtime/fallback_reason.h"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace graphdispatch {

/// Process-wide counters of the runtime, read by `graphdispatch.stats()`.
///
/// Counters are relaxed atomics: they are totals, not synchronisation; fallbacks are one such
/// counter per reason. Nothing here takes a lock, so a fork can leave none held.
class Stats final {
 public:
  static Stats& get();

  std::atomic<std::int64_t> captures{0};
  std::atomic<std::int64_t> replays{0};
  std::atomic<std::int64_t> cache_hits{0};
  std::atomic<std::int64_t> cache_misses{0};
  std::atomic<std::int64_t> evictions{0};
  std::atomic<std::int64_t> copies_skipped{0};
  std::atomic<std::int64_t> bytes_copied{0};
  std::atomic<std::int64_t> recaptures{0};
  /// Replays checked against the non-graph path (verify_replays).
  std::atomic<std::int64_t> verified_replays{0};
  /// Unsafe outputs still referenced when their entry replayed again, copied away first
  /// (Note [Outputs still held] in output_plan.h).
  std::atomic<std::int64_t> held_outputs_copied{0};
  /// Gauges, not totals (reset() leaves them): captured entries alive in this process and the
  /// bytes they hold (Entry::bytes). A forked child starts from zero: the parent's entries are
  /// not its own.
  std::atomic<std::int64_t> live_entries{0};
  std::atomic<std::int64_t> live_entry_bytes{0};
  /// Bytes of the CPU graph's live workspace blocks, shared by its entries (Note [Shared
  /// workspace]); a forked child keeps the blocks it inherited, so this is left as it is.
  std::atomic<std::int64_t> workspace_bytes{0};

  void add_fallback(FallbackReason reason);
  /// Calls served without a graph, by reason name (FallbackReasonInfo::name); reasons with no
  /// call are left out.
  std::map<std::string, std::int64_t> fallbacks() const;
  void reset();
  /// In a forked child (Note [Fork] in _once.py): reset(), and the entry gauges from zero.
  void reset_after_fork();

 private:
  Stats() = default;
  std::array<std::atomic<std::int64_t>, kFallbackReasonCount> fallbacks_{};
};

}  // namespace graphdispatch
