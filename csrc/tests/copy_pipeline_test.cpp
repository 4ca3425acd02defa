// The device order of one entry's calls (CallOrder, case G4) and the pipeline's streams (case
// G8), on the CPU: a recording guard stands in for a device with streams and events, the way
// PyTorch tests device-generic code against a fake guard (c10/core/impl/FakeGuardImpl.h).

#include "runtime/copy_pipeline.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace graphdispatch {
namespace {

constexpr auto kType = c10::DeviceType::PrivateUse1;

/// Streams by id, and a log of event records and stream waits ("record 2", "block 1").
struct RecordingGuard final : public c10::impl::DeviceGuardImplInterface {
  static std::vector<std::string>& log() {
    static std::vector<std::string> entries;
    return entries;
  }
  static c10::StreamId& current() {
    static thread_local c10::StreamId id = 0;
    return id;
  }
  static c10::Stream stream(c10::StreamId id) {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, 0), id);
  }

  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return c10::Device(kType, 0); }
  c10::Device getDevice() const override { return c10::Device(kType, 0); }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const noexcept override { return stream(current()); }
  c10::Stream getNewStream(c10::Device, int) const override { return stream(next_++); }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override {
    const auto old = stream(current());
    current() = s.id();
    return old;
  }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
  void record(void** event, const c10::Stream& s, const c10::DeviceIndex,
              const c10::EventFlag) const override {
    *event = reinterpret_cast<void*>(1);
    log().push_back("record " + std::to_string(s.id()));
  }
  void block(void* event, const c10::Stream& s) const override {
    if (event != nullptr) log().push_back("block " + std::to_string(s.id()));
  }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}

  mutable c10::StreamId next_ = 100;
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, RecordingGuard);

TEST(CallOrder, NextCallAndBufferReleaseWaitForTheLastCallOnAnotherStream) {
  RecordingGuard::log().clear();
  RecordingGuard::current() = 1;  // the stream the buffers are allocated on
  CallOrder order(c10::Device(kType, 0));
  order.begin();  // no call yet: nothing to wait for
  order.end();
  order.begin();  // the last call ran on this stream, which orders it already
  order.end();
  RecordingGuard::current() = 2;  // another thread's stream
  order.begin();
  order.end();
  order.release();  // the buffers' stream waits before they are freed
  EXPECT_EQ(RecordingGuard::log(),
            (std::vector<std::string>{"record 1", "record 1", "block 2", "record 2", "block 1"}));
}

TEST(CallOrder, ReleaseAfterCallsOnTheBuffersStreamWaitsForNothing) {
  RecordingGuard::log().clear();
  RecordingGuard::current() = 3;
  CallOrder order(c10::Device(kType, 0));
  order.release();  // never called
  order.begin();
  order.end();
  order.release();
  EXPECT_EQ(RecordingGuard::log(), (std::vector<std::string>{"record 3"}));
}

TEST(CopyPipeline, StreamsComeFromTheDeviceTypesMakerAndAreDistinct) {
  std::vector<std::string> asked;
  c10::StreamId next = 7000;
  CopyPipeline::set_stream_maker(kType, [&](c10::Device device) -> std::optional<c10::StreamId> {
    asked.push_back(device.str());
    return next++;
  });
  const auto& pipeline = CopyPipeline::for_device(c10::Device(kType, 0));
  CopyPipeline::set_stream_maker(kType, nullptr);
  std::vector<c10::StreamId> ids;
  for (const auto& s : pipeline.streams()) ids.push_back(s.id());
  EXPECT_EQ(ids, (std::vector<c10::StreamId>{7000, 7001, 7002}));  // copy, warmup, capture
  EXPECT_EQ(asked.size(), 3u);
  EXPECT_EQ(pipeline.warmup_stream()->id(), 7001);
  EXPECT_EQ(pipeline.capture_stream()->id(), 7002);
}

}  // namespace
}  // namespace graphdispatch
