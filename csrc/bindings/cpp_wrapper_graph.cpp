#include "bindings/cpp_wrapper_graph.h"

#include "runtime/tensor_layout.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

#include <optional>
#include <utility>
#include <vector>
#include <dlfcn.h>

namespace graphdispatch::bindings {
namespace {

// The generated function's C++ name (torch/_inductor/codegen/cpp_wrapper_cpu.py).
constexpr const char* kEntrySymbol = "_Z19inductor_entry_implPP16AtenTensorOpaqueS1_";

// `t` over the same storage bytes, offset, sizes and strides, owning nothing: the graph must not
// keep a model's weights alive (Note [Static inputs]); the runner drops the entry once they go.
at::Tensor non_owning(const at::Tensor& t) {
  const auto& storage = t.storage();
  c10::Storage view(c10::Storage::use_byte_size_t(), storage.nbytes(),
                    at::DataPtr(storage.mutable_data(), t.device()), /*allocator=*/nullptr,
                    /*resizable=*/false);
  return at::empty({0}, t.options()).set_(view, t.storage_offset(), t.sizes(), t.strides());
}

bool same_tensor(const py::handle& seen, const at::Tensor& t) {
  return THPVariable_Check(seen.ptr()) && THPVariable_Unpack(seen.ptr()).is_same(t);
}

// The 0-d tensor Inductor's generated wrapper makes for `seen`, an int or bool the work was
// given as `given` (`torch.tensor(arg)`: int64, bool), or nullopt for anything else.
std::optional<at::Tensor> fixed_number(const py::handle& seen, const c10::IValue& given) {
  if (py::isinstance<py::bool_>(seen)) {
    if (!given.isBool() || given.toBool() != seen.cast<bool>()) return std::nullopt;
    return at::scalar_tensor(given.toBool(), at::kBool);
  }
  if (!py::isinstance<py::int_>(seen) || !given.isInt()) return std::nullopt;
  if (seen.cast<std::int64_t>() != given.toInt()) return std::nullopt;
  return at::scalar_tensor(given.toInt(), at::kLong);
}

class CppWrapperGraph final : public DeviceGraph {
 public:
  CppWrapperGraph(CppWrapperGraphFactory::EntryFn entry, std::shared_ptr<GilHeld> recorder)
      : entry_(entry), recorder_(std::move(recorder)) {}

  void capture_inputs(const std::vector<c10::IValue>& arguments) override {
    arguments_ = arguments;
  }
  void capture_begin(std::function<void()> rerun) override {
    rerun_ = std::move(rerun);
    py::gil_scoped_acquire gil;
    recorder_->get().attr("arm")();
  }
  void capture_end(const std::vector<c10::IValue>& outputs) override {
    py::gil_scoped_acquire gil;
    py::object seen = recorder_->get().attr("take")();
    why_not_ = py::isinstance<py::str>(seen) || entry_ == nullptr
                   ? std::optional(py::str(seen).cast<std::string>())
                   : check(seen, outputs);
    if (!why_not_) outputs_ = outputs;
    arguments_.clear();  // the capture's own tensors: held only until they are checked
  }
  void capture_abort() noexcept override {
    rerun_ = nullptr;
    arguments_.clear();
  }
  void replay() override {
    if (why_not_) {
      rerun_();
      return;
    }
    std::vector<AtenTensorHandle> in;
    in.reserve(entry_inputs_.size());
    for (const auto& t : entry_inputs_)
      in.push_back(torch::aot_inductor::new_tensor_handle(at::Tensor(t)));
    std::vector<AtenTensorHandle> out(outputs_.size(), nullptr);
    {
      py::gil_scoped_acquire gil;  // Note [Inductor's C++ entry]: the function releases it
      // As aot_autograd's runtime wrapper calls it: the graph holds autocast's casts already,
      // and the ops it calls through the dispatcher must not cast again.
      const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
      entry_(in.data(), out.data());
    }
    for (std::size_t k = 0; k < out.size(); ++k) {
      at::Tensor fresh = std::move(*torch::aot_inductor::tensor_handle_to_tensor_pointer(out[k]));
      delete torch::aot_inductor::tensor_handle_to_tensor_pointer(out[k]);
      if (!fixed_[k]) outputs_[k].toTensor().copy_(fresh);
    }
  }
  void reset() override {
    rerun_ = nullptr;
    entry_inputs_.clear();
    outputs_.clear();
    fixed_.clear();
  }
  bool runs_during_capture() const override { return true; }
  std::string describe() const override {
    if (why_not_) return "re-runs Inductor's compiled function through Python: " + *why_not_;
    return "calls Inductor's C++ entry directly (" + std::to_string(entry_inputs_.size()) +
           " inputs, " + std::to_string(outputs_.size()) + " outputs)";
  }

 private:
  // True when `output` is a view of an argument (an input buffer or a static input: memory fixed
  // for the entry) that aot_autograd rebuilt from the entry's `seen` return, which is the same
  // view (address, sizes, strides): after each replay it holds the argument's bytes, as eager's
  // view does (an argument the entry writes included). Case C92.
  bool views_an_argument(const py::handle& seen, const at::Tensor& output) const {
    if (!THPVariable_Check(seen.ptr())) return false;
    const auto& returned = THPVariable_Unpack(seen.ptr());
    if (returned.data_ptr() != output.data_ptr() || returned.sizes() != output.sizes() ||
        returned.strides() != output.strides() || returned.dtype() != output.dtype() ||
        output.is_conj() || output.is_neg()) {
      return false;
    }
    for (const auto& a : arguments_) {
      if (a.isTensor() && a.toTensor().storage().is_alias_of(output.storage())) return true;
    }
    return false;
  }

  // Why the recorded call (`seen`: its inputs and outputs) cannot stand for the work, or nullopt
  // with entry_inputs_ set and fixed_ marking the outputs that view an argument (Note
  // [Inductor's C++ entry]).
  std::optional<std::string> check(const py::object& seen,
                                   const std::vector<c10::IValue>& outputs) {
    auto pair = seen.cast<py::tuple>();
    auto inputs = pair[0].cast<py::list>();
    auto returned = pair[1].cast<py::list>();
    if (inputs.size() != arguments_.size()) {
      return "it takes " + std::to_string(inputs.size()) + " inputs, the graph " +
             std::to_string(arguments_.size()) +
             " (aot_autograd merged inputs that share memory and are written, such as a buffer "
             "viewing another, into one base)";
    }
    std::vector<at::Tensor> entry_inputs;
    entry_inputs.reserve(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (!THPVariable_Check(inputs[i].ptr())) {
        // A SymInt (dynamic=True) or bool: the generated wrapper passes `torch.tensor(arg)`,
        // which the entry reads when it runs; the key holds the value (case C92).
        auto number = fixed_number(inputs[i], arguments_[i]);
        if (!number)
          return "input " + std::to_string(i) + " is neither a tensor nor an int or bool";
        entry_inputs.push_back(std::move(*number));
        continue;
      }
      const auto& given = THPVariable_Unpack(inputs[i].ptr());
      if (given.is_conj() || given.is_neg())
        return "input " + std::to_string(i) + " is a conj/neg view";
      if (arguments_[i].isTensor()) {
        if (!given.is_same(arguments_[i].toTensor())) {
          return "input " + std::to_string(i) + " is not the tensor the graph was given";
        }
        entry_inputs.push_back(non_owning(given));
      } else if (given.dim() == 0) {
        entry_inputs.push_back(
            given.clone());  // a number of the key, as the 0-d tensor made for it
      } else {
        return "input " + std::to_string(i) + " stands for a number but is not 0-d";
      }
    }
    if (returned.size() != outputs.size()) {
      return "it returns " + std::to_string(returned.size()) + " tensors, the graph " +
             std::to_string(outputs.size()) + " values";
    }
    std::vector<bool> fixed(outputs.size(), false);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      if (outputs[k].isTensor() && !same_tensor(returned[k], outputs[k].toTensor()) &&
          views_an_argument(returned[k], outputs[k].toTensor())) {
        fixed[k] = true;  // a view of fixed memory: it holds each replay's values as it is
        continue;
      }
      if (!outputs[k].isTensor() || !same_tensor(returned[k], outputs[k].toTensor())) {
        return "output " + std::to_string(k) + " is rebuilt by aot_autograd's wrappers";
      }
      if (is_expanded(outputs[k].toTensor())) return "output " + std::to_string(k) + " is expanded";
    }
    entry_inputs_ = std::move(entry_inputs);
    fixed_ = std::move(fixed);
    return std::nullopt;
  }

  CppWrapperGraphFactory::EntryFn entry_;
  std::shared_ptr<GilHeld> recorder_;
  std::function<void()> rerun_;
  std::vector<c10::IValue> arguments_;
  std::optional<std::string> why_not_;
  std::vector<at::Tensor> entry_inputs_;  // what every replay passes, in the entry's order
  std::vector<c10::IValue> outputs_;      // the static outputs each replay writes
  std::vector<bool> fixed_;               // per output: a view of an argument, never written
};

}  // namespace

CppWrapperGraphFactory::CppWrapperGraphFactory(const std::string& library, py::object recorder)
    : recorder_(std::make_shared<GilHeld>(std::move(recorder))) {
  if (library.empty()) return;  // no entry: every graph re-runs, saying the recorder's reason
  // Already loaded by Inductor (as a Python module): RTLD_NOLOAD only looks it up, and the handle
  // is never closed, as Python never unloads an extension module.
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_NOLOAD);
  TORCH_CHECK_VALUE(handle != nullptr,
                    "library: expected a loaded Inductor C++-wrapper module, got ", library, " (",
                    dlerror(), ")");
  void* symbol = dlsym(handle, kEntrySymbol);
  TORCH_CHECK_VALUE(symbol != nullptr, "library: ", library, " exports no ", kEntrySymbol);
  entry_ = reinterpret_cast<EntryFn>(symbol);
}

std::unique_ptr<DeviceGraph> CppWrapperGraphFactory::create(c10::Device device) {
  TORCH_INTERNAL_ASSERT(device.is_cpu(), "cpp_wrapper graphs run on the CPU, got ", device);
  return std::make_unique<CppWrapperGraph>(entry_, recorder_);
}

void init_cpp_wrapper_graphs(py::module_& m) {
  py::class_<CppWrapperGraphFactory, DeviceGraphFactory, std::shared_ptr<CppWrapperGraphFactory>>(
      m, "CppWrapperGraphFactory",
      "Graphs of one Inductor C++-wrapper function, called from C++ on replay "
      "(cpp_wrapper_graph.h).")
      .def(py::init<const std::string&, py::object>(), py::arg("library"), py::arg("recorder"));
}

}  // namespace graphdispatch::bindings
