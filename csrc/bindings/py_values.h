#pragma once

// Conversions between Python objects and the runtime's IValues, and the Python callable
// wrapped as a runtime Callable. The runtime runs with the GIL released; everything here that
// touches a Python object holds it.

#include "runtime/runner_options.h"

#include <torch/csrc/utils/pybind.h>

#include <vector>

namespace graphdispatch::bindings {

namespace py = pybind11;

/// A tensor, int, float, bool or None; throws TypeError naming `position` otherwise.
c10::IValue to_ivalue(py::handle value, std::size_t position);
py::object to_python(const c10::IValue& value);
/// `fn(*inputs)` must return a tuple or list of tensors, ints, floats, bools or None.
Callable wrap_callable(py::object fn);
/// Rethrows the Python error being handled; a BaseException that is not an Exception
/// (KeyboardInterrupt, SystemExit) as an Interrupt, which no capture turns into a fallback.
/// Call only inside a `catch (py::error_already_set&)` block.
[[noreturn]] void rethrow_python_error(const py::error_already_set& error);
/// Forwards log lines to `sink(message)`.
LogSink wrap_log_sink(py::object sink);
/// Forwards a new entry's static inputs to `sink(tensors)` (a list of tensors).
WatchSink wrap_watch_sink(py::object sink);

/// Owns a Python reference that may be dropped on a thread without the GIL (an entry evicted
/// inside a replay): the destructor takes the GIL first. Non-copyable; share it by shared_ptr.
class GilHeld final {
 public:
  explicit GilHeld(py::object object) : object_(std::move(object)) {}
  GilHeld(const GilHeld&) = delete;
  GilHeld& operator=(const GilHeld&) = delete;
  ~GilHeld() {
    if (!Py_IsInitialized()) {
      object_.release();  // interpreter gone: nothing left to decrement
      return;
    }
    py::gil_scoped_acquire gil;
    object_ = py::object();
  }
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

}  // namespace graphdispatch::bindings
