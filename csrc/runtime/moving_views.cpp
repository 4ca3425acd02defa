#include "runtime/moving_views.h"

namespace graphdispatch {

std::optional<std::size_t> MovingViews::on_capture(const std::vector<c10::IValue>& inputs,
                                                   const std::vector<bool>& is_static,
                                                   std::int64_t replays, std::int64_t max_moves) {
  seen_.resize(inputs.size());
  // A replay between two captures: the entries serve calls, the keys are worth their captures.
  const bool in_a_row = replays == replays_;
  replays_ = replays;
  std::optional<std::size_t> moving;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!is_static[i] || !inputs[i].isTensor()) continue;
    const auto& t = inputs[i].toTensor();
    if (!t.has_storage()) continue;
    auto& seen = seen_[i];
    const void* storage = t.storage().unsafeGetStorageImpl();
    const void* data = t.data_ptr();
    const bool moved = storage == seen.storage && data != seen.data;
    seen.moves = moved ? (in_a_row ? seen.moves : 0) + 1 : 0;
    seen.storage = storage;
    seen.data = data;
    if (seen.moves > max_moves && !moving) moving = i;
  }
  return moving;
}

}  // namespace graphdispatch
