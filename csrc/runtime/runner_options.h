#pragma once

#include "runtime/entry_cache.h"

#include <ATen/core/ivalue.h>

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

/// Receives the runtime's log lines (first eviction, capture failures); the bindings forward
/// them to the `graphdispatch` Python logger.
using LogSink = std::function<void(const std::string&)>;

/// The per-runner settings of design 2.1 that the runtime acts on. Value type.
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
  Eviction eviction = Eviction::kFifo;
  /// Input positions the callable writes to, known from its ops' schemas (the Python layer
  /// reads them off the graph). Version counters alone miss ops that write without bumping
  /// them (batch_norm's running stats); each listed dynamic input is copied back after replay.
  std::vector<std::size_t> mutated_inputs;
  /// Replays of each entry checked against the non-graph path (Note [Verified replays]).
  std::int64_t verify_replays = 0;
  /// Tolerances of that check; 0 and 0 compare exactly.
  double verify_rtol = 0.0;
  double verify_atol = 0.0;
  LogSink log;
};

}  // namespace graphdispatch
