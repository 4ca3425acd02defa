#include "bindings/py_device_graph.h"

#include "runtime/copy_pipeline.h"
#include "runtime/cpu_graph/cpu_graph.h"

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
  void capture_end(const std::vector<c10::IValue>&) override { call("capture_end"); }
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
    try {
      adapter_->get().attr(method)();
    } catch (const py::error_already_set& error) {
      rethrow_python_error(error);
    }
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

void init_device_graphs(py::module_& m, py::module_& testing) {
  py::class_<DeviceGraphFactory, std::shared_ptr<DeviceGraphFactory>>(m, "DeviceGraphFactory")
      .def_property_readonly("name", &DeviceGraphFactory::name);
  py::class_<EmulatedGraphFactory, DeviceGraphFactory, std::shared_ptr<EmulatedGraphFactory>>(
      m, "EmulatedGraphFactory")
      .def(py::init<>());
  py::class_<CpuGraphFactory, DeviceGraphFactory, std::shared_ptr<CpuGraphFactory>>(
      m, "CpuGraphFactory")
      .def(py::init<>());
  py::class_<PyGraphFactory, DeviceGraphFactory, std::shared_ptr<PyGraphFactory>>(m,
                                                                                  "PyGraphFactory")
      .def(py::init<py::object>(), py::arg("adapters"));
  m.def(
      "set_stream_maker",
      [](const std::string& device_type, py::object maker) {
        auto held = std::make_shared<GilHeld>(std::move(maker));
        CopyPipeline::set_stream_maker(c10::Device(device_type).type(),
                                       [held](c10::Device device) -> std::optional<c10::StreamId> {
                                         py::gil_scoped_acquire gil;
                                         py::object id = held->get()(device_string(device));
                                         if (id.is_none()) return std::nullopt;
                                         return id.cast<c10::StreamId>();
                                       });
      },
      py::arg("device_type"), py::arg("maker"),
      "Pipelines of device_type made from now on get their streams from maker(device: str), "
      "which returns a stream id no one else holds, or None for c10's stream pool (case G8).");
  testing.def(
      "pipeline_streams",
      [](const std::string& device) {
        std::vector<c10::StreamId> ids;
        {
          py::gil_scoped_release release;  // making the pipeline may call the stream maker
          for (const auto& stream : CopyPipeline::for_device(c10::Device(device)).streams()) {
            ids.push_back(stream.id());
          }
        }
        return ids;
      },
      py::arg("device"),
      "Stream ids of the copy, warmup and capture streams of device's pipeline (made on first "
      "use); empty for a device without streams.");
}

}  // namespace graphdispatch::bindings
