#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace graphdispatch {

// Note [Aliasing]
// Two inputs alias when their bytes overlap, not when they share a storage: views of one
// storage that share no byte (`latents.unbind(0)`) are independent (case C39). Overlap matters
// only when the graph writes one of the two, since an entry copies each dynamic input into a
// buffer of its own and reads static inputs in place:
// - two overlapping dynamic inputs are recorded in the cache key; a graph writing either is
//   refused for that key (aliased_inputs), one that writes neither is captured;
// - a dynamic input overlapping a static one (a view of a buffer, `model.buf[0]`; a buffer that
//   views another, case C27/C28) cannot be keyed, since the key does not hold dynamic
//   addresses: each entry lists at capture the static spans a written input could reach
//   (static addresses are part of the key, so they hold for the entry's life) and every call
//   with such an input checks it against them, a binary search per written input. An overlap
//   makes the call fall back (aliased_inputs). Graphs that write no input pay nothing.

/// The bytes [begin, end) a strided tensor can touch, and its input position.
struct Span final {
  std::uintptr_t begin = 0;
  std::uintptr_t end = 0;
  std::size_t position = 0;

  bool overlaps(const Span& other) const { return begin < other.end && other.begin < end; }
};

/// The span of `t`, or nullopt for a tensor without elements or data (it overlaps nothing).
/// A bound: interleaved views of one tensor (even and odd columns) count as overlapping.
std::optional<Span> span_of(const at::Tensor& t, std::size_t position);

/// A set of spans queried for overlap in O(log n). Built once, read-only after.
class SpanSet final {
 public:
  SpanSet() = default;
  explicit SpanSet(std::vector<Span> spans);

  bool empty() const { return spans_.empty(); }
  /// The position of a span in the set overlapping `span`, else nullopt.
  std::optional<std::size_t> overlapping(const Span& span) const;

 private:
  std::vector<Span> spans_;         // sorted by begin
  std::vector<std::size_t> reach_;  // reach_[k]: index of the span ending last among 0..k
};

}  // namespace graphdispatch
