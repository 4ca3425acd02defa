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
// numbers it was captured with, and most graph kinds cannot reread a host number at replay (a
// device graph's kernels hold it as an argument). The CPU graph can where the number reaches a
// kernel as a tensor: the backend then passes Dynamo's 0-d tensor instead of the number (Note
// [Numbers read at replay] in src/graphdispatch/_host_numbers.py), and no key holds its value.
// Anywhere else a number that changes on every call (a step counter, a float Dynamo made
// dynamic, case C70) captures on every call, and the entries would grow with the values. So
// per layout of a runner's tensor inputs, after kNumberValuesLimit captures that differ only in
// their numbers a new value runs without a graph (fallback number_values, case C89), uncached:
// the entries captured so far keep replaying, so a number that cycles through a few values
// (CFG on/off, the steps of a fixed schedule) never captures again. The runner warns once per
// graph when a layout reaches kNumberValuesWarnAt, naming the input, which is when Dynamo,
// for the same reason, stops recompiling a frame (torch._dynamo.config.recompile_limit, 8).

/// Captures of one tensor layout differing only in their numbers after which the runner warns.
inline constexpr std::int64_t kNumberValuesWarnAt = 8;
/// ... and after which a new value falls back (number_values) instead of capturing.
inline constexpr std::int64_t kNumberValuesLimit = 64;

/// Counts, per layout of a runner's tensor inputs, the captures whose numbers differ. Not
/// thread-safe: the runner calls it under its insert mutex.
class NumberValues final {
 public:
  /// Before capturing `inputs`: why they must not be captured (their layout has had
  /// kNumberValuesLimit captures, naming the inputs whose values differ), or nullopt.
  std::optional<std::string> refused(const std::vector<c10::IValue>& inputs,
                                     const std::vector<bool>& is_static,
                                     const RunnerOptions& options) const;
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
  /// "input, A at the first capture and B now" for each number that differs from `seen`'s.
  static std::string changing(const std::vector<c10::IValue>& inputs, const Seen& seen,
                              const RunnerOptions& options);
  std::unordered_map<Signature, Seen, Signature::Hasher> seen_;
  bool warned_ = false;
};

}  // namespace graphdispatch
