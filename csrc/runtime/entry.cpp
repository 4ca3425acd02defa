#include "runtime/entry.h"

#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>
#include <ATen/record_function.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <ATen/ops/abs.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/isclose.h>

#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

namespace graphdispatch {
namespace {

bool contains(const std::vector<std::size_t>& positions, std::size_t i) {
  return std::find(positions.begin(), positions.end(), i) != positions.end();
}

// Note [Random numbers]: saves the generator's state, restored by restore() and when left by
// an exception (a failed capture). Disengaged, it does nothing at all.
class RngStateGuard final {
 public:
  RngStateGuard(c10::Device device, bool engaged) : exceptions_(std::uncaught_exceptions()) {
    if (!engaged) return;
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

namespace {
thread_local int capture_depth = 0;
}  // namespace

CaptureScope::CaptureScope() { ++capture_depth; }
CaptureScope::~CaptureScope() { --capture_depth; }
bool capturing_on_this_thread() { return capture_depth > 0; }

c10::Device device_of(const std::vector<c10::IValue>& inputs) {
  for (const auto& v : inputs) {
    if (v.isTensor() && !v.toTensor().is_cpu()) return v.toTensor().device();
  }
  return c10::kCPU;
}

Entry::Refusal Entry::refusal(const std::vector<c10::IValue>& inputs, const Signature& sig,
                              const RunnerOptions& options) {
  // Note [Aliasing]: overlapping dynamic inputs get a buffer each, right only when neither is
  // written.
  for (const auto& [first, second] : sig.overlaps()) {
    if (!options.may_write(first) && !options.may_write(second)) continue;
    const auto& later = inputs[second].toTensor();
    return {"aliased_inputs", options.input(second) + ": " + describe_layout(later) +
                                  " overlaps " + options.input(first) +
                                  " in memory, and the graph writes one of them"};
  }
  const c10::Device device = device_of(inputs);
  const bool grad = at::GradMode::is_enabled();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    // A graph advances only the generators it registered at capture; an explicit one would
    // hand every replay the same numbers.
    if (v.isGenerator()) return {"explicit_generator", options.input(i) + ": a torch.Generator"};
    if (!v.isTensor()) continue;
    const auto& t = v.toTensor();
    auto refuse = [&](const char* reason) {
      return Refusal{reason, options.input(i) + ": " + describe_layout(t)};
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
  e->device_ = device_of(inputs);
  e->pipeline_ = &CopyPipeline::for_device(e->device_);
  e->order_.emplace(e->device_);  // on the stream the buffers are allocated on
  e->inputs_.reserve(inputs.size());
  const auto& known = options.written_inputs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    if (!v.isTensor()) {
      e->inputs_.push_back(v);  // the value is part of the key: a constant of the graph
    } else if (is_static[i]) {
      e->static_positions_.push_back(i);
      e->static_refs_.push_back(v.toTensor().storage().getWeakStorageImpl());
      e->static_data_ptrs_.push_back(v.toTensor().storage().data());
      e->inputs_.emplace_back();
      if (contains(known, i)) e->static_written_.push_back(i);
    } else {
      const auto& t = v.toTensor();
      e->dynamic_positions_.push_back(i);
      e->expanded_.push_back(is_expanded(t));
      // Same strides, zero ones included: the buffer is expanded as the input is.
      e->inputs_.emplace_back(at::empty_strided(t.sizes(), t.strides(), t.options()));
      if (contains(known, i)) e->dynamic_written_.push_back(i);
    }
  }

  e->fill_buffers(inputs);
  // Note [Static inputs that are written]: warmup (and an emulated capture) write them for
  // real; their values before the call are put back once the capture is over, so the call's
  // own replay applies the write exactly once.
  std::vector<at::Tensor> written_before;
  for (auto i : e->static_written_) {
    written_before.push_back(inputs[i].toTensor().clone(at::MemoryFormat::Preserve));
  }
  auto put_back = [&] {
    for (std::size_t k = 0; k < written_before.size(); ++k) {
      inputs[e->static_written_[k]].toTensor().copy_(written_before[k]);
    }
  };
  // One capture per device at a time (Note on CopyPipeline::capture_mutex); the stream scopes
  // order the warmup and capture streams against the caller's on entry and on every exit.
  std::lock_guard<std::mutex> device_lock(e->pipeline_->capture_mutex());
  CaptureScope on_this_thread;
  RngStateGuard rng(e->device_, options.random);
  std::unique_ptr<DeviceGraph> graph;
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
    Entry* raw = e.get();  // the graph, and so the closure, never outlives the entry
    graph->capture_begin([raw, fn] { raw->rerun_into_outputs(fn); });
    recording = true;
    e->static_outputs_ = e->run_on_buffers(fn, inputs);
    recording = false;
    graph->capture_end(e->static_outputs_);
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
  e->plan_outputs(inputs);
  e->plan_aliasing_checks(inputs, options);
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
  for (auto i : dynamic_positions_) add(inputs_[i].toTensor());
  if (auto pool = graph_->pool_bytes()) return bytes + *pool;
  for (std::size_t k = 0; k < static_outputs_.size(); ++k) {
    if (static_outputs_[k].isTensor() && !output_views_[k]) add(static_outputs_[k].toTensor());
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
    dst.push_back(copied_part(inputs_[i].toTensor(), k));
    src.push_back(copied_part(inputs[i].toTensor(), k));
  }
  pipeline_->copy(dst, src, /*on_copy_stream=*/false);
}

std::vector<c10::IValue> Entry::arguments(const std::vector<c10::IValue>& inputs) const {
  std::vector<c10::IValue> args = inputs_;
  for (auto i : static_positions_) args[i] = inputs[i];
  return args;
}

std::vector<c10::IValue> Entry::run_on_buffers(const Callable& fn,
                                               const std::vector<c10::IValue>& inputs) {
  // The buffers are never inference tensors (Note [Inference mode]): they all count versions.
  auto version = [](const at::Tensor& t) { return t._version(); };
  std::vector<std::int64_t> versions;
  versions.reserve(dynamic_positions_.size());
  for (auto i : dynamic_positions_) versions.push_back(version(inputs_[i].toTensor()));
  auto outputs = fn(arguments(inputs));
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    if (version(inputs_[i].toTensor()) != versions[k] && !contains(dynamic_written_, i)) {
      dynamic_written_.push_back(i);
    }
  }
  return outputs;
}

void Entry::rerun_into_outputs(const Callable& fn) {
  TORCH_INTERNAL_ASSERT(replaying_ != nullptr);
  auto outputs = fn(arguments(*replaying_));
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

void Entry::plan_outputs(const std::vector<c10::IValue>& inputs) {
  const auto args = arguments(inputs);
  const auto n = static_outputs_.size();
  output_views_.assign(n, std::nullopt);
  output_group_.assign(n, -1);
  // The outputs handed out as copies, and how many of them lie in each storage.
  std::vector<std::size_t> copied;
  std::map<const void*, int> outputs_in;
  for (std::size_t k = 0; k < n; ++k) {
    if (!static_outputs_[k].isTensor()) continue;
    const auto& out = static_outputs_[k].toTensor();
    for (std::size_t i = 0; i < args.size() && !output_views_[k]; ++i) {
      if (args[i].isTensor()) output_views_[k] = view_of_input(out, args[i].toTensor(), i);
    }
    if (output_views_[k] || !out.defined() || !out.has_storage()) continue;
    copied.push_back(k);
    ++outputs_in[out.storage().data()];
  }
  std::vector<Span> spans;
  std::map<const void*, std::int64_t> group_of;  // storage -> index in group_storages_
  for (auto k : copied) {
    const auto& out = static_outputs_[k].toTensor();
    if (auto span = span_of(out, k)) spans.push_back(*span);
    const void* storage = out.storage().data();
    const bool dense = out.is_non_overlapping_and_dense() ||
                       (is_expanded(out) && unexpanded(out).is_non_overlapping_and_dense());
    if (outputs_in[storage] == 1 && dense) continue;  // the cheap path: clone it
    auto [group, added] =
        group_of.emplace(storage, static_cast<std::int64_t>(group_storages_.size()));
    if (added) {
      group_storages_.push_back(
          at::empty({0}, out.options().dtype(at::kByte))
              .set_(out.storage(), 0, {static_cast<std::int64_t>(out.storage().nbytes())}, {1}));
    }
    output_group_[k] = group->second;
  }
  output_spans_ = SpanSet(std::move(spans));
}

void Entry::plan_aliasing_checks(const std::vector<c10::IValue>& inputs,
                                 const RunnerOptions& options) {
  written_.assign(inputs.size(), false);
  for (auto i : dynamic_positions_) {
    written_[i] = !options.writes_known || contains(dynamic_written_, i);
  }
  std::vector<Span> all, written;
  for (auto i : static_positions_) {
    auto span = span_of(inputs[i].toTensor(), i);
    if (!span) continue;
    all.push_back(*span);
    if (contains(static_written_, i)) written.push_back(*span);
  }
  if (std::find(written_.begin(), written_.end(), true) != written_.end()) {
    static_spans_ = SpanSet(std::move(all));
  }
  written_static_spans_ = SpanSet(std::move(written));
}

std::optional<std::pair<std::size_t, std::size_t>> Entry::static_overlap(
    const std::vector<c10::IValue>& inputs) const {
  if (static_spans_.empty() && written_static_spans_.empty()) return std::nullopt;
  for (auto i : dynamic_positions_) {
    const SpanSet& reachable = written_[i] ? static_spans_ : written_static_spans_;
    if (reachable.empty()) continue;
    auto span = span_of(inputs[i].toTensor(), i);
    if (!span) continue;
    if (auto s = reachable.overlapping(*span)) return std::make_pair(i, *s);
  }
  return std::nullopt;
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

std::vector<c10::IValue> Entry::hand_out(const std::vector<c10::IValue>& inputs, bool safe) const {
  std::vector<c10::IValue> outputs;
  outputs.reserve(static_outputs_.size());
  std::vector<at::Tensor> copies(safe ? group_storages_.size() : 0);
  for (std::size_t k = 0; k < static_outputs_.size(); ++k) {
    const auto& v = static_outputs_[k];
    if (output_views_[k]) {
      outputs.emplace_back(output_views_[k]->of(inputs[output_views_[k]->position].toTensor()));
      continue;
    }
    if (!v.isTensor() || !v.toTensor().defined()) {
      outputs.push_back(v);
      continue;
    }
    const auto& out = v.toTensor();
    if (!safe) {
      if (out.numel() == 0) {  // no memory to share; a storage of its own stays resizable
        outputs.emplace_back(at::empty_strided(out.sizes(), out.strides(), out.options()));
        continue;
      }
      // A storage of its own that cannot be resized, over the static output's memory, which it
      // keeps alive (Note [Outputs]).
      // The device is given, so from_blob does not ask the driver where the pointer lives.
      outputs.emplace_back(at::from_blob(out.data_ptr(), out.sizes(), out.strides(),
                                         [keep = out](void*) {}, out.options(), out.device()));
      continue;
    }
    const auto group = output_group_[k];
    if (group < 0) {
      outputs.emplace_back(clone_keeping_layout(out));
      continue;
    }
    auto& copy = copies[static_cast<std::size_t>(group)];
    if (!copy.defined()) copy = group_storages_[static_cast<std::size_t>(group)].clone();
    outputs.emplace_back(at::empty({0}, out.options())
                             .set_(copy.storage(), out.storage_offset(), out.sizes(),
                                   out.strides()));
  }
  return outputs;
}

void Entry::copy_away_held_outputs() {
  for (const auto& [k, storage] : handed_out_) {
    auto held = storage.lock();
    if (!held) continue;  // nobody references it any more: the replay may overwrite it
    const auto& out = static_outputs_[k].toTensor();
    const auto bytes = out.options().dtype(at::kByte);
    const auto n = static_cast<std::int64_t>(held->nbytes());
    auto own = at::empty({n}, bytes);
    // The device is given, so for_blob does not ask the driver where the pointer lives.
    own.copy_(at::for_blob(held->mutable_data(), {n}).options(bytes).target_device(out.device())
                  .make_tensor(),
              /*non_blocking=*/true);
    // The holder's tensors read their storage's memory, wherever it is: they now read `own`'s.
    held->set_data_ptr_noswap(std::move(own.storage().unsafeGetStorageImpl()->mutable_data_ptr()));
    Stats::get().held_outputs_copied.fetch_add(1, std::memory_order_relaxed);
  }
  handed_out_.clear();
}

void Entry::remember_handed_out(const std::vector<c10::IValue>& outputs) {
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    // Views of inputs lie in the caller's memory, and empty outputs in none of the entry's.
    if (output_views_[k] || !outputs[k].isTensor()) continue;
    const auto& t = outputs[k].toTensor();
    if (!t.defined() || t.numel() == 0 || !t.has_storage()) continue;
    handed_out_.emplace_back(k, t.storage().getWeakStorageImpl());
  }
}

std::vector<c10::IValue> Entry::replay(const std::vector<c10::IValue>& inputs,
                                       const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::replay", std::vector<c10::IValue>());
  TORCH_INTERNAL_ASSERT(!is_negative());
  TORCH_CHECK(inputs.size() == inputs_.size(), "input mismatch: captured ", inputs_.size(),
              " inputs, got ", inputs.size());
  auto& stats = Stats::get();
  std::lock_guard<std::mutex> lock(mutex_);
  order_->begin();
  // First: a held output passed back in as an input is then copied from its own memory.
  copy_away_held_outputs();
  std::vector<at::Tensor> dst, src;
  std::int64_t bytes = 0, skipped = 0;
  for (std::size_t k = 0; k < dynamic_positions_.size(); ++k) {
    const auto i = dynamic_positions_[k];
    const auto& buffer = inputs_[i].toTensor();
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
    replaying_ = nullptr;
    throw;
  }
  replaying_ = nullptr;
  // Under mutex_, the only writer: no read-modify-write needed on the hot path.
  replays_.store(replays_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  for (auto i : dynamic_written_) {
    const auto& given = inputs[i].toTensor();
    const auto& buffer = inputs_[i].toTensor();
    if (given.data_ptr() == buffer.data_ptr()) continue;
    // Note [Outputs]: a previous output passed back in; this call's output wins.
    if (!options.safe_output_mode && !output_spans_.empty()) {
      auto span = span_of(given, i);
      if (span && output_spans_.overlapping(*span)) continue;
    }
    given.copy_(buffer, /*non_blocking=*/true);
  }
  stats.replays.fetch_add(1, std::memory_order_relaxed);
  stats.bytes_copied.fetch_add(bytes, std::memory_order_relaxed);
  stats.copies_skipped.fetch_add(skipped, std::memory_order_relaxed);
  auto outputs = hand_out(inputs, options.safe_output_mode);
  if (!options.safe_output_mode) remember_handed_out(outputs);
  order_->end();  // after the clones: they read the static outputs the next replay writes
  return outputs;
}

void Entry::replay_graph() {
  TORCH_INTERNAL_ASSERT(!is_negative());
  std::lock_guard<std::mutex> lock(mutex_);
  graph_->replay();
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
  // Static inputs the graph writes are written in place by the check's run, as eager writes
  // them (a static input viewing another then sees the write); their values before and after
  // it are kept, and the before ones put back, so the replay writes them once.
  auto snapshot = [&] {
    std::vector<at::Tensor> values;
    for (auto i : static_written_) {
      values.push_back(inputs[i].toTensor().clone(at::MemoryFormat::Preserve));
    }
    return values;
  };
  const auto before = snapshot();
  // Both paths start from one RNG state, so random ops draw the same numbers on both; the
  // replay's draws are the call's, as without verification.
  RngStateGuard rng(device_, options.random);
  auto expected = fn(copies);
  rng.restore();
  const auto after = snapshot();
  for (std::size_t k = 0; k < expected.size(); ++k) {
    // An output that is a written static input would change with the put-back below.
    const auto& view = output_views_[k];
    const bool on_written = view && contains(static_written_, view->position);
    if (on_written) expected[k] = expected[k].toTensor().clone(at::MemoryFormat::Preserve);
  }
  for (std::size_t k = 0; k < before.size(); ++k) {
    inputs[static_written_[k]].toTensor().copy_(before[k]);
  }
  Verified result{replay(inputs, options), ""};
  TORCH_INTERNAL_ASSERT(expected.size() == result.outputs.size());
  for (std::size_t k = 0; k < expected.size() && result.mismatch.empty(); ++k) {
    result.mismatch = difference(result.outputs[k], expected[k], k, options.verify_rtol,
                                 options.verify_atol);
  }
  if (result.mismatch.empty()) return result;
  // The replay wrote its (wrong) values of mutated inputs back; the non-graph ones win.
  for (auto i : dynamic_written_) inputs[i].toTensor().copy_(copies[i].toTensor());
  for (std::size_t k = 0; k < after.size(); ++k) {
    inputs[static_written_[k]].toTensor().copy_(after[k]);
  }
  for (std::size_t k = 0; k < expected.size(); ++k) {
    // Outputs that view inputs stay on the caller's tensors, which now hold the right values.
    if (!output_views_[k]) result.outputs[k] = std::move(expected[k]);
  }
  return result;
}

}  // namespace graphdispatch
