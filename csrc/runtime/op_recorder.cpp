#include "runtime/op_recorder.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <mutex>

namespace graphdispatch {
namespace {

constexpr c10::DispatchKey kRecordKey = c10::DispatchKey::Fake;

thread_local OpRecorder* active = nullptr;

void record_or_run(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                   torch::jit::Stack* stack) {
  const auto below = below_recorder(keys);
  if (active == nullptr) {
    op.redispatchBoxed(below, stack);
    return;
  }
  active->record(op, below, stack);
}

void register_fallback() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: the registration must outlive every recorder, static destructors
    // included.
    auto* library = new torch::Library(torch::Library::IMPL, "_", kRecordKey, __FILE__, __LINE__);
    library->fallback(torch::CppFunction::makeFromBoxedFunction<&record_or_run>());
  });
}

at::Tensor snapshot(const at::Tensor& t) {
  if (!t.defined()) return t;
  return at::Tensor(t.unsafeGetTensorImpl()->shallow_copy_and_detach(
      c10::VariableVersion(0), /*allow_tensor_metadata_change=*/true));
}

}  // namespace

c10::DispatchKeySet below_recorder(c10::DispatchKeySet keys) {
  return keys & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kRecordKey);
}

c10::IValue map_tensors(const c10::IValue& v,
                        const std::function<at::Tensor(const at::Tensor&)>& f) {
  if (v.isTensor()) return f(v.toTensor());
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(f(t));
    return out;
  }
  if (v.isList()) {  // Tensor?[] (index), and lists of scalars, returned as they are
    auto list = v.toList();
    if (!list.elementType()->isSubtypeOf(*c10::OptionalType::ofTensor())) return v;
    c10::List<std::optional<at::Tensor>> out;
    for (const c10::IValue& item : list) {
      out.push_back(item.isTensor() ? std::optional<at::Tensor>(f(item.toTensor())) : std::nullopt);
    }
    return out;
  }
  return v;
}

OpRecorder::OpRecorder() : include_(kRecordKey) {
  register_fallback();
  TORCH_INTERNAL_ASSERT(active == nullptr, "one op recorder per thread at a time");
  active = this;
}

OpRecorder::~OpRecorder() { active = nullptr; }

void OpRecorder::record(const c10::OperatorHandle& op, c10::DispatchKeySet below,
                        torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  // Note [Recording ops]: a host read inside a capture fails it, naming the op.
  TORCH_CHECK(
      !op.hasTag(at::Tag::data_dependent_output) && !op.hasTag(at::Tag::dynamic_output_shape),
      "CPU graph capture: ", schema.operator_name(),
      " reads tensor values on the host (or makes a shape from them), which a graph "
      "cannot replay; a device graph capture fails on it too");
  const auto n = schema.arguments().size();
  const std::vector<c10::IValue> given(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  {
    c10::impl::ExcludeDispatchKeyGuard nested_not_recorded(kRecordKey);
    op.redispatchBoxed(below, stack);
  }
  // Snapshots after the op: an out= argument the op resized is replayed at its final size.
  RecordedOp recorded{op, below, {}, {}};
  recorded.arguments.reserve(n);
  for (const auto& v : given) recorded.arguments.push_back(map_tensors(v, snapshot));
  const auto m = schema.returns().size();
  for (auto it = stack->end() - static_cast<std::ptrdiff_t>(m); it != stack->end(); ++it) {
    recorded.returns.push_back(map_tensors(*it, snapshot));
  }
  ops_.push_back(std::move(recorded));
}

}  // namespace graphdispatch
