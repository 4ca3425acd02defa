#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <cstddef>
#include <vector>

namespace graphdispatch {

/// The values of the static inputs a graph writes, taken before a run that writes them for
/// real (warmup, an emulated capture, the non-graph run of a verified replay) so that they can
/// be put back and the call's own replay applies the write once (Note [Static inputs that are
/// written] in entry.cpp). `positions` index the call's `inputs`, each a tensor; every value
/// is a clone keeping its layout (one allocation and copy per written static input).
class WrittenStatics final {
 public:
  WrittenStatics(const std::vector<c10::IValue>& inputs, std::vector<std::size_t> positions);

  /// Copies each saved value back into the input it was taken from.
  void put_back(const std::vector<c10::IValue>& inputs) const;

 private:
  std::vector<std::size_t> positions_;
  std::vector<at::Tensor> values_;
};

}  // namespace graphdispatch
