#include "runtime/admission.h"

#include <ATen/core/grad_mode.h>

namespace graphdispatch {

std::optional<Refusal> refusal(const std::vector<c10::IValue>& inputs, const Signature& sig,
                               const RunnerOptions& options) {
  // Note [Aliasing]: overlapping dynamic inputs get a buffer each, right only when neither is
  // written.
  for (const auto& [first, second] : sig.overlaps()) {
    if (!options.may_write(first) && !options.may_write(second)) continue;
    const auto& later = inputs[second].toTensor();
    return Refusal{FallbackReason::kAliasedInputs,
                   options.input(second) + ": " + describe_layout(later) + " overlaps " +
                       options.input(first) + " in memory, and the graph writes one of them"};
  }
  // Dual tensors carry tangents that only autograd's forward mode computes.
  if (sig.forward_ad()) {
    return Refusal{FallbackReason::kForwardAD,
                   "a forward-mode AD level is active (torch.autograd.forward_ad.dual_level)"};
  }
  const c10::Device device = device_of(inputs);
  const bool grad = at::GradMode::is_enabled();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    // A graph advances only the generators it registered at capture; an explicit one would
    // hand every replay the same numbers.
    if (v.isGenerator()) {
      return Refusal{FallbackReason::kExplicitGenerator, options.input(i) + ": a torch.Generator"};
    }
    if (!v.isTensor()) continue;
    const auto& t = v.toTensor();
    auto refuse = [&](FallbackReason reason) {
      return Refusal{reason, options.input(i) + ": " + describe_layout(t)};
    };
    // A CPU tensor beside device tensors would be read on the host at capture and baked in.
    if (t.device() != device) return refuse(FallbackReason::kMixedDevices);
    // A graph replay records no autograd history; eager would.
    if (grad && t.requires_grad()) return refuse(FallbackReason::kRequiresGrad);
    // A buffer made by empty_strided would be a plain tensor: the subclass's behaviour (or a
    // zero tensor's absence of data) would be lost.
    if (t.unsafeGetTensorImpl()->is_python_dispatch() || t._is_zerotensor()) {
      return refuse(FallbackReason::kUnsupportedTensor);
    }
  }
  return std::nullopt;
}

}  // namespace graphdispatch
