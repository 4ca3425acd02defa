#include "runtime/fallback_reason.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace graphdispatch {
namespace {

TEST(FallbackReasonTest, EveryReasonHasOneRowOneNameAndAdvice) {
  std::set<int> values;
  std::set<std::string_view> names;
  for (const auto& r : fallback_reasons()) {
    EXPECT_TRUE(values.insert(static_cast<int>(r.reason)).second) << r.name;
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_FALSE(r.advice.empty()) << r.name;
    EXPECT_EQ(fallback_reason_info(r.reason).name, r.name);
    EXPECT_EQ(parse_fallback_reason(r.name), r.reason);
  }
  // The enumerators are 0..N-1, so N distinct values in the table are all of them.
  EXPECT_EQ(values.size(), static_cast<std::size_t>(FallbackReason::kForwardAD) + 1);
  EXPECT_EQ(parse_fallback_reason("no_such_reason"), std::nullopt);
}

TEST(FallbackReasonTest, StatsKeysKeepTheirNames) {
  // stats()['fallbacks'] keys are user-facing: renaming one breaks dashboards.
  EXPECT_EQ(fallback_reason_name(FallbackReason::kAliasedInputs), "aliased_inputs");
  EXPECT_EQ(fallback_reason_name(FallbackReason::kCaptureFailed), "capture_failed");
  EXPECT_EQ(fallback_reason_name(FallbackReason::kStaticInputsMoving), "static_inputs_moving");
  EXPECT_EQ(fallback_reason_name(FallbackReason::kVerifyMismatch), "verify_mismatch");
  EXPECT_TRUE(fallback_reason_info(FallbackReason::kCaptureFailed).logged_where_decided);
  EXPECT_FALSE(fallback_reason_info(FallbackReason::kRequiresGrad).logged_where_decided);
}

}  // namespace
}  // namespace graphdispatch
