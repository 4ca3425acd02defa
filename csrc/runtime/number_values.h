#pragma once

#include "runtime/runner_options.h"
#include "runtime/signature.h"

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphdispatch {

// Note [Numbers in the key]
// An int, float or bool input is keyed on its value (Note [Cache key]): a graph replays the
// numbers it was captured with, and no graph kind can reread a host number at replay (a device
// graph's kernels hold it as an argument; the CPU graph's recorded ops hold it likewise). So a
// number that changes on every call (a step counter, a float Dynamo made dynamic, case C70)
// captures on every call, and the entries grow with the values. Dynamo bounds its recompiles
// per frame for the same reason (torch._dynamo.config.recompile_limit, 8); the runner warns
// once per graph when kNumberValuesWarnAt entries differ only in their numbers, naming the
// input, instead of growing silently. The entries stay: a number that cycles through a few
// values (CFG on/off, the steps of a fixed schedule) replays once each value was captured.

/// Entries of one tensor layout that differ only in their numbers after which the runner warns.
inline constexpr std::int64_t kNumberValuesWarnAt = 8;

/// Counts, per layout of a runner's tensor inputs, the captures whose numbers differ. Not
/// thread-safe: the runner calls it under its insert mutex.
class NumberValues final {
 public:
  /// Counts the capture of `inputs`. Returns the warning the first time any layout reaches
  /// kNumberValuesWarnAt captures, naming the inputs whose values differ; nullopt otherwise.
  std::optional<std::string> on_capture(const std::vector<c10::IValue>& inputs,
                                        const std::vector<bool>& is_static,
                                        const RunnerOptions& options);

 private:
  struct Seen {
    std::vector<c10::IValue> first;  // the numbers of the layout's first capture, else None
    std::int64_t captures = 0;
  };
  std::unordered_map<Signature, Seen, Signature::Hasher> seen_;
  bool warned_ = false;
};

}  // namespace graphdispatch
