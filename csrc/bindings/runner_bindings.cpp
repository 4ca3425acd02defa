// graphdispatch._C.GraphRunner, stats, fallback reasons and the fork hook: registration only.

#include "bindings/py_values.h"
#include "runtime/capture_lock.h"
#include "runtime/copy_pipeline.h"
#include "runtime/cpu_graph/cpu_graph.h"
#include "runtime/graph_runner.h"
#include "runtime/output_plan.h"
#include "runtime/process_budget.h"
#include "runtime/runner_option_table.h"
#include "runtime/stats.h"

#include <ATen/record_function.h>

#include <chrono>
#include <memory>
#include <optional>
#include <thread>

namespace graphdispatch::bindings {
namespace {

std::vector<c10::IValue> to_ivalues(const py::args& args) {
  std::vector<c10::IValue> inputs;
  inputs.reserve(args.size());
  std::size_t i = 0;
  for (auto a : args) inputs.push_back(to_ivalue(a, i++));
  return inputs;
}

py::tuple to_tuple(const std::vector<c10::IValue>& values) {
  py::tuple out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = to_python(values[i]);
  return out;
}

// Waits for the runner's lock without the GIL: a thread holding that lock may need the GIL
// (destroying an entry resets its framework graph).
std::shared_ptr<Entry> entry_for(const GraphRunner& runner, const py::args& args) {
  auto inputs = to_ivalues(args);
  py::gil_scoped_release release;
  return runner.entry_for(inputs);
}

// A Python value as the option table holds it; an int past int64_t stays foreign, so the
// table names it in its range error.
OptionValue to_option_value(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (py::isinstance<py::int_>(value)) {
    int overflow = 0;
    long long i = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
    if (overflow == 0) return static_cast<std::int64_t>(i);
  } else if (py::isinstance<py::float_>(value)) {
    return value.cast<double>();
  } else if (py::isinstance<py::str>(value)) {
    return value.cast<std::string>();
  }
  return ForeignValue{py::type::handle_of(value).attr("__name__").cast<std::string>(),
                      py::repr(value).cast<std::string>()};
}

py::object to_python_value(const OptionValue& value) {
  struct Convert {
    py::object operator()(bool b) const { return py::bool_(b); }
    py::object operator()(std::int64_t i) const { return py::int_(i); }
    py::object operator()(double d) const { return py::float_(d); }
    py::object operator()(const std::string& s) const { return py::str(s); }
    py::object operator()(const ForeignValue& f) const { return py::str(f.repr); }
  };
  return std::visit(Convert{}, value);
}

// `by_name`: user options by name (graphdispatch.config), each parsed and checked by the
// runtime's option table; the other arguments are what the Python layer worked out about the
// graph, and where the runner reports.
std::shared_ptr<GraphRunner> make_runner(py::object fn, std::vector<bool> is_static,
                                         std::shared_ptr<DeviceGraphFactory> graphs, py::object log,
                                         std::optional<std::vector<std::size_t>> written_inputs,
                                         bool draws_random, py::object watch,
                                         std::vector<std::string> input_names,
                                         const py::kwargs& by_name) {
  TORCH_CHECK_TYPE(PyCallable_Check(fn.ptr()), "fn: expected a callable, got ",
                   std::string(py::str(py::type::of(fn))));
  RunnerOptions options;
  for (const auto& [name, value] : by_name) {
    set_runner_option(options, name.cast<std::string>(), to_option_value(value));
  }
  options.draws_random = draws_random;
  TORCH_CHECK_VALUE(input_names.empty() || input_names.size() == is_static.size(),
                    "input_names: expected one per input (", is_static.size(), ") or none, got ",
                    input_names.size());
  options.input_names = std::move(input_names);
  // None: the writes are unknown, so every dynamic input counts as written (Note [Aliasing]).
  options.writes_known = written_inputs.has_value();
  if (written_inputs) {
    for (auto i : *written_inputs) {
      TORCH_CHECK_VALUE(i < is_static.size(), "written_inputs: expected positions < ",
                        is_static.size(), ", got ", i);
    }
    options.written_inputs = std::move(*written_inputs);
  }
  if (!log.is_none()) options.log = wrap_log_sink(std::move(log));
  if (!watch.is_none()) options.watch = wrap_watch_sink(std::move(watch));
  return std::make_shared<GraphRunner>(wrap_callable(std::move(fn)), std::move(is_static),
                                       std::move(graphs), std::move(options));
}

}  // namespace

void init_runner(py::module_& m, py::module_& testing) {
  py::class_<GraphRunner, std::shared_ptr<GraphRunner>>(m, "GraphRunner")
      .def(py::init(&make_runner), py::arg("fn"), py::arg("is_static"), py::arg("graphs"),
           py::arg("log") = py::none(), py::arg("written_inputs") = py::none(),
           py::arg("draws_random") = true, py::arg("watch") = py::none(),
           py::arg("input_names") = std::vector<std::string>{},
           "GraphRunner(fn, is_static, graphs, log=None, written_inputs=None, draws_random=True, "
           "watch=None, input_names=[], **options): options are graphdispatch.config's runtime "
           "options by name (max_entries=4, eviction='lru', ...), each checked here; an unknown "
           "name, a wrong type or an out-of-range value raises ValueError/TypeError naming it.")
      .def("__call__",
           [](GraphRunner& self, const py::args& args) {
             auto inputs = to_ivalues(args);
             std::vector<c10::IValue> outputs;
             {
               py::gil_scoped_release release;
               outputs = self(inputs);
             }
             return to_tuple(outputs);
           })
      .def("capture",
           [](GraphRunner& self, const py::args& args) {
             auto inputs = to_ivalues(args);
             py::gil_scoped_release release;
             self.capture(inputs);
           })
      .def(
          "input_buffers",
          [](const GraphRunner& self, const py::args& args) -> py::object {
            auto entry = entry_for(self, args);
            if (!entry || entry->is_negative()) return py::none();
            return to_tuple(entry->arguments(to_ivalues(args)));
          },
          "The inputs the entry for these arguments reads (its buffers for dynamic inputs), "
          "or None; passing them back skips the input copies.")
      .def(
          "entry_reason",
          [](const GraphRunner& self, const py::args& args) -> py::object {
            auto entry = entry_for(self, args);
            if (!entry || !entry->is_negative()) return py::none();
            return py::make_tuple(std::string(fallback_reason_name(*entry->reason())),
                                  entry->detail());
          },
          "(reason, detail) of the negative entry for these arguments, or None.")
      .def(
          "entries",
          [](const GraphRunner& self) {
            std::vector<std::shared_ptr<Entry>> entries;
            {
              py::gil_scoped_release release;  // see entry_for
              entries = self.entries();
            }
            py::list out;
            for (const auto& e : entries) {
              py::dict d;
              d["signature"] = e->signature();
              d["captured"] = !e->is_negative();
              d["reason"] =
                  e->reason() ? std::string(fallback_reason_name(*e->reason())) : std::string();
              d["detail"] = e->detail();
              d["bytes"] = e->bytes();
              d["shared_bytes"] = e->shared_bytes();
              d["replays"] = e->replays();
              d["graph"] = e->graph_description();
              out.append(std::move(d));
            }
            return out;
          },
          "Every live entry, oldest first: {signature (in words), captured (False for a "
          "negative entry), reason and detail (why not, else ''), bytes (buffers plus graph "
          "pool or static outputs), shared_bytes (its need from the CPU graph's shared "
          "workspace, not in bytes), replays, graph (what the device graph holds, in words, or "
          "'')}.")
      .def_property_readonly("entry_bytes",
                             [](const GraphRunner& self) {
                               py::gil_scoped_release release;  // see entry_for
                               return self.entry_bytes();
                             })
      .def_property_readonly("num_entries",
                             [](const GraphRunner& self) {
                               py::gil_scoped_release release;  // see entry_for
                               return self.num_entries();
                             })
      .def("clear", &GraphRunner::clear, py::call_guard<py::gil_scoped_release>())
      .def("replay_graphs", &GraphRunner::replay_graphs, py::call_guard<py::gil_scoped_release>(),
           "Replays every captured entry's device graph once with nothing around it (no key, "
           "copies or outputs), for measuring the runner's own overhead; graphs that record "
           "their work only (not the emulated graph).")
      .def("drop_dead_entries", &GraphRunner::drop_dead_entries,
           py::call_guard<py::gil_scoped_release>(),
           "Drops the entries one of whose static inputs was freed or replaced: the watch "
           "callback's job.")
      .def("reset_after_fork", &GraphRunner::reset_after_fork);

  testing.def(
      "runner_option_defaults",
      [] {
        py::dict out;
        for (const auto& [name, value] : runner_option_values(RunnerOptions{})) {
          out[py::str(name)] = to_python_value(value);
        }
        return out;
      },
      "{name: default} of every option GraphRunner takes by name, in the runtime's order.");
  testing.def("check_input_match", &check_input_match, py::arg("captured"), py::arg("given"),
              py::arg("position"));
}

void init_stats(py::module_& m, py::module_& testing) {
  m.def("stats", [] {
    auto& s = Stats::get();
    py::dict d;
    d["captures"] = s.captures.load();
    d["replays"] = s.replays.load();
    d["cache_hits"] = s.cache_hits.load();
    d["cache_misses"] = s.cache_misses.load();
    d["evictions"] = s.evictions.load();
    d["copies_skipped"] = s.copies_skipped.load();
    d["bytes_copied"] = s.bytes_copied.load();
    d["recaptures"] = s.recaptures.load();
    d["verified_replays"] = s.verified_replays.load();
    d["held_outputs_copied"] = s.held_outputs_copied.load();
    d["entries"] = s.live_entries.load();
    d["entry_bytes"] = s.live_entry_bytes.load() + s.workspace_bytes.load();
    d["workspace_bytes"] = s.workspace_bytes.load();
    d["fallbacks"] = s.fallbacks();
    return d;
  });
  m.def("reset_stats", [] { Stats::get().reset(); });
  // The one list of fallback reasons (fallback_reason.h): Python names them through these,
  // so a reason spelled wrong there fails at the attribute, not silently in stats().
  py::enum_<FallbackReason> reason_enum(m, "FallbackReason",
                                        "Why a call ran without a graph; .name is its stats key.");
  for (const auto& r : fallback_reasons()) {
    reason_enum.value(std::string(r.name).c_str(), r.reason);
  }
  m.def(
      "fallback_reasons",
      [] {
        py::dict d;  // insertion order: the order docs/diagnosing.md lists them
        for (const auto& r : fallback_reasons()) {
          d[py::str(std::string(r.name))] = std::string(r.advice);
        }
        return d;
      },
      "{reason name: one line of advice}, for every fallback reason.");
  m.def(
      "fallback",
      [](const std::string& reason, const py::object& fn, const py::args& args) {
        const auto known = parse_fallback_reason(reason);
        TORCH_CHECK_VALUE(known, "reason: expected a name in fallback_reasons(), got ", reason);
        RECORD_FUNCTION("graphdispatch::fallback", std::vector<c10::IValue>());
        Stats::get().add_fallback(*known);
        return fn(*args);
      },
      py::arg("reason"), py::arg("fn"),
      "fn(*args) for a graph refused as a whole: counted as a fallback for `reason` (a name "
      "in fallback_reasons(); ValueError otherwise), inside a 'graphdispatch::fallback' "
      "profiler range like the runner's fallbacks.");
  testing.def(
      "emulated_capturing", [] { return emulated_capturing(); },
      "True while this thread is inside an emulated capture (its 'stream is capturing').");
  testing.def(
      "cpu_graph_capturing", [] { return cpu_graph_capturing(); },
      "True while this thread is inside a CPU graph's capture (its 'stream is capturing').");
  testing.def(
      "with_out_variants_locked",
      [](const py::function& on_locked, double seconds) {
        py::gil_scoped_release release;
        with_out_variants_locked([&] {
          {
            py::gil_scoped_acquire gil;
            on_locked();
          }
          std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
        });
      },
      py::arg("on_locked"), py::arg("seconds"),
      "For tests (case C67): takes the out= overload cache's lock, calls on_locked(), holds the "
      "lock `seconds` more without the GIL, then releases it.");
  // The extension's part of the fork hook (Note [Fork] in _once.py).
  m.def("reset_after_fork", [] {
    Stats::get().reset_after_fork();
    CopyPipeline::reset_after_fork();
    reset_capture_locks_after_fork();
    reset_cpu_graph_after_fork();
    ProcessBudget::get().reset_after_fork();
    OutputPlan::reset_after_fork();
  });
}

}  // namespace graphdispatch::bindings
