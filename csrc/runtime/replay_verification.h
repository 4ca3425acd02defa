#pragma once

#include "runtime/device_graph.h"
#include "runtime/entry.h"
#include "runtime/runner_options.h"

#include <ATen/core/ivalue.h>

#include <string>
#include <vector>

namespace graphdispatch {

// Note [Verified replays]
// With verify_replays=K the first K replays of each entry also run the callable on clones of
// the dynamic inputs from the same RNG state, and compare every output: exactly (rtol = atol
// = 0, NaN equal to NaN) or within the tolerances. Static inputs are used in place; the ones
// the graph writes are put back before the replay writes them again, so a static input that
// views another sees the write as in eager. A stale graph (a kernel that read a pointer baked
// in at capture, a buffer a replay forgot to refresh) then shows up as a mismatch instead of a
// wrong image. On a mismatch the call returns the non-graph outputs and writes the non-graph
// values of written inputs to the caller's tensors; the runner disables the entry.

/// A replay checked against the non-graph path (Note [Verified replays]).
struct Verified final {
  /// The replay's outputs, or on a mismatch the non-graph path's.
  std::vector<c10::IValue> outputs;
  /// "" when every output matched, else what differed ("output 0: max |difference| ...").
  std::string mismatch;
};

/// Replays `entry` for `inputs` and runs `fn` (the entry's callable) beside it, comparing the
/// outputs with options.verify_rtol and verify_atol. Throws what the replay or `fn` threw.
Verified replay_verified(Entry& entry, const Callable& fn, const std::vector<c10::IValue>& inputs,
                         const RunnerOptions& options);

}  // namespace graphdispatch
