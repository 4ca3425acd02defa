#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graphdispatch {

/// One captured kernel sequence: a CUDA graph, an NPUGraph, a `torch.accelerator.Graph`, the
/// CPU graph (cpu_graph.h) or the emulated graph. The runtime sees device graphs only through
/// this interface.
///
/// Capture protocol (GraphRunner makes the capture stream current first):
///   capture_begin(rerun) → the work runs once on the entry's static buffers →
///   capture_end(outputs)
/// or, if that work throws, capture_abort(), after which the object is discarded.
/// `rerun` recomputes the captured work into the same static outputs; graphs that record
/// kernels ignore it, the emulated graph calls it on every replay. `outputs` are the work's
/// returns, which every replay must leave valid (a graph planning its own memory keeps them to
/// the end). Not thread-safe: each Entry serialises the calls on its own graph.
class DeviceGraph {
 public:
  DeviceGraph() = default;
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;
  virtual ~DeviceGraph() = default;
  /// Called before capture_begin with the tensors the work is given (the entry's input buffers
  /// and static inputs): the only storage not made by the work that a graph reading through
  /// recorded pointers may read (the CPU graph's capture audit). Device graphs ignore it.
  virtual void capture_inputs(const std::vector<c10::IValue>& /*arguments*/) {}
  virtual void capture_begin(std::function<void()> rerun) = 0;
  virtual void capture_end(const std::vector<c10::IValue>& outputs) = 0;
  /// Ends a capture whose work failed, leaving the stream not capturing; never throws.
  virtual void capture_abort() noexcept = 0;
  virtual void replay() = 0;
  /// Frees the graph's recorded work; its pool memory returns once no graph uses it.
  virtual void reset() = 0;
  /// True when capture runs the work for real, as the emulated graph does (a recorded graph
  /// executes nothing until replay): the runner then undoes the capture's RNG consumption.
  virtual bool runs_during_capture() const = 0;
  /// Bytes the capture added to the device's graph pool (static outputs and the workspace
  /// the graph keeps), measured around the capture; nullopt for a graph without a pool, whose
  /// outputs the entry counts itself.
  virtual std::optional<std::int64_t> pool_bytes() const { return std::nullopt; }
  /// Bytes it needs from memory every graph of the process shares, held once however many
  /// graphs need it (the CPU graph's workspace, Note [Shared workspace]); not in pool_bytes.
  virtual std::int64_t shared_bytes() const { return 0; }
  /// What the graph holds, in words, for explain(); "" when it has nothing to add.
  virtual std::string describe() const { return ""; }
};

/// Makes the device graphs of one kind ("cuda", "npu", "accelerator", "emulated").
class DeviceGraphFactory {
 public:
  virtual ~DeviceGraphFactory() = default;
  virtual std::unique_ptr<DeviceGraph> create(c10::Device device) = 0;
  /// True when the current stream of `device` is recording someone else's graph: the runner
  /// then runs the callable directly so its kernels land in that graph (Note [Capture] in entry.h).
  virtual bool is_capturing(c10::Device device) = 0;
  virtual std::string name() const = 0;
};

/// True on a thread between an emulated graph's capture_begin and its capture_end/abort: the
/// emulated "current stream is capturing", so the rules that depend on it (Note [Capture] in
/// entry.h, a failed capture never leaves the stream capturing) are testable on the CPU.
inline bool& emulated_capturing() {
  static thread_local bool capturing = false;
  return capturing;
}

/// The stand-in that records nothing: same static-buffer semantics, and replay re-runs the work
/// into the static outputs. It serves work the CPU graph cannot record (Inductor's compiled
/// kernels, which are not dispatcher ops) and tests of the runtime's rules apart from any
/// recording. Never chosen automatically (Note [Routes] in _backend.py).
class EmulatedGraph final : public DeviceGraph {
 public:
  void capture_begin(std::function<void()> rerun) override {
    rerun_ = std::move(rerun);
    emulated_capturing() = true;
  }
  void capture_end(const std::vector<c10::IValue>&) override { emulated_capturing() = false; }
  void capture_abort() noexcept override {
    rerun_ = nullptr;
    emulated_capturing() = false;
  }
  void replay() override { rerun_(); }
  void reset() override { rerun_ = nullptr; }
  bool runs_during_capture() const override { return true; }

 private:
  std::function<void()> rerun_;
};

class EmulatedGraphFactory final : public DeviceGraphFactory {
 public:
  std::unique_ptr<DeviceGraph> create(c10::Device) override {
    return std::make_unique<EmulatedGraph>();
  }
  bool is_capturing(c10::Device) override { return emulated_capturing(); }
  std::string name() const override { return "emulated"; }
};

}  // namespace graphdispatch
