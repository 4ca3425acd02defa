// The option table: each option parsed by name into its RunnerOptions field, checked, and read
// back; the defaults themselves are compared with config.py's by tests/test_option_layers.py.

#include "runtime/runner_option_table.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <limits>

namespace graphdispatch {
namespace {

OptionValue value_of(const RunnerOptions& options, const std::string& name) {
  for (auto& [n, v] : runner_option_values(options)) {
    if (n == name) return v;
  }
  ADD_FAILURE() << "no option " << name;
  return false;
}

// The message of the error set_runner_option throws, or "" when it accepts the value.
template <typename Error>
std::string refusal(const std::string& name, const OptionValue& value) {
  RunnerOptions options;
  try {
    set_runner_option(options, name, value);
  } catch (const Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

TEST(RunnerOptionTable, SetsEachFieldAndReadsItBack) {
  RunnerOptions options;
  set_runner_option(options, "max_entries", std::int64_t{4});
  set_runner_option(options, "eviction", std::string("lru"));
  set_runner_option(options, "safe_output_mode", false);
  set_runner_option(options, "verify_rtol", std::int64_t{0});  // an integer is a float
  set_runner_option(options, "verify_atol", 0.5);
  set_runner_option(options, "max_total_entry_bytes", std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(options.max_entries, 4u);
  EXPECT_EQ(options.eviction, Eviction::kLru);
  EXPECT_FALSE(options.safe_output_mode);
  EXPECT_EQ(options.verify_rtol, 0.0);
  EXPECT_EQ(options.verify_atol, 0.5);
  EXPECT_EQ(std::get<std::int64_t>(value_of(options, "max_total_entry_bytes")),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(std::get<std::string>(value_of(options, "eviction")), "lru");
  set_runner_option(options, "eviction", std::string("fifo"));
  EXPECT_EQ(options.eviction, Eviction::kFifo);
}

TEST(RunnerOptionTable, EveryOptionTakesItsOwnDefault) {
  RunnerOptions defaults, options;
  options.max_entries = 3;
  options.eviction = Eviction::kLru;
  options.verify_atol = 0.25;
  for (auto& [name, value] : runner_option_values(defaults))
    set_runner_option(options, name, value);
  EXPECT_TRUE(runner_option_values(options) == runner_option_values(defaults));
  EXPECT_EQ(runner_option_values(defaults).size(), 11u);
}

TEST(RunnerOptionTable, RefusesOutOfRangeValuesNamingTheOption) {
  EXPECT_EQ(refusal<c10::ValueError>("max_entries", std::int64_t{-1}),
            "graphdispatch option 'max_entries': expected an int in [0, 2**63 - 1], got -1");
  EXPECT_EQ(refusal<c10::ValueError>("warmup_iters", ForeignValue{"int", "9223372036854775808"}),
            "graphdispatch option 'warmup_iters': expected an int in [0, 2**63 - 1], got "
            "9223372036854775808");
  EXPECT_EQ(refusal<c10::ValueError>("verify_rtol", std::numeric_limits<double>::quiet_NaN()),
            "graphdispatch option 'verify_rtol': expected a finite float >= 0, got nan");
  EXPECT_EQ(refusal<c10::ValueError>("verify_atol", -1.0),
            "graphdispatch option 'verify_atol': expected a finite float >= 0, got -1.0");
  EXPECT_EQ(refusal<c10::ValueError>("eviction", std::string("LRU")),
            "graphdispatch option 'eviction': expected one of fifo, lru, got 'LRU'");
}

TEST(RunnerOptionTable, RefusesWrongTypesNamingTheOption) {
  EXPECT_EQ(refusal<c10::TypeError>("max_entries", true),
            "graphdispatch option 'max_entries': expected int, got bool True");
  EXPECT_EQ(refusal<c10::TypeError>("max_entries", 1.5),
            "graphdispatch option 'max_entries': expected int, got float 1.5");
  EXPECT_EQ(refusal<c10::TypeError>("copy_stream", std::int64_t{1}),
            "graphdispatch option 'copy_stream': expected bool, got int 1");
  EXPECT_EQ(refusal<c10::TypeError>("verify_atol", std::string("0")),
            "graphdispatch option 'verify_atol': expected float, got str '0'");
  EXPECT_EQ(refusal<c10::TypeError>("eviction", ForeignValue{"NoneType", "None"}),
            "graphdispatch option 'eviction': expected str, got NoneType None");
}

TEST(RunnerOptionTable, RefusesUnknownNamesListingValidOnes) {
  auto message = refusal<c10::ValueError>("graph_only", true);
  EXPECT_EQ(message.rfind("graphdispatch: unknown runner option 'graph_only'; valid runner "
                          "options: max_entries, eviction, ",
                          0),
            0u)
      << message;
}

TEST(RunnerOptionTable, LeavesOptionsUnchangedOnARefusal) {
  RunnerOptions options;
  EXPECT_THROW(set_runner_option(options, "max_recaptures", std::int64_t{-3}), c10::ValueError);
  EXPECT_EQ(options.max_recaptures, RunnerOptions{}.max_recaptures);
}

TEST(RunnerOptionTable, ChecksOptionsBuiltInCppAgainstTheSameRanges) {
  EXPECT_NO_THROW(check_runner_options(RunnerOptions{}));
  RunnerOptions options;
  options.verify_atol = -1.0;
  try {
    check_runner_options(options);
    ADD_FAILURE() << "a negative verify_atol passed";
  } catch (const c10::ValueError& e) {
    EXPECT_EQ(std::string(e.what_without_backtrace()),
              "graphdispatch option 'verify_atol': expected a finite float >= 0, got -1.0");
  }
  options = RunnerOptions{};
  options.verify_rtol = std::numeric_limits<double>::infinity();
  EXPECT_THROW(check_runner_options(options), c10::ValueError);
}

}  // namespace
}  // namespace graphdispatch
