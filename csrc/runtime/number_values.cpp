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

// The key with every number replaced by zero of its kind: equal for inputs that differ only in
// their numbers. nullopt when there is no number.
std::optional<Signature> layout_of(const std::vector<c10::IValue>& inputs,
                                   const std::vector<bool>& is_static) {
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
  return Signature::of(masked, is_static);
}

}  // namespace

std::string NumberValues::changing(const std::vector<c10::IValue>& inputs, const Seen& seen,
                                   const RunnerOptions& options) {
  std::string text;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!is_number(inputs[i]) || same_number(inputs[i], seen.first[i])) continue;
    if (!text.empty()) text += ", ";
    text += options.input(i) + ", " + number_text(seen.first[i]) + " at the first capture and " +
            number_text(inputs[i]) + " now";
  }
  return text;
}

std::optional<std::string> NumberValues::refused(const std::vector<c10::IValue>& inputs,
                                                 const std::vector<bool>& is_static,
                                                 const RunnerOptions& options) const {
  const auto layout = layout_of(inputs, is_static);
  if (!layout) return std::nullopt;
  const auto found = seen_.find(*layout);
  if (found == seen_.end() || found->second.captures < kNumberValuesLimit) return std::nullopt;
  return std::to_string(found->second.captures) + " entries of one input layout differ only in " +
         changing(inputs, found->second, options) +
         ": a new value runs without a graph, the values captured so far replay "
         "(Note [Numbers in the key])";
}

std::optional<std::string> NumberValues::on_capture(const std::vector<c10::IValue>& inputs,
                                                    const std::vector<bool>& is_static,
                                                    const RunnerOptions& options) {
  const auto layout = layout_of(inputs, is_static);
  if (!layout) return std::nullopt;
  auto& seen = seen_[*layout];
  if (seen.captures++ == 0) {
    // Numbers only: holding a tensor would keep a model's weights alive (case C34).
    for (const auto& v : inputs) seen.first.push_back(is_number(v) ? v : c10::IValue());
  }
  if (warned_ || seen.captures < kNumberValuesWarnAt) return std::nullopt;
  warned_ = true;
  return std::to_string(seen.captures) + " entries of one input layout differ only in " +
         changing(inputs, seen, options) +
         ": a number is part of the cache key and each value is captured as its own entry, up "
         "to " +
         std::to_string(kNumberValuesLimit) +
         " values; a new value after that runs without a graph (fallback number_values; Note "
         "[Numbers in the key]). On the CPU graph a float used in tensor arithmetic is read at "
         "replay instead; elsewhere pass a number that changes on every call as a tensor. Said "
         "once per graph";
}

}  // namespace graphdispatch
