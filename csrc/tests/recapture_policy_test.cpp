// The recapture policy alone (Note [Moving static inputs]): losses counted per layout, the
// bound, and the refill after kStableCalls calls in a row with the same addresses.

#include "runtime/recapture_policy.h"

#include "runtime/stats.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

namespace graphdispatch {
namespace {

// The key of a call whose one input is the static `weight`.
Signature keyed(const at::Tensor& weight) { return Signature::of({weight}, {true}); }

TEST(RecapturePolicy, LayoutWithoutLossesCapturesWithoutCountingARecapture) {
  RecapturePolicy policy(1);
  const auto recaptures = Stats::get().recaptures.load();
  EXPECT_FALSE(policy.refused(keyed(at::randn({4}))).has_value());
  EXPECT_EQ(Stats::get().recaptures.load(), recaptures);
}

TEST(RecapturePolicy, EntryThatReplayedAgainIsNoLoss) {
  RecapturePolicy policy(0);
  const auto w = at::randn({4});
  policy.on_lost(keyed(w), 0, 2);
  EXPECT_FALSE(policy.refused(keyed(at::randn({4}))).has_value());
}

TEST(RecapturePolicy, LossesPastTheBoundRefuseThatLayoutOnly) {
  RecapturePolicy policy(1);
  const auto recaptures = Stats::get().recaptures.load();
  policy.on_lost(keyed(at::randn({4})), 0, 1);
  EXPECT_FALSE(policy.refused(keyed(at::randn({4}))).has_value());  // a recapture
  EXPECT_EQ(Stats::get().recaptures.load(), recaptures + 1);
  policy.on_lost(keyed(at::randn({4})), 0, 0);
  const auto refused = policy.refused(keyed(at::randn({4})));
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->position, 0u);
  EXPECT_EQ(refused->lost, 2);
  EXPECT_FALSE(policy.refused(keyed(at::randn({8}))).has_value());  // another layout
}

TEST(RecapturePolicy, SameAddressesStableCallsInARowRefillTheBudget) {
  RecapturePolicy policy(0);
  policy.on_lost(keyed(at::randn({4})), 0, 1);
  const auto settled = at::randn({4});
  for (std::int64_t i = 1; i < kStableCalls; ++i) {
    EXPECT_TRUE(policy.refused(keyed(settled)).has_value()) << "call " << i;
  }
  EXPECT_FALSE(policy.refused(keyed(settled)).has_value());
  // The losses are forgotten: new addresses capture again.
  EXPECT_FALSE(policy.refused(keyed(at::randn({4}))).has_value());
}

TEST(RecapturePolicy, NewAddressesBetweenCallsRestartTheCount) {
  RecapturePolicy policy(0);
  policy.on_lost(keyed(at::randn({4})), 0, 1);
  const auto a = at::randn({4});
  const auto b = at::randn({4});
  for (int i = 0; i < 2 * kStableCalls; ++i) {
    EXPECT_TRUE(policy.refused(keyed(i % 2 == 0 ? a : b)).has_value()) << "call " << i;
  }
}

}  // namespace
}  // namespace graphdispatch
