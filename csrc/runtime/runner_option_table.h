#pragma once

#include "runtime/runner_options.h"

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace graphdispatch {

/// A value the bindings could not hold as one of OptionValue's types: an object of another
/// type, or an integer outside int64_t. `type` and `repr` are as the caller's language writes
/// them ("NoneType", "None"); every option refuses it, naming both.
struct ForeignValue {
  std::string type;
  std::string repr;
  bool operator==(const ForeignValue&) const = default;
};

/// An option's value as the bindings hand it over.
using OptionValue = std::variant<bool, std::int64_t, double, std::string, ForeignValue>;

/// Sets the RunnerOptions field `name` to `value`: the user option of the same name, whose
/// type, range and default src/graphdispatch/config.py defines (tests/test_option_layers.py
/// checks that the two agree). An int option takes an integer in [0, 2**63 - 1]; a float
/// option a finite number >= 0 (an integer too); `eviction` "fifo" or "lru"; a bool option a
/// bool (an integer is not one). Throws c10::ValueError for an unknown name or a value out of
/// range, c10::TypeError for a value of the wrong type, each starting
/// "graphdispatch option '<name>': expected ..., got ..."; `options` is then unchanged.
void set_runner_option(RunnerOptions& options, const std::string& name, const OptionValue& value);

/// Checks every field set_runner_option sets against the same ranges, for options built in
/// C++ without the table; throws as set_runner_option does, naming the first bad option.
void check_runner_options(const RunnerOptions& options);

/// (name, value) of every option set_runner_option takes, in one fixed order; the values of
/// RunnerOptions{} are the defaults.
std::vector<std::pair<std::string, OptionValue>> runner_option_values(const RunnerOptions& options);

}  // namespace graphdispatch
