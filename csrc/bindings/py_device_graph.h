#pragma once

// Device graphs that are framework objects (torch.cuda.CUDAGraph, torch.npu.NPUGraph,
// torch.accelerator.Graph), reached through a small Python adapter (graphdispatch/
// _framework_graphs.py) so that this code needs no device headers: the code CI compiles is the
// code a GPU user runs.

#include "bindings/py_values.h"
#include "runtime/device_graph.h"

#include <memory>
#include <string>

namespace graphdispatch::bindings {

/// Makes graphs by calling `adapters.create(device: str)`; each adapter has capture_begin(),
/// capture_end(), capture_abort(), replay() and reset(), and optionally pool_bytes() (bytes
/// its capture added to the pool, or None); `adapters.is_capturing(device)` and
/// `adapters.name` complete the factory.
class PyGraphFactory final : public DeviceGraphFactory {
 public:
  explicit PyGraphFactory(py::object adapters);
  std::unique_ptr<DeviceGraph> create(c10::Device device) override;
  bool is_capturing(c10::Device device) override;
  std::string name() const override { return name_; }

 private:
  std::shared_ptr<GilHeld> adapters_;
  std::string name_;
};

/// Registers the factories on `m`, the test-only hooks on `testing` (_C._testing).
void init_device_graphs(py::module_& m, py::module_& testing);

}  // namespace graphdispatch::bindings
