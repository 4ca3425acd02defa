#include "runtime/entry.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <ATen/ops/abs.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/isclose.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <sstream>
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

Entry::Refusal Entry::refusal(const std::vector<c10::IValue>& inputs, const Signature& sig) {
  if (sig.has_aliasing()) {
    const auto [first, second] = sig.aliased();
    const auto& later = inputs[static_cast<std::size_t>(second)].toTensor();
    return {"aliased_inputs", "input " + std::to_string(second) + ": " + describe_layout(later) +
                                  " overlaps input " + std::to_string(first) + " in memory"};
  }
  const c10::Device device = device_of(inputs);
  const bool grad = at::GradMode::is_enabled();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    // A graph advances only the generators it registered at capture; an explicit one would
    // hand every replay the same numbers.
    if (v.isGenerator()) return {"explicit_generator", "input " + std::to_string(i) + ": a torch.Generator"};
    if (!v.isTensor()) continue;
    const auto& t = v.toTensor();
    auto refuse = [&](const char* reason) {
      return Refusal{reason, "input " + std::to_string(i) + ": " + describe_layout(t)};
    };
    // A CPU tensor beside device tensors would be read on the host at capture and baked in.
    if (t.device() != device) return refuse("mixed_devices");
    // A graph replay records no autograd history; eager would.
    if (grad && t.requires_grad()) return refuse("requires_grad");
    // A buffer made by empty_strided would be a plain tensor: the subclass's behaviour (or a
    // zero tensor's absence of data) would be lost.
    if (t.unsafeGetTensorImpl()->is_python_dispatch() || t._is_zerotensor()) {
      return refuse("unsupported_tensor");
    }
  }
  return {};
}

std::shared_ptr<Entry> Entry::negative(std::string reason, std::string detail,
                                       std::string signature) {
  std::shared_ptr<Entry> e(new Entry());
  e->reason_ = std::move(reason);
  e->detail_ = std::move(detail);
  e->signature_ = std::move(signature);
  return e;
}

std::shared_ptr<Entry> Entry::capture(const Callable& fn, const std::vector<c10::IValue>& inputs,
                                      const std::vector<bool>& is_static,
                                      DeviceGraphFactory& graphs, const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::capture", std::vector<c10::IValue>());
  // Note [Inference mode]: InferenceMode(false) also turns grad mode on; put it back off.
  std::optional<c10::InferenceMode> not_inference;
  std::optional<at::AutoGradMode> no_grad;
  if (c10::InferenceMode::is_enabled()) {
    not_inference.emplace(false);
    no_grad.emplace(false);
  }
  std::shared_ptr<Entry> e(new Entry());
  e->signature_ = describe_signature(inputs, is_static);
  e->captures_ = 1;
  e->device_ = device_of(inputs);
  e->pipeline_ = &CopyPipeline::for_device(e->device_);
  e->order_.emplace(e->device_);  // on the stream the buffers are allocated on
  e->static_inputs_.reserve(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    if (!v.isTensor()) {
      e->static_inputs_.push_back(v);  // the value is part of the key: a constant of the graph
    } else if (is_static[i]) {
      e->static_positions_.push_back(i);
      e->static_data_ptrs_.push_back(v.toTensor().data_ptr());
      e->static_inputs_.push_back(v);
      const auto& known = options.mutated_inputs;
      if (std::find(known.begin(), known.end(), i) != known.end()) e->static_mutated_.push_back(i);
    } else {
      const auto& t = v.toTensor();
      e->dynamic_positions_.push_back(i);
      e->expanded_.push_back(is_expanded(t));
      // Same strides, zero ones included: the buffer is expanded as the input is.
      e->static_inputs_.emplace_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
      const auto& known = options.mutated_inputs;
      if (std::find(known.begin(), known.end(), i) != known.end()) e->mutated_.push_back(i);
    }
  }

  e->fill_buffers(inputs);
  // Note [Static inputs that are written]: warmup (and an emulated capture) write them for
  // real; their values before the call are put back once the capture is over, so the call's
  // own replay applies the write exactly once.
  std::vector<at::Tensor> written_before;
  for (auto i : e->static_mutated_) {
    written_before.push_back(inputs[i].toTensor().clone(at::MemoryFormat::Preserve));
  }
  auto put_back = [&] {
    for (std::size_t k = 0; k < written_before.size(); ++k) {
      inputs[e->static_mutated_[k]].toTensor().copy_(written_before[k]);
    }
  };
  // One capture per device at a time (Note on CopyPipeline::capture_mutex); the stream scopes
  // order the warmup and capture streams against the caller's on entry and on every exit.
  std::lock_guard<std::mutex> device_lock(e->pipeline_->capture_mutex());
  RngStateGuard rng(e->device_);
  {
    // Never on the capture stream (Note [Workspaces]).
    SideStreamScope on_warmup_stream(*e->pipeline_, e->pipeline_->warmup_stream());
    for (std::int64_t i = 0; i < options.warmup_iters; ++i) {
      e->fill_buffers(inputs);
      e->run_on_buffers(fn);
    }
  }
  rng.restore();

  SideStreamScope on_capture_stream(*e->pipeline_, e->pipeline_->capture_stream());
  e->fill_buffers(inputs);
  auto graph = graphs.create(e->device_);
  Entry* raw = e.get();  // the graph, and so the closure, never outlives the entry
  graph->capture_begin([raw, fn] { raw->rerun_into_outputs(fn); });
  try {
    e->static_outputs_ = e->run_on_buffers(fn);
  } catch (...) {
    graph->capture_abort();
    put_back();
    throw;
  }
  graph->capture_end();
  put_back();  // after capture_end: the copies must not be recorded into the graph
  if (graph->runs_during_capture()) rng.restore();
  e->find_output_views();
  e->graph_ = std::move(graph);
  e->bytes_ = e->count_bytes();
  return e;
}

std::int64_t Entry::count_bytes() const {
  std::set<const void*> counted;  // storages: outputs may share one, or be input buffers
  std::int64_t bytes = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.has_storage() || !counted.insert(t.storage().data()).second) return;
    bytes += static_cast<std::int64_t>(t.storage().nbytes());
  };
  for (auto i : dynamic_positions_) add(static_inputs_[i].toTensor());
  if (auto pool = graph_->pool_bytes()) return bytes + *pool;
  for (std::size_t k = 0; k < static_outputs_.size(); ++k) {
    if (static_outputs_[k].isTensor() && !output_views_[k]) add(static_outputs_[k].toTensor());
  }
  return bytes;
}

Entry::~Entry() {
  if (!graph_) return;
  order_->release();
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
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    dst.push_back(copied_part(static_inputs_[i].toTensor(), k));
    src.push_back(copied_part(inputs[i].toTensor(), k));
  }
  pipeline_->copy(dst, src, /*on_copy_stream=*/false);
}

std::vector<c10::IValue> Entry::run_on_buffers(const Callable& fn) {
  // The buffers are never inference tensors (Note [Inference mode]): they all count versions.
  auto version = [](const at::Tensor& t) { return t._version(); };
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
    // Views of inputs are rebuilt on the caller's tensors; nothing to refresh.
    if (!outputs[k].isTensor() || output_views_[k]) continue;
    auto& dst = static_outputs_[k].toTensor();
    const auto& src = outputs[k].toTensor();
    if (dst.is_same(src)) continue;
    // A zero-stride output is written through its unexpanded part (Note [Expanded tensors]).
    if (is_expanded(dst)) {
      unexpanded(dst).copy_(unexpanded(src));
    } else {
      dst.copy_(src);
    }
  }
}

void Entry::find_output_views() {
  output_views_.assign(static_outputs_.size(), std::nullopt);
  for (std::size_t k = 0; k < static_outputs_.size(); ++k) {
    if (!static_outputs_[k].isTensor()) continue;
    const auto& out = static_outputs_[k].toTensor();
    for (std::size_t i = 0; i < static_inputs_.size() && !output_views_[k]; ++i) {
      if (static_inputs_[i].isTensor()) {
        output_views_[k] = view_of_input(out, static_inputs_[i].toTensor(), i);
      }
    }
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
  order_->begin();
  std::vector<at::Tensor> dst, src;
  std::int64_t bytes = 0, skipped = 0;
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    const auto& buffer = static_inputs_[i].toTensor();
    const auto& given = inputs[i].toTensor();
    check_input_match(buffer, given, i);
    if (given.data_ptr() == buffer.data_ptr()) {
      ++skipped;
      continue;
    }
    dst.push_back(copied_part(buffer, k));
    src.push_back(copied_part(given, k));
    bytes += static_cast<std::int64_t>(src.back().nbytes());
  }
  if (!dst.empty()) {
    RECORD_FUNCTION("graphdispatch::copy_inputs", std::vector<c10::IValue>());
    pipeline_->copy(dst, src, options.copy_stream);
  }
  graph_->replay();
  // Under mutex_, the only writer: no read-modify-write needed on the hot path.
  replays_.store(replays_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  for (auto i : mutated_) {
    const auto& given = inputs[i].toTensor();
    const auto& buffer = static_inputs_[i].toTensor();
    if (given.data_ptr() != buffer.data_ptr()) given.copy_(buffer, /*non_blocking=*/true);
  }
  stats.replays.fetch_add(1, std::memory_order_relaxed);
  stats.bytes_copied.fetch_add(bytes, std::memory_order_relaxed);
  stats.copies_skipped.fetch_add(skipped, std::memory_order_relaxed);
  std::vector<c10::IValue> outputs;
  outputs.reserve(static_outputs_.size());
  for (std::size_t k = 0; k < static_outputs_.size(); ++k) {
    const auto& v = static_outputs_[k];
    if (output_views_[k]) {
      outputs.emplace_back(output_views_[k]->of(inputs[output_views_[k]->position].toTensor()));
    } else if (v.isTensor() && options.safe_output_mode) {
      outputs.emplace_back(clone_keeping_layout(v.toTensor()));
    } else {
      outputs.push_back(v);
    }
  }
  order_->end();  // after the clones: they read the static outputs the next replay writes
  return outputs;
}

namespace {

// Why output `k` of the replay differs from the non-graph path's, or "" when it does not.
std::string difference(const c10::IValue& got, const c10::IValue& want, std::size_t k,
                       double rtol, double atol) {
  const std::string at_output = "output " + std::to_string(k) + ": ";
  if (got.isTensor() != want.isTensor()) return at_output + "a tensor on one path only";
  if (!got.isTensor()) {
    // Non-tensor outputs are graph constants; compared where the kind has a value.
    bool same = got.tagKind() == want.tagKind();
    if (same && got.isInt()) same = got.toInt() == want.toInt();
    if (same && got.isDouble()) same = got.toDouble() == want.toDouble();
    if (same && got.isBool()) same = got.toBool() == want.toBool();
    return same ? "" : at_output + "values differ";
  }
  const auto& a = got.toTensor();
  const auto& b = want.toTensor();
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
    return at_output + "replay gave " + describe_tensor(a) + ", the non-graph path " +
           describe_tensor(b);
  }
  const bool inexact = at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type());
  const bool close = inexact ? at::isclose(a, b, rtol, atol, /*equal_nan=*/true).all().item<bool>()
                             : at::equal(a, b);
  if (close) return "";
  const auto diff = at::isComplexType(a.scalar_type())
                        ? a.sub(b).abs()
                        : a.to(at::kDouble).sub(b.to(at::kDouble)).abs();  // bool has no sub
  const double max_diff = diff.max().item<double>();
  std::ostringstream text;
  text << at_output << "max |difference| " << max_diff << " (rtol " << rtol << ", atol " << atol
       << ")";
  return text.str();
}

}  // namespace

Entry::Verified Entry::replay_verified(const Callable& fn, const std::vector<c10::IValue>& inputs,
                                       const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::verify", std::vector<c10::IValue>());
  std::vector<c10::IValue> copies = inputs;
  for (auto i : dynamic_positions_) copies[i] = clone_keeping_layout(inputs[i].toTensor());
  // The check's run must not write a static input the replay then writes again.
  for (auto i : static_mutated_) copies[i] = inputs[i].toTensor().clone(at::MemoryFormat::Preserve);
  // Both paths start from one RNG state, so random ops draw the same numbers on both; the
  // replay's draws are the call's, as without verification.
  RngStateGuard rng(device_);
  auto expected = fn(copies);
  rng.restore();
  Verified result{replay(inputs, options), ""};
  TORCH_INTERNAL_ASSERT(expected.size() == result.outputs.size());
  for (std::size_t k = 0; k < expected.size() && result.mismatch.empty(); ++k) {
    result.mismatch = difference(result.outputs[k], expected[k], k, options.verify_rtol,
                                 options.verify_atol);
  }
  if (result.mismatch.empty()) return result;
  // The replay wrote its (wrong) values of mutated inputs back; the non-graph ones win.
  for (auto i : mutated_) inputs[i].toTensor().copy_(copies[i].toTensor());
  for (auto i : static_mutated_) inputs[i].toTensor().copy_(copies[i].toTensor());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    // Outputs that view inputs stay on the caller's tensors, which now hold the right values.
    if (!output_views_[k]) result.outputs[k] = std::move(expected[k]);
  }
  return result;
}

}  // namespace graphdispatch
