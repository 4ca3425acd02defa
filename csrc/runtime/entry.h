#pragma once

#include "runtime/copy_pipeline.h"
#include "runtime/device_graph.h"
#include "runtime/runner_options.h"
#include "runtime/signature.h"
#include "runtime/stats.h"
#include "runtime/tensor_layout.h"

#include <ATen/core/ivalue.h>

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
// them where they are, so they are never copied; their data pointers are compared on every
// call and a moved one makes the runner re-capture. Every other tensor input is *dynamic*:
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

// Note [Verified replays]
// With verify_replays=K the first K replays of each entry also run the callable on clones of
// the dynamic inputs (static inputs are read, never written, by both) from the same RNG state,
// and compare every output: exactly (rtol = atol = 0, NaN equal to NaN) or within the
// tolerances. A stale graph (a kernel that read a pointer baked in at capture, a buffer a
// replay forgot to refresh) then shows up as a mismatch instead of a wrong image. On a
// mismatch the call returns the non-graph outputs and writes the non-graph values of mutated
// inputs to the caller's tensors; the runner disables the entry.

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
    /// mixed_devices, aliased_inputs, requires_grad, explicit_generator, unsupported_tensor;
    /// "" when the call can be captured. Self-overlapping inputs are not refused: a buffer with
    /// the same strides overlaps the same way, so a copy writes each location one value.
    std::string reason;
    /// "input 3: [2, 4]/float32 strides (1, 0)", or for aliasing "input 2: [4]/float32
    /// strides (1) overlaps input 1 in memory" (the later of the two).
    std::string detail;
  };
  static Refusal refusal(const std::vector<c10::IValue>& inputs, const Signature& sig);

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
  /// Captures of this signature so far: 1, plus one per re-capture after a parameter moved.
  std::int64_t captures() const { return captures_; }
  void set_captures(std::int64_t n) { captures_ = n; }
  std::int64_t replays() const { return replays_.load(std::memory_order_relaxed); }

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

  /// True when every static input is still where it was at capture.
  bool static_inputs_in_place(const std::vector<c10::IValue>& inputs) const;
  /// copy changed dynamic inputs → replay → copy mutations back → outputs (clones in safe
  /// output mode). Throws c10::Error "input mismatch at position i: ..." if `inputs` do not
  /// match the capture (an invariant behind the complete cache key).
  std::vector<c10::IValue> replay(const std::vector<c10::IValue>& inputs,
                                  const RunnerOptions& options);
  /// The inputs the graph reads: the entry's buffers for dynamic inputs, the caller's
  /// tensors for static ones. Passing these back skips the copies (seed C1).
  const std::vector<c10::IValue>& static_inputs() const { return static_inputs_; }

 private:
  Entry() = default;
  void fill_buffers(const std::vector<c10::IValue>& inputs);
  /// What the entry holds, once captured (see bytes()).
  std::int64_t count_bytes() const;
  /// Runs `fn` on the buffers and records which dynamic buffers it mutated.
  std::vector<c10::IValue> run_on_buffers(const Callable& fn);
  void rerun_into_outputs(const Callable& fn);
  /// Finds the outputs that are views of inputs (after the capture run).
  void find_output_views();
  /// The tensors a copy between the caller's input `i` and its buffer moves (Note [Expanded
  /// tensors]).
  at::Tensor copied_part(const at::Tensor& t, std::size_t k) const {
    return expanded_[k] ? unexpanded(t) : t;
  }

  c10::Device device_{c10::kCPU};
  std::vector<c10::IValue> static_inputs_;
  std::vector<std::size_t> dynamic_positions_;
  std::vector<bool> expanded_;  // per dynamic input: copied through its unexpanded part
  std::vector<std::size_t> static_positions_;
  // Static inputs the graph writes in place (tensors marked with mark_static_address): put
  // back after capture (Note [Static inputs that are written] in entry.cpp).
  std::vector<std::size_t> static_mutated_;
  std::vector<const void*> static_data_ptrs_;  // not owned: compared, never dereferenced
  std::vector<std::size_t> mutated_;
  std::vector<c10::IValue> static_outputs_;
  // Per output: where it lies in an input, for outputs that are (views of) inputs. Such an
  // output is rebuilt on the caller's tensor, as eager returns it (cases C24, C40).
  std::vector<std::optional<InputView>> output_views_;
  std::unique_ptr<DeviceGraph> graph_;
  CopyPipeline* pipeline_ = nullptr;  // not owned: pipelines live for the whole process
  std::optional<CallOrder> order_;  // the device order of calls on the buffers (case G4)
  std::string reason_;
  std::string detail_;
  std::string signature_;
  std::int64_t bytes_ = 0;
  std::int64_t captures_ = 0;
  std::atomic<std::int64_t> replays_{0};  // written under mutex_, read without it
  std::atomic<std::int64_t> verifications_{0};
  std::mutex mutex_;
};

}  // namespace graphdispatch
