#include "bindings/frameless_method.h"

namespace graphdispatch::bindings {

void init_frameless_method(py::module_& m) {
  m.def(
      "frameless_method",
      [](py::function first, py::function then, py::object declined) {
        py::cpp_function call([first, then, declined](py::args args, py::kwargs kwargs) {
          py::object out = first(*args, **kwargs);
          if (!out.is(declined)) return out;
          return then(*args, **kwargs);
        });
        // A builtin function assigned on a class is not bound to the instance; an instance
        // method descriptor is, as a Python function would be.
        PyObject* method = PyInstanceMethod_New(call.ptr());
        if (method == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(method);
      },
      py::arg("first"), py::arg("then"), py::arg("declined"));
}

}  // namespace graphdispatch::bindings
