#include "runtime/stats.h"

namespace graphdispatch {

Stats& Stats::get() {
  static Stats* stats = new Stats();  // never destroyed: replays may run during interpreter exit
  return *stats;
}

void Stats::add_fallback(FallbackReason reason) {
  std::lock_guard<std::mutex> lock(*fallbacks_mutex_);
  ++fallbacks_[std::string(name(reason))];
}

std::map<std::string, std::int64_t> Stats::fallbacks() const {
  std::lock_guard<std::mutex> lock(*fallbacks_mutex_);
  return fallbacks_;
}

void Stats::reset() {
  for (auto* c : {&captures, &replays, &cache_hits, &cache_misses, &evictions, &copies_skipped,
                  &bytes_copied, &recaptures, &verified_replays, &held_outputs_copied}) {
    c->store(0, std::memory_order_relaxed);
  }
  std::lock_guard<std::mutex> lock(*fallbacks_mutex_);
  fallbacks_.clear();
}

void Stats::reset_after_fork() {
  (void)fallbacks_mutex_.release();
  fallbacks_mutex_ = std::make_unique<std::mutex>();
  live_entries.store(0, std::memory_order_relaxed);
  live_entry_bytes.store(0, std::memory_order_relaxed);
  reset();
}

}  // namespace graphdispatch
