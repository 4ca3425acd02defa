// graphdispatch._C: the thin pybind11 layer over the runtime. Only registration lives here.

#include "bindings/cpp_wrapper_graph.h"
#include "bindings/frameless_method.h"
#include "bindings/py_device_graph.h"
#include "bindings/py_values.h"
#include "bindings/sealed_guards.h"

#include <c10/util/Exception.h>
#include <torch/csrc/Exceptions.h>

namespace graphdispatch::bindings {
void init_runner(py::module_& m, py::module_& testing);
void init_stats(py::module_& m, py::module_& testing);
}  // namespace graphdispatch::bindings

PYBIND11_MODULE(_C, m) {
  namespace b = graphdispatch::bindings;
  namespace py = pybind11;
  m.doc() = "graphdispatch runtime: capture, replay, entry cache, copy pipeline";
  // c10 errors carry their C++ backtrace in what(); users get the message, as PyTorch gives.
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const graphdispatch::Interrupt& e) {
      // The callable's own KeyboardInterrupt or SystemExit, raised again as it was.
      try {
        e.rethrow_cause();
      } catch (py::error_already_set& error) {
        error.restore();
      }
    } catch (const c10::Error&) {
      // PyTorch's own mapping: a replayed op raises what eager raises (TypeError, IndexError,
      // torch.linalg.LinAlgError, ...; case C59), with the message and no C++ backtrace.
      torch::translate_exception_to_python(std::current_exception());
    }
  });
  // Hooks only graphdispatch's own tests and benches call: not part of the module's surface.
  py::module_ testing =
      m.def_submodule("_testing", "Test-only hooks of graphdispatch._C; not an API.");
  b::init_device_graphs(m, testing);
  b::init_cpp_wrapper_graphs(m);
  b::init_runner(m, testing);
  b::init_stats(m, testing);
  b::init_sealed_guards(m);
  b::init_frameless_method(m);
}
