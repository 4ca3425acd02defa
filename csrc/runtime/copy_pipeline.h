#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>
#include <c10/core/StreamGuard.h>

#include <mutex>
#include <optional>
#include <vector>

namespace graphdispatch {

/// The per-device streams and events of the runtime, created once per device, never per call
/// or per entry (design 2.5).
///
/// Owns a copy stream, a capture stream, the two events that order every input copy against
/// the caller's current stream, and the device's capture mutex. `copy` is thread-safe (the
/// events are shared, so one batch at a time per device). On a device without streams (CPU)
/// copies are synchronous. Device-generic: streams and events come from c10's virtual guard,
/// so this compiles without CUDA headers.
class CopyPipeline final {
 public:
  /// The pipeline of `device`, made on first use. The returned reference stays valid for the
  /// life of the process (callers cache it).
  static CopyPipeline& for_device(c10::Device device);
  /// Forgets every pipeline without destroying it: after fork the child must not touch the
  /// parent's streams or locks.
  static void reset_after_fork();

  CopyPipeline(const CopyPipeline&) = delete;
  CopyPipeline& operator=(const CopyPipeline&) = delete;

  /// Copies src[i] into dst[i] with one batched launch. With `on_copy_stream` the batch runs
  /// on the copy stream: current stream → event → copy → event → current stream waits; the
  /// host never synchronises (seed C3, without its A1 synchronize).
  void copy(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src,
            bool on_copy_stream);

  /// The stream warmup and capture run on; nullopt on a device without streams.
  std::optional<c10::Stream> capture_stream() const { return capture_stream_; }
  /// Makes `waiter` wait for the work queued so far on `signaler`. Capture-time only: it
  /// makes its own event.
  void order(c10::Stream signaler, c10::Stream waiter);
  bool has_streams() const { return capture_stream_.has_value(); }
  /// Held for a whole capture: captures on one device share its capture stream (and, for
  /// framework graphs, its pool), so two at once would record each other's kernels.
  std::mutex& capture_mutex() { return capture_mutex_; }

 private:
  explicit CopyPipeline(c10::Device device);

  c10::Device device_;
  std::optional<c10::Stream> copy_stream_;
  std::optional<c10::Stream> capture_stream_;
  std::optional<c10::Event> before_copy_;
  std::optional<c10::Event> after_copy_;
  std::mutex mutex_;
  std::mutex capture_mutex_;
};

/// Makes the capture stream of `pipeline` current for its lifetime: on entry it waits for the
/// caller's stream (the buffers were filled there), on exit — normal or by exception — the
/// caller's stream waits for it, so nothing freed afterwards is still in use by warmup.
class CaptureStreamScope final {
 public:
  explicit CaptureStreamScope(CopyPipeline& pipeline);
  ~CaptureStreamScope();
  CaptureStreamScope(const CaptureStreamScope&) = delete;
  CaptureStreamScope& operator=(const CaptureStreamScope&) = delete;

 private:
  CopyPipeline& pipeline_;
  std::optional<c10::Stream> caller_;
  std::optional<c10::StreamGuard> guard_;
};

}  // namespace graphdispatch
