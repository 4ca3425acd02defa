#pragma once

#include "bindings/py_values.h"
#include "runtime/device_graph.h"

#include <memory>
#include <string>

struct AtenTensorOpaque;  // AOTInductor's tensor handle (torch/csrc/inductor/aoti_torch/c/shim.h)

namespace graphdispatch::bindings {

// Note [Inductor's C++ entry]
// On the CPU, Inductor with its C++ wrapper (`cpp_wrapper=True`) compiles a whole graph into one
// C++ function, `inductor_entry_impl(input handles, output handles)`, exported by a shared
// library it loads as a Python module. Its Python side (aot_autograd's runtime wrappers, then a
// list of tensor handles built per call) costs about as much per call as our runner. A graph of
// this kind calls that function straight from C++ on replay: the capture records the one call
// the work made to it (`recorder`, graphdispatch._cpp_wrapper.EntryCalls) and keeps its arguments
// as non-owning tensors over the same memory (the entry's input buffers and static inputs, which
// the cache key and the lost-input checks guard), so a replay passes exactly what the capture
// passed. It vouches only where the Python wrappers did nothing the direct call would skip: each
// argument is the very tensor the work was given at its position (a number as the 0-d tensor
// made for it; an int or bool of the key, a SymInt under dynamic=True, as the 0-d tensor the
// wrapper makes of it, case C92), and the entry's outputs are the very tensors the work returned.
// Anything else (an input aot_autograd deduplicated or realigned, an output it rebuilt as a view, a
// mutation it applied after the call) makes the graph re-run the compiled function through Python
// on replay, as the emulated graph does, and say why in describe(); so does a graph Inductor gave
// constants (a literal of 16 or more elements, frozen parameters), which its Python side appends to
// the arguments. The call excludes autocast, as aot_autograd's wrapper does. The generated function
// releases the GIL itself, so it is called holding it.

/// Makes the graphs of one compiled function. `library`: path of the loaded module exporting
/// `inductor_entry_impl`, or "" where there is none (every graph re-runs the function, and its
/// describe() says why: what take() returns, case C92); `recorder`: has arm() (record the next
/// call on this thread) and take() (the recorded (inputs, outputs) lists, or a str saying why
/// the direct call is off).
class CppWrapperGraphFactory final : public DeviceGraphFactory {
 public:
  /// Handles in are stolen by the callee, handles out are the caller's.
  using EntryFn = void (*)(AtenTensorOpaque** inputs, AtenTensorOpaque** outputs);
  CppWrapperGraphFactory(const std::string& library, py::object recorder);
  std::unique_ptr<DeviceGraph> create(c10::Device device) override;
  bool is_capturing(c10::Device) override { return false; }  // no stream records the CPU
  std::string name() const override { return "cpp_wrapper"; }

 private:
  EntryFn entry_ = nullptr;
  std::shared_ptr<GilHeld> recorder_;
};

void init_cpp_wrapper_graphs(py::module_& m);

}  // namespace graphdispatch::bindings
