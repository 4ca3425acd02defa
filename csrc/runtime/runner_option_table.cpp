#include "runtime/runner_option_table.h"

#include <c10/util/Exception.h>

#include <charconv>
#include <cmath>
#include <functional>

namespace graphdispatch {
namespace {

// Values as Python writes them, so an error reads the same whichever layer raised it.
std::string python_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;  // shortest round trip
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string type_and_value(const OptionValue& value) {
  struct Describe {
    std::string operator()(bool b) const { return b ? "bool True" : "bool False"; }
    std::string operator()(std::int64_t i) const { return "int " + std::to_string(i); }
    std::string operator()(double d) const { return "float " + python_float(d); }
    std::string operator()(const std::string& s) const { return "str '" + s + "'"; }
    std::string operator()(const ForeignValue& f) const { return f.type + " " + f.repr; }
  };
  return std::visit(Describe{}, value);
}

std::string label(const char* name) { return std::string("graphdispatch option '") + name + "': "; }

[[noreturn]] void wrong_type(const char* name, const char* expected, const OptionValue& value) {
  C10_THROW_ERROR(TypeError,
                  label(name) + "expected " + expected + ", got " + type_and_value(value));
}

[[noreturn]] void out_of_range(const char* name, const std::string& expected,
                               const std::string& given) {
  C10_THROW_ERROR(ValueError, label(name) + "expected " + expected + ", got " + given);
}

struct Field {
  const char* name;
  std::function<void(RunnerOptions&, const OptionValue&)> set;
  std::function<OptionValue(const RunnerOptions&)> get;
};

Field flag(const char* name, bool RunnerOptions::* member) {
  return {name,
          [=](RunnerOptions& o, const OptionValue& v) {
            const auto* b = std::get_if<bool>(&v);
            if (!b) wrong_type(name, "bool", v);
            o.*member = *b;
          },
          [=](const RunnerOptions& o) -> OptionValue { return o.*member; }};
}

// Every count is an int64_t at the Python boundary, whatever the field's own type.
template <typename M>
Field count(const char* name, M RunnerOptions::* member) {
  return {
      name,
      [=](RunnerOptions& o, const OptionValue& v) {
        const char* range = "an int in [0, 2**63 - 1]";
        if (const auto* i = std::get_if<std::int64_t>(&v)) {
          if (*i < 0) out_of_range(name, range, std::to_string(*i));
          o.*member = static_cast<M>(*i);
          return;
        }
        const auto* foreign = std::get_if<ForeignValue>(&v);
        if (foreign && foreign->type == "int") out_of_range(name, range, foreign->repr);
        wrong_type(name, "int", v);
      },
      [=](const RunnerOptions& o) -> OptionValue { return static_cast<std::int64_t>(o.*member); }};
}

// NaN or infinite tolerances would make the check pass or fail whatever the values.
Field tolerance(const char* name, double RunnerOptions::* member) {
  return {name,
          [=](RunnerOptions& o, const OptionValue& v) {
            double d = 0;
            if (const auto* i = std::get_if<std::int64_t>(&v)) {
              d = static_cast<double>(*i);
            } else if (const auto* f = std::get_if<double>(&v)) {
              d = *f;
            } else {
              wrong_type(name, "float", v);
            }
            if (!std::isfinite(d) || d < 0)
              out_of_range(name, "a finite float >= 0", python_float(d));
            o.*member = d;
          },
          [=](const RunnerOptions& o) -> OptionValue { return o.*member; }};
}

Field eviction() {
  static const char* name = "eviction";
  return {name,
          [](RunnerOptions& o, const OptionValue& v) {
            const auto* s = std::get_if<std::string>(&v);
            if (!s) wrong_type(name, "str", v);
            if (*s == "fifo") {
              o.eviction = Eviction::kFifo;
            } else if (*s == "lru") {
              o.eviction = Eviction::kLru;
            } else {
              out_of_range(name, "one of fifo, lru", "'" + *s + "'");
            }
          },
          [](const RunnerOptions& o) -> OptionValue {
            return std::string(o.eviction == Eviction::kLru ? "lru" : "fifo");
          }};
}

// The one table: every option the runtime acts on, in config.py's order.
const std::vector<Field>& fields() {
  static const std::vector<Field> table{
      count("max_entries", &RunnerOptions::max_entries),
      eviction(),
      flag("safe_output_mode", &RunnerOptions::safe_output_mode),
      count("warmup_iters", &RunnerOptions::warmup_iters),
      flag("copy_stream", &RunnerOptions::copy_stream),
      count("max_entry_bytes", &RunnerOptions::max_entry_bytes),
      count("max_total_entry_bytes", &RunnerOptions::max_total_entry_bytes),
      count("verify_replays", &RunnerOptions::verify_replays),
      tolerance("verify_rtol", &RunnerOptions::verify_rtol),
      tolerance("verify_atol", &RunnerOptions::verify_atol),
      count("max_recaptures", &RunnerOptions::max_recaptures),
  };
  return table;
}

}  // namespace

void set_runner_option(RunnerOptions& options, const std::string& name, const OptionValue& value) {
  std::string valid;
  for (const auto& field : fields()) {
    if (name == field.name) return field.set(options, value);
    valid += (valid.empty() ? "" : ", ") + std::string(field.name);
  }
  C10_THROW_ERROR(ValueError, "graphdispatch: unknown runner option '" + name +
                                  "'; valid runner options: " + valid);
}

void check_runner_options(const RunnerOptions& options) {
  RunnerOptions scratch;
  for (const auto& field : fields()) field.set(scratch, field.get(options));
}

std::vector<std::pair<std::string, OptionValue>> runner_option_values(
    const RunnerOptions& options) {
  std::vector<std::pair<std::string, OptionValue>> out;
  for (const auto& field : fields()) out.emplace_back(field.name, field.get(options));
  return out;
}

}  // namespace graphdispatch
