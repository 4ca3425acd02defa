#pragma once

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace graphdispatch {

// Note [Views that move]
// A static input is keyed by its address (Note [Cache key]). A view that an attribute takes of
// a live buffer at a new offset every call (`self.window = self.cache[t:t+1]`: a ring buffer, a
// KV-cache window) is then a new key per call, and its entries never die, since the buffer
// they read stays alive: Note [Moving static inputs] never sees a loss (case C88). So the
// runner watches each static input between captures: when more than max_recaptures captures in
// a row, with no replay between them, find that input in the storage it had at the previous
// capture but at another address, the input is treated as dynamic from then on: copied into an
// entry-owned buffer (and back, where the graph writes it), one entry for every offset. The
// entries keyed on its old addresses are dropped, and one warning names the input. Weights of
// several modules that are views of one tensor (experts sliced from one parameter) captured
// more than max_recaptures times before any replays are copied too: right, and slower than
// reading them in place.

/// Per static input of one runner: captures in a row that found it elsewhere in the storage it
/// had at the previous capture. Not thread-safe: the runner calls it under its insert mutex.
class MovingViews final {
 public:
  /// Counts the capture of `inputs` (`replays`: the runner's replays so far beyond each entry's
  /// first, which serves the call that captured it). Returns the
  /// position of a static input past `max_moves` moves in a row, else nullopt.
  std::optional<std::size_t> on_capture(const std::vector<c10::IValue>& inputs,
                                        const std::vector<bool>& is_static, std::int64_t replays,
                                        std::int64_t max_moves);

 private:
  struct Seen final {
    const void* storage = nullptr;  // compared, never read
    const void* data = nullptr;
    std::int64_t moves = 0;
  };
  std::vector<Seen> seen_;
  std::int64_t replays_ = -1;
};

}  // namespace graphdispatch
