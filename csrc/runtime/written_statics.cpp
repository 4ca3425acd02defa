#include "runtime/written_statics.h"

#include <utility>

namespace graphdispatch {

WrittenStatics::WrittenStatics(const std::vector<c10::IValue>& inputs,
                               std::vector<std::size_t> positions)
    : positions_(std::move(positions)) {
  values_.reserve(positions_.size());
  for (auto i : positions_) {
    values_.push_back(inputs[i].toTensor().clone(at::MemoryFormat::Preserve));
  }
}

void WrittenStatics::put_back(const std::vector<c10::IValue>& inputs) const {
  for (std::size_t k = 0; k < positions_.size(); ++k) {
    inputs[positions_[k]].toTensor().copy_(values_[k]);
  }
}

}  // namespace graphdispatch
