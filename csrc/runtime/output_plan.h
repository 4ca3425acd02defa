#pragma once

#include "runtime/memory_span.h"
#include "runtime/tensor_layout.h"

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>
#include <c10/util/intrusive_ptr.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace graphdispatch {

// Note [Outputs]
// Safe output mode hands out copies as eager would have made them: outputs that share a
// storage (`y, y[0], y.t()`) and outputs that do not cover their storage densely (`y[:, ::2]`)
// are rebuilt on one copy of that storage per call, keeping their mutual aliasing and strides
// (case C37); a dense output alone in its storage is cloned directly (the common, cheap path).
// Unsafe mode hands out fresh tensor objects over the static outputs on every call, so the
// caller's metadata changes (unsqueeze_, requires_grad_) never reach the next call (case
// C31); their storage cannot be resized, since a resize would move the memory the graph
// writes. A written input that lies in a static output (a previous output passed back in,
// `z = c(y)`) is not copied back: the copy-back would overwrite this call's output, and in
// unsafe mode the earlier output is invalid after the replay anyway (case C30).

// Note [Outputs still held]
// An unsafe output lies in the entry's static output, which the entry's next replay overwrites.
// Whoever still references it then — the caller, or a library such as diffusers' First-Block-
// Cache keeping the previous step's residuals (case C46) — would read the new values in place
// of its own, silently. So each replay first looks at the storages the previous one handed out
// (weakly held: one refcount load per output) and gives each one still referenced memory of
// its own holding its values (one copy, counted in Stats::held_outputs_copied) before the
// graph writes the static outputs: what the caller holds never changes under it, in either
// output mode. Outputs no one holds any more cost nothing; unsafe mode saves its copy on the
// calls whose previous outputs are gone (dropped, or rebound) by the next call of the entry.
// Two held outputs sharing one static storage each get their own copy: their values stay
// right, the link between them does not.
// On a device the entries share one graph pool (Note [Device pools]), and an entry's static
// outputs may lie in memory an earlier capture used for intermediates, which that graph
// writes on each of its replays (the caching allocator hands freed pool memory to the next
// allocation; the test device shows it, tests/test_testdev_routes.py). So on a device the
// outputs handed out are remembered for the device, not the entry, and every replay on it
// first copies away what any entry handed out that is still held. The CPU graph's outputs
// lie in each entry's own arena (Note [Shared workspace]): there, only the entry's own.

/// How one entry hands out its static outputs (Notes [Outputs], [Outputs still held]): which
/// outputs view inputs, which are cloned alone and which are rebuilt on one copy of their
/// storage. Planned once after capture. Not thread-safe: the entry calls the non-const
/// members under its mutex.
class OutputPlan final {
 public:
  OutputPlan() = default;
  /// `static_outputs`: what the capture run returned; `args`: the inputs it read (buffers
  /// for dynamic inputs, the call's tensors for static ones, constants).
  OutputPlan(std::vector<c10::IValue> static_outputs, const std::vector<c10::IValue>& args);

  const std::vector<c10::IValue>& static_outputs() const { return static_outputs_; }
  /// Where output `k` lies in an input, for an output that is (a view of) an input: such an
  /// output is rebuilt on the caller's tensor, as eager returns it (cases C24, C40).
  const std::optional<InputView>& view(std::size_t k) const { return views_[k]; }
  /// True when `t` (the caller's input at `position`) overlaps a static output: a previous
  /// output passed back in, which the copy-back must not overwrite (Note [Outputs]).
  bool overlaps_static_outputs(const at::Tensor& t, std::size_t position) const;

  /// The emulated graph's replay: writes `outputs` (the callable's, same count and layouts)
  /// into the static outputs. Outputs that view inputs have nothing to refresh.
  void write(const std::vector<c10::IValue>& outputs);
  /// The outputs of one replay of a call with `inputs`, copies when `safe` (Note [Outputs]).
  std::vector<c10::IValue> hand_out(const std::vector<c10::IValue>& inputs, bool safe) const;
  /// Note [Outputs still held]: before a replay, gives the unsafe outputs of the previous one
  /// that are still referenced memory of their own; after it, remembers what `outputs` hands
  /// out now.
  void copy_away_held_outputs();
  void remember_handed_out(const std::vector<c10::IValue>& outputs);
  /// In a forked child: forgets the devices' held outputs (Note [Fork] in _once.py).
  static void reset_after_fork();

 private:
  std::vector<c10::IValue> static_outputs_;
  std::vector<std::optional<InputView>> views_;
  // Per output: -1 to clone it directly, else the index of the storage copied once per call
  // it is rebuilt on (safe mode; Note [Outputs]).
  std::vector<std::int64_t> group_;
  std::vector<at::Tensor> group_storages_;  // each as a byte tensor over the whole storage
  SpanSet spans_;  // the static outputs' memory, for the copy-back check (case C30)
  // Unsafe mode: (output position, its storage) of what the last replay handed out, weakly
  // held (Note [Outputs still held]).
  std::vector<std::pair<std::size_t, c10::weak_intrusive_ptr<c10::StorageImpl>>> handed_out_;
  // The device of the static outputs when off the CPU: held outputs are then the device's.
  std::optional<c10::Device> device_;
};

}  // namespace graphdispatch
