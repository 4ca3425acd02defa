#include "runtime/rng_state_guard.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <exception>
#include <mutex>

namespace graphdispatch {

RngStateGuard::RngStateGuard(c10::Device device, bool engaged)
    : exceptions_(std::uncaught_exceptions()) {
  if (!engaged) return;
  try {
    generator_ = at::globalContext().defaultGenerator(device);
  } catch (const c10::Error&) {
    return;  // a device without a default generator has no RNG state to protect
  }
  std::lock_guard<std::mutex> lock(generator_->mutex());
  state_ = generator_->get_state();
}

RngStateGuard::~RngStateGuard() {
  if (std::uncaught_exceptions() > exceptions_) restore();
}

void RngStateGuard::restore() {
  if (!generator_) return;
  std::lock_guard<std::mutex> lock(generator_->mutex());
  generator_->set_state(state_);
}

}  // namespace graphdispatch
