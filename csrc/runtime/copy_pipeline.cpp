#include "runtime/copy_pipeline.h"

#include <ATen/ops/_foreach_copy.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <memory>
#include <unordered_map>

namespace graphdispatch {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<c10::Device, CopyPipeline*> pipelines;  // entries are never destroyed
  std::unordered_map<c10::DeviceType, StreamMaker> makers;
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
         dst.is_non_overlapping_and_dense() && !dst.is_conj() && !src.is_conj() && !dst.is_neg() &&
         !src.is_neg();
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

CopyPipeline::CopyPipeline(c10::Device device, const StreamMaker& maker) : device_(device) {
  if (device.is_cpu()) return;
  c10::impl::VirtualGuardImpl impl(device.type());
  // Streams no one else holds (case G8): a pool stream can also be a user's
  // torch.cuda.Stream(), whose eager work would then be recorded into our graphs or run on
  // our workspaces. Device types without a maker share c10's pool (getNewStream is the pool
  // on CUDA, c10/cuda/impl/CUDAGuardImpl.h).
  auto own_stream = [&] {
    if (maker) {
      if (auto id = maker(device)) {
        return c10::Stream::unpack3(*id, device.index(), device.type());
      }
    }
    try {
      return impl.getNewStream(device);
    } catch (const c10::Error&) {
      return impl.getStreamFromGlobalPool(device, /*isHighPriority=*/false);
    }
  };
  copy_stream_ = own_stream();
  warmup_stream_ = own_stream();
  capture_stream_ = own_stream();
  before_copy_.emplace(device.type());
  after_copy_.emplace(device.type());
}

CopyPipeline& CopyPipeline::for_device(c10::Device device) {
  std::unique_lock<std::mutex> lock(registry->mutex);
  if (auto it = registry->pipelines.find(device); it != registry->pipelines.end()) {
    return *it->second;
  }
  const StreamMaker maker = registry->makers[device.type()];
  lock.unlock();  // the maker may call Python: no lock of ours is held while it waits for the GIL
  auto created = std::unique_ptr<CopyPipeline>(new CopyPipeline(device, maker));
  lock.lock();
  auto& slot = registry->pipelines[device];
  if (slot == nullptr) slot = created.release();  // else another thread's won; ours is dropped
  return *slot;
}

void CopyPipeline::set_stream_maker(c10::DeviceType type, StreamMaker maker) {
  std::lock_guard<std::mutex> lock(registry->mutex);
  registry->makers[type] = std::move(maker);
}

std::vector<c10::Stream> CopyPipeline::streams() const {
  if (!has_streams()) return {};
  return {*copy_stream_, *warmup_stream_, *capture_stream_};
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

SideStreamScope::SideStreamScope(CopyPipeline& pipeline, std::optional<c10::Stream> stream)
    : pipeline_(pipeline), stream_(stream) {
  if (!stream_) return;
  caller_ = c10::impl::VirtualGuardImpl(stream_->device_type()).getStream(stream_->device());
  pipeline.order(*caller_, *stream_);
  guard_.emplace(*stream_);
}

SideStreamScope::~SideStreamScope() {
  if (!caller_) return;
  guard_.reset();
  try {
    pipeline_.order(*stream_, *caller_);
  } catch (const c10::Error&) {
    // Only after a failed capture poisoned the device; the capture's own error is the one
    // the caller sees.
  }
}

CallOrder::CallOrder(c10::Device device) : device_(device) {
  if (device.is_cpu()) return;
  done_.emplace(device.type());
  home_ = current();
}

std::optional<c10::Stream> CallOrder::current() const {
  if (!done_) return std::nullopt;
  return c10::impl::VirtualGuardImpl(device_.type()).getStream(device_);
}

void CallOrder::begin() const {
  if (!last_) return;
  if (const auto stream = current(); *stream != *last_) done_->block(*stream);
}

void CallOrder::end() {
  if (!done_) return;
  last_ = current();
  done_->record(*last_);
}

void CallOrder::release() const {
  if (last_ && *home_ != *last_) done_->block(*home_);
}

}  // namespace graphdispatch
