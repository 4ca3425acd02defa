#include "runtime/recapture_policy.h"

#include "runtime/stats.h"

namespace graphdispatch {

void RecapturePolicy::on_lost(const Signature& sig, std::size_t position, std::int64_t replays) {
  // An entry that served calls beyond its first was worth its capture (a model deleted or
  // reloaded after use); only one that never replayed again says the input keeps moving.
  if (replays > 1) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto& layout = layouts_[sig.layout()];
  ++layout.lost;
  layout.moving_position = position;
}

std::optional<RecapturePolicy::Refusal> RecapturePolicy::refused(const Signature& sig) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = layouts_.find(sig.layout());
  if (found == layouts_.end() || found->second.lost == 0) return std::nullopt;
  auto& layout = found->second;
  // Bounded by the losses, not by the captures: new weights that stay alive (another instance
  // sharing the graph) are captured whatever was lost before.
  if (layout.lost <= max_recaptures_) {
    Stats::get().recaptures.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  layout.same_in_a_row = layout.last_refused == sig ? layout.same_in_a_row + 1 : 1;
  layout.last_refused = sig;
  if (layout.same_in_a_row >= kStableCalls) {  // settled: the budget refills (case C47)
    layout = Layout{};
    return std::nullopt;
  }
  return Refusal{layout.moving_position, layout.lost};
}

}  // namespace graphdispatch
