#include "runtime/stats.h"

namespace graphdispatch {

Stats& Stats::get() {
  static Stats* stats = new Stats();  // never destroyed: replays may run during interpreter exit
  return *stats;
}

void Stats::add_fallback(FallbackReason reason) {
  fallbacks_[static_cast<std::size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

std::map<std::string, std::int64_t> Stats::fallbacks() const {
  std::map<std::string, std::int64_t> out;
  for (const auto& r : fallback_reasons()) {
    const auto calls =
        fallbacks_[static_cast<std::size_t>(r.reason)].load(std::memory_order_relaxed);
    if (calls != 0) out.emplace(r.name, calls);
  }
  return out;
}

void Stats::reset() {
  for (auto* c : {&captures, &replays, &cache_hits, &cache_misses, &evictions, &copies_skipped,
                  &bytes_copied, &recaptures, &verified_replays, &held_outputs_copied}) {
    c->store(0, std::memory_order_relaxed);
  }
  for (auto& c : fallbacks_) c.store(0, std::memory_order_relaxed);
}

void Stats::reset_after_fork() {
  live_entries.store(0, std::memory_order_relaxed);
  live_entry_bytes.store(0, std::memory_order_relaxed);
  reset();
}

}  // namespace graphdispatch
