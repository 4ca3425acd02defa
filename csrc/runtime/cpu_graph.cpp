#include "runtime/cpu_graph.h"

#include "runtime/memory_plan.h"
#include "runtime/out_variant.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

namespace graphdispatch {
namespace {

constexpr std::int64_t kAlignment = 64;  // bytes; what c10's CPU allocator gives each block
constexpr std::int64_t kToTheEnd = std::numeric_limits<std::int64_t>::max();

// Ops that change only a tensor's metadata: the recording already holds the result.
bool metadata_only(const c10::OperatorHandle& op) {
  if (op.hasTag(at::Tag::inplace_view)) return true;
  const auto& name = op.operator_name().name;
  return name == "aten::resize_" || name == "aten::resize_as_" || name == "aten::set_";
}

// Ops that allocate without writing: what the memory holds when read comes from outside the
// dispatcher (`torch.tensor([...])` copies its values into `empty`'s result with memcpy).
bool uninitialized(const c10::OperatorHandle& op) {
  const auto& name = op.operator_name().name;
  return name == "aten::empty" || name == "aten::empty_strided" || name == "aten::empty_like" ||
         name == "aten::new_empty" || name == "aten::new_empty_strided" ||
         name == "aten::empty_permuted";
}

// Only ATen's own ops are known to do nothing but return what their schema says (a collective's
// `wait_tensor` returns its input and must still run).
bool is_aten(const c10::OperatorHandle& op) {
  return op.operator_name().name.rfind("aten::", 0) == 0;
}

void for_each_tensor(const c10::IValue& v, const std::function<void(const at::Tensor&)>& f) {
  map_tensors(v, [&](const at::Tensor& t) {
    if (t.defined()) f(t);
    return t;
  });
}

// One storage the recording saw: made by step `first` (an intermediate) or before the work
// (external, first = -1).
struct StorageUse final {
  std::int64_t first = -1;
  std::int64_t last = -1;
  std::int64_t recorded_refs = 0;  // tensors of the recording holding it
  bool constant = false;           // kept where it is, with the values it has now
};

void release_arena_ref(void* ctx) { delete static_cast<std::shared_ptr<c10::DataPtr>*>(ctx); }

}  // namespace

bool& cpu_graph_capturing() {
  static thread_local bool capturing = false;
  return capturing;
}

void CpuGraph::capture_begin(std::function<void()>) {
  reset();
  recorder_ = std::make_unique<OpRecorder>();
  cpu_graph_capturing() = true;
}

void CpuGraph::capture_end(const std::vector<c10::IValue>& outputs) {
  cpu_graph_capturing() = false;
  auto ops = recorder_->take();
  recorder_.reset();
  build(std::move(ops), outputs);
}

void CpuGraph::capture_abort() noexcept {
  cpu_graph_capturing() = false;
  recorder_.reset();
  steps_.clear();
}

void CpuGraph::reset() {
  steps_.clear();
  stack_.clear();
  arena_bytes_ = recorded_ = through_out_ = copied_ = 0;
}

void CpuGraph::build(std::vector<RecordedOp> ops, const std::vector<c10::IValue>& outputs) {
  recorded_ = static_cast<std::int64_t>(ops.size());
  std::unordered_map<c10::StorageImpl*, StorageUse> uses;
  std::vector<c10::StorageImpl*> order;  // first seen first
  auto use = [&](const at::Tensor& t, std::int64_t step, bool may_define) {
    auto* storage = t.storage().unsafeGetStorageImpl();
    auto [it, added] = uses.try_emplace(storage);
    if (added) {
      order.push_back(storage);
      it->second.first = may_define ? step : -1;
      it->second.constant = may_define && uninitialized(ops[static_cast<std::size_t>(step)].op);
    }
    it->second.last = std::max(it->second.last, step);
    ++it->second.recorded_refs;
    return added;
  };

  // Which steps replay and how, and where each storage is used.
  enum class Kind { kSkip, kCall, kOut, kCopy };
  std::vector<Kind> kinds(ops.size(), Kind::kSkip);
  std::vector<std::vector<bool>> fresh(ops.size());
  std::vector<std::optional<OutVariant>> outs(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto step = static_cast<std::int64_t>(i);
    const auto& op = ops[i];
    for (const auto& a : op.arguments)
      for_each_tensor(a, [&](const at::Tensor& t) { use(t, step, false); });
    bool any_fresh = false, all_fresh = !op.returns.empty();
    for (const auto& r : op.returns) {
      bool made = false;
      if (r.isTensor() && r.toTensor().defined()) {
        made = use(r.toTensor(), step, true);
      } else {
        for_each_tensor(r, [&](const at::Tensor& t) {
          // New tensors in a list (`_foreach_add`, `split_with_sizes_copy`) have no out= slot
          // to write into; refused rather than read after Python frees them.
          TORCH_CHECK(!use(t, step, false), "CPU graph capture: ", op.op.operator_name(),
                      " returns new tensors in a list, which the CPU graph does not replay");
        });
      }
      fresh[i].push_back(made);
      any_fresh |= made;
      all_fresh &= made;
    }
    if (any_fresh) {
      if (all_fresh) outs[i] = out_variant(op.op);
      kinds[i] = outs[i] ? Kind::kOut : Kind::kCopy;
    } else if ((op.op.schema().is_mutable() && !metadata_only(op.op)) || !is_aten(op.op)) {
      kinds[i] = Kind::kCall;  // writes, or another library's op, which may act beyond its returns
    }
  }
  for (const auto& out : outputs) {
    for_each_tensor(out, [&](const at::Tensor& t) {
      auto found = uses.find(t.storage().unsafeGetStorageImpl());
      if (found != uses.end() && found->second.first >= 0) found->second.last = kToTheEnd;
    });
  }

  // Tensors the work did not make: read through non-owning storages at the same address.
  std::unordered_map<c10::StorageImpl*, c10::intrusive_ptr<c10::StorageImpl>> aliases;
  std::vector<c10::StorageImpl*> made;
  std::vector<Lifetime> lifetimes;
  std::int64_t constant_bytes = 0;
  for (auto* storage : order) {
    const auto& u = uses.at(storage);
    const auto bytes = static_cast<std::int64_t>(storage->nbytes());
    if (u.constant) {
      constant_bytes += bytes;
    } else if (u.first >= 0) {
      if (bytes == 0) continue;
      made.push_back(storage);
      lifetimes.push_back({u.first, u.last, bytes});
    } else if (c10::raw::intrusive_ptr::use_count(storage) ==
               static_cast<std::size_t>(u.recorded_refs)) {
      // Made outside the dispatcher and held by nothing else (a Python number wrapped as a
      // tensor): a constant of the graph, which the program keeps.
      constant_bytes += bytes;
    } else {
      aliases.emplace(storage, c10::make_intrusive<c10::StorageImpl>(
                                   c10::StorageImpl::use_byte_size_t(), storage->sym_nbytes(),
                                   c10::DataPtr(storage->mutable_data(), storage->device()),
                                   /*allocator=*/nullptr, /*resizable=*/false));
    }
  }
  auto fixed = [&](const at::Tensor& t) {
    if (!t.defined()) return t;
    auto alias = aliases.find(t.storage().unsafeGetStorageImpl());
    if (alias != aliases.end())
      t.unsafeGetTensorImpl()->set_storage_keep_dtype(c10::Storage(alias->second));
    return t;
  };

  // Intermediates and outputs: one arena, shared by lifetime.
  const auto plan = plan_memory(lifetimes, kAlignment);
  arena_bytes_ = plan.bytes + constant_bytes;
  if (plan.bytes > 0) {
    auto arena = std::make_shared<c10::DataPtr>(c10::GetCPUAllocator()->allocate(plan.bytes));
    auto* base = static_cast<char*>(arena->get());
    for (std::size_t k = 0; k < made.size(); ++k) {
      made[k]->set_data_ptr_noswap(c10::DataPtr(base + plan.offsets[k],
                                                new std::shared_ptr<c10::DataPtr>(arena),
                                                &release_arena_ref, c10::Device(c10::kCPU)));
    }
  }

  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (kinds[i] == Kind::kSkip) continue;
    auto& op = ops[i];
    Step step{op.op, op.keys, {}, {}};
    for (auto& a : op.arguments) a = map_tensors(a, fixed);
    if (kinds[i] == Kind::kOut) {
      step.op = outs[i]->op;
      for (auto k : outs[i]->arguments) step.arguments.push_back(op.arguments[k]);
      for (const auto& r : op.returns) step.arguments.push_back(r);
      ++through_out_;
    } else {
      step.arguments = std::move(op.arguments);
    }
    // A factory op was recorded with BackendSelect's keys; its out= overload has no
    // BackendSelect kernel (a fallthrough there) and dispatches on its out tensors instead.
    for (const auto& a : step.arguments) {
      for_each_tensor(
          a, [&](const at::Tensor& t) { step.keys = step.keys | below_recorder(t.key_set()); });
    }
    if (!step.op.hasKernelForDispatchKey(c10::DispatchKey::BackendSelect)) {
      step.keys = step.keys.remove(c10::DispatchKey::BackendSelect);
    }
    if (kinds[i] == Kind::kCopy) {
      for (std::size_t k = 0; k < op.returns.size(); ++k) {
        step.copy_to.push_back(fresh[i][k] ? op.returns[k].toTensor() : at::Tensor());
      }
      ++copied_;
    }
    steps_.push_back(std::move(step));
  }
}

void CpuGraph::replay() {
  for (const auto& step : steps_) {
    stack_.assign(step.arguments.begin(), step.arguments.end());
    step.op.redispatchBoxed(step.keys, &stack_);
    for (std::size_t k = 0; k < step.copy_to.size(); ++k) {
      if (step.copy_to[k].defined()) step.copy_to[k].copy_(stack_[k].toTensor());
    }
  }
  stack_.clear();
}

std::string CpuGraph::describe() const {
  std::ostringstream text;
  text << recorded_ << " ops recorded, " << steps_.size() << " replayed (" << through_out_
       << " through out=, " << copied_ << " copied), arena " << arena_bytes_ << " bytes";
  return text.str();
}

}  // namespace graphdispatch
