#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstddef>
#include <optional>
#include <vector>

namespace graphdispatch {

/// The `out=` overload of a functional op, and how to call it with the functional's arguments.
struct OutVariant final {
  c10::OperatorHandle op;
  /// Positions of the functional's arguments the overload takes, in order; the ones it lacks
  /// are the tensor options of factory functions (dtype, layout, device, pin_memory), which the
  /// out tensors carry. The out tensors follow them, one per return.
  std::vector<std::size_t> arguments;
};

/// The overload of `functional`'s name that writes its N returns into N trailing keyword-only
/// `Tensor(a!)` arguments and otherwise takes the same arguments (names and types), as
/// native_functions.yaml spells every `.out` variant (`add.out`, `sum.IntList_out`,
/// `native_layer_norm.out`). nullopt when there is none. Looked up once per op and cached;
/// thread-safe.
std::optional<OutVariant> out_variant(const c10::OperatorHandle& functional);

}  // namespace graphdispatch
