#pragma once

#include "runtime/capture_lock.h"
#include "runtime/device_graph.h"
#include "runtime/entry.h"
#include "runtime/entry_cache.h"
#include "runtime/fallback_reason.h"
#include "runtime/moving_views.h"
#include "runtime/number_values.h"
#include "runtime/recapture_policy.h"
#include "runtime/runner_options.h"
#include "runtime/signature.h"

#include <ATen/core/ivalue.h>

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphdispatch {

// Note [Failed captures]
// A capture can fail because of the signature (an op the graph cannot record: every call of
// it would fail) or because of this call's values (a bad token id, a singular matrix: the work
// itself raises). The call that failed to capture runs the callable on the caller's tensors,
// which tells the two apart: when it returns, the failure is the signature's and a negative
// entry (capture_failed) serves later calls, never retried; when it raises too, the error is
// the caller's, nothing is cached and the next call of the signature captures again (case
// C86). After kFailingCallsPerSignature such calls a signature gives up (cached as
// capture_failed, logged once), so a client sending only bad requests costs at most that many
// captures. A compile-time capture that fails waits for the first call to settle it.
inline constexpr std::int64_t kFailingCallsPerSignature = 3;

// Note [Replay]
// A call: signature (Note [Cache key]) → lookup (a hit takes a shared lock; a miss captures
// under the runner's insert mutex, so concurrent first calls with one key capture once, case
// C14) → a negative entry falls back → the static-overlap check (Note [Aliasing]) → optional
// verification (Note [Verified replays]) → Entry::replay: each dynamic input checked against
// its buffer, those whose data pointer differs copied in one batched _foreach_copy_, the
// graph replayed, written inputs copied back, outputs handed out (Note [Outputs]). Replays of
// one entry are serialised by its mutex (they share buffers) and ordered on the device by its
// done event (CallOrder, case G4); an evicted entry's buffers are freed only after that event.
// On a device, one entry's static outputs may lie in memory another graph of the shared pool
// uses for intermediates (Note [Outputs still held]): from its input copies to its outputs'
// hand-out a replay holds the device's replay order (CopyPipeline::replay_order), so no other
// entry's replay is launched between them (found on the test device, two threads, one stream).
// With copy_stream the copies run on the device's copy stream between two events, and the host
// never synchronises; streams and events are made once per device (Note [Workspaces]).

/// The runner of one compiled graph: signature → entry cache → entry → replay.
///
/// Owns the entry cache (FIFO or LRU, bounded by max_entries) and shares the device graph
/// factory. Thread-safe: hits take only a shared lock; a miss captures under the runner's
/// insert mutex, so concurrent first calls with one key capture exactly once. Calls whose
/// capture was refused or failed are served by the callable itself on the caller's tensors
/// (the fallback path) and counted by reason; a negative entry keeps capture from being
/// retried on every call. Does not know about Python, Dynamo or routes.
class GraphRunner final {
 public:
  /// `is_static[i]`: input i is a parameter or buffer Dynamo lifted (Note [Static inputs]).
  GraphRunner(Callable fn, std::vector<bool> is_static, std::shared_ptr<DeviceGraphFactory> graphs,
              RunnerOptions options);
  GraphRunner(const GraphRunner&) = delete;
  GraphRunner& operator=(const GraphRunner&) = delete;
  ~GraphRunner();

  /// One call: replay of the entry for these inputs, capturing it first on a miss.
  std::vector<c10::IValue> operator()(const std::vector<c10::IValue>& inputs);
  /// Captures the entry for `inputs` now (compile-time capture); no-op if it exists.
  void capture(const std::vector<c10::IValue>& inputs);

  /// The entry for `inputs`' signature, or nullptr.
  std::shared_ptr<Entry> entry_for(const std::vector<c10::IValue>& inputs) const;
  std::size_t num_entries() const;
  /// Every live entry, negative ones included, oldest inserted first.
  std::vector<std::shared_ptr<Entry>> entries() const;
  /// Bytes the live entries hold (the figure max_entry_bytes bounds): their own, plus once the
  /// largest of their needs from shared memory (Note [Shared workspace]).
  std::size_t entry_bytes() const;
  /// Bytes the live entries hold on their own (Entry::bytes), shared memory left out.
  std::size_t own_entry_bytes() const;
  /// Replays the device graph of every captured entry once, nothing around it
  /// (Entry::replay_graph): the floor a call of each entry pays, for measuring the runner.
  void replay_graphs() const;
  /// Drops every entry (graphs reset, buffers freed).
  void clear();
  /// Drops the entries one of whose static inputs was freed or replaced (Note [Moving static
  /// inputs]); called by the layer that watches them (RunnerOptions::watch), and on every
  /// miss. Takes only the cache lock, so it may run from a finalizer inside a call of this
  /// runner.
  void drop_dead_entries();
  /// In a forked child: forgets the parent's entries, leaked with their graphs, and replaces
  /// the locks (Note [Fork] in _once.py).
  void reset_after_fork();
  const RunnerOptions& options() const { return options_; }

  /// For the process byte budget (Note [Process byte budget] in process_budget.h): (stamp,
  /// key) of the entry holding bytes this runner would give up next in `eviction`'s order,
  /// never `keep`; nullopt when none.
  std::optional<std::pair<std::uint64_t, Signature>> budget_victim(Eviction eviction,
                                                                   const Signature* keep) const;
  /// Removes the entry for `sig` and returns it (nullptr when it is gone), for the caller to
  /// destroy outside its locks.
  std::shared_ptr<Entry> evict_for_budget(const Signature& sig);

 private:
  using Cache = EntryCache<Signature, Entry, Signature::Hasher>;
  struct State {
    explicit State(const RunnerOptions& o)
        : cache(o.max_entries, o.eviction, o.max_entry_bytes), recaptures(o.max_recaptures) {}
    Cache cache;
    std::shared_mutex cache_mutex;
    /// Held to capture or replace an entry: a key is captured once, by one thread. The
    /// device-wide capture_lock() (capture_lock.h) is taken inside it, only for the capture.
    std::mutex insert_mutex;
    /// True the first time `reason` is seen: each graph warns once per fallback reason.
    bool first_fallback(FallbackReason reason) {
      std::lock_guard<std::mutex> lock(warned_mutex);
      return warned.insert(reason).second;
    }
    std::mutex warned_mutex;
    std::set<FallbackReason> warned;
    RecapturePolicy recaptures;  // Note [Moving static inputs]
    NumberValues numbers;        // under insert_mutex (Note [Numbers in the key])
    MovingViews views;           // under insert_mutex (Note [Views that move])
    // Note [Failed captures]: under insert_mutex. A failed capture's verdict until a call
    // settles it; failures on calls that raised in eager too, per signature.
    std::unordered_map<Signature, std::shared_ptr<Entry>, Signature::Hasher> unsettled;
    std::unordered_map<Signature, std::int64_t, Signature::Hasher> failing_calls;
  };

  void check_arity(const std::vector<c10::IValue>& inputs) const;
  /// True inside a capture (ours, its warmup included, or someone else's graph): a call then
  /// runs its work, so its kernels land in that graph, and never captures.
  bool inside_a_capture(const std::vector<c10::IValue>& inputs) const {
    return capturing_on_this_thread() || graphs_->is_capturing(device_of(inputs));
  }
  std::shared_ptr<Entry> lookup(const Signature& sig) const;
  /// Finds or makes the entry for `sig` (one capture per key). A negative entry returned for
  /// static_inputs_moving is not cached: it serves this call only; one for a failed capture is
  /// cached only once a call settles it (`unsettled` is then true; Note [Failed captures]).
  std::shared_ptr<Entry> find_or_capture(const Signature& sig,
                                         const std::vector<c10::IValue>& inputs,
                                         bool* unsettled = nullptr);
  /// The fallback of a call whose capture failed, which decides what the failure says
  /// (Note [Failed captures]).
  std::vector<c10::IValue> settle_failed_capture(const Signature& sig,
                                                 const std::shared_ptr<Entry>& failed,
                                                 const std::vector<c10::IValue>& inputs);
  /// Caches `entry` for `sig` and applies the entry and byte budgets (under insert_mutex).
  void insert(const Signature& sig, const std::shared_ptr<Entry>& entry);
  /// Why `sig` must not be captured because its layout keeps losing static inputs, or "".
  std::string moving_static_input(const Signature& sig, const std::vector<c10::IValue>& inputs);
  /// The callable on the caller's tensors, counted under `reason`.
  std::vector<c10::IValue> fall_back(FallbackReason reason, const std::string& detail,
                                     const std::vector<c10::IValue>& inputs);
  /// A replay checked against the non-graph path; a mismatch disables the entry.
  std::vector<c10::IValue> replay_verified(const Signature& sig,
                                           const std::shared_ptr<Entry>& entry,
                                           const std::vector<c10::IValue>& inputs);

  /// The inputs read in place now: is_static as given, less the views that move (Note [Views
  /// that move]); each version lives as long as the runner, so a call may hold it unlocked.
  const std::vector<bool>& statics() const { return *statics_.load(std::memory_order_acquire); }
  /// Under insert_mutex: input `position` is copied from now on; drops the entries keyed on its
  /// address and returns them, for the caller to destroy outside its locks.
  std::vector<std::shared_ptr<Entry>> stop_reading_in_place(std::size_t position,
                                                            const std::vector<c10::IValue>& inputs);

  Callable fn_;
  std::vector<std::unique_ptr<const std::vector<bool>>> static_versions_;  // under insert_mutex
  std::atomic<const std::vector<bool>*> statics_;
  std::shared_ptr<DeviceGraphFactory> graphs_;
  RunnerOptions options_;
  std::unique_ptr<State> state_;  // released, not destroyed, after fork (reset_after_fork)
  std::atomic<bool> evicting_logged_{false};
  std::atomic<bool> over_budget_logged_{false};
  std::atomic<bool> over_process_budget_logged_{false};
};

}  // namespace graphdispatch
