#include "runtime/capture_lock.h"

#include <unordered_map>

namespace graphdispatch {
namespace {

struct Registry {
  std::mutex mutex;
  std::unordered_map<c10::Device, std::mutex*> locks;  // never destroyed: callers keep them
};

Registry* registry = new Registry();

thread_local int capture_depth = 0;

}  // namespace

std::mutex& capture_lock(c10::Device device) {
  std::lock_guard<std::mutex> lock(registry->mutex);
  auto& slot = registry->locks[device];
  if (slot == nullptr) slot = new std::mutex();
  return *slot;
}

void reset_capture_locks_after_fork() {
  registry = new Registry();  // the parent's registry and its mutexes are left untouched
}

CaptureScope::CaptureScope() { ++capture_depth; }
CaptureScope::~CaptureScope() { --capture_depth; }
bool capturing_on_this_thread() { return capture_depth > 0; }

}  // namespace graphdispatch
