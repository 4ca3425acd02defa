#include "runtime/tensor_layout.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <utility>

namespace graphdispatch {

bool is_expanded(const at::Tensor& t) {
  const auto sizes = t.sizes();
  const auto strides = t.strides();
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (strides[d] == 0 && sizes[d] > 1) return true;
  }
  return false;
}

at::Tensor unexpanded(const at::Tensor& t) {
  std::vector<std::int64_t> sizes(t.sizes().begin(), t.sizes().end());
  const auto strides = t.strides();
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] == 0) sizes[d] = std::min<std::int64_t>(sizes[d], 1);
  }
  return t.as_strided(sizes, strides, t.storage_offset());
}

at::Tensor clone_keeping_layout(const at::Tensor& t) {
  if (!is_expanded(t)) return t.clone(at::MemoryFormat::Preserve);
  return unexpanded(t).clone(at::MemoryFormat::Preserve).expand(t.sizes());
}

namespace {

at::Tensor with_math_bits(at::Tensor t, bool conj, bool neg) {
  if (t.is_conj() != conj) t._set_conj(conj);
  if (t.is_neg() != neg) t._set_neg(neg);
  return t;
}

}  // namespace

at::Tensor with_math_bits_of(at::Tensor t, const at::Tensor& like) {
  return with_math_bits(std::move(t), like.is_conj(), like.is_neg());
}

at::Tensor InputView::of(const at::Tensor& input) const {
  if (whole) return input;
  return with_math_bits(input.as_strided(sizes, strides, input.storage_offset() + offset_delta),
                        conj, neg);
}

std::optional<InputView> view_of_input(const at::Tensor& output, const at::Tensor& input,
                                       std::size_t position) {
  if (!output.defined() || !input.defined() || !output.is_alias_of(input)) return std::nullopt;
  TORCH_CHECK(output.dtype() == input.dtype(), "graphdispatch: output is a view of input ",
              position, " with another dtype (", output.dtype().name(), " of ",
              input.dtype().name(), "); such a graph is served by the non-graph path");
  InputView view;
  view.position = position;
  view.sizes.assign(output.sizes().begin(), output.sizes().end());
  view.strides.assign(output.strides().begin(), output.strides().end());
  view.offset_delta = output.storage_offset() - input.storage_offset();
  view.conj = output.is_conj();
  view.neg = output.is_neg();
  view.whole = view.offset_delta == 0 && output.sizes() == input.sizes() &&
               output.strides() == input.strides() && view.conj == input.is_conj() &&
               view.neg == input.is_neg();
  return view;
}

}  // namespace graphdispatch
