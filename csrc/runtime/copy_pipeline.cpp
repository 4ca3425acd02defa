#include "runtime/copy_pipeline.h"

#include <ATen/ops/_foreach_copy.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <unordered_map>
#include <memory>

namespace graphdispatch {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<c10::Device, CopyPipeline*> pipelines;  // entries are never destroyed
};

Registry* registry = new Registry();

// True when `src` can be copied into `dst` as one block of bytes: both dense CPU tensors of
// one layout (the cache key already guarantees dtype, shape and strides) with no lazy
// conjugate/negative bit. Dense tensors with non-negative strides occupy exactly nbytes()
// from data_ptr().
bool is_plain_block_copy(const at::Tensor& dst, const at::Tensor& src) {
  // Subclasses and zero tensors have their own copy_ (or no data): only plain dense tensors.
  const auto plain = [](const at::Tensor& t) {
    return !t.unsafeGetTensorImpl()->is_python_dispatch() && !t._is_zerotensor() &&
           t.has_storage() && t.storage().data() != nullptr;
  };
  return plain(dst) && plain(src) && dst.is_cpu() && src.is_cpu() && dst.layout() == at::kStrided &&
         src.layout() == at::kStrided && dst.scalar_type() == src.scalar_type() &&
         dst.sizes() == src.sizes() && dst.strides() == src.strides() &&
         dst.is_non_overlapping_and_dense() && !dst.is_conj() && !src.is_conj() &&
         !dst.is_neg() && !src.is_neg();
}

// The synchronous copy of a device without streams. `_foreach_copy_` on the CPU dispatches
// one copy per tensor (about 0.7 µs each for small inputs); a memcpy of a plain block is
// ~50x cheaper, and small inputs are what the per-call overhead is made of. memmove: a caller
// may pass a view of the entry's own buffer.
void copy_synchronously(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src) {
  std::vector<at::Tensor> rest_dst, rest_src;
  for (std::size_t i = 0; i < dst.size(); ++i) {
    if (!is_plain_block_copy(dst[i], src[i])) {
      rest_dst.push_back(dst[i]);
      rest_src.push_back(src[i]);
      continue;
    }
    std::memmove(dst[i].data_ptr(), src[i].const_data_ptr(), src[i].nbytes());
    dst[i].unsafeGetTensorImpl()->bump_version();  // what copy_ does: readers see a write
  }
  if (!rest_dst.empty()) at::_foreach_copy_(rest_dst, rest_src, /*non_blocking=*/false);
}

}  // namespace

CopyPipeline::CopyPipeline(c10::Device device) : device_(device) {
  if (device.is_cpu()) return;
  c10::impl::VirtualGuardImpl impl(device.type());
  // Streams of our own: a pool stream could also be a user's torch.cuda.Stream(), whose eager
  // work would then be recorded into our graphs. Backends without new streams share the pool.
  auto own_stream = [&] {
    try {
      return impl.getNewStream(device);
    } catch (const c10::Error&) {
      return impl.getStreamFromGlobalPool(device, /*isHighPriority=*/false);
    }
  };
  copy_stream_ = own_stream();
  capture_stream_ = own_stream();
  before_copy_.emplace(device.type());
  after_copy_.emplace(device.type());
}

CopyPipeline& CopyPipeline::for_device(c10::Device device) {
  std::lock_guard<std::mutex> lock(registry->mutex);
  auto& slot = registry->pipelines[device];
  if (slot == nullptr) slot = new CopyPipeline(device);
  return *slot;
}

void CopyPipeline::reset_after_fork() {
  registry = new Registry();  // the parent's registry and its mutex are left untouched
}

void CopyPipeline::order(c10::Stream signaler, c10::Stream waiter) {
  if (signaler == waiter) return;
  c10::Event event(device_.type());
  event.record(signaler);
  event.block(waiter);
}

void CopyPipeline::copy(const std::vector<at::Tensor>& dst, const std::vector<at::Tensor>& src,
                        bool on_copy_stream) {
  if (dst.empty()) return;
  if (!has_streams()) {
    copy_synchronously(dst, src);
    return;
  }
  if (!on_copy_stream) {
    at::_foreach_copy_(dst, src, /*non_blocking=*/true);
    return;
  }
  c10::impl::VirtualGuardImpl impl(device_.type());
  const c10::Stream current = impl.getStream(device_);
  std::lock_guard<std::mutex> lock(mutex_);
  before_copy_->record(current);
  before_copy_->block(*copy_stream_);
  {
    c10::StreamGuard guard(*copy_stream_);
    at::_foreach_copy_(dst, src, /*non_blocking=*/true);
  }
  // The caller may free a source right after the call; its memory must not be reused by
  // another stream before the copy stream has read it.
  for (const auto& t : src) {
    if (t.device() == device_) impl.recordDataPtrOnStream(t.storage().data_ptr(), *copy_stream_);
  }
  after_copy_->record(*copy_stream_);
  after_copy_->block(current);
}

CaptureStreamScope::CaptureStreamScope(CopyPipeline& pipeline) : pipeline_(pipeline) {
  if (!pipeline.has_streams()) return;
  const auto capture = *pipeline.capture_stream();
  caller_ = c10::impl::VirtualGuardImpl(capture.device_type()).getStream(capture.device());
  pipeline.order(*caller_, capture);
  guard_.emplace(capture);
}

CaptureStreamScope::~CaptureStreamScope() {
  if (!caller_) return;
  guard_.reset();
  try {
    pipeline_.order(*pipeline_.capture_stream(), *caller_);
  } catch (const c10::Error&) {
    // Only after a failed capture poisoned the device; the capture's own error is the one
    // the caller sees.
  }
}

}  // namespace graphdispatch
