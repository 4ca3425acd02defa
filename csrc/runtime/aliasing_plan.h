#pragma once

#include "runtime/memory_span.h"
#include "runtime/runner_options.h"

#include <ATen/core/ivalue.h>

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace graphdispatch {

/// What one entry checks on every call for overlaps it cannot key (Note [Aliasing] in
/// memory_span.h): a written dynamic input against every static input, any dynamic input
/// against the written static inputs. Built once after capture, read-only after; free for
/// graphs that write no input.
class AliasingPlan final {
 public:
  AliasingPlan() = default;
  /// `inputs`: the capture's call. `dynamic` and `statics`: positions of its dynamic and static
  /// tensor inputs; `dynamic_written` and `static_written`: those the graph was seen or declared to
  /// write (with options.writes_known false, every dynamic input counts as written).
  AliasingPlan(const std::vector<c10::IValue>& inputs, std::vector<std::size_t> dynamic,
               const std::vector<std::size_t>& dynamic_written,
               const std::vector<std::size_t>& statics,
               const std::vector<std::size_t>& static_written, const RunnerOptions& options);

  /// (dynamic position, static position) of a written dynamic input overlapping a static
  /// input, or of a dynamic input overlapping a written static one; such a call must not
  /// replay. `inputs` match the capture's signature.
  std::optional<std::pair<std::size_t, std::size_t>> static_overlap(
      const std::vector<c10::IValue>& inputs) const;

 private:
  std::vector<std::size_t> dynamic_;
  std::vector<bool> written_;     // per position: the graph writes this dynamic input
  SpanSet static_spans_;          // every static input, when a dynamic input is written
  SpanSet written_static_spans_;  // the static inputs the graph writes
};

}  // namespace graphdispatch
