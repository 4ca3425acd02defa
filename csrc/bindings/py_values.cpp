#include "bindings/py_values.h"

#include <torch/csrc/Generator.h>
#include <torch/csrc/autograd/python_variable.h>

#include <memory>
#include <string>

namespace graphdispatch::bindings {

c10::IValue to_ivalue(py::handle value, std::size_t position) {
  PyObject* obj = value.ptr();
  if (THPVariable_Check(obj)) return THPVariable_Unpack(obj);
  if (obj == Py_None) return c10::IValue();
  if (PyBool_Check(obj)) return c10::IValue(obj == Py_True);
  if (PyLong_Check(obj)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow != 0) {
      throw py::value_error("graphdispatch: input at position " + std::to_string(position) +
                            ": expected an int within int64, got " +
                            py::str(value).cast<std::string>());
    }
    return c10::IValue(static_cast<int64_t>(v));
  }
  if (PyFloat_Check(obj)) return c10::IValue(PyFloat_AS_DOUBLE(obj));
  // Accepted so the runner can refuse it with a reason ("explicit_generator"), not a crash.
  if (THPGenerator_Check(obj)) return c10::IValue(reinterpret_cast<THPGenerator*>(obj)->cdata);
  throw py::type_error("graphdispatch: input at position " + std::to_string(position) +
                       ": expected a tensor, int, float, bool, None or torch.Generator, got " +
                       std::string(Py_TYPE(obj)->tp_name));
}

py::object to_python(const c10::IValue& value) {
  if (value.isTensor())
    return py::reinterpret_steal<py::object>(THPVariable_Wrap(value.toTensor()));
  if (value.isNone()) return py::none();
  if (value.isBool()) return py::bool_(value.toBool());
  if (value.isInt()) return py::int_(value.toInt());
  if (value.isDouble()) return py::float_(value.toDouble());
  if (value.isGenerator())
    return py::reinterpret_steal<py::object>(THPGenerator_Wrap(value.toGenerator()));
  TORCH_INTERNAL_ASSERT(false, "graphdispatch: cannot convert ", value.tagKind(), " to Python");
}

void rethrow_python_error(const py::error_already_set& error) {
  if (!error.matches(PyExc_Exception)) throw Interrupt(std::current_exception());
  throw;
}

Callable wrap_callable(py::object fn) {
  auto held = std::make_shared<GilHeld>(std::move(fn));
  return [held](const std::vector<c10::IValue>& inputs) {
    py::gil_scoped_acquire gil;
    py::tuple args(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) args[i] = to_python(inputs[i]);
    py::object result;
    try {
      result = held->get()(*args);
    } catch (const py::error_already_set& error) {
      rethrow_python_error(error);
    }
    TORCH_CHECK_TYPE(py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result),
                     "graphdispatch: the captured callable must return a tuple or list, got ",
                     std::string(py::str(py::type::of(result))));
    std::vector<c10::IValue> outputs;
    outputs.reserve(py::len(result));
    std::size_t k = 0;
    for (auto item : result) outputs.push_back(to_ivalue(item, k++));
    return outputs;
  };
}

LogSink wrap_log_sink(py::object sink) {
  auto held = std::make_shared<GilHeld>(std::move(sink));
  return [held](const std::string& message) {
    py::gil_scoped_acquire gil;
    held->get()(message);
  };
}

WatchSink wrap_watch_sink(py::object sink) {
  auto held = std::make_shared<GilHeld>(std::move(sink));
  return [held](const std::vector<at::Tensor>& tensors) {
    py::gil_scoped_acquire gil;
    py::list list;
    for (const auto& t : tensors) list.append(py::cast(t));
    held->get()(list);
  };
}

}  // namespace graphdispatch::bindings
