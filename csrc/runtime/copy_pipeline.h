#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <mutex>
#include <optional>
#include <vector>

namespace graphdispatch {

/// The per-device streams and events of the runtime, created once per device, never per call
/// or per entry (design 2.5).
///
/// Owns a copy stream, a capture stream and the two events that order the copy stream against
/// the caller's current stream. `copy` is thread-safe (the events are shared, so one batch at a
/// time per device). On a device without streams (CPU) copies are synchronous. Device-generic:
/// streams and events come from c10's virtual guard, so this compiles without CUDA headers.
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
  /// Makes `waiter` wait for the work queued so far on `signaler` (no-op without streams).
  void order(c10::Stream signaler, c10::Stream waiter);
  bool has_streams() const { return capture_stream_.has_value(); }

 private:
  explicit CopyPipeline(c10::Device device);

  c10::Device device_;
  std::optional<c10::Stream> copy_stream_;
  std::optional<c10::Stream> capture_stream_;
  std::optional<c10::Event> before_copy_;
  std::optional<c10::Event> after_copy_;
  std::mutex mutex_;
};

}  // namespace graphdispatch
