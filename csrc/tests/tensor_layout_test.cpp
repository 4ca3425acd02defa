// Note [Expanded tensors] and views of inputs against what ATen itself says of the same
// tensors: internal overlap, aliasing, contiguity, storage sizes and element values.

#include "runtime/tensor_layout.h"

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <set>

namespace graphdispatch {
namespace {

// Addresses of every element of `t`, enumerated one by one.
std::set<const void*> element_addresses(const at::Tensor& t) {
  std::set<const void*> found;
  const auto* base = static_cast<const char*>(t.data_ptr());
  std::vector<std::int64_t> index(static_cast<std::size_t>(t.dim()), 0);
  for (std::int64_t n = 0; n < t.numel(); ++n) {
    std::int64_t offset = 0;
    for (std::int64_t d = 0; d < t.dim(); ++d) offset += index[d] * t.stride(d);
    found.insert(base + offset * static_cast<std::int64_t>(t.itemsize()));
    for (auto d = t.dim() - 1; d >= 0 && ++index[d] == t.size(d); --d) index[d] = 0;
  }
  return found;
}

std::vector<at::Tensor> expanded_tensors() {
  const auto row = at::randn({1, 6});
  return {row.expand({4, 6}), at::randn({3, 1, 5}).expand({3, 7, 5}), at::randn({}).expand({2, 3}),
          at::randn({5, 4}).t()[1].unsqueeze(0).expand({3, 5}),
          at::randn({2, 1, 3}).transpose(0, 2).expand({3, 8, 2})};
}

std::vector<at::Tensor> plain_tensors() {
  const auto base = at::randn({6, 8});
  return {base,
          base.t(),
          base.slice(1, 1, 8, 3),
          base.narrow(0, 2, 3),
          at::randn({1, 6}),
          at::randn({3, 1, 5}).expand({3, 1, 5}),
          base.as_strided({2, 3}, {0, 1}).narrow(0, 0, 1)};
}

TEST(TensorLayout, ExpandedExactlyWhenTorchSeesInternalOverlap) {
  // ATen answers Yes for a zero stride on a dimension of size > 1, No for a dense tensor, and
  // TooHard where it cannot tell (a strided view, which has no zero stride here).
  for (const auto& t : expanded_tensors()) {
    EXPECT_TRUE(is_expanded(t)) << t.sizes() << " " << t.strides();
    EXPECT_EQ(at::has_internal_overlap(t), at::MemOverlap::Yes);
  }
  for (const auto& t : plain_tensors()) {
    EXPECT_FALSE(is_expanded(t)) << t.sizes() << " " << t.strides();
    EXPECT_NE(at::has_internal_overlap(t), at::MemOverlap::Yes);
  }
}

TEST(TensorLayout, UnexpandedReadsEachLocationOnceAndExpandsBackToTheTensor) {
  for (const auto& t : expanded_tensors()) {
    const auto part = unexpanded(t);
    EXPECT_TRUE(part.is_alias_of(t));
    EXPECT_EQ(part.data_ptr(), t.data_ptr());
    EXPECT_NE(at::has_internal_overlap(part), at::MemOverlap::Yes);
    EXPECT_EQ(element_addresses(part), element_addresses(t));
    EXPECT_EQ(part.numel(), static_cast<std::int64_t>(element_addresses(t).size()));
    EXPECT_TRUE(at::equal(part.expand(t.sizes()), t));
  }
  for (const auto& t : plain_tensors()) {
    const auto part = unexpanded(t);
    EXPECT_EQ(part.sizes(), t.sizes());
    EXPECT_EQ(part.strides(), t.strides());
    EXPECT_EQ(part.data_ptr(), t.data_ptr());
  }
}

TEST(TensorLayout, CloneKeepsValuesAndLayoutInMemoryOfItsOwn) {
  for (const auto& t : plain_tensors()) {
    const auto copy = clone_keeping_layout(t);
    EXPECT_TRUE(at::equal(copy, t));
    EXPECT_FALSE(copy.is_alias_of(t));
    EXPECT_EQ(copy.strides(), t.clone(at::MemoryFormat::Preserve).strides());
  }
  for (const auto& t : expanded_tensors()) {
    const auto copy = clone_keeping_layout(t);
    EXPECT_TRUE(at::equal(copy, t));
    EXPECT_FALSE(copy.is_alias_of(t));
    EXPECT_EQ(copy.sizes(), t.sizes());
    for (std::int64_t d = 0; d < t.dim(); ++d) {
      if (t.stride(d) == 0 && t.size(d) > 1) {
        EXPECT_EQ(copy.stride(d), 0) << "dimension " << d;
      }
    }
    // Its storage holds the unexpanded part only, densely.
    const auto part = unexpanded(t);
    EXPECT_EQ(copy.storage().nbytes(), part.numel() * part.itemsize());
    EXPECT_TRUE(unexpanded(copy).is_non_overlapping_and_dense());
  }
}

TEST(TensorLayout, ViewOfInputRebuildsTheOutputOnAnyInputOfThatLayout) {
  const auto input = at::randn({6, 8}).narrow(0, 1, 5);  // a nonzero storage offset
  const std::vector<at::Tensor> outputs{input.slice(1, 1, 8, 2), input[3], input.t(),
                                        input.narrow(0, 2, 2).unsqueeze(1), input.view({40})};
  const auto other = at::randn({6, 8}).narrow(0, 1, 5);  // same layout, other memory
  for (const auto& out : outputs) {
    const auto view = view_of_input(out, input, 2);
    ASSERT_TRUE(view.has_value());
    EXPECT_EQ(view->position, 2u);
    EXPECT_FALSE(view->whole);
    const auto rebuilt = view->of(input);
    EXPECT_EQ(rebuilt.data_ptr(), out.data_ptr());
    EXPECT_EQ(rebuilt.sizes(), out.sizes());
    EXPECT_EQ(rebuilt.strides(), out.strides());
    // On another input, the same view as eager's slicing of that input gives.
    const auto moved = view->of(other);
    EXPECT_TRUE(moved.is_alias_of(other));
    EXPECT_TRUE(
        at::equal(moved, other.as_strided(out.sizes(), out.strides(), out.storage_offset())));
  }
}

TEST(TensorLayout, ViewOfInputWholeNoneAndDtypeMismatch) {
  const auto input = at::randn({4, 4});
  const auto whole = view_of_input(input.view({4, 4}), input, 0);
  ASSERT_TRUE(whole.has_value());
  EXPECT_TRUE(whole->whole);
  const auto other = at::randn({4, 4});
  EXPECT_TRUE(whole->of(other).is_same(other));
  EXPECT_FALSE(view_of_input(input.clone(), input, 0).has_value());
  EXPECT_FALSE(view_of_input(at::Tensor(), input, 0).has_value());
  EXPECT_THROW(view_of_input(input.view(at::kInt), input, 0), c10::Error);
}

}  // namespace
}  // namespace graphdispatch
