#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

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

/// `out_variant(functional)` when calling it on `arguments` (the functional's, unchanged since
/// it ran with dispatch keys `keys`) into new tensors laid out as `returns` gives `returns` byte
/// for byte, sizes and strides included; nullopt otherwise, or when the overload raises. An
/// `out=` kernel is not always the functional op: `binary_cross_entropy.out` uses `out` as an
/// elementwise buffer of the input's shape (case C58), so the CPU graph replays through an
/// overload only where this call proved it. Runs the overload once, below the recorder, with
/// its warnings silenced (a resize it makes is part of the disproof).
std::optional<OutVariant> proven_out_variant(const c10::OperatorHandle& functional,
                                             c10::DispatchKeySet keys,
                                             const std::vector<c10::IValue>& arguments,
                                             const std::vector<c10::IValue>& returns);

/// The keys to redispatch `op` with on `arguments`: `keys` plus those below the recorder of
/// every tensor argument, without BackendSelect where `op` has no kernel there (a factory op's
/// out= overload dispatches on its out tensors, not on BackendSelect's choice).
c10::DispatchKeySet redispatch_keys(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                                    const std::vector<c10::IValue>& arguments);

}  // namespace graphdispatch
