#pragma once

#include "runtime/copy_pipeline.h"
#include "runtime/device_graph.h"
#include "runtime/memory_span.h"
#include "runtime/runner_options.h"
#include "runtime/signature.h"
#include "runtime/stats.h"
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
// copied in before each replay (skipped when the caller passes the buffer itself, seed C1),
// and caller memory is never used as a buffer. Warmup and capture run on the buffers, so a
// mutation of a dynamic input reaches the caller only through the copy-back after replay:
// exactly once per call, as in eager.

// Note [Inference mode]
// Tensors made under torch.inference_mode() are inference tensors: they cannot be written
// outside it. An entry's buffers and static outputs are written by every replay, whatever the
// caller's mode, so capture always runs outside inference mode (grad mode as the call has it,
// which inference mode turns off). Kernels do not depend on the mode, so the cache key leaves it
// out and one entry serves calls in and out of inference mode (case C25).

// Note [Random numbers]
// Warmup (and the emulated graph's capture run) are runs eager would not make; for a graph
// with random ops, the default generator of the device is saved before them and restored
// after, so "manual_seed then N calls" gives eager's numbers whatever the cache state was.
// Another thread drawing from that generator meanwhile has its draws rewound, so they repeat
// (docs/usage.md). A graph without random ops (the Python layer reads the ops' tags) never
// touches the generator: no save, no restore, no lock (cases C29, C33). The generator's mutex
// is held only inside get_state/set_state, never across a capture, so a fork during a capture
// cannot leave it locked in the child.

// Note [Outputs]
// Safe output mode hands out copies as eager would have made them: outputs that share a
// storage (`y, y[0], y.t()`) and outputs that do not cover their storage densely (`y[:, ::2]`)
// are rebuilt on one copy of that storage per call, keeping their mutual aliasing and strides
// (case C37); a dense output alone in its storage is cloned directly (the common, cheap path).
// Unsafe mode hands out fresh tensor objects over the static outputs on every call, so the
// caller's metadata changes (unsqueeze_, requires_grad_) never reach the next call (case
// C31); their storage cannot be resized, since a resize would move the memory the graph
// writes. A mutated input that lies in a static output (a previous output passed back in,
// `z = c(y)`) is not copied back: the copy-back would overwrite this call's output, and in
// unsafe mode the earlier output is invalid after the replay anyway (case C30).

// Note [Outputs still held]
// An unsafe output lies in the entry's static output, which the entry's next replay overwrites.
// Whoever still references it then — the caller, or a library such as diffusers' First-Block-
// Cache keeping the previous step's residuals (case C46) — would read the new values in place
// of its own, silently. So each replay first looks at the storages the previous one handed out
// (weakly held: one refcount load per output) and gives each one still referenced memory of
// its own holding its values (one copy, counted in Stats::held_outputs_copied) before the
// graph writes the static outputs: what the caller holds never changes under it, in either
// output mode. Outputs no one holds any more cost nothing; unsafe mode saves its copy on the
// calls whose previous outputs are gone (dropped, or rebound) by the next call of the entry.
// Two held outputs sharing one static storage each get their own copy: their values stay
// right, the link between them does not.

// Note [Verified replays]
// With verify_replays=K the first K replays of each entry also run the callable on clones of
// the dynamic inputs from the same RNG state, and compare every output: exactly (rtol = atol
// = 0, NaN equal to NaN) or within the tolerances. Static inputs are used in place; the ones
// the graph writes are put back before the replay writes them again, so a static input that
// views another sees the write as in eager. A stale graph (a kernel that read a pointer baked
// in at capture, a buffer a replay forgot to refresh) then shows up as a mismatch instead of a
// wrong image. On a mismatch the call returns the non-graph outputs and writes the non-graph
// values of mutated inputs to the caller's tensors; the runner disables the entry.

/// Marks this thread as inside a capture (its warmup included) for its lifetime. A compiled
/// function called from there (a custom op calling another compiled model) runs without a
/// graph: its work lands in the outer graph, and taking the device's capture lock again would
/// deadlock.
class CaptureScope final {
 public:
  CaptureScope();
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
};
bool capturing_on_this_thread();

/// The device a call runs on: the first non-CPU tensor input's, else the CPU.
c10::Device device_of(const std::vector<c10::IValue>& inputs);

/// One captured signature: static input buffers, a device graph, static outputs — or, for a
/// negative entry, only the reason capture was refused or failed.
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
  static std::shared_ptr<Entry> negative(std::string reason, std::string detail,
                                         std::string signature);

  /// Why a call with these inputs cannot be captured, with the input that decides it.
  struct Refusal final {
    /// mixed_devices, aliased_inputs (overlapping dynamic inputs, one of them written: Note
    /// [Aliasing]), requires_grad, explicit_generator, unsupported_tensor;
    /// "" when the call can be captured. Self-overlapping inputs are not refused: a buffer with
    /// the same strides overlaps the same way, so a copy writes each location one value.
    std::string reason;
    /// "input 3: [2, 4]/float32 strides (1, 0)", or for aliasing "input 2: [4]/float32
    /// strides (1) overlaps input 1 in memory" (the later of the two).
    std::string detail;
  };
  static Refusal refusal(const std::vector<c10::IValue>& inputs, const Signature& sig,
                         const RunnerOptions& options);

  Entry(const Entry&) = delete;
  Entry& operator=(const Entry&) = delete;
  ~Entry();

  bool is_negative() const { return graph_ == nullptr; }
  const std::string& reason() const { return reason_; }
  const std::string& detail() const { return detail_; }
  c10::Device device() const { return device_; }
  /// The signature captured, in words (describe_signature).
  const std::string& signature() const { return signature_; }
  /// Bytes the entry holds: its input buffers plus what the capture added to the graph pool
  /// (or, for a graph without a pool, its static outputs). 0 for a negative entry.
  std::int64_t bytes() const { return bytes_; }
  std::int64_t replays() const { return replays_.load(std::memory_order_relaxed); }
  /// What the device graph holds, in words (DeviceGraph::describe); "" for a negative entry.
  std::string graph_description() const { return graph_ ? graph_->describe() : ""; }

  /// True for the first `limit` calls (across threads): those replays are verified.
  bool claim_verification(std::int64_t limit) {
    return verifications_.load(std::memory_order_relaxed) < limit &&
           verifications_.fetch_add(1, std::memory_order_relaxed) < limit;
  }
  /// A replay checked against the non-graph path (Note [Verified replays]).
  struct Verified final {
    /// The replay's outputs, or on a mismatch the non-graph path's.
    std::vector<c10::IValue> outputs;
    /// "" when every output matched, else what differed ("output 0: max |difference| ...").
    std::string mismatch;
  };
  Verified replay_verified(const Callable& fn, const std::vector<c10::IValue>& inputs,
                           const RunnerOptions& options);

  /// The position of a static input the entry lost, or nullopt: one whose storage was freed
  /// (with the tensor, or replaced by `param.data = ...` or a swap) or given other memory.
  /// Such an entry can never serve a call again.
  std::optional<std::size_t> lost_static_input() const;
  /// (dynamic position, static position) of a written dynamic input overlapping a static
  /// input, or of a dynamic input overlapping a written static one (Note [Aliasing]); such a
  /// call must not replay. Free for graphs that write no input.
  std::optional<std::pair<std::size_t, std::size_t>> static_overlap(
      const std::vector<c10::IValue>& inputs) const;
  /// copy changed dynamic inputs → replay → copy mutations back → outputs (clones in safe
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
  /// copies (seed C1).
  std::vector<c10::IValue> arguments(const std::vector<c10::IValue>& inputs) const;

 private:
  Entry() = default;
  void fill_buffers(const std::vector<c10::IValue>& inputs);
  /// What the entry holds, once captured (see bytes()).
  std::int64_t count_bytes() const;
  /// Runs `fn` on the buffers (and the call's static inputs) and records which dynamic
  /// buffers it mutated.
  std::vector<c10::IValue> run_on_buffers(const Callable& fn,
                                          const std::vector<c10::IValue>& inputs);
  /// The emulated graph's replay: `fn` on the buffers of the call being replayed.
  void rerun_into_outputs(const Callable& fn);
  /// After the capture run: which outputs view inputs, how each output is handed out, which
  /// spans the aliasing checks read (Notes [Outputs], [Aliasing]).
  void plan_outputs(const std::vector<c10::IValue>& inputs);
  void plan_aliasing_checks(const std::vector<c10::IValue>& inputs, const RunnerOptions& options);
  /// The outputs of one replay, as the output mode and Note [Outputs] say.
  std::vector<c10::IValue> hand_out(const std::vector<c10::IValue>& inputs, bool safe) const;
  /// Note [Outputs still held]: moves the unsafe outputs of the previous replay that are still
  /// referenced into memory of their own; remembers the ones `outputs` hands out now.
  void copy_away_held_outputs();
  void remember_handed_out(const std::vector<c10::IValue>& outputs);
  /// The tensors a copy between the caller's input `i` and its buffer moves (Note [Expanded
  /// tensors]).
  at::Tensor copied_part(const at::Tensor& t, std::size_t k) const {
    return expanded_[k] ? unexpanded(t) : t;
  }

  c10::Device device_{c10::kCPU};
  // Per input position: the buffer of a dynamic input, the value of a constant, None for a
  // static input (Note [Static inputs]: held weakly, in static_refs_).
  std::vector<c10::IValue> inputs_;
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
  std::vector<c10::IValue> static_outputs_;
  // Per output: where it lies in an input, for outputs that are (views of) inputs. Such an
  // output is rebuilt on the caller's tensor, as eager returns it (cases C24, C40).
  std::vector<std::optional<InputView>> output_views_;
  // Per output: -1 to clone it directly, else the index of the storage copied once per call
  // it is rebuilt on (safe mode; Note [Outputs]).
  std::vector<std::int64_t> output_group_;
  std::vector<at::Tensor> group_storages_;  // each as a byte tensor over the whole storage
  SpanSet output_spans_;  // the static outputs' memory, for the copy-back check (case C30)
  // Unsafe mode: (output position, its storage) of what the last replay handed out, weakly
  // held (Note [Outputs still held]). Under mutex_.
  std::vector<std::pair<std::size_t, c10::weak_intrusive_ptr<c10::StorageImpl>>> handed_out_;
  // Note [Aliasing]: the spans a written input could reach.
  std::vector<bool> written_;        // per position: the graph writes this dynamic input
  SpanSet static_spans_;             // every static input, when a dynamic input is written
  SpanSet written_static_spans_;     // the static inputs the graph writes
  std::unique_ptr<DeviceGraph> graph_;
  CopyPipeline* pipeline_ = nullptr;  // not owned: pipelines live for the whole process
  std::optional<CallOrder> order_;  // the device order of calls on the buffers (case G4)
  std::string reason_;
  std::string detail_;
  std::string signature_;
  std::int64_t bytes_ = 0;
  std::atomic<std::int64_t> replays_{0};  // written under mutex_, read without it
  std::atomic<std::int64_t> verifications_{0};
  std::mutex mutex_;
};

}  // namespace graphdispatch
