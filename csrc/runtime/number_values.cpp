#include "runtime/number_values.h"

#include <cstring>
#include <sstream>

namespace graphdispatch {

namespace {

bool is_number(const c10::IValue& v) { return v.isInt() || v.isDouble() || v.isBool(); }

bool same_number(const c10::IValue& a, const c10::IValue& b) {
  if (a.isDouble() && b.isDouble()) {
    const double x = a.toDouble(), y = b.toDouble();
    return std::memcmp(&x, &y, sizeof x) == 0;  // as the key compares: by bits
  }
  return a.isInt() && b.isInt() ? a.toInt() == b.toInt() : a.toBool() == b.toBool();
}

std::string number_text(const c10::IValue& v) {
  if (v.isInt()) return std::to_string(v.toInt());
  if (v.isBool()) return v.toBool() ? "True" : "False";
  std::ostringstream out;
  out << v.toDouble();
  return out.str();
}

}  // namespace

std::optional<std::string> NumberValues::on_capture(const std::vector<c10::IValue>& inputs,
                                                    const std::vector<bool>& is_static,
                                                    const RunnerOptions& options) {
  if (warned_) return std::nullopt;
  // The key with every number replaced by zero of its kind: equal for captures that differ
  // only in their numbers.
  std::vector<c10::IValue> masked;
  masked.reserve(inputs.size());
  bool any_number = false;
  for (const auto& v : inputs) {
    any_number = any_number || is_number(v);
    masked.push_back(v.isInt()      ? c10::IValue(std::int64_t{0})
                     : v.isDouble() ? c10::IValue(0.0)
                     : v.isBool()   ? c10::IValue(false)
                                    : v);
  }
  if (!any_number) return std::nullopt;
  auto& seen = seen_[Signature::of(masked, is_static)];
  if (seen.captures++ == 0) {
    // Numbers only: holding a tensor would keep a model's weights alive (case C34).
    for (const auto& v : inputs) seen.first.push_back(is_number(v) ? v : c10::IValue());
  }
  if (seen.captures < kNumberValuesWarnAt) return std::nullopt;
  std::string changing;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!is_number(inputs[i]) || same_number(inputs[i], seen.first[i])) continue;
    if (!changing.empty()) changing += ", ";
    changing += options.input(i) + ", " + number_text(seen.first[i]) +
                " at the first capture and " + number_text(inputs[i]) + " now";
  }
  warned_ = true;
  return std::to_string(seen.captures) + " entries of one input layout differ only in " + changing +
         ": a number is part of the cache key and each value is captured as its own entry "
         "(Note [Numbers in the key]). A number that changes on every call captures on every "
         "call; pass it as a tensor to replay one graph, or bound the entries with max_entries. "
         "Said once per graph";
}

}  // namespace graphdispatch
