#include "runtime/out_variant.h"

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

}  // namespace

std::optional<OutVariant> out_variant(const c10::OperatorHandle& functional) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<c10::OperatorName>> overloads;  // by name
  static std::unordered_map<c10::OperatorName, std::optional<OutVariant>> found;
  std::lock_guard<std::mutex> lock(mutex);
  const auto& name = functional.operator_name();
  if (auto it = found.find(name); it != found.end()) return it->second;
  if (overloads.empty()) {
    for (auto& op : c10::Dispatcher::singleton().getAllOpNames()) {
      overloads[op.name].push_back(op);
    }
  }
  std::optional<OutVariant> result;
  const auto& schema = functional.schema();
  for (const auto& candidate : overloads[name.name]) {
    if (candidate == name) continue;
    auto op = c10::Dispatcher::singleton().findOp(candidate);
    if (!op || !op->hasSchema()) continue;
    if (auto kept = matches(schema, op->schema())) {
      result = OutVariant{*op, std::move(*kept)};
      break;
    }
  }
  found.emplace(name, result);
  return result;
}

}  // namespace graphdispatch
