// graphdispatch._C.GraphRunner, stats and the fork hook: registration only.

#include "bindings/py_values.h"
#include "runtime/copy_pipeline.h"
#include "runtime/cpu_graph.h"
#include "runtime/graph_runner.h"
#include "runtime/process_budget.h"
#include "runtime/stats.h"

#include <ATen/record_function.h>

#include <memory>
#include <optional>

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

std::shared_ptr<GraphRunner> make_runner(py::object fn, std::vector<bool> is_static,
                                         std::shared_ptr<DeviceGraphFactory> graphs,
                                         bool safe_output_mode, int64_t warmup_iters,
                                         bool copy_stream, int64_t max_entries,
                                         const std::string& eviction, py::object log,
                                         std::optional<std::vector<std::size_t>> written_inputs,
                                         int64_t max_entry_bytes, int64_t verify_replays,
                                         double verify_rtol, double verify_atol, bool random,
                                         int64_t max_recaptures, py::object watch,
                                         std::vector<std::string> input_names,
                                         int64_t max_total_entry_bytes) {
  TORCH_CHECK_TYPE(PyCallable_Check(fn.ptr()), "fn: expected a callable, got ",
                   std::string(py::str(py::type::of(fn))));
  TORCH_CHECK_VALUE(max_entries >= 0, "max_entries: expected >= 0, got ", max_entries);
  TORCH_CHECK_VALUE(max_entry_bytes >= 0, "max_entry_bytes: expected >= 0, got ", max_entry_bytes);
  TORCH_CHECK_VALUE(max_total_entry_bytes >= 0, "max_total_entry_bytes: expected >= 0, got ",
                    max_total_entry_bytes);
  TORCH_CHECK_VALUE(verify_replays >= 0, "verify_replays: expected >= 0, got ", verify_replays);
  TORCH_CHECK_VALUE(max_recaptures >= 0, "max_recaptures: expected >= 0, got ", max_recaptures);
  TORCH_CHECK_VALUE(verify_rtol >= 0 && verify_atol >= 0,
                    "verify_rtol, verify_atol: expected >= 0, got ", verify_rtol, ", ",
                    verify_atol);
  RunnerOptions options;
  options.safe_output_mode = safe_output_mode;
  options.warmup_iters = warmup_iters;
  options.copy_stream = copy_stream;
  options.max_entries = static_cast<std::size_t>(max_entries);
  options.max_entry_bytes = static_cast<std::size_t>(max_entry_bytes);
  options.max_total_entry_bytes = static_cast<std::size_t>(max_total_entry_bytes);
  options.verify_replays = verify_replays;
  options.verify_rtol = verify_rtol;
  options.verify_atol = verify_atol;
  options.random = random;
  options.max_recaptures = max_recaptures;
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
  try {
    options.eviction = parse_eviction(eviction);
  } catch (const std::invalid_argument& e) {
    throw py::value_error(e.what());
  }
  if (!log.is_none()) options.log = wrap_log_sink(std::move(log));
  if (!watch.is_none()) options.watch = wrap_watch_sink(std::move(watch));
  return std::make_shared<GraphRunner>(wrap_callable(std::move(fn)), std::move(is_static),
                                       std::move(graphs), std::move(options));
}

}  // namespace

void init_runner(py::module_& m) {
  py::class_<GraphRunner, std::shared_ptr<GraphRunner>>(m, "GraphRunner")
      .def(py::init(&make_runner), py::arg("fn"), py::arg("is_static"), py::arg("graphs"),
           py::arg("safe_output_mode") = true, py::arg("warmup_iters") = 1,
           py::arg("copy_stream") = true, py::arg("max_entries") = 0,
           py::arg("eviction") = "fifo", py::arg("log") = py::none(),
           py::arg("written_inputs") = py::none(), py::arg("max_entry_bytes") = 0,
           py::arg("verify_replays") = 0, py::arg("verify_rtol") = 0.0,
           py::arg("verify_atol") = 0.0, py::arg("random") = true,
           py::arg("max_recaptures") = 8, py::arg("watch") = py::none(),
           py::arg("input_names") = std::vector<std::string>{},
           py::arg("max_total_entry_bytes") = 0)
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
      .def("static_inputs",
           [](const GraphRunner& self, const py::args& args) -> py::object {
             auto entry = entry_for(self, args);
             if (!entry || entry->is_negative()) return py::none();
             return to_tuple(entry->arguments(to_ivalues(args)));
           },
           "The inputs the entry for these arguments reads (its buffers for dynamic inputs), "
           "or None; passing them back skips the input copies.")
      .def("entry_reason",
           [](const GraphRunner& self, const py::args& args) -> py::object {
             auto entry = entry_for(self, args);
             if (!entry || !entry->is_negative()) return py::none();
             return py::make_tuple(entry->reason(), entry->detail());
           },
           "(reason, detail) of the negative entry for these arguments, or None.")
      .def("entries",
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
               d["reason"] = e->reason();
               d["detail"] = e->detail();
               d["bytes"] = e->bytes();
               d["replays"] = e->replays();
               d["graph"] = e->graph_description();
               out.append(std::move(d));
             }
             return out;
           },
           "Every live entry, oldest first: {signature (in words), captured (False for a "
           "negative entry), reason and detail (why not, else ''), bytes (buffers plus graph "
           "pool or static outputs), replays, graph (what the device graph holds, in words, or '')}.")
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

  m.def("check_input_match", &check_input_match, py::arg("captured"), py::arg("given"),
        py::arg("position"));
}

void init_stats(py::module_& m) {
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
    d["entry_bytes"] = s.live_entry_bytes.load();
    d["fallbacks"] = s.fallbacks();
    return d;
  });
  m.def("reset_stats", [] { Stats::get().reset(); });
  m.def("fallback_advice", &fallback_advice, py::arg("reason"),
        "One line of advice for a fallback reason the runtime records, or ''.");
  m.def("fallback",
        [](const std::string& reason, const py::object& fn, const py::args& args) {
          RECORD_FUNCTION("graphdispatch::fallback", std::vector<c10::IValue>());
          Stats::get().add_fallback(reason);
          return fn(*args);
        },
        py::arg("reason"), py::arg("fn"),
        "fn(*args) for a graph refused as a whole: counted as a fallback for `reason`, inside a "
        "'graphdispatch::fallback' profiler range like the runner's fallbacks.");
  m.def("emulated_capturing", [] { return emulated_capturing(); },
        "True while this thread is inside an emulated capture (its 'stream is capturing').");
  m.def("cpu_graph_capturing", [] { return cpu_graph_capturing(); },
        "True while this thread is inside a CPU graph's capture (its 'stream is capturing').");
  m.def("after_fork_in_child", [] {
    Stats::get().reset_after_fork();
    CopyPipeline::reset_after_fork();
    ProcessBudget::get().reset_after_fork();
  });
}

}  // namespace graphdispatch::bindings
