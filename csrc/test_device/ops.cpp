// The test device's ops: every ATen op without a kernel of its own runs the CPU kernel on the
// device memory (one boxed fallback), at once or recorded into the capture of the current
// stream (Note [Test device] in test_device.h); factories, views, copies, resize_ and .item()
// are registered here. Also the few ops the Python helper calls (testdev::*).

#include "test_device/test_device.h"

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include <string>
#include <vector>

namespace testdev {
namespace {

bool on_device(const at::Tensor& tensor) {
  return tensor.defined() && tensor.device().type() == kType;
}

// A CPU tensor over the same bytes, at the addresses of now: CPU kernels read and write the
// device memory through it. It owns nothing, so a recorded op holds no memory alive.
at::Tensor host_alias(const at::Tensor& tensor) {
  if (!on_device(tensor)) return tensor;
  const auto options = tensor.options().device(at::kCPU);
  if (tensor.data_ptr() == nullptr) {
    return at::empty_strided(tensor.sizes(), tensor.strides(), options);
  }
  return at::from_blob(tensor.data_ptr(), tensor.sizes(), tensor.strides(), options);
}

// A meta tensor of the same layout (CPU scalars too): meta kernels give an op's output shapes.
at::Tensor meta_of(const at::Tensor& tensor) {
  if (!tensor.defined()) return tensor;
  return at::empty_strided(tensor.sizes(), tensor.strides(), tensor.options().device(at::kMeta));
}

// `value` with every tensor mapped by `map_tensor` and a device of ours replaced by `to`.
template <typename Map>
c10::IValue map_value(const c10::IValue& value, const Map& map_tensor, c10::DeviceType to) {
  if (value.isTensor()) return map_tensor(value.toTensor());
  if (value.isDevice()) {
    return value.toDevice().type() == kType ? c10::IValue(c10::Device(to)) : value;
  }
  if (value.isTensorList()) {
    const auto list = value.toTensorList();
    c10::List<at::Tensor> mapped;
    for (size_t i = 0; i < list.size(); ++i) mapped.push_back(map_tensor(list.get(i)));
    return mapped;
  }
  if (value.isList()) {  // Tensor?[] (index, index_put_)
    const auto list = value.toList();
    auto mapped = c10::impl::GenericList(list.elementType());
    for (size_t i = 0; i < list.size(); ++i)
      mapped.push_back(map_value(list.get(i), map_tensor, to));
    return mapped;
  }
  return value;
}

std::vector<c10::IValue> host_args(const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> mapped;
  for (const auto& arg : args) mapped.push_back(map_value(arg, host_alias, at::kCPU));
  return mapped;
}

std::vector<c10::IValue> meta_args(const std::vector<c10::IValue>& args) {
  std::vector<c10::IValue> mapped;
  for (const auto& arg : args) mapped.push_back(map_value(arg, meta_of, at::kMeta));
  return mapped;
}

// The argument that return `index` is (an in-place or out= op), or -1 for a new value.
int written_argument(const c10::FunctionSchema& schema, size_t index) {
  const auto* info = schema.returns()[index].alias_info();
  if (info == nullptr) return -1;
  TORCH_CHECK(info->isWrite(), "testdev: ", schema.name(),
              " returns a view; register it for the test device");
  for (size_t arg = 0; arg < schema.arguments().size(); ++arg) {
    const auto* arg_info = schema.arguments()[arg].alias_info();
    if (arg_info != nullptr && arg_info->beforeSets() == info->beforeSets()) {
      return static_cast<int>(arg);
    }
  }
  return -1;
}

void call(const c10::OperatorHandle& op, std::vector<c10::IValue>& stack, c10::DispatchKey key) {
  op.redispatchBoxed(c10::DispatchKeySet(key), &stack);
}

// A device tensor of `like`'s layout (dense layouts kept, others made contiguous).
at::Tensor device_like(const at::Tensor& like) {
  const auto options = like.options().device(kType, 0);
  if (like.is_non_overlapping_and_dense()) {
    return at::empty_strided(like.sizes(), like.strides(), options);
  }
  return at::empty(like.sizes(), options);
}

// A CPU result as a device value: tensors copied into new device memory.
c10::IValue to_device(const c10::IValue& result) {
  if (result.isTensor()) {
    const at::Tensor host = result.toTensor();
    if (!host.defined()) return result;
    at::Tensor out = device_like(host);
    host_alias(out).copy_(host);
    return out;
  }
  if (result.isTensorList()) {
    const auto list = result.toTensorList();
    c10::List<at::Tensor> mapped;
    for (size_t i = 0; i < list.size(); ++i) mapped.push_back(to_device(list.get(i)).toTensor());
    return mapped;
  }
  return result;
}

// New device outputs shaped as a meta result (from the capture's pool during a capture).
c10::IValue device_outputs(const c10::IValue& meta) {
  if (meta.isTensor()) {
    return meta.toTensor().defined() ? c10::IValue(device_like(meta.toTensor())) : meta;
  }
  const auto list = meta.toTensorList();
  c10::List<at::Tensor> mapped;
  for (size_t i = 0; i < list.size(); ++i) mapped.push_back(device_like(list.get(i)));
  return mapped;
}

// Replay's copy of a CPU result into the captured output's memory.
void copy_into(const c10::IValue& target, const c10::IValue& result) {
  if (target.isTensor()) {
    if (target.toTensor().defined()) target.toTensor().copy_(result.toTensor());
    return;
  }
  const auto targets = target.toTensorList();
  const auto results = result.toTensorList();
  for (size_t i = 0; i < targets.size(); ++i) at::Tensor(targets[i]).copy_(results[i]);
}

const at::Tensor& resize_device(const at::Tensor& self, c10::IntArrayRef size,
                                std::optional<at::MemoryFormat> memory_format);

// Runs (or records) `op` by its CPU kernel, its output shapes from its meta kernel.
void run_op(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  const size_t num_args = schema.arguments().size();
  std::vector<c10::IValue> args(stack->end() - static_cast<std::ptrdiff_t>(num_args), stack->end());
  torch::jit::drop(stack, num_args);
  const std::string& name = schema.name();
  const size_t num_returns = schema.returns().size();

  // out= arguments take the size the op gives them first: a CPU alias cannot grow.
  bool has_out = false;
  for (size_t i = 0; i < num_args; ++i) {
    has_out = has_out || (schema.arguments()[i].is_out() && args[i].isTensor());
  }
  if (has_out) {
    const auto meta = meta_args(args);
    auto returns = meta;
    call(op, returns, c10::DispatchKey::Meta);  // the meta kernel sizes the meta outs
    for (size_t i = 0; i < num_args; ++i) {
      if (!schema.arguments()[i].is_out() || !args[i].isTensor()) continue;
      const auto sizes = meta[i].toTensor().sizes();
      if (args[i].toTensor().sizes() != sizes)
        resize_device(args[i].toTensor(), sizes, std::nullopt);
    }
  }

  if (!launch_is_recorded()) {
    auto host = host_args(args);
    {
      const auto on_stream = run_on_stream();
      call(op, host, c10::DispatchKey::CPU);
    }
    for (size_t r = 0; r < num_returns; ++r) {
      const int written = written_argument(schema, r);
      torch::jit::push(stack,
                       written >= 0 ? args[static_cast<size_t>(written)] : to_device(host[r]));
    }
    return;
  }

  // Recorded: the outputs are allocated now (from the capture's pool) with the meta kernel's
  // layout; the CPU kernel runs on every replay, on these addresses.
  std::vector<c10::IValue> outputs(num_returns);
  bool has_new = false;
  for (size_t r = 0; r < num_returns; ++r) {
    const auto& type = schema.returns()[r].type();
    const bool tensors =
        type->kind() == c10::TypeKind::TensorType || type->isSubtypeOf(*c10::ListType::ofTensors());
    if (!tensors) check_host_sync(name.c_str(), current_stream());  // a host value: refused
    has_new = has_new || written_argument(schema, r) < 0;
  }
  if (has_new) {
    auto meta = meta_args(args);
    try {
      call(op, meta, c10::DispatchKey::Meta);
    } catch (const std::exception& error) {
      TORCH_CHECK(false, "testdev: cannot capture ", name,
                  ": its output shapes need its meta kernel: ", error.what());
    }
    for (size_t r = 0; r < num_returns; ++r) {
      if (written_argument(schema, r) < 0) outputs[r] = device_outputs(meta[r]);
    }
  }
  std::vector<c10::IValue> host_outputs;
  for (const auto& output : outputs) {
    host_outputs.push_back(map_value(output, host_alias, at::kCPU));
  }
  launch(name.c_str(), [op, host = host_args(args), host_outputs]() {
    auto replayed = host;
    call(op, replayed, c10::DispatchKey::CPU);
    for (size_t r = 0; r < host_outputs.size(); ++r) {
      if (!host_outputs[r].isNone()) copy_into(host_outputs[r], replayed[r]);
    }
  });
  for (size_t r = 0; r < num_returns; ++r) {
    const int written = written_argument(schema, r);
    torch::jit::push(stack, written >= 0 ? args[static_cast<size_t>(written)] : outputs[r]);
  }
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) { run_op(op, stack); }

// convolution_overrideable, the convolution a PrivateUse1 device provides, takes
// aten::convolution's arguments: that op's CPU and meta kernels run it.
void convolution(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  static const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("aten::convolution", "");
  run_op(op, stack);
}

// scaled_dot_product_attention's choice of kernel: the math one (composite ops).
int64_t fused_sdp_choice(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                         const std::optional<at::Tensor>&, double, bool, std::optional<double>,
                         bool) {
  return 0;  // sdp::SDPBackend::math
}

// ---- registered ops ------------------------------------------------------------------------

at::Tensor empty(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                 std::optional<at::Layout>, std::optional<at::Device>, std::optional<bool>,
                 std::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(size, c10::GetAllocator(kType),
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                         std::optional<at::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(size, stride, c10::GetAllocator(kType),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

const at::Tensor& resize_device(const at::Tensor& self, c10::IntArrayRef size,
                                std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format) impl->empty_tensor_restride(*memory_format);
  const size_t bytes =
      static_cast<size_t>(impl->storage_offset() + impl->numel()) * self.dtype().itemsize();
  if (bytes > self.storage().nbytes()) {
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(self.storage(), bytes);
  }
  return self;
}

// Device to device is device work (run or recorded); to or from the host is a host
// synchronisation (pageable memory), refused during a capture.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool) {
  if (on_device(self) && on_device(dst)) {
    launch("copy_", [src = host_alias(self), out = host_alias(dst)]() mutable { out.copy_(src); });
    return dst;
  }
  check_host_sync(on_device(self) ? "copy to the host" : "copy from the host", current_stream());
  const auto on_stream = run_on_stream();
  host_alias(dst).copy_(host_alias(self));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) resize_device(dst, self.sizes(), std::nullopt);
  return copy_from(self, dst, false);
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  check_host_sync(".item()", current_stream());
  const auto on_stream = run_on_stream();
  return at::_local_scalar_dense(host_alias(self));
}

void record_stream(at::Tensor&, c10::Stream) {}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("resize_", TORCH_FN(resize_device));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("convolution_overrideable", torch::CppFunction::makeFromBoxedFunction<&convolution>());
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
}

// What the Python helper (tests/testdev.py) calls.
TORCH_LIBRARY(testdev, m) {
  m.def("is_current_stream_capturing() -> bool", []() { return is_capturing(current_stream()); });
  m.def("graph_pool_handle() -> int[]", []() {
    const auto pool = new_pool_id();
    return std::vector<int64_t>{static_cast<int64_t>(pool.first),
                                static_cast<int64_t>(pool.second)};
  });
  m.def("set_launch_delay_us(int us) -> ()", [](int64_t us) { set_launch_delay_us(us); });
  m.def("pool_reserved_bytes(int first, int second) -> int", [](int64_t first, int64_t second) {
    return pool_reserved_bytes(
        {static_cast<c10::CaptureId_t>(first), static_cast<c10::CaptureId_t>(second)});
  });
}

}  // namespace
}  // namespace testdev
