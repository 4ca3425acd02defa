#pragma once

#include "runtime/cpu_graph/out_variant.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace graphdispatch {

/// One op the recorder saw: the operator, the dispatch keys below the recorder's it ran with
/// (the kernel), and its arguments and returns as they were after it ran. Each tensor is a new
/// TensorImpl over the op's storage with the sizes, strides and offset it had then (an out=
/// argument at the size the op gave it), so a later in-place metadata change (`unsqueeze_`,
/// `resize_`) does not rewrite what an earlier op saw.
struct RecordedOp final {
  c10::OperatorHandle op;
  c10::DispatchKeySet keys;
  std::vector<c10::IValue> arguments;
  std::vector<c10::IValue> returns;
  /// For a functional op whose returns are new tensors: its `out=` overload where this call
  /// proved it gives the same bytes (proven_out_variant), or, for a random op, where it has one.
  std::optional<OutVariant> out;
  /// For `lift_fresh` and `lift_fresh_copy` (the end of `torch.tensor`, `new_tensor`,
  /// `as_tensor`): the bytes of the literal's whole storage when it was lifted, which Python
  /// wrote outside the dispatcher and the program may write later (case C56).
  at::Tensor literal;
  /// Per return, right after the op: a tensor that something besides the op's returns holds
  /// (a global, a memoised table, a hook's saved result), which the graph must not move.
  std::vector<bool> held;
  /// The thread's included and excluded dispatch keys while the op ran, the recorder's key left
  /// out of both: what the ops its kernel calls dispatch with, such as autocast turned off
  /// inside an autocast region (Note [CPU graph]). Replayed through as_captured().
  c10::impl::LocalDispatchKeySet tls;
};

/// True for `lift_fresh` and `lift_fresh_copy`: what PyTorch calls on a tensor it filled from
/// Python data (a literal).
bool lifts_a_literal(const c10::OperatorHandle& op);

/// True for a functional collective that returns before its work is done (every
/// `_c10d_functional` op but `wait_tensor`): the work holds its returns until the wait (case
/// C60), so they are new tensors, not held elsewhere.
bool is_async_collective(const c10::OperatorHandle& op);

/// 1 when `impl` has a Python wrapper that nothing in Python refers to, else 0. A tensor a Python
/// kernel made and returned (a torch.library.custom_op's result) keeps its wrapper while C++
/// holds it, and the wrapper holds one reference (PyTorch's c10/util/intrusive_ptr.h, on PyObject
/// preservation) that is no other holder (case C93); a wrapper something
/// in Python refers to (a memoised table, a global) is one. Reads the wrapper's count without the
/// GIL, as the capture reads every other reference count: a capture is one thread's work.
std::size_t wrapper_only(const c10::TensorImpl* impl);

/// True for ops that allocate without writing (`empty`, `empty_like`, ...): what the memory
/// holds when read comes from outside the dispatcher, unless a recorded op writes it first.
bool uninitialized(const c10::OperatorHandle& op);

// Note [Recording ops]
// The CPU graph records at dispatch key Fake, which sits below autograd, autocast, Python modes
// and functionalization and above BackendSelect and the kernels: the ops seen there are the
// kernels a device graph would record (composites already decomposed, autocast's casts
// included). A boxed fallback on that key runs only while a recorder is active on the thread
// (the key is in the thread's included set); it records the op, then runs it below the key with
// the key excluded, so ops a kernel calls internally are not recorded twice. PyTorch 2.13
// registers nothing at Fake (its C++ fake tensors are not built); the registration fails
// loudly if a later version does. Ops that read tensor values on the host (tags
// data_dependent_output, dynamic_output_shape: `item`, `nonzero`, `equal`) throw at record
// time naming the op, as a device capture fails on a host synchronisation, so no value read at
// capture is baked into replays. `index.Tensor` carries dynamic_output_shape for its boolean
// indices only: with integer indices its shape is theirs, and it records (case C69).

/// Records, on this thread and for its lifetime, every op that reaches the dispatcher below
/// autograd (Note [Recording ops]). Not copyable; one recorder per thread at a time.
class OpRecorder final {
 public:
  OpRecorder();
  ~OpRecorder();
  OpRecorder(const OpRecorder&) = delete;
  OpRecorder& operator=(const OpRecorder&) = delete;

  /// The ops recorded so far, in the order they ran; the recorder keeps recording.
  std::vector<RecordedOp> take() { return std::move(ops_); }
  /// Called by the fallback: records `op`, whose arguments are on `stack`, and runs it.
  void record(const c10::OperatorHandle& op, c10::DispatchKeySet below, torch::jit::Stack* stack);

 private:
  std::vector<RecordedOp> ops_;
  c10::impl::IncludeDispatchKeyGuard include_;
};

/// `captured` (RecordedOp::tls) with the recorder's key as `now` (the replaying thread's keys)
/// has it, so a replay neither records its nested calls nor hides them from a recorder that is
/// active (a compiled model a custom op calls, captured while the outer graph replays).
c10::impl::LocalDispatchKeySet as_captured(c10::impl::LocalDispatchKeySet captured,
                                           const c10::impl::LocalDispatchKeySet& now);

/// The keys below the recorder's in `keys`: where the recorded kernels are.
c10::DispatchKeySet below_recorder(c10::DispatchKeySet keys);

/// The argument of `v` with every tensor (also inside lists) replaced by `f(tensor)`.
c10::IValue map_tensors(const c10::IValue& v,
                        const std::function<at::Tensor(const at::Tensor&)>& f);

}  // namespace graphdispatch
