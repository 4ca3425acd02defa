// The test device's graph, behind torch.accelerator.Graph (REGISTER_GRAPH_IMPL): capture records
// the launches on the capturing stream and the streams it forks, without running them; replay
// runs them in capture order on the addresses of capture (Note [Test device] in test_device.h).

#include "test_device/test_device.h"

#include <ATen/core/GraphImplInterface.h>
#include <c10/util/Exception.h>

#include <string>
#include <vector>

namespace testdev {
namespace {

class Graph final : public at::GraphImplInterface {
 public:
  explicit Graph(const at::GraphImplArgs& /*args*/) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  ~Graph() override {
    try {
      reset();
    } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor does not throw
    }
  }

  void capture_begin(c10::MempoolId_t pool, at::GraphCaptureMode mode) override {
    TORCH_CHECK(!capturing_ && !holds_pool_,
                "testdev graph: capture_begin on a graph already captured: reset() it first");
    const auto [id, used] = begin_capture(pool, mode);
    capture_ = id;
    pool_ = used;
    holds_pool_ = capturing_ = true;
  }

  // A failed capture keeps its use of the pool until reset() (or destruction) ends it.
  void capture_end() override {
    TORCH_CHECK(capturing_, "testdev graph: capture_end without capture_begin");
    capturing_ = false;
    nodes_ = end_capture(capture_);
    captured_ = true;
  }

  void instantiate() override {}

  void replay() override {
    TORCH_CHECK(captured_, "testdev graph: replay without a successful capture");
    if (launch_is_recorded()) {  // replayed inside a capture: recorded as one node, as a child
                                 // graph
      launch("graph replay", [nodes = nodes_]() {
        for (const auto& node : nodes) node();
      });
      return;
    }
    const auto on_stream = run_on_stream();
    for (const auto& node : nodes_) node();
  }

  void reset() override {
    if (capturing_) {
      capturing_ = false;
      try {
        end_capture(capture_);
      } catch (const c10::Error&) {  // the capture is dropped whatever it recorded
      }
    }
    nodes_.clear();
    captured_ = false;
    if (holds_pool_) release_pool(pool_);
    holds_pool_ = false;
  }

  c10::MempoolId_t pool() const override {
    TORCH_CHECK(captured_, "testdev graph: pool() without a preceding successful capture");
    return pool_;
  }

  void enable_debug_mode() override {}
  void debug_dump(const std::string& /*path*/) override {
    TORCH_CHECK(false, "testdev graph: debug_dump is not supported");
  }

 private:
  std::vector<Node> nodes_;
  uint64_t capture_ = 0;
  c10::MempoolId_t pool_{0, 0};
  bool capturing_ = false;
  bool captured_ = false;
  bool holds_pool_ = false;
};

}  // namespace
}  // namespace testdev

// The registry's key is the device type's upper-case name: the Python helper renames
// PrivateUse1 "testdev" (or "npu", to run the NPU kind's adapter over the same device).
namespace at {
REGISTER_GRAPH_IMPL(TESTDEV, testdev::Graph);
REGISTER_GRAPH_IMPL(NPU, testdev::Graph);
}  // namespace at
