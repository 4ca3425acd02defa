#pragma once

// A method made of two Python callables that adds no Python frame of its own: `first(self,
// *args, **kwargs)` runs, and unless it returned `declined`, its result is the call's;
// otherwise `then(self, *args, **kwargs)` runs and its result is the call's. Between the caller
// and `then` there is no frame, so what `then` attributes to its caller (warnings' stacklevel,
// sys._getframe(1)) is the caller's, as if `then` had been called directly. The fast path puts
// one in front of OptimizedModule.__call__ (serve_wrapper_calls in _fast_path.py).

#include <torch/csrc/utils/pybind.h>

namespace graphdispatch::bindings {

namespace py = pybind11;

/// Registers frameless_method(first, then, declined) on `m`: returns the method, a descriptor
/// that binds `self` like a Python function assigned on a class (PyInstanceMethod).
void init_frameless_method(py::module_& m);

}  // namespace graphdispatch::bindings
