#include "runtime/entry.h"

#include <ATen/Context.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <utility>

namespace graphdispatch {
namespace {

// Warmup (and the emulated graph's capture run) are runs eager would not make; undoing their
// RNG draws keeps "manual_seed then N calls" reproducible whatever the cache state was. The
// state is also restored when a capture fails (the guard is left by an exception).
class RngStateGuard final {
 public:
  explicit RngStateGuard(c10::Device device) : exceptions_(std::uncaught_exceptions()) {
    try {
      generator_ = at::globalContext().defaultGenerator(device);
    } catch (const c10::Error&) {
      return;  // a device without a default generator has no RNG state to protect
    }
    std::lock_guard<std::mutex> lock(generator_->mutex());
    state_ = generator_->get_state();
  }
  RngStateGuard(const RngStateGuard&) = delete;
  RngStateGuard& operator=(const RngStateGuard&) = delete;
  ~RngStateGuard() {
    if (std::uncaught_exceptions() > exceptions_) restore();
  }
  void restore() {
    if (!generator_) return;
    std::lock_guard<std::mutex> lock(generator_->mutex());
    generator_->set_state(state_);
  }

 private:
  int exceptions_;
  std::optional<at::Generator> generator_;
  at::Tensor state_;
};

}  // namespace

c10::Device device_of(const std::vector<c10::IValue>& inputs) {
  for (const auto& v : inputs) {
    if (v.isTensor() && !v.toTensor().is_cpu()) return v.toTensor().device();
  }
  return c10::kCPU;
}

std::string Entry::refusal_reason(const std::vector<c10::IValue>& inputs, bool has_aliasing) {
  if (has_aliasing) return "aliased_inputs";
  const c10::Device device = device_of(inputs);
  const bool grad = at::GradMode::is_enabled();
  for (const auto& v : inputs) {
    // A graph advances only the generators it registered at capture; an explicit one would
    // hand every replay the same numbers.
    if (v.isGenerator()) return "explicit_generator";
    if (!v.isTensor()) continue;
    const auto& t = v.toTensor();
    // A CPU tensor beside device tensors would be read on the host at capture and baked in.
    if (t.device() != device) return "mixed_devices";
    // A graph replay records no autograd history; eager would.
    if (grad && t.requires_grad()) return "requires_grad";
    if (at::has_internal_overlap(t) == at::MemOverlap::Yes) return "overlapping_input";
    // A buffer made by empty_strided would be a plain tensor: the subclass's behaviour (or a
    // zero tensor's absence of data) would be lost.
    if (t.unsafeGetTensorImpl()->is_python_dispatch() || t._is_zerotensor()) {
      return "unsupported_tensor";
    }
  }
  return "";
}

std::shared_ptr<Entry> Entry::negative(std::string reason, std::string detail) {
  std::shared_ptr<Entry> e(new Entry());
  e->reason_ = std::move(reason);
  e->detail_ = std::move(detail);
  return e;
}

std::shared_ptr<Entry> Entry::capture(const Callable& fn, const std::vector<c10::IValue>& inputs,
                                      const std::vector<bool>& is_static,
                                      DeviceGraphFactory& graphs, const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::capture", std::vector<c10::IValue>());
  std::shared_ptr<Entry> e(new Entry());
  e->device_ = device_of(inputs);
  e->pipeline_ = &CopyPipeline::for_device(e->device_);
  e->static_inputs_.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    if (!v.isTensor()) {
      e->static_inputs_.push_back(v);  // the value is part of the key: a constant of the graph
    } else if (is_static[i]) {
      e->static_positions_.push_back(i);
      e->static_data_ptrs_.push_back(v.toTensor().data_ptr());
      e->static_inputs_.push_back(v);
    } else {
      const auto& t = v.toTensor();
      e->dynamic_positions_.push_back(i);
      e->static_inputs_.emplace_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
      const auto& known = options.mutated_inputs;
      if (std::find(known.begin(), known.end(), i) != known.end()) e->mutated_.push_back(i);
    }
  }

  e->fill_buffers(inputs);
  // One capture per device at a time (Note on CopyPipeline::capture_mutex); the stream scope
  // orders the capture stream against the caller's on entry and on every exit.
  std::lock_guard<std::mutex> device_lock(e->pipeline_->capture_mutex());
  CaptureStreamScope on_capture_stream(*e->pipeline_);

  RngStateGuard rng(e->device_);
  for (std::int64_t i = 0; i < options.warmup_iters; ++i) {
    e->fill_buffers(inputs);
    e->run_on_buffers(fn);
  }
  rng.restore();

  e->fill_buffers(inputs);
  auto graph = graphs.create(e->device_);
  Entry* raw = e.get();  // the graph, and so the closure, never outlives the entry
  graph->capture_begin([raw, fn] { raw->rerun_into_outputs(fn); });
  try {
    e->static_outputs_ = e->run_on_buffers(fn);
  } catch (...) {
    graph->capture_abort();
    throw;
  }
  graph->capture_end();
  if (graph->runs_during_capture()) rng.restore();
  e->graph_ = std::move(graph);
  return e;
}

Entry::~Entry() {
  if (!graph_) return;
  try {
    graph_->reset();
  } catch (const std::exception&) {
    // A destructor must not throw; the graph's memory is released with its object anyway.
  }
}

void Entry::fill_buffers(const std::vector<c10::IValue>& inputs) {
  std::vector<at::Tensor> dst, src;
  dst.reserve(dynamic_positions_.size());
  src.reserve(dynamic_positions_.size());
  for (auto i : dynamic_positions_) {
    dst.push_back(static_inputs_[i].toTensor());
    src.push_back(inputs[i].toTensor());
  }
  pipeline_->copy(dst, src, /*on_copy_stream=*/false);
}

std::vector<c10::IValue> Entry::run_on_buffers(const Callable& fn) {
  // Inference tensors have no version counter: for them only the schema-derived
  // RunnerOptions::mutated_inputs (already in mutated_) tell which buffers the work writes.
  constexpr std::int64_t kUntracked = -1;
  auto version = [](const at::Tensor& t) { return t.is_inference() ? kUntracked : t._version(); };
  std::vector<std::int64_t> versions;
  versions.reserve(dynamic_positions_.size());
  for (auto i : dynamic_positions_) versions.push_back(version(static_inputs_[i].toTensor()));
  auto outputs = fn(static_inputs_);
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    if (version(static_inputs_[i].toTensor()) != versions[k] &&
        std::find(mutated_.begin(), mutated_.end(), i) == mutated_.end()) {
      mutated_.push_back(i);
    }
  }
  return outputs;
}

void Entry::rerun_into_outputs(const Callable& fn) {
  auto outputs = fn(static_inputs_);
  TORCH_INTERNAL_ASSERT(outputs.size() == static_outputs_.size());
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].isTensor()) continue;
    auto& dst = static_outputs_[k].toTensor();
    const auto& src = outputs[k].toTensor();
    if (!dst.is_same(src)) dst.copy_(src);
  }
}

bool Entry::static_inputs_in_place(const std::vector<c10::IValue>& inputs) const {
  for (std::size_t k = 0; k < static_positions_.size(); ++k) {
    if (inputs[static_positions_[k]].toTensor().data_ptr() != static_data_ptrs_[k]) return false;
  }
  return true;
}

std::vector<c10::IValue> Entry::replay(const std::vector<c10::IValue>& inputs,
                                       const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::replay", std::vector<c10::IValue>());
  TORCH_INTERNAL_ASSERT(!is_negative());
  TORCH_CHECK(inputs.size() == static_inputs_.size(), "input mismatch: captured ",
              static_inputs_.size(), " inputs, got ", inputs.size());
  auto& stats = Stats::get();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<at::Tensor> dst, src;
  std::int64_t bytes = 0, skipped = 0;
  for (auto i : dynamic_positions_) {
    const auto& buffer = static_inputs_[i].toTensor();
    const auto& given = inputs[i].toTensor();
    check_input_match(buffer, given, i);
    if (given.data_ptr() == buffer.data_ptr()) {
      ++skipped;
      continue;
    }
    dst.push_back(buffer);
    src.push_back(given);
    bytes += static_cast<std::int64_t>(given.nbytes());
  }
  pipeline_->copy(dst, src, options.copy_stream);
  graph_->replay();
  for (auto i : mutated_) {
    const auto& given = inputs[i].toTensor();
    const auto& buffer = static_inputs_[i].toTensor();
    if (given.data_ptr() != buffer.data_ptr()) given.copy_(buffer, /*non_blocking=*/true);
  }
  stats.replays.fetch_add(1, std::memory_order_relaxed);
  stats.bytes_copied.fetch_add(bytes, std::memory_order_relaxed);
  stats.copies_skipped.fetch_add(skipped, std::memory_order_relaxed);
  if (!options.safe_output_mode) return static_outputs_;
  std::vector<c10::IValue> outputs;
  outputs.reserve(static_outputs_.size());
  for (const auto& v : static_outputs_) {
    outputs.push_back(v.isTensor() ? c10::IValue(v.toTensor().clone(at::MemoryFormat::Preserve))
                                   : v);
  }
  return outputs;
}

}  // namespace graphdispatch
