#pragma once

#include "runtime/fallback_reason.h"
#include "runtime/runner_options.h"
#include "runtime/signature.h"

#include <ATen/core/ivalue.h>

#include <optional>
#include <string>
#include <vector>

namespace graphdispatch {

/// Why a call with some inputs cannot be captured, with the input that decides it.
struct Refusal final {
  /// aliased_inputs (overlapping dynamic inputs, one of them written: Note [Aliasing]),
  /// explicit_generator, mixed_devices, requires_grad or unsupported_tensor. Self-overlapping
  /// inputs are not refused: a buffer with the same strides overlaps the same way, so a copy
  /// writes each location one value.
  FallbackReason reason;
  /// "input 3: [2, 4]/float32 strides (1, 0)", or for aliasing "input 2: [4]/float32
  /// strides (1) overlaps input 1 in memory" (the later of the two).
  std::string detail;
};

/// The refusal of a call with `inputs` (whose signature is `sig`), or nullopt when it can be
/// captured. Reads the grad mode of the calling thread.
std::optional<Refusal> refusal(const std::vector<c10::IValue>& inputs, const Signature& sig,
                               const RunnerOptions& options);

}  // namespace graphdispatch
