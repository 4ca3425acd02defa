#include "bindings/py_device_graph.h"

#include "runtime/copy_pipeline.h"

#include <pybind11/stl.h>

namespace graphdispatch::bindings {
namespace {

/// One framework graph behind its Python adapter. Every call takes the GIL.
class PyDeviceGraph final : public DeviceGraph {
 public:
  explicit PyDeviceGraph(py::object adapter)
      : replay_(std::make_shared<GilHeld>(adapter.attr("replay"))),
        has_pool_bytes_(py::hasattr(adapter, "pool_bytes")),
        adapter_(std::make_shared<GilHeld>(std::move(adapter))) {}
  void capture_begin(std::function<void()>) override { call("capture_begin"); }
  void capture_end() override { call("capture_end"); }
  void capture_abort() noexcept override {
    py::gil_scoped_acquire gil;
    try {
      adapter_->get().attr("capture_abort")();
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("graphdispatch: ending a failed capture");
    }
  }
  void replay() override {
    py::gil_scoped_acquire gil;
    replay_->get()();  // bound once: replay is the hot path
  }
  void reset() override {
    py::gil_scoped_acquire gil;
    try {
      adapter_->get().attr("reset")();
    } catch (py::error_already_set& e) {
      // Called from ~Entry (eviction, clear): report, never throw through a destructor.
      e.discard_as_unraisable("graphdispatch: resetting an evicted graph");
    }
  }
  bool runs_during_capture() const override { return false; }
  std::optional<std::int64_t> pool_bytes() const override {
    if (!has_pool_bytes_) return std::nullopt;
    py::gil_scoped_acquire gil;
    py::object bytes = adapter_->get().attr("pool_bytes")();
    if (bytes.is_none()) return std::nullopt;
    return bytes.cast<std::int64_t>();
  }

 private:
  void call(const char* method) {
    py::gil_scoped_acquire gil;
    adapter_->get().attr(method)();
  }
  std::shared_ptr<GilHeld> replay_;
  bool has_pool_bytes_;
  std::shared_ptr<GilHeld> adapter_;
};

std::string device_string(c10::Device device) { return device.str(); }

}  // namespace

PyGraphFactory::PyGraphFactory(py::object adapters)
    : adapters_(std::make_shared<GilHeld>(adapters)),
      name_(py::str(adapters.attr("name")).cast<std::string>()) {}

std::unique_ptr<DeviceGraph> PyGraphFactory::create(c10::Device device) {
  py::gil_scoped_acquire gil;
  return std::make_unique<PyDeviceGraph>(adapters_->get().attr("create")(device_string(device)));
}

bool PyGraphFactory::is_capturing(c10::Device device) {
  if (device.is_cpu()) return false;
  py::gil_scoped_acquire gil;
  return adapters_->get().attr("is_capturing")(device_string(device)).cast<bool>();
}

void init_device_graphs(py::module_& m) {
  py::class_<DeviceGraphFactory, std::shared_ptr<DeviceGraphFactory>>(m, "DeviceGraphFactory")
      .def_property_readonly("name", &DeviceGraphFactory::name);
  py::class_<EmulatedGraphFactory, DeviceGraphFactory, std::shared_ptr<EmulatedGraphFactory>>(
      m, "EmulatedGraphFactory")
      .def(py::init<>());
  py::class_<PyGraphFactory, DeviceGraphFactory, std::shared_ptr<PyGraphFactory>>(
      m, "PyGraphFactory")
      .def(py::init<py::object>(), py::arg("adapters"));
}

}  // namespace graphdispatch::bindings
