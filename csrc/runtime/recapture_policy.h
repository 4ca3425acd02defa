#pragma once

#include "runtime/signature.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

namespace graphdispatch {

// Note [Moving static inputs]
// Static addresses are part of the key, so new weights are a new entry: one per module
// instance sharing the graph, each replaying (case C41). A tensor that truly keeps moving (a
// state the module reassigns every call, `self.h = f(self.h, x)`, case C35) would instead
// capture on every call, each entry dying with the tensor it read. The runner drops an entry
// once one of its static inputs is freed (the Python layer tells it, drop_dead_entries) or its
// memory replaced (`param.data = ...`, seen on the next miss). An entry lost before it served
// a second call counts as a loss for its input layout (one that served more was worth its
// capture: a model deleted or reloaded after use). Captures of a layout that lost an entry are
// recaptures; once it lost more than max_recaptures, calls with new addresses for that layout
// run without a graph (fallback static_inputs_moving), with one warning naming the input.
// Entries already captured keep replaying. PyTorch's cudagraph trees bound re-recording for
// the same reason. Unlike theirs, the bound is not forever (case C47): weights loaded or
// offloaded at start-up move for a while, then stay. Once kStableCalls calls in a row of a
// falling-back layout bring the same addresses, the layout's losses are forgotten, so it
// captures and replays again, with max_recaptures to spend when its inputs next start moving.
// A state tensor reassigned every call never qualifies: each call's new tensor is allocated
// while the previous one is alive, so two calls in a row never share its address.

/// Calls in a row with the same static addresses after which a layout that fell back for
/// static_inputs_moving captures again (Note [Moving static inputs]).
inline constexpr std::int64_t kStableCalls = 3;

/// The recapture policy of one runner (Note [Moving static inputs]): per input layout, the
/// entries lost to a freed or moved static input, and whether a new capture of that layout is
/// still allowed.
///
/// Owns only its counters; knows nothing of entries, graphs or the cache. Thread-safe (one
/// mutex, never held while calling out). GraphRunner reports each dropped entry (on_lost) and
/// asks before each capture (refused).
class RecapturePolicy final {
 public:
  /// Why a capture is refused: the static input whose loss was seen last, and the losses.
  struct Refusal final {
    std::size_t position;
    std::int64_t lost;
  };

  explicit RecapturePolicy(std::int64_t max_recaptures) : max_recaptures_(max_recaptures) {}
  RecapturePolicy(const RecapturePolicy&) = delete;
  RecapturePolicy& operator=(const RecapturePolicy&) = delete;

  /// An entry of `sig`'s layout was dropped because static input `position` was freed or
  /// replaced, after `replays` replays. Counts as a loss only if it never replayed again.
  void on_lost(const Signature& sig, std::size_t position, std::int64_t replays);
  /// Before capturing `sig`: the refusal when its layout lost more than max_recaptures entries
  /// and has not settled, else nullopt (a capture of a layout that lost one is a recapture,
  /// counted in Stats).
  std::optional<Refusal> refused(const Signature& sig);

 private:
  struct Layout final {
    std::int64_t lost = 0;
    std::size_t moving_position = 0;  // a static input whose loss was seen last
    // Past the bound: the key of the last call that fell back, and how many calls in a row
    // brought it.
    std::optional<Signature> last_refused;
    std::int64_t same_in_a_row = 0;
  };

  const std::int64_t max_recaptures_;
  std::mutex mutex_;
  std::map<std::vector<std::int64_t>, Layout> layouts_;
};

}  // namespace graphdispatch
