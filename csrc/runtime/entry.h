#pragma once

#include "runtime/aliasing_plan.h"
#include "runtime/copy_pipeline.h"
#include "runtime/device_graph.h"
#include "runtime/fallback_reason.h"
#include "runtime/output_plan.h"
#include "runtime/runner_options.h"
#include "runtime/signature.h"
#include "runtime/tensor_layout.h"

#include <ATen/core/ivalue.h>
#include <c10/util/intrusive_ptr.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace graphdispatch {

// Note [Static inputs]
// Inputs Dynamo lifted from the module (parameters, buffers) are *static*: the graph reads
// them where they are, so they are never copied; their data pointers are part of the cache key
// (Note [Cache key]), so a moved one is another entry. An entry holds them weakly: it must not
// keep a deleted model alive (case C34); the runner drops an entry once one of its static
// inputs is freed, and the emulated graph reads them from the call being replayed. Every
// other tensor input is *dynamic*:
// the entry owns a buffer of the same shape, dtype and strides, the caller's values are
// copied in before each replay (skipped when the caller passes the buffer itself),
// and caller memory is never used as a buffer. Warmup and capture run on the buffers, so a
// write to a dynamic input reaches the caller only through the copy-back after replay:
// exactly once per call, as in eager.

// Note [Inference mode]
// Tensors made under torch.inference_mode() are inference tensors: they cannot be written
// outside it. An entry's buffers and static outputs are written by every replay, whatever the
// caller's mode, so capture always runs outside inference mode (grad mode as the call has it,
// which inference mode turns off). Kernels do not depend on the mode, so the cache key leaves it
// out and one entry serves calls in and out of inference mode (case C25).

// Note [A replay that raises]
// Eager's in-place writes before an op that raises stay written (`x.add_(1)`, then an index out
// of range): a service that catches the error sees them. A replay that raises copies the
// written buffers back to the caller's tensors before it rethrows, so the caller holds what the
// steps before the raising one wrote (each buffer not yet written holds the caller's own values,
// copied in): eager's state on graphs that replay the ops in order (the CPU graph, the
// emulated graph; case C81). Inductor moves the writes of in-place ops to the end of its
// compiled function, so on graph_with_compile a raising call writes nothing, as Inductor alone.

// Note [Capture]
// Entry::capture runs, in order, with the device's capture lock held (two captures at once
// would record each other's kernels) and the thread marked as capturing (CaptureScope):
// 1. Buffers: one per dynamic input, with the input's sizes and strides (zero strides kept),
//    filled from the caller's tensor; constants of the key are kept as values.
// 2. Warmup: warmup_iters eager runs on the buffers on the device's warmup stream, never the
//    capture stream (Note [Workspaces]; cases G1, G5).
// 3. Recording: one run on the capture stream into the device's graph pool (framework graphs:
//    _framework_graphs.py, cases G2, G3, G6), garbage collection and every public empty_cache
//    held off meanwhile (_capture_hold_off.py). Static inputs the graph writes are saved first
//    and put back after, so the call's own replay writes them once (Note [Static inputs that
//    are written]).
// Whatever throws between capture_begin and capture_end is aborted (the stream no longer
// captures), written static inputs and the RNG state are put back, and the call runs the
// callable on the caller's tensors, counted; where that succeeds the runner caches a negative
// entry (capture_failed), warned once, never retried per call, and where it raises too the
// failure was the call's (Note [Failed captures] in graph_runner.h). Interrupts propagate and
// leave nothing cached (Interrupt in runner_options.h; case C32). Warmup and capture run on the
// buffers, so a write to a dynamic input reaches the caller only by the copy-back after a
// replay: once per call, as in eager (case C5). A call arriving while a capture is under way on
// its stream or thread neither captures nor replays: it runs the callable, so its kernels land
// in the enclosing graph (DeviceGraphFactory::is_capturing; the emulated and CPU graphs emulate
// it, so the rule is tested on the CPU).

/// One captured signature: input buffers, a device graph, static outputs — or, for a
/// negative entry, only the reason capture was refused or failed. Ties together what capture
/// decides: the output plan (output_plan.h), the aliasing checks (aliasing_plan.h); admission
/// is decided before (admission.h), verification around a replay (replay_verification.h).
///
/// Owns its buffers and graph; destroying it resets the graph and frees the buffers. Thread-
/// safe: replays of one entry are serialised by its mutex (they share the static buffers).
class Entry final {
 public:
  /// Captures `fn` for the signature of `inputs`. Throws whatever capture threw; the stream
  /// is no longer capturing and the RNG state is as before when it does.
  static std::shared_ptr<Entry> capture(const Callable& fn, const std::vector<c10::IValue>& inputs,
                                        const std::vector<bool>& is_static,
                                        DeviceGraphFactory& graphs, const RunnerOptions& options);
  /// An entry that serves every call through the fallback path, for `reason`; `signature`
  /// is the call's signature in words (describe_signature).
  static std::shared_ptr<Entry> negative(FallbackReason reason, std::string detail,
                                         std::string signature);

  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry();

  bool is_negative() const { return graph_ == nullptr; }
  /// Why a negative entry serves calls without a graph; nullopt for a captured one.
  std::optional<FallbackReason> reason() const { return reason_; }
  const std::string& detail() const { return detail_; }
  c10::Device device() const { return device_; }
  /// The signature captured, in words (describe_signature).
  const std::string& signature() const { return signature_; }
  /// Bytes the entry holds: its input buffers plus what the capture added to the graph pool
  /// (or, for a graph without a pool, its static outputs). 0 for a negative entry.
  std::int64_t bytes() const { return bytes_; }
  /// Bytes its graph needs from memory all graphs share (DeviceGraph::shared_bytes), not in
  /// bytes(); 0 for a negative entry.
  std::int64_t shared_bytes() const { return graph_ ? graph_->shared_bytes() : 0; }
  std::int64_t replays() const { return replays_.load(std::memory_order_relaxed); }
  /// What the device graph holds, in words (DeviceGraph::describe); "" for a negative entry.
  std::string graph_description() const { return graph_ ? graph_->describe() : ""; }

  /// True for the first `limit` calls (across threads): those replays are verified.
  bool claim_verification(std::int64_t limit) {
    return verifications_.load(std::memory_order_relaxed) < limit &&
           verifications_.fetch_add(1, std::memory_order_relaxed) < limit;
  }

  /// The position of a static input the entry lost, or nullopt: one whose storage was freed
  /// (with the tensor, or replaced by `param.data = ...` or a swap) or given other memory.
  /// Such an entry can never serve a call again.
  std::optional<std::size_t> lost_static_input() const;
  /// The checks a call makes before it replays (AliasingPlan::static_overlap).
  const AliasingPlan& aliasing() const { return aliasing_; }
  /// How replays hand out outputs; output k views an input when outputs().view(k) is set.
  const OutputPlan& outputs() const { return outputs_; }
  /// Positions of the dynamic inputs, of the dynamic inputs the graph writes, and of the
  /// static inputs it writes (marked with mark_static_address).
  const std::vector<std::size_t>& dynamic_positions() const { return dynamic_positions_; }
  const std::vector<std::size_t>& dynamic_written() const { return dynamic_written_; }
  const std::vector<std::size_t>& static_written() const { return static_written_; }
  /// copy changed dynamic inputs → replay → copy written inputs back → outputs (clones in safe
  /// output mode). Throws c10::Error "input mismatch at position i: ..." if `inputs` do not
  /// match the capture (an invariant behind the complete cache key).
  std::vector<c10::IValue> replay(const std::vector<c10::IValue>& inputs,
                                  const RunnerOptions& options);
  /// The device graph replayed once on the buffers as they are, nothing around it (no copies,
  /// no outputs): what a replay costs without the runner, to measure the runner's overhead.
  /// For graphs that record their work; the emulated graph needs a call to re-run.
  void replay_graph();
  /// The inputs the graph reads for a call with `inputs`: the entry's buffers for dynamic
  /// inputs, the call's tensors for static ones, the constants. Passing these back skips the
  /// copies.
  std::vector<c10::IValue> arguments(const std::vector<c10::IValue>& inputs) const;

 private:
  Entry() = default;
  void fill_buffers(const std::vector<c10::IValue>& inputs);
  /// The copy-back after a replay, or after one that raised: written dynamic inputs copied to
  /// the caller's tensors, written static inputs' versions bumped.
  void hand_back_writes(const std::vector<c10::IValue>& inputs, const RunnerOptions& options);
  /// What the entry holds, once captured (see bytes()).
  std::int64_t count_bytes() const;
  /// Runs `fn` on the buffers (and the call's static inputs) and records which dynamic
  /// buffers it wrote.
  std::vector<c10::IValue> run_on_buffers(const Callable& fn,
                                          const std::vector<c10::IValue>& inputs);
  /// The tensors a copy between the caller's dynamic input `t` (the k-th) and its buffer moves
  /// (Note [Expanded tensors]).
  at::Tensor copied_part(const at::Tensor& t, std::size_t k) const {
    return expanded_[k] ? unexpanded(t) : t;
  }

  c10::Device device_{c10::kCPU};
  // Per input position: the buffer of a dynamic input, the value of a constant, None for a
  // static input (Note [Static inputs]: held weakly, in static_refs_).
  std::vector<c10::IValue> input_buffers_;
  // Their storages, not the tensors: torch.utils.swap_tensors refuses a tensor with any weak
  // reference, C++ ones included, and module.to() / load_state_dict(assign=True) swap
  // parameters that way (case C45).
  std::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> static_refs_;
  std::vector<const void*> static_data_ptrs_;  // storages' at capture; compared, never read
  const std::vector<c10::IValue>* replaying_ = nullptr;  // the call replaying, under mutex_
  std::vector<std::size_t> dynamic_positions_;
  std::vector<bool> expanded_;  // per dynamic input: copied through its unexpanded part
  std::vector<std::size_t> static_positions_;
  // Static inputs the graph writes in place (tensors marked with mark_static_address): put
  // back after capture (Note [Static inputs that are written] in entry.cpp).
  std::vector<std::size_t> static_written_;
  std::vector<std::size_t> dynamic_written_;
  OutputPlan outputs_;  // under mutex_ once captured
  AliasingPlan aliasing_;
  std::unique_ptr<DeviceGraph> graph_;
  CopyPipeline* pipeline_ = nullptr;  // not owned: pipelines live for the whole process
  std::optional<CallOrder> order_;    // the device order of calls on the buffers (case G4)
  std::optional<FallbackReason> reason_;
  std::string detail_;
  std::string signature_;
  std::int64_t bytes_ = 0;
  std::atomic<std::int64_t> replays_{0};  // written under mutex_, read without it
  std::atomic<std::int64_t> verifications_{0};
  std::mutex mutex_;
};

}  // namespace graphdispatch
