#include "runtime/cpu_graph/op_recorder.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cstring>
#include <mutex>
#include <unordered_set>

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

// Integer advanced indexing: the result's shape is the indices' (a boolean mask's is not).
bool integer_indexing(const c10::OperatorHandle& op, const std::vector<c10::IValue>& given) {
  if (op.operator_name().name != "aten::index" || op.operator_name().overload_name != "Tensor") {
    return false;
  }
  bool integral = true;
  map_tensors(given[1], [&](const at::Tensor& t) {
    if (!t.defined()) return t;  // a `:` before an index (`x[:, idx]`)
    const auto type = t.scalar_type();
    integral &= type != at::kBool && type != at::kByte && at::isIntegralType(type, false);
    return t;
  });
  return integral;
}

bool host_read(const c10::OperatorHandle& op, const std::vector<c10::IValue>& given) {
  if (op.hasTag(at::Tag::data_dependent_output)) return true;
  return op.hasTag(at::Tag::dynamic_output_shape) && !integer_indexing(op, given);
}

// Returns that are defined tensors over storage none of the arguments has, without the
// conjugate or negative bit: where an out= overload could write them (it writes the values; a
// functional returning `conj()` of its result returns the bit over other bytes, case C74).
bool returns_new_tensors(const std::vector<c10::IValue>& arguments,
                         const std::vector<c10::IValue>& returns) {
  if (returns.empty()) return false;
  for (const auto& r : returns) {
    if (!r.isTensor() || !r.toTensor().defined()) return false;
    if (r.toTensor().is_conj() || r.toTensor().is_neg()) return false;
    const auto* storage = r.toTensor().storage().unsafeGetStorageImpl();
    bool shared = false;
    for (const auto& a : arguments) {
      map_tensors(a, [&](const at::Tensor& t) {
        shared |= t.defined() && t.storage().unsafeGetStorageImpl() == storage;
        return t;
      });
    }
    if (shared) return false;
  }
  return true;
}

std::optional<OutVariant> replay_through(const c10::OperatorHandle& op, c10::DispatchKeySet below,
                                         const std::vector<c10::IValue>& given,
                                         const std::vector<c10::IValue>& returns) {
  if (op.schema().is_mutable() || uninitialized(op) || !returns_new_tensors(given, returns)) {
    return std::nullopt;
  }
  // A random op's second run would draw other numbers: its out= overload is ATen's same
  // kernel (the sweep of case C73 replays them all in eager's order).
  if (op.hasTag(at::Tag::nondeterministic_seeded)) return out_variant(op);
  return proven_out_variant(op, below, given, returns);
}

// Per return on the stack: a tensor something besides the stack holds (a global, a memoised
// table, a hook's saved result; case C55), told apart from a new result by reference counts:
// a new result's tensor is held by the stack alone (and its own Python wrapper), and its
// storage by its returns alone.
std::vector<bool> held_elsewhere(torch::jit::Stack::const_iterator begin,
                                 torch::jit::Stack::const_iterator end) {
  std::vector<bool> held;
  for (auto it = begin; it != end; ++it) {
    if (!it->isTensor() || !it->toTensor().defined()) {
      held.push_back(false);  // lists: their elements' references include the list's
      continue;
    }
    auto* impl = it->toTensor().unsafeGetTensorImpl();
    auto* storage = it->toTensor().storage().unsafeGetStorageImpl();
    std::size_t same_impl = 0;
    std::unordered_set<const c10::TensorImpl*> on_storage;
    for (auto other = begin; other != end; ++other) {
      if (!other->isTensor() || !other->toTensor().defined()) continue;
      const auto* t = other->toTensor().unsafeGetTensorImpl();
      same_impl += t == impl;
      if (other->toTensor().storage().unsafeGetStorageImpl() == storage) on_storage.insert(t);
    }
    held.push_back(c10::raw::intrusive_ptr::use_count(impl) > same_impl + wrapper_only(impl) ||
                   c10::raw::intrusive_ptr::use_count(storage) > on_storage.size());
  }
  return held;
}

// Case C70: Dynamo hands a Python number it made dynamic (every float under
// `torch.compile(dynamic=True)`, a float that changed between calls) to the graph as a 0-d
// tensor and reads it back with `.item()`. The backend passes such an input as the number
// (src/graphdispatch/_host_numbers.py) unless the graph also uses it as a tensor: then it
// reaches here.
const char* number_advice(const c10::OperatorHandle& op, const std::vector<c10::IValue>& given) {
  if (op.operator_name().name != "aten::_local_scalar_dense" || given.empty() ||
      !given[0].isTensor() || given[0].toTensor().dim() != 0) {
    return "";
  }
  return ". A 0-d tensor read by .item() is often a Python number Dynamo made dynamic (with "
         "dynamic=True every float, LayerNorm's eps included) that the graph also uses as a "
         "tensor: set torch._dynamo.config.specialize_float = True to keep numbers in the "
         "graph as constants, one entry per value";
}

at::Tensor literal_bytes(const at::Tensor& t) {
  const auto& storage = t.storage();
  auto bytes = at::detail::empty_cpu({static_cast<std::int64_t>(storage.nbytes())}, at::kByte,
                                     std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  if (storage.nbytes() > 0) std::memcpy(bytes.data_ptr(), storage.data(), storage.nbytes());
  return bytes;
}

at::Tensor snapshot(const at::Tensor& t) {
  if (!t.defined()) return t;
  return at::Tensor(t.unsafeGetTensorImpl()->shallow_copy_and_detach(
      c10::VariableVersion(0), /*allow_tensor_metadata_change=*/true));
}

}  // namespace

std::size_t wrapper_only(const c10::TensorImpl* impl) {
  const auto* slot = impl->pyobj_slot();
  return slot->load_pyobj() != nullptr && slot->has_unique_reference() ? 1 : 0;
}

bool is_async_collective(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name.rfind("_c10d_functional", 0) == 0 && name != "_c10d_functional::wait_tensor";
}

bool lifts_a_literal(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name == "aten::lift_fresh" || name == "aten::lift_fresh_copy";
}

bool uninitialized(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name == "aten::empty" || name == "aten::empty_strided" || name == "aten::empty_like" ||
         name == "aten::new_empty" || name == "aten::new_empty_strided" ||
         name == "aten::empty_permuted";
}

c10::impl::LocalDispatchKeySet as_captured(c10::impl::LocalDispatchKeySet captured,
                                           const c10::impl::LocalDispatchKeySet& now) {
  const c10::DispatchKeySet record(kRecordKey);
  captured.included_ = captured.included_ | (now.included_ & record);
  captured.excluded_ = captured.excluded_ | (now.excluded_ & record);
  return captured;
}

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
  const auto n = schema.arguments().size();
  const std::vector<c10::IValue> given(stack->end() - static_cast<std::ptrdiff_t>(n), stack->end());
  // Note [Recording ops]: a host read inside a capture fails it, naming the op.
  TORCH_CHECK(!host_read(op, given), "CPU graph capture: ", schema.operator_name(),
              " reads tensor values on the host (or makes a shape from them), which a graph "
              "cannot replay; a device graph capture fails on it too",
              number_advice(op, given));
  auto tls = c10::impl::tls_local_dispatch_key_set();
  tls.included_ = tls.included_.remove(kRecordKey);
  tls.excluded_ = tls.excluded_.remove(kRecordKey);
  RecordedOp recorded{op, below, {}, {}, std::nullopt, {}, {}, tls};
  c10::impl::ExcludeDispatchKeyGuard nested_not_recorded(kRecordKey);
  if (lifts_a_literal(op)) recorded.literal = literal_bytes(given[0].toTensor());
  op.redispatchBoxed(below, stack);
  const auto m = schema.returns().size();
  recorded.held = is_async_collective(op)
                      ? std::vector<bool>(m, false)
                      : held_elsewhere(stack->end() - static_cast<std::ptrdiff_t>(m), stack->end());
  const std::vector<c10::IValue> returned(stack->end() - static_cast<std::ptrdiff_t>(m),
                                          stack->end());
  recorded.out = replay_through(op, below, given, returned);
  // Snapshots after the op: an out= argument the op resized is replayed at its final size.
  recorded.arguments.reserve(n);
  for (const auto& v : given) recorded.arguments.push_back(map_tensors(v, snapshot));
  for (const auto& v : returned) recorded.returns.push_back(map_tensors(v, snapshot));
  ops_.push_back(std::move(recorded));
}

}  // namespace graphdispatch
