#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <optional>

namespace graphdispatch {

// Note [Random numbers]
// Warmup (and the emulated graph's capture run) are runs eager would not make; for a graph
// with random ops, the default generator of the device is saved before them and restored
// after, so "manual_seed then N calls" gives eager's numbers whatever the cache state was.
// Another thread drawing from that generator meanwhile has its draws rewound, so they repeat
// (docs/usage.md). A graph without random ops (the Python layer reads the ops' tags) never
// touches the generator: no save, no restore, no lock (cases C29, C33). The generator's mutex
// is held only inside get_state/set_state, never across a capture, so a fork during a capture
// cannot leave it locked in the child.

/// Saves the default generator state of `device` (Note [Random numbers]), restored by
/// restore() and when the scope is left by an exception (a failed capture). Disengaged, or on
/// a device without a default generator, it does nothing at all.
class RngStateGuard final {
 public:
  RngStateGuard(c10::Device device, bool engaged);
  RngStateGuard(const RngStateGuard&) = delete;
  RngStateGuard& operator=(const RngStateGuard&) = delete;
  ~RngStateGuard();
  void restore();

 private:
  int exceptions_;
  std::optional<at::Generator> generator_;
  at::Tensor state_;
};

}  // namespace graphdispatch
