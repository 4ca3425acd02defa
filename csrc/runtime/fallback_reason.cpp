#include "runtime/fallback_reason.h"

#include <c10/util/Exception.h>

namespace graphdispatch {

const std::array<FallbackReasonInfo, kFallbackReasonCount>& fallback_reasons() {
  static const std::array<FallbackReasonInfo, kFallbackReasonCount> reasons{{
      {FallbackReason::kRequiresGrad, "requires_grad",
       "call under torch.no_grad() or torch.inference_mode(); graphs record no autograd", false},
      {FallbackReason::kAliasedInputs, "aliased_inputs",
       "pass separate tensors (e.g. .clone() one of them), or views that share no byte", false},
      {FallbackReason::kMixedDevices, "mixed_devices",
       "move every tensor input to the model's device", false},
      {FallbackReason::kUnsupportedTensor, "unsupported_tensor",
       "pass plain tensors, not tensor subclasses", false},
      {FallbackReason::kExplicitGenerator, "explicit_generator",
       "draw random numbers with the global generator", false},
      {FallbackReason::kDataDependent, "data_dependent",
       "the graph reads a value on the host mid-graph (.item(), nonzero, boolean masks): "
       "compute it outside the compiled region",
       false},
      {FallbackReason::kCaptureFailed, "capture_failed",
       "an op cannot run while the device graph records (host synchronisation, a CPU round "
       "trip): move it out of the compiled region or make it a graph break",
       true},
      {FallbackReason::kStaticInputsMoving, "static_inputs_moving",
       "a tensor the graph reads in place is replaced on every call (self.h = ...): update it "
       "in place (self.h.copy_(...)) or pass it as an argument",
       false},
      {FallbackReason::kVerifyMismatch, "verify_mismatch",
       "the replay does not compute what eager does: report it with the signature", true},
      {FallbackReason::kAutogradRegion, "autograd_region",
       "the graph turns autograd on inside (torch.enable_grad() building autograd history, "
       "torch.inference_mode() making inference tensors), which a replay cannot do: keep the "
       "region out of the compiled function (torch.compiler.disable on the function holding it)",
       false},
      {FallbackReason::kNumberValues, "number_values",
       "a number input takes a new value on (almost) every call and each value is its own "
       "entry: pass it as a tensor, or on the CPU graph use it only in tensor arithmetic, so "
       "one entry reads it at replay",
       false},
      {FallbackReason::kForwardAD, "forward_ad",
       "a forward-mode AD level is active (torch.autograd.forward_ad.dual_level) and a replay "
       "computes no tangents: call the compiled model outside the dual level, or compile the "
       "dual computation with backend=\"eager\"",
       false},
  }};
  return reasons;
}

const FallbackReasonInfo& fallback_reason_info(FallbackReason reason) {
  const auto& r = fallback_reasons().at(static_cast<std::size_t>(reason));
  TORCH_INTERNAL_ASSERT(r.reason == reason, "fallback_reasons() out of the enum's order");
  return r;
}

std::optional<FallbackReason> parse_fallback_reason(std::string_view name) {
  for (const auto& r : fallback_reasons()) {
    if (r.name == name) return r.reason;
  }
  return std::nullopt;
}

}  // namespace graphdispatch
