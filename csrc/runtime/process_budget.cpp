#include "runtime/process_budget.h"

#include "runtime/graph_runner.h"
#include "runtime/stats.h"

#include <algorithm>

namespace graphdispatch {

ProcessBudget& ProcessBudget::get() {
  static ProcessBudget* budget = new ProcessBudget();  // never destroyed, as Stats
  return *budget;
}

void ProcessBudget::join(GraphRunner* runner) {
  std::lock_guard<std::mutex> lock(*mutex_);
  runners_.push_back(runner);
}

void ProcessBudget::leave(GraphRunner* runner) {
  std::lock_guard<std::mutex> lock(*mutex_);
  runners_.erase(std::remove(runners_.begin(), runners_.end(), runner), runners_.end());
}

std::vector<std::shared_ptr<Entry>> ProcessBudget::enforce(std::size_t limit, Eviction eviction,
                                                           const GraphRunner* keeper,
                                                           const Signature& keep) {
  std::vector<std::shared_ptr<Entry>> evicted;
  std::lock_guard<std::mutex> lock(*mutex_);
  auto held = [&] {
    std::size_t bytes = 0;
    for (const auto* runner : runners_) bytes += runner->own_entry_bytes();
    // The shared workspace once, as it is: evicting frees it only with its last user.
    return bytes +
           static_cast<std::size_t>(std::max<std::int64_t>(0, Stats::get().workspace_bytes.load()));
  };
  std::size_t total = held();
  while (total > limit) {
    GraphRunner* owner = nullptr;
    std::optional<std::pair<std::uint64_t, Signature>> victim;
    for (auto* runner : runners_) {
      auto candidate = runner->budget_victim(eviction, runner == keeper ? &keep : nullptr);
      if (candidate && (!victim || candidate->first < victim->first)) {
        victim = std::move(candidate);
        owner = runner;
      }
    }
    if (!victim) break;  // only the entry just captured (or nothing) holds bytes
    auto entry = owner->evict_for_budget(victim->second);
    if (!entry) {  // dropped by its runner meanwhile (its weights died): count again
      total = held();
      continue;
    }
    const auto bytes = static_cast<std::size_t>(entry->bytes());
    total = total > bytes ? total - bytes : 0;
    evicted.push_back(std::move(entry));
  }
  return evicted;
}

void ProcessBudget::reset_after_fork() {
  (void)mutex_.release();
  mutex_ = std::make_unique<std::mutex>();
}

}  // namespace graphdispatch
