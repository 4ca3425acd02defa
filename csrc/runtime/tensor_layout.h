#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <vector>

namespace graphdispatch {

// Note [Expanded tensors]
// `t.expand(batch)` (how SD3, Flux, Wan and most DiT pipelines in diffusers pass the timestep)
// has a zero stride on a dimension of size > 1: several elements share one memory location.
// Eager only reads such a tensor, so only its values matter, and those live in the part with
// each zero-stride dimension narrowed to size 1. Copies into an entry buffer (which has the
// same zero strides) go through that part on both sides, and a zero-stride output is cloned
// through it and expanded again, so the caller gets eager's strides (cases C21, C22).

/// True when some dimension of size > 1 has stride 0.
bool is_expanded(const at::Tensor& t);

/// `t` with every zero-stride dimension of size > 1 narrowed to size 1: a view of the memory
/// `t` reads, each location once when the rest of `t` does not overlap itself.
at::Tensor unexpanded(const at::Tensor& t);

/// A clone of `t` with `t`'s sizes and strides where they can be kept: zero strides stay zero
/// (only the unexpanded part is copied), other strides as `clone(MemoryFormat::Preserve)`
/// gives them.
at::Tensor clone_keeping_layout(const at::Tensor& t);

/// Where an output lies inside an input: the output is `input.as_strided(sizes, strides,
/// input.storage_offset() + offset_delta)` (cases C24, C40).
struct InputView final {
  std::size_t position = 0;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
  std::int64_t offset_delta = 0;
  /// The output's conjugate and negative bits (`x.conj()` is a view with the conj bit set).
  bool conj = false;
  bool neg = false;
  /// True when the output is the input itself (same sizes, strides, offset and bits).
  bool whole = false;

  /// The view described of `input` (the caller's tensor at `position`).
  at::Tensor of(const at::Tensor& input) const;
};

/// `t` with the conjugate and negative bits of `like`: a tensor rebuilt over another's memory
/// (from_blob, set_, as_strided of an input) starts with neither, and a conj or neg view read
/// without its bit gives other values (`x.conj()`, `torch._neg_view(x)`).
at::Tensor with_math_bits_of(at::Tensor t, const at::Tensor& like);

/// How `output` lies in `input` when both share storage, else nullopt.
std::optional<InputView> view_of_input(const at::Tensor& output, const at::Tensor& input,
                                       std::size_t position);

}  // namespace graphdispatch
