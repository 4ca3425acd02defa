#pragma once

#include "runtime/device_graph.h"
#include "runtime/op_recorder.h"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graphdispatch {

// Note [CPU graph]
// The CPU has no device graph in PyTorch; this is one. Capture runs the work once while an
// OpRecorder takes every op below autograd (Note [Recording ops]); capture_end turns the ops
// into a program of steps, each an operator, the dispatch keys of the kernel the capture ran
// (those below the recorder's) and a fixed argument stack, redispatched to that kernel; what
// the kernel calls inside dispatches from the top as it did at capture:
// - a functional op with an `out=` overload (out_variant.h) calls the overload with its recorded
//   returns as the out tensors, so the replay writes where the capture did and allocates nothing;
//   one without calls the op and copies its returns into the recorded ones;
// - in-place and out= ops, and ops of other libraries (custom ops, collectives), are called as
//   recorded;
// - ATen ops whose returns alias storage that exists already (views: `t`, `view`, `expand`,
//   `unbind`) and metadata-only ATen ops (`unsqueeze_`, `resize_`, size queries) are dropped:
//   every storage is fixed, so their results are the same tensors on every replay.
// Tensors the work did not make (the entry's buffers, static inputs, the graph's constants)
// are read through non-owning tensors at the same address: the program keeps no model alive
// (case C34), and the cache key's static addresses plus the runner's lost-input checks make
// sure a replay runs only while that memory holds what the call passes. Tensors the work made
// live in one arena, placed by lifetime (memory_plan.h) with the outputs kept to the end, so an
// entry holds about the forward's peak rather than the sum of its activations (case C44). Two
// kinds of tensor keep their own memory and the values they had at capture, as constants of the
// graph: one made outside the dispatcher that nothing but the recording holds (a Python number
// wrapped as a tensor), and the result of an allocating op that writes nothing (`empty`), whose
// values come from outside the dispatcher when it is read (`torch.tensor([...])` fills one with
// memcpy). Replay walks the steps in
// C++ without Python or the GIL.

/// The CPU graph (Note [CPU graph]). Not thread-safe: each Entry serialises its calls.
class CpuGraph final : public DeviceGraph {
 public:
  void capture_begin(std::function<void()> rerun) override;
  /// Builds the program from the recording.
  void capture_end(const std::vector<c10::IValue>& outputs) override;
  void capture_abort() noexcept override;
  void replay() override;
  void reset() override;
  bool runs_during_capture() const override { return true; }
  /// The bytes the program owns: its arena (every intermediate and output) and its constants.
  std::optional<std::int64_t> pool_bytes() const override { return arena_bytes_; }
  /// "N ops recorded, K replayed (J through out=, C copied), arena B bytes".
  std::string describe() const override;

 private:
  struct Step final {
    c10::OperatorHandle op;
    c10::DispatchKeySet keys;
    std::vector<c10::IValue> arguments;
    /// Per return of a functional op without an out= overload: where its value is copied.
    std::vector<at::Tensor> copy_to;
  };
  void build(std::vector<RecordedOp> ops, const std::vector<c10::IValue>& outputs);

  std::unique_ptr<OpRecorder> recorder_;
  std::vector<Step> steps_;
  torch::jit::Stack stack_;  // reused by every step of every replay
  std::int64_t arena_bytes_ = 0;
  std::int64_t recorded_ = 0, through_out_ = 0, copied_ = 0;
};

/// True on a thread between a CPU graph's capture_begin and its capture_end/abort: a
/// compiled function called there runs its work, which the outer capture records.
bool& cpu_graph_capturing();

class CpuGraphFactory final : public DeviceGraphFactory {
 public:
  std::unique_ptr<DeviceGraph> create(c10::Device) override { return std::make_unique<CpuGraph>(); }
  bool is_capturing(c10::Device) override { return cpu_graph_capturing(); }
  std::string name() const override { return "cpu"; }
};

}  // namespace graphdispatch
