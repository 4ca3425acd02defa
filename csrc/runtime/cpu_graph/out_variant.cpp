#include "runtime/cpu_graph/out_variant.h"

#include "runtime/cpu_graph/cpu_graph.h"
#include "runtime/cpu_graph/op_recorder.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

namespace graphdispatch {
namespace {

bool is_tensor_option(const c10::Argument& a) {
  return a.kwarg_only() && (a.name() == "dtype" || a.name() == "layout" || a.name() == "device" ||
                            a.name() == "pin_memory");
}

bool writes(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

std::optional<std::vector<std::size_t>> matches(const c10::FunctionSchema& functional,
                                                const c10::FunctionSchema& out) {
  const auto& args = functional.arguments();
  const auto& out_args = out.arguments();
  const auto n_out = functional.returns().size();
  if (n_out == 0 || out.returns().size() != n_out || out_args.size() < n_out) return std::nullopt;
  const auto n_in = out_args.size() - n_out;
  for (std::size_t k = n_in; k < out_args.size(); ++k) {
    const auto& a = out_args[k];
    if (!a.kwarg_only() || !writes(a) || *a.type() != *c10::TensorType::get()) return std::nullopt;
  }
  std::vector<std::size_t> kept;
  std::size_t j = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (j < n_in && args[i].name() == out_args[j].name()) {
      if (*args[i].type() != *out_args[j].type() || writes(args[i]) != writes(out_args[j])) {
        return std::nullopt;
      }
      kept.push_back(i);
      ++j;
    } else if (!is_tensor_option(args[i])) {
      return std::nullopt;
    }
  }
  if (j != n_in) return std::nullopt;
  return kept;
}

// The overloads of every op name and the answers found so far; replaced, never destroyed,
// after fork (reset_cpu_graph_after_fork).
struct Cache final {
  std::mutex mutex;
  std::map<std::string, std::vector<c10::OperatorName>> overloads;  // by name
  std::unordered_map<c10::OperatorName, std::optional<OutVariant>> found;
};
Cache* cache = new Cache();

// Byte equality of two tensors of one dtype, sizes and strides (NaN payloads included).
bool same_bytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes() || a.strides() != b.strides() || a.dtype() != b.dtype()) {
    return false;
  }
  const auto x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.const_data_ptr(), y.const_data_ptr(), x.nbytes()) == 0;
}

class SilentWarnings final : public c10::WarningHandler {
 public:
  void process(const c10::Warning&) override {}
};

}  // namespace

std::optional<OutVariant> out_variant(const c10::OperatorHandle& functional) {
  std::lock_guard<std::mutex> lock(cache->mutex);
  const auto& name = functional.operator_name();
  if (auto it = cache->found.find(name); it != cache->found.end()) return it->second;
  if (cache->overloads.empty()) {
    for (auto& op : c10::Dispatcher::singleton().getAllOpNames()) {
      cache->overloads[op.name].push_back(op);
    }
  }
  std::optional<OutVariant> result;
  const auto& schema = functional.schema();
  for (const auto& candidate : cache->overloads[name.name]) {
    if (candidate == name) continue;
    auto op = c10::Dispatcher::singleton().findOp(candidate);
    if (!op || !op->hasSchema()) continue;
    if (auto kept = matches(schema, op->schema())) {
      result = OutVariant{*op, std::move(*kept)};
      break;
    }
  }
  cache->found.emplace(name, result);
  return result;
}

std::optional<OutVariant> proven_out_variant(const c10::OperatorHandle& functional,
                                             c10::DispatchKeySet keys,
                                             const std::vector<c10::IValue>& arguments,
                                             const std::vector<c10::IValue>& returns) {
  auto out = out_variant(functional);
  if (!out) return std::nullopt;
  torch::jit::Stack stack;
  for (auto k : out->arguments) stack.push_back(arguments[k]);
  std::vector<at::Tensor> written;
  SilentWarnings silent;
  c10::WarningUtils::WarningHandlerGuard quiet(&silent);
  try {
    // The trial's out tensors too: a layout empty_strided refuses (a quantized return, case
    // C91) is the overload's refusal, not a failure of the capture.
    for (const auto& r : returns) {
      const auto& t = r.toTensor();
      written.push_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
      stack.emplace_back(written.back());
    }
    out->op.redispatchBoxed(redispatch_keys(out->op, keys, stack), &stack);
  } catch (const c10::Error&) {
    return std::nullopt;  // e.g. binary_cross_entropy.out with a weight
  }
  for (std::size_t k = 0; k < returns.size(); ++k) {
    if (!same_bytes(written[k], returns[k].toTensor())) return std::nullopt;
  }
  return out;
}

c10::DispatchKeySet redispatch_keys(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                                    const std::vector<c10::IValue>& arguments) {
  for (const auto& a : arguments) {
    map_tensors(a, [&](const at::Tensor& t) {
      if (t.defined()) keys = keys | below_recorder(t.key_set());
      return t;
    });
  }
  if (!op.hasKernelForDispatchKey(c10::DispatchKey::BackendSelect)) {
    keys = keys.remove(c10::DispatchKey::BackendSelect);
  }
  return keys;
}

void reset_cpu_graph_after_fork() {
  cache = new Cache();
  Workspace::get().reset_after_fork();
}

void with_out_variants_locked(const std::function<void()>& held) {
  std::lock_guard<std::mutex> lock(cache->mutex);
  held();
}

}  // namespace graphdispatch
