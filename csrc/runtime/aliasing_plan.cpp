#include "runtime/aliasing_plan.h"

#include <algorithm>

namespace graphdispatch {
namespace {

bool contains(const std::vector<std::size_t>& positions, std::size_t i) {
  return std::find(positions.begin(), positions.end(), i) != positions.end();
}

}  // namespace

AliasingPlan::AliasingPlan(const std::vector<c10::IValue>& inputs, std::vector<std::size_t> dynamic,
                           const std::vector<std::size_t>& dynamic_written,
                           const std::vector<std::size_t>& statics,
                           const std::vector<std::size_t>& static_written,
                           const RunnerOptions& options)
    : dynamic_(std::move(dynamic)), written_(inputs.size(), false) {
  for (auto i : dynamic_) written_[i] = !options.writes_known || contains(dynamic_written, i);
  std::vector<Span> all, written;
  for (auto i : statics) {
    auto span = span_of(inputs[i].toTensor(), i);
    if (!span) continue;
    all.push_back(*span);
    if (contains(static_written, i)) written.push_back(*span);
  }
  if (std::find(written_.begin(), written_.end(), true) != written_.end()) {
    static_spans_ = SpanSet(std::move(all));
  }
  written_static_spans_ = SpanSet(std::move(written));
}

std::optional<std::pair<std::size_t, std::size_t>> AliasingPlan::static_overlap(
    const std::vector<c10::IValue>& inputs) const {
  if (static_spans_.empty() && written_static_spans_.empty()) return std::nullopt;
  for (auto i : dynamic_) {
    const SpanSet& reachable = written_[i] ? static_spans_ : written_static_spans_;
    if (reachable.empty()) continue;
    auto span = span_of(inputs[i].toTensor(), i);
    if (!span) continue;
    if (auto s = reachable.overlapping(*span)) return std::make_pair(i, *s);
  }
  return std::nullopt;
}

}  // namespace graphdispatch
