#include "runtime/entry.h"

#include "runtime/capture_lock.h"
#include "runtime/rng_state_guard.h"
#include "runtime/stats.h"
#include "runtime/written_statics.h"

#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <utility>

namespace graphdispatch {
namespace {

// Turns autocast's weight-cast cache off for its lifetime, then back to what it was.
class AutocastCacheOff final {
 public:
  AutocastCacheOff() : was_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(was_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool was_;
};

bool contains(const std::vector<std::size_t>& positions, std::size_t i) {
  return std::find(positions.begin(), positions.end(), i) != positions.end();
}

}  // namespace

std::shared_ptr<Entry> Entry::negative(FallbackReason reason, std::string detail,
                                       std::string signature) {
  std::shared_ptr<Entry> e(new Entry());
  e->reason_ = reason;
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
  e->device_ = device_of(inputs);
  e->pipeline_ = &CopyPipeline::for_device(e->device_);
  e->order_.emplace(e->device_);  // on the stream the buffers are allocated on
  e->input_buffers_.reserve(inputs.size());
  const auto& known = options.written_inputs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    if (!v.isTensor()) {
      e->input_buffers_.push_back(v);  // the value is part of the key: a constant of the graph
    } else if (is_static[i]) {
      e->static_positions_.push_back(i);
      e->static_refs_.push_back(v.toTensor().storage().getWeakStorageImpl());
      e->static_data_ptrs_.push_back(v.toTensor().storage().data());
      e->input_buffers_.emplace_back();
      if (contains(known, i)) e->static_written_.push_back(i);
    } else {
      const auto& t = v.toTensor();
      e->dynamic_positions_.push_back(i);
      e->expanded_.push_back(is_expanded(t));
      // Same strides, zero ones included: the buffer is expanded as the input is.
      e->input_buffers_.emplace_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
      if (contains(known, i)) e->dynamic_written_.push_back(i);
    }
  }

  e->fill_buffers(inputs);
  // Note [Static inputs that are written]
  // Warmup (and an emulated capture) write them for real; their values before the call are put
  // back once the capture is over, so the call's own replay applies the write exactly once.
  const WrittenStatics written_before(inputs, e->static_written_);
  auto put_back = [&] { written_before.put_back(inputs); };
  // One capture per device at a time (capture_lock); the stream scopes order the warmup and
  // capture streams against the caller's on entry and on every exit.
  std::lock_guard<std::mutex> device_lock(capture_lock(e->device_));
  CaptureScope on_this_thread;
  RngStateGuard rng(e->device_, options.draws_random);
  // Autocast caches the low-precision cast of each weight until its outermost region exits: a
  // capture that read the cache would replay through memory the cache frees, and a cast made
  // by the capture would reach eager code through it. Warmup and capture cast for themselves,
  // as torch.cuda.make_graphed_callables requires (case C54).
  const AutocastCacheOff no_cast_cache;
  std::unique_ptr<DeviceGraph> graph;
  std::vector<c10::IValue> static_outputs;
  bool recording = false;
  try {
    {
      // Never on the capture stream (Note [Workspaces]).
      SideStreamScope on_warmup_stream(*e->pipeline_, e->pipeline_->warmup_stream());
      for (std::int64_t i = 0; i < options.warmup_iters; ++i) {
        e->fill_buffers(inputs);
        e->run_on_buffers(fn, inputs);
      }
    }
    rng.restore();

    SideStreamScope on_capture_stream(*e->pipeline_, e->pipeline_->capture_stream());
    e->fill_buffers(inputs);
    graph = graphs.create(e->device_);
    graph->capture_inputs(e->arguments(inputs));
    Entry* raw = e.get();  // the graph, and so the closure, never outlives the entry
    // The emulated graph's replay: `fn` on the buffers of the call being replayed.
    graph->capture_begin([raw, fn] {
      TORCH_INTERNAL_ASSERT(raw->replaying_ != nullptr);
      raw->outputs_.write(fn(raw->arguments(*raw->replaying_)));
    });
    recording = true;
    static_outputs = e->run_on_buffers(fn, inputs);
    recording = false;
    graph->capture_end(static_outputs);
  } catch (...) {
    // Whatever failed (warmup, the capture run, the graph itself), the written static inputs
    // get their values back: the call that failed here runs again on the fallback path.
    if (recording) graph->capture_abort();
    put_back();
    throw;
  }
  put_back();  // after capture_end: the copies must not be recorded into the graph
  if (graph->runs_during_capture()) rng.restore();
  e->graph_ = std::move(graph);
  // Counted from here, where ~Entry starts uncounting it, whatever throws below.
  auto& stats = Stats::get();
  stats.live_entries.fetch_add(1, std::memory_order_relaxed);
  e->outputs_ = OutputPlan(std::move(static_outputs), e->arguments(inputs));
  e->aliasing_ = AliasingPlan(inputs, e->dynamic_positions_, e->dynamic_written_,
                              e->static_positions_, e->static_written_, options);
  e->bytes_ = e->count_bytes();
  stats.live_entry_bytes.fetch_add(e->bytes_, std::memory_order_relaxed);
  return e;
}

std::int64_t Entry::count_bytes() const {
  std::set<const void*> counted;  // storages: outputs may share one, or be input buffers
  std::int64_t bytes = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.has_storage() || !counted.insert(t.storage().data()).second) return;
    bytes += static_cast<std::int64_t>(t.storage().nbytes());
  };
  for (auto i : dynamic_positions_) add(input_buffers_[i].toTensor());
  if (auto pool = graph_->pool_bytes()) return bytes + *pool;
  const auto& outputs = outputs_.static_outputs();
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (outputs[k].isTensor() && !outputs_.view(k)) add(outputs[k].toTensor());
  }
  return bytes;
}

Entry::~Entry() {
  if (!graph_) return;
  auto& stats = Stats::get();
  stats.live_entries.fetch_sub(1, std::memory_order_relaxed);
  stats.live_entry_bytes.fetch_sub(bytes_, std::memory_order_relaxed);
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
    dst.push_back(copied_part(input_buffers_[i].toTensor(), k));
    src.push_back(copied_part(inputs[i].toTensor(), k));
  }
  pipeline_->copy(dst, src, /*on_copy_stream=*/false);
}

std::vector<c10::IValue> Entry::arguments(const std::vector<c10::IValue>& inputs) const {
  std::vector<c10::IValue> args = input_buffers_;
  for (auto i : static_positions_) args[i] = inputs[i];
  return args;
}

std::vector<c10::IValue> Entry::run_on_buffers(const Callable& fn,
                                               const std::vector<c10::IValue>& inputs) {
  // The buffers are never inference tensors (Note [Inference mode]): they all count versions.
  auto version = [](const at::Tensor& t) { return t._version(); };
  std::vector<std::int64_t> versions;
  versions.reserve(dynamic_positions_.size());
  for (auto i : dynamic_positions_) versions.push_back(version(input_buffers_[i].toTensor()));
  auto outputs = fn(arguments(inputs));
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    if (version(input_buffers_[i].toTensor()) != versions[k] && !contains(dynamic_written_, i)) {
      dynamic_written_.push_back(i);
    }
  }
  return outputs;
}

std::optional<std::size_t> Entry::lost_static_input() const {
  for (std::size_t k = 0; k < static_refs_.size(); ++k) {
    auto alive = static_refs_[k].lock();
    // Freed, or its memory replaced (`untyped_storage().resize_()`). A tensor given another
    // storage (`param.data = ...`, a swap) frees the old one unless a view keeps it alive, and
    // then the old address stays valid for anyone passing it.
    if (!alive || alive->data() != static_data_ptrs_[k]) return static_positions_[k];
  }
  return std::nullopt;
}

std::vector<c10::IValue> Entry::replay(const std::vector<c10::IValue>& inputs,
                                       const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::replay", std::vector<c10::IValue>());
  TORCH_INTERNAL_ASSERT(!is_negative());
  TORCH_CHECK(inputs.size() == input_buffers_.size(), "input mismatch: captured ",
              input_buffers_.size(), " inputs, got ", inputs.size());
  auto& stats = Stats::get();
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_lock<std::recursive_mutex> device_order;  // Note [Replay]
  if (!device_.is_cpu()) device_order = std::unique_lock(pipeline_->replay_order());
  order_->begin();
  // First: a held output passed back in as an input is then copied from its own memory.
  outputs_.copy_away_held_outputs();
  std::vector<at::Tensor> dst, src;
  std::int64_t bytes = 0, skipped = 0;
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    const auto& buffer = input_buffers_[i].toTensor();
    const auto& given = inputs[i].toTensor();
    check_input_match(buffer, given, i);
    if (given.numel() == 0) continue;
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
  replaying_ = &inputs;
  try {
    graph_->replay();
  } catch (...) {
    // Note [A replay that raises]: what the steps before the raising one wrote reaches the
    // caller, as eager's in-place writes before the raising op do (case C81).
    replaying_ = nullptr;
    hand_back_writes(inputs, options);
    order_->end();
    throw;
  }
  replaying_ = nullptr;
  // Under mutex_, the only writer: no read-modify-write needed on the hot path.
  replays_.store(replays_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  hand_back_writes(inputs, options);
  stats.replays.fetch_add(1, std::memory_order_relaxed);
  stats.bytes_copied.fetch_add(bytes, std::memory_order_relaxed);
  stats.copies_skipped.fetch_add(skipped, std::memory_order_relaxed);
  auto outputs = outputs_.hand_out(inputs, options.safe_output_mode);
  if (!options.safe_output_mode) outputs_.remember_handed_out(outputs);
  order_->end();  // after the clones: they read the static outputs the next replay writes
  return outputs;
}

void Entry::hand_back_writes(const std::vector<c10::IValue>& inputs, const RunnerOptions& options) {
  for (auto i : dynamic_written_) {
    const auto& given = inputs[i].toTensor();
    const auto& buffer = input_buffers_[i].toTensor();
    if (given.data_ptr() == buffer.data_ptr()) continue;
    // Note [Outputs]: a previous output passed back in; this call's output wins.
    if (!options.safe_output_mode && outputs_.overlaps_static_outputs(given, i)) continue;
    given.copy_(buffer, /*non_blocking=*/true);
  }
  // A replay writes static inputs below autograd, where eager's in-place ops count the write:
  // bump their versions so autograd still refuses a backward through a stale value (case C61).
  for (auto i : static_written_) {
    auto* impl = inputs[i].toTensor().unsafeGetTensorImpl();
    if (!impl->is_inference()) impl->bump_version();
  }
}

void Entry::replay_graph() {
  TORCH_INTERNAL_ASSERT(!is_negative());
  std::lock_guard<std::mutex> lock(mutex_);
  graph_->replay();
}

}  // namespace graphdispatch
