#pragma once

#include "runtime/cpu_graph/op_recorder.h"
#include "runtime/cpu_graph/workspace.h"
#include "runtime/device_graph.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace graphdispatch {

// Note [CPU graph]
// The CPU has no device graph in PyTorch; this is one. Capture runs the work once while an
// OpRecorder takes every op below autograd (Note [Recording ops]); capture_end turns the ops
// into a program of steps, each an operator, the dispatch keys of the kernel the capture ran
// (those below the recorder's) and a fixed argument stack, redispatched to that kernel; what
// the kernel calls inside dispatches from the top as it did at capture, with the thread's
// dispatch keys the op ran with put back around it (autocast off in a region that turns it
// off, whatever the caller's autocast is):
// - a functional op whose returns are new tensors calls its `out=` overload (out_variant.h)
//   with the recorded returns as the out tensors, where the capture proved the overload gives
//   the op's bytes (case C58; a random op, whose second run would draw other numbers, takes
//   ATen's overload unproven); otherwise it calls the op and copies its new returns, lists of
//   new tensors included (case C72), into the recorded ones (the part a zero stride does not
//   repeat, case C62);
//   An asynchronous functional collective's returns are waited for (`wait_tensor`) before the
//   copy: the work is registered under the tensor the call returns, so the recorded wait,
//   which names the copy, finds none (case C60);
// - in-place and out= ops, ops with no returns (`_assert_async`, `_linalg_check_errors`: kept
//   for their effect, case C59) and ops of other libraries that return no new tensor (a custom
//   op writing its argument, `wait_tensor`) are called as recorded;
// - ATen ops whose returns alias storage that exists already (views: `t`, `view`, `expand`),
//   metadata-only ATen ops (`unsqueeze_`, `resize_`, size queries) and allocations (`empty`)
//   are dropped: every storage is fixed, so their results are the same tensors every replay.
// Where each storage lives is decided once, and only for storage the entry can vouch for
// (the capture audit); anything else refuses the capture with the reason:
// - the entry's input buffers and static inputs (capture_inputs) are read through non-owning
//   tensors at the same address: the program keeps no model alive (case C34), and the cache
//   key's static addresses plus the runner's lost-input checks make sure a replay runs only
//   while that memory holds what the call passes. Any other tensor made before the work and
//   held elsewhere (autocast's cast cache, a global) is refused (case C54);
// - a tensor made outside the dispatcher that nothing but the recording holds (a Python
//   number wrapped as a tensor) is a constant of the graph, kept with its values, which are
//   put back before every replay where the program hands it out; one the program writes is
//   refused;
// - a literal (`torch.tensor([...])`: made and filled by Python, then `lift_fresh`) is a
//   constant too, with the bytes it had when lifted put back before every replay where the
//   program writes it or hands it out (cases C56, C65);
// - an `empty` result that a replayed step reads or hands out before one writes it was filled
//   outside the dispatcher (a kernel's own loop, as `max_pool1d`'s): refused, it would replay
//   the capture's values (case C57);
// - the tensors the work made are placed by lifetime (memory_plan.h): the outputs in the
//   program's own arena, the intermediates in the workspace every CPU graph shares (Note
//   [Shared workspace]), so an entry holds about the forward's peak rather than the sum of its
//   activations (case C44), and N entries one peak. One that something else holds too (a
//   custom op's memoised table, a hook's saved result) is never moved: the program gets its own
//   copy in its arena, which the op's replay refreshes, and refuses the capture where the
//   program writes it or returns it (case C55). Neither a Python kernel's result's own Python
//   wrapper nor the base an output view holds (a literal returned as a view) is something else
//   (wrapper_only in op_recorder.h, case C93). An intermediate something still holds when the
//   capture ends (a kernel kept its argument) is in the arena too, out of the shared workspace.
// Replay leases a block of the shared workspace and points the intermediates into it, puts
// back the bytes of the constants and literals named above, then walks the steps in C++
// without Python or the GIL.
//
// Note [Deterministic fill]
// Under torch.use_deterministic_algorithms(True) with
// torch.utils.deterministic.fill_uninitialized_memory (on by default), every `empty`-like kernel
// fills its result (NaN, or an integer type's largest value) inside the kernel, where the
// recorder does not see it. A capture under that mode replays each allocation as that fill,
// so the part of a tensor no op writes holds eager's values on every replay (case C82); the
// cache key holds both flags (Note [Cache key]), so the mode never shares an entry. A `resize_`
// that grows a tensor fills its new part the same way inside the kernel and is not replayed.

/// The CPU graph (Note [CPU graph]). Not thread-safe: each Entry serialises its calls.
class CpuGraph final : public DeviceGraph, public Workspace::Tenant {
 public:
  CpuGraph() = default;
  CpuGraph(const CpuGraph&) = delete;
  CpuGraph& operator=(const CpuGraph&) = delete;
  ~CpuGraph() override { Workspace::get().leave(this); }
  /// The storages the audit vouches for (Note [CPU graph]), until capture_end or abort.
  void capture_inputs(const std::vector<c10::IValue>& arguments) override;
  void capture_begin(std::function<void()> rerun) override;
  /// Builds the program from the recording.
  void capture_end(const std::vector<c10::IValue>& outputs) override;
  void capture_abort() noexcept override;
  void replay() override;
  void reset() override;
  bool runs_during_capture() const override { return true; }
  /// The bytes the program owns: its arena (its outputs) and its constants.
  std::optional<std::int64_t> pool_bytes() const override { return arena_bytes_; }
  /// Its intermediates' plan, in the shared workspace (Note [Shared workspace]).
  std::int64_t shared_bytes() const override { return workspace_need_.bytes(); }
  /// "N ops recorded, K replayed (J through out=, C copied), arena B bytes, workspace W bytes
  /// (shared)[, R constants put back]" (the last part where R > 0).
  std::string describe() const override;
  /// Note [Shared workspace]: repointed when the largest need changes, unless replaying.
  void repoint_if_idle(const std::shared_ptr<Workspace::Block>& block) override;

  /// Storages in the shared workspace, with their offsets in a block (bytes).
  using WorkspaceSlots = std::vector<std::pair<c10::intrusive_ptr<c10::StorageImpl>, std::int64_t>>;

 private:
  struct Step final {
    c10::OperatorHandle op;
    c10::DispatchKeySet keys;
    std::vector<c10::IValue> arguments;
    /// Per return of a copied op, per tensor in it (one, or a list's): where its value is
    /// copied (undefined: not copied).
    std::vector<std::vector<at::Tensor>> copy_to;
    /// An asynchronous collective (`_c10d_functional::all_reduce`, ...): its returns are read
    /// only after `wait_tensor` on them, since its recorded wait names the copy (case C60).
    bool waits = false;
    /// The thread's dispatch keys as the op ran at capture (RecordedOp::tls), set around it.
    c10::impl::LocalDispatchKeySet tls;
  };
  /// A constant's bytes, put back before every replay.
  struct Restore final {
    at::Tensor live;      // the constant's storage, as bytes
    at::Tensor pristine;  // what it held when made
  };
  /// The program from the recording: classify the ops and storages, mark the outputs, audit
  /// (Note [CPU graph]), place the arena, keep the external storage, move the tensors, emit.
  void build(std::vector<RecordedOp> ops, const std::vector<c10::IValue>& outputs);
  /// The step replaying `op`: through its out= overload, or called as recorded, its new
  /// returns copied into place where `fresh` (per return, per tensor) says so.
  static Step emit(RecordedOp op, bool through_out, const std::vector<std::vector<bool>>* fresh);
  /// The step filling what `allocation` (`empty`, ...) returned as its kernel did under
  /// deterministic mode (Note [Deterministic fill]).
  static Step emit_fill(const RecordedOp& allocation);
  /// Points the intermediates into `block`, unless they point there already.
  void bind(const std::shared_ptr<Workspace::Block>& block);

  std::unique_ptr<OpRecorder> recorder_;
  std::unordered_set<const c10::StorageImpl*> vouched_;
  std::vector<Step> steps_;
  std::vector<Restore> restores_;
  torch::jit::Stack stack_;  // reused by every step of every replay
  std::int64_t arena_bytes_ = 0;
  // The intermediates' storages and their offsets in a workspace block; the block they point
  // into (kept alive by them).
  WorkspaceSlots in_workspace_;
  Workspace::Need workspace_need_;
  const Workspace::Block* bound_ = nullptr;
  std::mutex replaying_;  // held by replay(), tried by repoint_if_idle()
  std::int64_t recorded_ = 0, through_out_ = 0, copied_ = 0;
  bool deterministic_fill_ = false;  // at capture_begin (Note [Deterministic fill])
};

/// True on a thread between a CPU graph's capture_begin and its capture_end/abort: a
/// compiled function called there runs its work, which the outer capture records.
bool& cpu_graph_capturing();

/// In a forked child: forgets the `out=` overload cache (out_variant.h), leaked, and replaces
/// the workspace's mutex (Note [Fork] in _once.py; case C67).
void reset_cpu_graph_after_fork();

/// Runs `held` on the calling thread with the `out=` overload cache's lock taken: how a test
/// forks while another thread holds it (case C67).
void with_out_variants_locked(const std::function<void()>& held);

class CpuGraphFactory final : public DeviceGraphFactory {
 public:
  std::unique_ptr<DeviceGraph> create(c10::Device) override { return std::make_unique<CpuGraph>(); }
  bool is_capturing(c10::Device) override { return cpu_graph_capturing(); }
  std::string name() const override { return "cpu"; }
};

}  // namespace graphdispatch
