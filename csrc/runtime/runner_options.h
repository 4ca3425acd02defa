#pragma once

#include "runtime/entry_cache.h"

#include <ATen/core/ivalue.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

namespace graphdispatch {

/// What a runner captures and falls back to: the FX graph or Inductor's compiled function,
/// called with the flat graph inputs, returning the flat graph outputs.
using Callable = std::function<std::vector<c10::IValue>(const std::vector<c10::IValue>&)>;

/// Thrown by a Callable or a device graph for an error that must reach the caller as it is and
/// never be served by the fallback path: an interrupt (KeyboardInterrupt, SystemExit). Capture
/// rethrows it without recording a negative entry, so the next call captures again (case C32).
class Interrupt final : public std::exception {
 public:
  explicit Interrupt(std::exception_ptr cause) : cause_(std::move(cause)) {}
  const char* what() const noexcept override { return "graphdispatch: interrupted"; }
  /// The error the callable raised, for the layer that knows its type.
  [[noreturn]] void rethrow_cause() const { std::rethrow_exception(cause_); }

 private:
  std::exception_ptr cause_;
};

/// Told the static inputs of each new entry, so the layer that owns them can drop the entry
/// when one is freed (GraphRunner::drop_dead_entries; case C34). Called without locks held.
using WatchSink = std::function<void(const std::vector<at::Tensor>&)>;

/// Receives the runtime's log lines (first eviction, capture failures); the bindings forward
/// them to the `graphdispatch` Python logger.
using LogSink = std::function<void(const std::string&)>;

/// The per-runner settings (Note [Options] in config.py) that the runtime acts on. Value type.
///
/// The fields that are user options (set by name through runner_option_table.h) take their
/// defaults from src/graphdispatch/config.py, the one definition of every option;
/// tests/test_option_layers.py checks that the two agree.
struct RunnerOptions final {
  /// Return clones of the static outputs (a later replay cannot change what the caller holds).
  bool safe_output_mode = true;
  /// Runs of the callable on the warmup stream before capture (lazy library setup, cuBLAS
  /// handles; Note [Workspaces]).
  std::int64_t warmup_iters = 1;
  /// Copy changed dynamic inputs on the copy stream, ordered by events.
  bool copy_stream = true;
  /// Entries per runner; 0 = unbounded.
  std::size_t max_entries = 0;
  /// Bytes the runner's live entries may hold (Entry::bytes); 0 = unbounded. Eviction, in the
  /// order `eviction` says, keeps them under it; an entry alone over it is kept.
  std::size_t max_entry_bytes = 0;
  /// Bytes the entries of every runner of the process may hold together (Note [Process byte
  /// budget] in process_budget.h); 0 = unbounded. Applied when this runner captures.
  std::size_t max_total_entry_bytes = 0;
  Eviction eviction = Eviction::kFifo;
  /// Input positions the callable writes to, known from its ops' schemas (the Python layer
  /// reads them off the graph). Version counters alone miss ops that write without bumping
  /// them (batch_norm's running stats); each listed dynamic input is copied back after replay.
  std::vector<std::size_t> written_inputs;
  /// True when `written_inputs` is complete. Otherwise (the default, and when the Python layer
  /// could not work the writes out) every dynamic input counts as written for the aliasing
  /// checks (Note [Aliasing]).
  bool writes_known = false;
  /// True when the callable may write input `i`: listed, or the writes are unknown.
  bool may_write(std::size_t i) const {
    return !writes_known ||
           std::find(written_inputs.begin(), written_inputs.end(), i) != written_inputs.end();
  }
  /// False when the callable draws no random numbers: capture then never saves, restores or
  /// locks a generator (cases C29, C33; Note [Random numbers] in rng_state_guard.h).
  bool draws_random = true;
  /// Captures per input layout after an entry of that layout lost a static input (Note [Moving
  /// static inputs] in recapture_policy.h); past it such calls fall back (static_inputs_moving).
  std::int64_t max_recaptures = 8;
  /// Replays of each entry checked against the non-graph path (Note [Verified replays]).
  std::int64_t verify_replays = 0;
  /// Tolerances of that check: |replay - expected| <= verify_atol + verify_rtol * |expected|;
  /// 0 and 0 compare exactly.
  double verify_rtol = 1e-5;
  double verify_atol = 1e-6;
  /// Per input position, what the user calls it: a parameter's or buffer's module path
  /// (`blocks.3.attn.to_q.weight`), an argument's name (`hidden_states`), or "" when unknown
  /// (case C48). Empty when none is known.
  std::vector<std::string> input_names;
  /// "input 3 (blocks.3.attn.to_q.weight)", or "input 3" without a name: how every warning and
  /// fallback detail names an input.
  std::string input(std::size_t i) const {
    std::string out = "input " + std::to_string(i);
    if (i < input_names.size() && !input_names[i].empty()) out += " (" + input_names[i] + ")";
    return out;
  }
  LogSink log;
  WatchSink watch;
};

}  // namespace graphdispatch
