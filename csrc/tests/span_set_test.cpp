// SpanSet and span_of (Note [Aliasing]) against brute force: the bytes each span or tensor
// covers, enumerated one by one.

#include "runtime/memory_span.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

namespace graphdispatch {
namespace {

using Bytes = std::set<std::uintptr_t>;

Bytes bytes_of(const Span& s) {
  Bytes bytes;
  for (auto b = s.begin; b < s.end; ++b) bytes.insert(b);
  return bytes;
}

bool share_a_byte(const Bytes& a, const Bytes& b) {
  return std::any_of(a.begin(), a.end(), [&](std::uintptr_t x) { return b.count(x) > 0; });
}

// Positions of the spans in `spans` sharing a byte with `query`.
std::set<std::size_t> overlapping_by_bytes(const std::vector<Span>& spans, const Span& query) {
  std::set<std::size_t> found;
  const auto wanted = bytes_of(query);
  for (const auto& s : spans) {
    if (share_a_byte(bytes_of(s), wanted)) found.insert(s.position);
  }
  return found;
}

// Every byte an element of `t` occupies, one element at a time.
Bytes bytes_of(const at::Tensor& t) {
  Bytes bytes;
  const auto base = reinterpret_cast<std::uintptr_t>(t.data_ptr());
  const auto item = static_cast<std::int64_t>(t.itemsize());
  std::vector<std::int64_t> index(static_cast<std::size_t>(t.dim()), 0);
  for (std::int64_t n = 0; n < t.numel(); ++n) {
    std::int64_t offset = 0;
    for (std::int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    for (std::int64_t b = 0; b < item; ++b) bytes.insert(base + offset * item + b);
    for (auto d = t.dim() - 1; d >= 0 && ++index[d] == t.size(d); --d) index[d] = 0;
  }
  return bytes;
}

TEST(SpanSet, AnswersAsBruteForceOnRandomSpans) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::uintptr_t> start(0, 200), length(1, 40);
  for (int trial = 0; trial < 200; ++trial) {
    const auto count = static_cast<std::size_t>(trial % 12);  // the empty set included
    std::vector<Span> spans;
    for (std::size_t k = 0; k < count; ++k) {
      const auto begin = start(rng);
      spans.push_back({begin, begin + length(rng), k});  // span_of never gives an empty span
    }
    const SpanSet set(spans);
    EXPECT_EQ(set.empty(), spans.empty());
    for (int q = 0; q < 20; ++q) {
      const auto begin = start(rng);
      const Span query{begin, begin + length(rng), 99};
      const auto expected = overlapping_by_bytes(spans, query);
      const auto got = set.overlapping(query);
      if (expected.empty()) {
        EXPECT_FALSE(got.has_value()) << "trial " << trial << ": reported " << *got;
      } else {
        ASSERT_TRUE(got.has_value()) << "trial " << trial << ": missed an overlap";
        EXPECT_TRUE(expected.count(*got))
            << "trial " << trial << ": " << *got << " does not overlap";
      }
    }
  }
}

TEST(SpanSet, FindsALongSpanHiddenBehindLaterShortOnes) {
  // [0, 100) begins first and reaches furthest; the spans after it end early, so the query
  // between them overlaps only the first one.
  const std::vector<Span> spans{{10, 20, 1}, {0, 100, 0}, {30, 40, 2}};
  const SpanSet set(spans);
  for (const Span query : {Span{50, 60, 9}, Span{20, 30, 9}, Span{99, 140, 9}}) {
    ASSERT_EQ(overlapping_by_bytes(spans, query), std::set<std::size_t>{0});
    const auto got = set.overlapping(query);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(*got, 0u);
  }
  EXPECT_FALSE(set.overlapping({100, 120, 9}).has_value());  // end is exclusive
}

TEST(SpanOf, CoversExactlyTheBytesOfADenseTensor) {
  const auto base = at::arange(64, at::kFloat);
  const std::vector<at::Tensor> views{base,
                                      base.view({8, 8}).t(),
                                      base.narrow(0, 5, 20),
                                      base.view({8, 8})[3],
                                      base.view({4, 16}).narrow(1, 0, 16).narrow(0, 1, 2),
                                      base.to(at::kDouble).narrow(0, 1, 3)};
  for (const auto& v : views) {
    const auto span = span_of(v, 3);
    ASSERT_TRUE(span.has_value());
    EXPECT_EQ(span->position, 3u);
    const auto expected = bytes_of(v);
    EXPECT_EQ(bytes_of(*span), expected) << v.sizes() << " " << v.strides();
  }
}

TEST(SpanOf, BoundsTheBytesOfAStridedTensor) {
  const auto base = at::zeros({6, 10}, at::kHalf);
  const std::vector<at::Tensor> views{
      base.slice(1, 0, 10, 2), base.slice(0, 1, 6, 3).slice(1, 7), base.t().slice(0, 2, 10, 3),
      base.as_strided({3, 2}, {4, 7}, 20), base[2][5].expand({4, 3})};
  for (const auto& v : views) {
    const auto span = span_of(v, 0);
    ASSERT_TRUE(span.has_value());
    const auto bytes = bytes_of(v);
    // The tightest bound: the first and the last byte any element touches.
    EXPECT_EQ(span->begin, *bytes.begin()) << v.sizes() << " " << v.strides();
    EXPECT_EQ(span->end, *bytes.rbegin() + 1) << v.sizes() << " " << v.strides();
  }
}

TEST(SpanOf, OverlapAgreesWithTorchWhereTorchCanTell) {
  const auto base = at::arange(48, at::kFloat);
  const std::vector<at::Tensor> views{base.narrow(0, 0, 16), base.narrow(0, 16, 16),
                                      base.narrow(0, 8, 16), base.narrow(0, 32, 16),
                                      base.view({4, 12})[1], base};
  for (const auto& a : views) {
    for (const auto& b : views) {
      const auto status = at::get_overlap_status(a, b);
      ASSERT_NE(status, at::MemOverlapStatus::TooHard);  // dense views: torch decides
      const bool torch_says = status != at::MemOverlapStatus::No;
      EXPECT_EQ(span_of(a, 0)->overlaps(*span_of(b, 1)), torch_says);
      EXPECT_EQ(share_a_byte(bytes_of(a), bytes_of(b)), torch_says);
    }
  }
  // Interleaved columns share no byte; the bound counts them as overlapping, never the reverse.
  const auto grid = base.view({6, 8});
  const auto even = grid.slice(1, 0, 8, 2), odd = grid.slice(1, 1, 8, 2);
  EXPECT_FALSE(share_a_byte(bytes_of(even), bytes_of(odd)));
  EXPECT_TRUE(span_of(even, 0)->overlaps(*span_of(odd, 1)));
}

TEST(SpanOf, NoSpanWithoutElements) {
  EXPECT_FALSE(span_of(at::empty({0, 4}), 0).has_value());
  EXPECT_FALSE(span_of(at::Tensor(), 0).has_value());
}

}  // namespace
}  // namespace graphdispatch
