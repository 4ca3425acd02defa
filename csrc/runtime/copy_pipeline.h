#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>

#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace graphdispatch {

// Note [Workspaces]
// Libraries cache lazily made workspaces per (handle, stream): cuBLAS and cuBLASLt do, and
// PyTorch's CUDAGraph::reset() drops the ones cached for its capture stream
// (clearCublasWorkspacesForStream, aten/src/ATen/cuda/CUDAGraph.cpp since pytorch#175276).
// Warmup therefore never runs on the capture stream: a workspace made there by eager warmup
// is ordinary memory that every later capture bakes in, freed to the device when any one
// graph is reset (cases G1, pytorch#193402). Warmup runs on the warmup stream, and the first
// capture makes the capture stream's workspace inside the graph pool, which graphdispatch
// keeps alive for the process (_framework_graphs.py): a reset returns that memory to the pool,
// never to the device, and later captures reuse it like any intermediate. Eager warmup then
// never writes a workspace a live graph replays with on another thread (case G5).

/// Makes a stream on `device` that no one else holds (c10's stream pool hands the same 32
/// streams round-robin to every caller, users' `torch.cuda.Stream()` included), as a stream
/// id of `device`'s type; nullopt where the device type cannot make one.
using StreamMaker = std::function<std::optional<c10::StreamId>(c10::Device)>;

/// The per-device streams and events of the runtime, created once per device, never per call
/// or per entry (Note [Replay] in graph_runner.h).
///
/// Owns a copy stream, a warmup stream, a capture stream and the two events that order every
/// input copy against the caller's current stream. `copy` is
/// thread-safe (the events are shared, so one batch at a time per device). On a device
/// without streams (CPU) copies are synchronous. Device-generic: streams and events come from
/// c10's virtual guard or the device type's StreamMaker, so this compiles without CUDA
/// headers.
class CopyPipeline final {
 public:
  /// The pipeline of `device`, made on first use. The returned reference stays valid for the
  /// life of the process (callers cache it). Call it without the GIL: a StreamMaker may take it.
  static CopyPipeline& for_device(c10::Device device);
  /// Pipelines of `type` made from now on take their streams from `maker` (case G8); without
  /// one, c10's stream pool serves.
  static void set_stream_maker(c10::DeviceType type, StreamMaker maker);
  /// In a forked child: forgets every pipeline, leaked (Note [Fork] in _once.py).
  static void reset_after_fork();

  CopyPipeline(const CopyPipeline&) = delete;
  CopyPipeline& operator=(const CopyPipeline&) = delete;

  /// Copies src[i] into dst[i] with one batched launch. With `on_copy_stream` the batch runs
  /// on the copy stream: current stream → event → copy → event → current stream waits; the
  /// host never synchronises.
  void copy(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src,
            bool on_copy_stream);

  /// The stream captures run on, and the one warmup runs on (Note [Workspaces]); nullopt on
  /// a device without streams.
  std::optional<c10::Stream> capture_stream() const { return capture_stream_; }
  std::optional<c10::Stream> warmup_stream() const { return warmup_stream_; }
  /// The copy, warmup and capture streams, in that order; empty on a device without streams.
  std::vector<c10::Stream> streams() const;
  /// Makes `waiter` wait for the work queued so far on `signaler`. Capture-time only: it
  /// makes its own event.
  void order(c10::Stream signaler, c10::Stream waiter);
  /// Held by a replay on a device from its graph's launch to its outputs' hand-out, so no
  /// other entry's replay comes between them (Note [Replay]). Recursive: a replay may run
  /// another (the emulated graph calls Python).
  std::recursive_mutex& replay_order() { return replay_order_; }
  bool has_streams() const { return capture_stream_.has_value(); }

 private:
  CopyPipeline(c10::Device device, const StreamMaker& maker);

  c10::Device device_;
  std::optional<c10::Stream> copy_stream_;
  std::optional<c10::Stream> warmup_stream_;
  std::optional<c10::Stream> capture_stream_;
  std::optional<c10::Event> before_copy_;
  std::optional<c10::Event> after_copy_;
  std::mutex mutex_;
  std::recursive_mutex replay_order_;
};

/// Makes `stream`, one of `pipeline`'s, current for its lifetime: on entry it waits for the
/// caller's stream (the buffers were filled there), on exit — normal or by exception — the
/// caller's stream waits for it, so nothing freed afterwards is still in use by warmup. A
/// no-op for nullopt (a device without streams).
class SideStreamScope final {
 public:
  SideStreamScope(CopyPipeline& pipeline, std::optional<c10::Stream> stream);
  ~SideStreamScope();
  SideStreamScope(const SideStreamScope&) = delete;
  SideStreamScope& operator=(const SideStreamScope&) = delete;

 private:
  CopyPipeline& pipeline_;
  std::optional<c10::Stream> stream_;
  std::optional<c10::Stream> caller_;
  std::optional<c10::StreamGuard> guard_;
};

/// The end of the last call of one entry on the device, whatever stream ran it (case G4). The
/// entry's mutex orders the host only: without this, a copy into the shared buffers on one
/// stream could overwrite what a replay on another stream still reads, and buffers freed on
/// eviction could be handed out again while such a replay runs. Made when the entry allocates
/// its buffers, on the stream they are allocated on. Not thread-safe: the entry calls it
/// under its mutex. A no-op on a device without streams.
class CallOrder final {
 public:
  explicit CallOrder(c10::Device device);
  CallOrder(const CallOrder&) = delete;
  CallOrder& operator=(const CallOrder&) = delete;
  /// The current stream waits for the end of the last call (nothing to do when that call ran
  /// on the same stream).
  void begin() const;
  /// Marks the end of a call on the current stream.
  void end();
  /// Before the buffers are freed: the stream they were allocated on waits for the last
  /// call's end. The caching allocator reuses freed memory on that stream without waiting for
  /// other streams (c10/cuda/CUDACachingAllocator.cpp, only record_stream defers it).
  void release() const;

 private:
  std::optional<c10::Stream> current() const;

  c10::Device device_;
  std::optional<c10::Stream> home_;
  std::optional<c10::Event> done_;
  std::optional<c10::Stream> last_;
};

}  // namespace graphdispatch
