#pragma once

#include <c10/core/Device.h>

#include <mutex>

namespace graphdispatch {

/// The mutex held for a whole capture on `device`, made on first use; the reference stays
/// valid for the life of the process. Captures on one device share its capture stream (and,
/// for framework graphs, its pool), so two at once would record each other's kernels.
std::mutex& capture_lock(c10::Device device);
/// In a forked child: forgets every device's capture lock, leaked (Note [Fork] in _once.py).
void reset_capture_locks_after_fork();

/// Marks this thread as inside a capture (its warmup included) for its lifetime. A compiled
/// function called from there (a custom op calling another compiled model) runs without a
/// graph: its work lands in the outer graph, and taking the device's capture lock again would
/// deadlock.
class CaptureScope final {
 public:
  CaptureScope();
  ~CaptureScope();
  CaptureScope(const CaptureScope&) = delete;
  CaptureScope& operator=(const CaptureScope&) = delete;
};
bool capturing_on_this_thread();

}  // namespace graphdispatch
