#include "runtime/capture_lock.h"

#include <gtest/gtest.h>

namespace graphdispatch {
namespace {

TEST(CaptureLockTest, OnePerDeviceAndAFreshOneAfterFork) {
  auto& cpu = capture_lock(c10::Device(c10::kCPU));
  EXPECT_EQ(&cpu, &capture_lock(c10::Device(c10::kCPU)));
  EXPECT_NE(&cpu, &capture_lock(c10::Device(c10::kMeta)));
  cpu.lock();  // as a parent thread capturing at fork would hold it
  reset_capture_locks_after_fork();
  auto& fresh = capture_lock(c10::Device(c10::kCPU));
  EXPECT_NE(&fresh, &cpu);
  ASSERT_TRUE(fresh.try_lock());
  fresh.unlock();
  cpu.unlock();
}

TEST(CaptureLockTest, CaptureScopeMarksThisThreadWhileAnyIsAlive) {
  EXPECT_FALSE(capturing_on_this_thread());
  {
    CaptureScope outer;
    {
      CaptureScope inner;  // a capture inside a capture's warmup
      EXPECT_TRUE(capturing_on_this_thread());
    }
    EXPECT_TRUE(capturing_on_this_thread());
  }
  EXPECT_FALSE(capturing_on_this_thread());
}

}  // namespace
}  // namespace graphdispatch
