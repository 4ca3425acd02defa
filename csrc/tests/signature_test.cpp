#include "runtime/signature.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <c10/core/InferenceMode.h>
#include <gtest/gtest.h>

namespace graphdispatch {
namespace {

Signature sig(std::vector<c10::IValue> inputs) {
  return Signature::of(inputs, std::vector<bool>(inputs.size(), false));
}

TEST(Signature, SameMetadataSameKeyRegardlessOfValues) {
  EXPECT_EQ(sig({at::randn({2, 3})}), sig({at::randn({2, 3})}));
}

TEST(Signature, TensorMetadataChangesKey) {
  auto base = sig({at::randn({4, 6})});
  EXPECT_FALSE(base == sig({at::randn({6, 4})}));                          // shape
  EXPECT_FALSE(base == sig({at::randn({4, 6}, at::kDouble)}));             // dtype
  EXPECT_FALSE(base == sig({at::randn({6, 4}).t()}));                      // strides
  EXPECT_FALSE(base == sig({at::randn({4, 6}).set_requires_grad(true)}));  // requires_grad
}

TEST(Signature, AlignmentIsKeyedForStaticInputsOnly) {
  const auto aligned = at::randn({4, 6});
  const auto misaligned = at::randn({25}).narrow(0, 1, 24).view({4, 6});
  // A copied input lands in a fresh buffer: the caller's offset changes no kernel (case C23).
  EXPECT_EQ(sig({aligned}), sig({misaligned}));
  // A static input is read where it is.
  const std::vector<bool> is_static{true};
  EXPECT_FALSE(Signature::of({aligned}, is_static) == Signature::of({misaligned}, is_static));
}

TEST(Signature, ScalarValuesAreKeyed) {
  EXPECT_FALSE(sig({c10::IValue(0.5)}) == sig({c10::IValue(1.5)}));
  EXPECT_FALSE(sig({c10::IValue(int64_t{2})}) == sig({c10::IValue(2.0)}));
  EXPECT_FALSE(sig({c10::IValue(true)}) == sig({c10::IValue(int64_t{1})}));
  EXPECT_EQ(sig({c10::IValue()}), sig({c10::IValue()}));
}

TEST(Signature, ModesAreKeyed) {
  auto x = at::randn({2});
  auto plain = sig({x});
  {
    at::AutoGradMode no_grad(false);
    EXPECT_FALSE(plain == sig({x}));
  }
  {
    // Inference mode changes no kernel: keyed as no_grad, which it implies (case C25).
    const auto no_grad_key = [&] {
      at::AutoGradMode no_grad(false);
      return sig({x});
    }();
    c10::InferenceMode inference;
    EXPECT_EQ(no_grad_key, sig({x}));
  }
  {
    at::autocast::set_autocast_enabled(at::kCPU, true);
    auto autocast = sig({x});
    at::autocast::set_autocast_enabled(at::kCPU, false);
    EXPECT_FALSE(plain == autocast);
  }
  EXPECT_EQ(plain, sig({x}));
}

TEST(Signature, OverlapOfDynamicInputsIsKeyed) {
  auto base = at::randn({1000});
  auto separate = sig({at::randn({100}), at::randn({100})});
  auto overlapping = sig({base.narrow(0, 0, 100), base.narrow(0, 99, 100)});
  EXPECT_FALSE(overlapping.overlaps().empty());
  EXPECT_TRUE(separate.overlaps().empty());
  EXPECT_FALSE(separate == overlapping);
  EXPECT_FALSE(sig({base, base}).overlaps().empty());
  // A strided view reaching over another input's bytes overlaps it.
  EXPECT_FALSE(
      sig({base.narrow(0, 0, 10).view({5, 2}).t(), base.narrow(0, 4, 1)}).overlaps().empty());
  // Views of one storage that share no byte are independent inputs (case C39).
  EXPECT_TRUE(sig({base.narrow(0, 0, 100), base.narrow(0, 100, 100)}).overlaps().empty());
  auto rows = base.view({10, 100}).unbind(0);
  EXPECT_TRUE(sig({rows[0], rows[1], rows[2]}).overlaps().empty());
  // Interleaved columns share the storage range but no element: treated as overlapping (the
  // check compares byte ranges, a conservative bound).
  auto grid = base.view({500, 2});
  EXPECT_FALSE(sig({grid.select(1, 0), grid.select(1, 1)}).overlaps().empty());
  // Static inputs are not copied, so overlapping them is not aliasing between copies.
  auto a = base.narrow(0, 0, 100);
  EXPECT_TRUE(Signature::of({a, a}, {true, false}).overlaps().empty());
}

TEST(Signature, UnsupportedInputNamesPosition) {
  std::vector<c10::IValue> inputs{at::randn({1}), c10::IValue(std::string("text"))};
  try {
    Signature::of(inputs, {false, false});
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("position 1"), std::string::npos);
  }
}

TEST(CheckInputMatch, SeedMessageShape) {
  try {
    check_input_match(at::zeros({2, 3}), at::zeros({3, 3}, at::kHalf), 4);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(
        std::string(e.what_without_backtrace())
            .find("input mismatch at position 4: captured [2, 3]/float32, got [3, 3]/float16"),
        std::string::npos);
  }
  EXPECT_NO_THROW(check_input_match(at::zeros({2, 3}), at::ones({2, 3}), 0));
}

}  // namespace
}  // namespace graphdispatch
