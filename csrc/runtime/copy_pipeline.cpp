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

}  // namespace

CopyPipeline::CopyPipeline(c10::Device device) : device_(device) {
  if (device.is_cpu()) return;
  c10::impl::VirtualGuardImpl impl(device.type());
  copy_stream_ = impl.getStreamFromGlobalPool(device, /*isHighPriority=*/false);
  capture_stream_ = impl.getStreamFromGlobalPool(device, /*isHighPriority=*/false);
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
  if (!has_streams() || !on_copy_stream) {
    at::_foreach_copy_(dst, src, /*non_blocking=*/has_streams());
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

}  // namespace graphdispatch
