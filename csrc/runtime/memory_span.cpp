#include "runtime/memory_span.h"

#include <algorithm>

namespace graphdispatch {

std::optional<Span> span_of(const at::Tensor& t, std::size_t position) {
  if (!t.defined() || t.numel() == 0 || !t.has_storage() || t.storage().data() == nullptr) {
    return std::nullopt;
  }
  const auto item = static_cast<std::int64_t>(t.itemsize());
  std::int64_t low = 0, high = 0;  // element offsets from the first element, both inclusive
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    const std::int64_t extent = (t.size(d) - 1) * t.stride(d);
    (extent < 0 ? low : high) += extent;
  }
  const auto first = reinterpret_cast<std::uintptr_t>(t.storage().data()) +
                     static_cast<std::uintptr_t>(t.storage_offset() * item);
  return Span{first + static_cast<std::uintptr_t>(low * item),
              first + static_cast<std::uintptr_t>((high + 1) * item), position};
}

SpanSet::SpanSet(std::vector<Span> spans) : spans_(std::move(spans)) {
  std::sort(spans_.begin(), spans_.end(),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  reach_.resize(spans_.size());
  for (std::size_t k = 0; k < spans_.size(); ++k) {
    reach_[k] = (k == 0 || spans_[k].end > spans_[reach_[k - 1]].end) ? k : reach_[k - 1];
  }
}

std::optional<std::size_t> SpanSet::overlapping(const Span& span) const {
  // The spans beginning before `span` ends; of those, the one reaching furthest.
  const auto after =
      std::lower_bound(spans_.begin(), spans_.end(), span.end,
                       [](const Span& s, std::uintptr_t end) { return s.begin < end; });
  if (after == spans_.begin()) return std::nullopt;
  const Span& furthest = spans_[reach_[static_cast<std::size_t>(after - spans_.begin()) - 1]];
  if (furthest.end > span.begin) return furthest.position;
  return std::nullopt;
}

}  // namespace graphdispatch
