// The test device's runtime: streams, events, captures, the caching allocator with private
// pools, the device guard and the PrivateUse1 hooks (Note [Test device] in test_device.h).

#include "test_device/test_device.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>

namespace testdev {
namespace {

constexpr const char* kCapturingError = "operation not permitted when stream is capturing";

struct Capture {
  uint64_t id = 0;
  c10::StreamId origin = 0;
  std::thread::id thread;
  at::GraphCaptureMode mode = at::GraphCaptureMode::Default;
  c10::MempoolId_t pool{0, 0};
  std::unordered_map<c10::StreamId, int64_t> launches;  // streams in the capture → launches
  std::set<c10::StreamId> unjoined;  // side streams whose last work the origin has not waited for
  std::vector<Node> nodes;
  std::string invalid;  // why the capture was invalidated; empty while valid
};

// An event: recorded in a capture (capture != 0) or outside one (always complete).
struct Event {
  uint64_t capture = 0;
  c10::StreamId stream = 0;
  int64_t launches = 0;  // the stream's launches in the capture when recorded
  std::chrono::steady_clock::time_point time;
};

// A block of a segment (one host allocation); a segment's blocks tile it in address order.
struct Block {
  size_t size = 0;
  c10::MempoolId_t pool{0, 0};
  char* segment = nullptr;
  size_t segment_size = 0;
  bool free = false;
};

struct Pool {
  int64_t uses = 0;      // graphs holding the pool (private pools only)
  int64_t reserved = 0;  // bytes of its segments
  int64_t segments = 0;
  std::multimap<size_t, char*> cached;  // free blocks by size
};

std::mutex& state_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Every capture in progress, by id, and the stream → capture map. Guarded by state_mutex().
std::map<uint64_t, Capture>& captures() {
  static std::map<uint64_t, Capture> all;
  return all;
}
std::unordered_map<c10::StreamId, uint64_t>& stream_captures() {
  static std::unordered_map<c10::StreamId, uint64_t> all;
  return all;
}

thread_local c10::StreamId tls_stream = 0;
std::atomic<c10::StreamId> next_stream{1};
std::atomic<uint64_t> next_capture{1};
std::atomic<uint64_t> next_pool{1};

// Work on one stream runs in order, whatever thread launched it: each stream's lock is held
// while its work runs. Guarded by state_mutex().
std::unordered_map<c10::StreamId, std::unique_ptr<std::recursive_mutex>>& stream_locks() {
  static std::unordered_map<c10::StreamId, std::unique_ptr<std::recursive_mutex>> all;
  return all;
}

Capture* capture_of(c10::StreamId stream) {
  const auto found = stream_captures().find(stream);
  return found == stream_captures().end() ? nullptr : &captures().at(found->second);
}

[[noreturn]] void refuse(Capture& capture, const std::string& what) {
  if (capture.invalid.empty()) capture.invalid = what;
  TORCH_CHECK(false, "testdev: ", what, ": ", kCapturingError);
}

// The capture a host synchronisation by this thread would break, if any.
Capture* capture_refusing_sync(c10::StreamId stream) {
  if (Capture* own = stream ? capture_of(stream) : nullptr) return own;
  const auto self = std::this_thread::get_id();
  for (auto& [id, capture] : captures()) {
    const bool global = capture.mode == at::GraphCaptureMode::Default ||
                        capture.mode == at::GraphCaptureMode::Global;
    if (capture.thread == self ? capture.mode != at::GraphCaptureMode::Relaxed : global) {
      return &capture;
    }
  }
  return nullptr;
}

// ---- the allocator -------------------------------------------------------------------------

constexpr size_t kRound = 512;

// As CUDA's caching allocator: a request takes the smallest cached block of its pool that
// fits, split when larger; freed blocks merge with free neighbours of their segment; a pool
// without uses frees its whole free segments.
class Allocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t bytes) override {
    const c10::Device device(kType, 0);
    if (bytes == 0) return {nullptr, nullptr, &Allocator::free_ptr, device};
    const size_t size = (bytes + kRound - 1) / kRound * kRound;
    std::lock_guard<std::mutex> lock(state_mutex());
    c10::MempoolId_t pool_id{0, 0};
    if (Capture* capture = capture_of(tls_stream)) {
      pool_id = capture->pool;
    } else if (Capture* own = capture_refusing_alloc()) {
      refuse(*own, "allocation on a stream outside the capture, outside the capture's pool");
    }
    Pool& pool = pools_[pool_id];
    char* ptr = nullptr;
    if (const auto hit = pool.cached.lower_bound(size); hit != pool.cached.end()) {
      ptr = hit->second;
      pool.cached.erase(hit);
      Block& block = blocks_.at(ptr);
      if (block.size > size) {  // the rest stays cached
        Block rest = block;
        rest.size = block.size - size;
        blocks_.emplace(ptr + size, rest);
        pool.cached.emplace(rest.size, ptr + size);
        block.size = size;
      }
      block.free = false;
    } else {
      ptr = static_cast<char*>(std::aligned_alloc(64, size));
      TORCH_CHECK(ptr, "testdev: out of memory allocating ", size, " bytes");
      // New memory holds NaN (0xFF bytes) until written: what a capture allocates shows NaN
      // until a replay writes it. Cached memory keeps what is there, as on a device.
      std::memset(ptr, 0xFF, size);
      blocks_.emplace(ptr, Block{size, pool_id, ptr, size, false});
      pool.reserved += static_cast<int64_t>(size);
      pool.segments += 1;
      reserved_ += static_cast<int64_t>(size);
    }
    allocated_ += static_cast<int64_t>(size);
    return {ptr, ptr, &Allocator::free_ptr, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &Allocator::free_ptr; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

  bool initialized() override { return true; }

  void emptyCache(c10::MempoolId_t pool_id) override {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (pool_id == c10::MempoolId_t{0, 0}) {
      for (auto& [id, pool] : pools_) release_cached(pool);
    } else if (const auto found = pools_.find(pool_id); found != pools_.end()) {
      release_cached(found->second);
    }
    erase_empty_pools();
  }

  void recordStream(const c10::DataPtr&, c10::Stream) override {}

  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex) override {
    std::lock_guard<std::mutex> lock(state_mutex());
    c10::CachingDeviceAllocator::DeviceStats stats;
    stats.reserved_bytes[0].current = reserved_;
    stats.allocated_bytes[0].current = allocated_;
    for (const auto& [id, pool] : pools_) {
      if (id != c10::MempoolId_t{0, 0}) {
        stats.reserved_bytes_by_private_pools[id][0].current = pool.reserved;
      }
    }
    return stats;
  }

  void resetAccumulatedStats(c10::DeviceIndex) override {}
  void resetPeakStats(c10::DeviceIndex) override {}

  // A graph's use of `pool_id`: made on first use; a pool whose uses all ended asserts
  // (CUDACachingAllocator's create_or_incref). Called with state_mutex() held.
  void use_pool(c10::MempoolId_t pool_id) {
    const auto found = pools_.find(pool_id);
    if (found == pools_.end()) {
      pools_[pool_id].uses = 1;
      return;
    }
    TORCH_INTERNAL_ASSERT(found->second.uses > 0,
                          "testdev: capture into a released pool (use_count > 0 assert)");
    found->second.uses += 1;
  }

  void release_pool(c10::MempoolId_t pool_id) {
    std::lock_guard<std::mutex> lock(state_mutex());
    const auto found = pools_.find(pool_id);
    if (found == pools_.end()) return;
    if (--found->second.uses == 0) {
      release_cached(found->second);
      erase_empty_pools();
    }
  }

  int64_t pool_reserved(c10::MempoolId_t pool_id) {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (pool_id == c10::MempoolId_t{0, 0}) {  // every private pool
      int64_t bytes = 0;
      for (const auto& [id, pool] : pools_) bytes += id == pool_id ? 0 : pool.reserved;
      return bytes;
    }
    const auto found = pools_.find(pool_id);
    return found == pools_.end() ? 0 : found->second.reserved;
  }

 private:
  // The capture whose thread may not allocate outside it right now (Note [Test device]).
  static Capture* capture_refusing_alloc() {
    const auto self = std::this_thread::get_id();
    for (auto& [id, capture] : captures()) {
      if (capture.thread == self && capture.mode != at::GraphCaptureMode::Relaxed) {
        return &capture;
      }
    }
    return nullptr;
  }

  static void free_ptr(void* ptr);

  void free_block(char* ptr) {
    std::lock_guard<std::mutex> lock(state_mutex());
    auto it = blocks_.find(ptr);
    TORCH_INTERNAL_ASSERT(it != blocks_.end() && !it->second.free,
                          "testdev: freeing unknown memory");
    allocated_ -= static_cast<int64_t>(it->second.size);
    Pool& pool = pools_[it->second.pool];
    it->second.free = true;
    if (const auto next = std::next(it); mergeable(it, next)) {
      uncache(pool, next);
      it->second.size += next->second.size;
      blocks_.erase(next);
    }
    if (it != blocks_.begin()) {
      if (const auto prev = std::prev(it); mergeable(prev, it)) {
        uncache(pool, prev);
        prev->second.size += it->second.size;
        blocks_.erase(it);
        it = prev;
      }
    }
    pool.cached.emplace(it->second.size, it->first);
    if (it->second.pool != c10::MempoolId_t{0, 0} && pool.uses == 0) {
      release_cached(pool);
      erase_empty_pools();
    }
  }

  bool mergeable(std::map<char*, Block>::iterator a, std::map<char*, Block>::iterator b) const {
    return b != blocks_.end() && a->second.free && b->second.free &&
           a->second.segment == b->second.segment;
  }

  static void uncache(Pool& pool, std::map<char*, Block>::iterator block) {
    auto [first, last] = pool.cached.equal_range(block->second.size);
    for (auto it = first; it != last; ++it) {
      if (it->second == block->first) {
        pool.cached.erase(it);
        return;
      }
    }
  }

  // Frees the pool's segments that are one free block.
  void release_cached(Pool& pool) {
    for (auto it = pool.cached.begin(); it != pool.cached.end();) {
      const Block& block = blocks_.at(it->second);
      if (block.size != block.segment_size) {
        ++it;
        continue;
      }
      pool.reserved -= static_cast<int64_t>(block.size);
      pool.segments -= 1;
      reserved_ -= static_cast<int64_t>(block.size);
      std::free(block.segment);
      blocks_.erase(it->second);
      it = pool.cached.erase(it);
    }
  }

  void erase_empty_pools() {
    for (auto it = pools_.begin(); it != pools_.end();) {
      const bool empty =
          it->first != c10::MempoolId_t{0, 0} && it->second.uses == 0 && it->second.segments == 0;
      it = empty ? pools_.erase(it) : std::next(it);
    }
  }

  std::map<c10::MempoolId_t, Pool> pools_;
  std::map<char*, Block> blocks_;
  int64_t reserved_ = 0;
  int64_t allocated_ = 0;
};

Allocator& allocator() {
  static Allocator* instance = new Allocator();  // leaked: frees may come at exit
  return *instance;
}

void Allocator::free_ptr(void* ptr) {
  if (ptr != nullptr) allocator().free_block(static_cast<char*>(ptr));
}

// Registered at load: GetAllocator(PrivateUse1) is this allocator.
struct RegisterAllocator {
  RegisterAllocator() { c10::SetAllocator(kType, &allocator()); }
} register_allocator;

// ---- the device guard ----------------------------------------------------------------------

class Guard final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kType; }
  c10::Device exchangeDevice(c10::Device) const override { return {kType, 0}; }
  c10::Device getDevice() const override { return {kType, 0}; }
  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.index() <= 0, "testdev: has one device, got ", device);
  }
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device) const override { return stream(tls_stream); }
  c10::Stream getDefaultStream(c10::Device) const override { return stream(0); }
  c10::Stream getStreamFromGlobalPool(c10::Device, bool) const override {
    return stream(next_stream++);
  }
  c10::Stream getNewStream(c10::Device, int) const override { return stream(next_stream++); }
  c10::Stream exchangeStream(c10::Stream next) const override {
    const c10::Stream previous = stream(tls_stream);
    tls_stream = next.id();
    return previous;
  }
  c10::DeviceIndex deviceCount() const noexcept override { return kDevices; }

  void record(void** event, const c10::Stream& on, const c10::DeviceIndex,
              const c10::EventFlag) const override {
    if (*event == nullptr) *event = new Event();
    auto* recorded = static_cast<Event*>(*event);
    std::lock_guard<std::mutex> lock(state_mutex());
    recorded->stream = on.id();
    recorded->time = std::chrono::steady_clock::now();
    const Capture* capture = capture_of(on.id());
    recorded->capture = capture ? capture->id : 0;
    recorded->launches = capture ? capture->launches.at(on.id()) : 0;
  }

  void block(void* event, const c10::Stream& waiter) const override {
    const auto* recorded = static_cast<const Event*>(event);
    if (recorded == nullptr || recorded->capture == 0) return;
    std::lock_guard<std::mutex> lock(state_mutex());
    const auto found = captures().find(recorded->capture);
    if (found == captures().end()) return;  // that capture ended
    Capture& capture = found->second;
    const c10::StreamId id = waiter.id();
    if (!capture.launches.count(id)) {  // a fork: the waiter joins the capture
      TORCH_CHECK(!stream_captures().count(id), "testdev: stream ", id, " is in another capture");
      capture.launches[id] = 0;
      stream_captures()[id] = capture.id;
      capture.unjoined.insert(id);
      return;
    }
    if (recorded->stream == id) return;
    // The waiter now holds the signaler's work up to the event.
    if (recorded->launches == capture.launches.at(recorded->stream)) {
      capture.unjoined.erase(recorded->stream);
    }
    if (id != capture.origin) capture.unjoined.insert(id);
  }

  bool queryEvent(void* event) const override {
    check_captured_event(event, "query of an event recorded in a capture");
    return true;
  }
  void synchronizeEvent(void* event) const override {
    check_captured_event(event, "synchronize of an event recorded in a capture");
    check_host_sync("event synchronize", 0);
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<Event*>(event);
  }
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    const auto* a = static_cast<const Event*>(start);
    const auto* b = static_cast<const Event*>(end);
    return std::chrono::duration<double, std::milli>(b->time - a->time).count();
  }
  bool queryStream(const c10::Stream& on) const override {
    check_host_sync("stream query", on.id());
    return true;
  }
  void synchronizeStream(const c10::Stream& on) const override {
    check_host_sync("stream synchronize", on.id());
  }
  void synchronizeDevice(const c10::DeviceIndex) const override {
    check_host_sync("device synchronize", 0);
  }
  bool isStreamCapturing(const c10::Stream& on) const override { return is_capturing(on.id()); }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}

 private:
  static c10::Stream stream(c10::StreamId id) {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kType, 0), id);
  }
  static void check_captured_event(void* event, const char* what) {
    const auto* recorded = static_cast<const Event*>(event);
    if (recorded == nullptr || recorded->capture == 0) return;
    std::lock_guard<std::mutex> lock(state_mutex());
    const auto found = captures().find(recorded->capture);
    if (found != captures().end()) refuse(found->second, what);
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, Guard);

// ---- the hooks -----------------------------------------------------------------------------

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  // Random ops run the CPU kernels, which draw from the CPU generator: it is the device's.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  at::Generator getNewGenerator(c10::DeviceIndex) const override {
    return at::detail::createCPUGenerator();
  }
  at::Device getDeviceFromPtr(void*) const override { return {kType, 0}; }
  bool isPinnedPtr(const void*) const override { return false; }
  at::Allocator* getPinnedMemoryAllocator() const override { return c10::GetCPUAllocator(); }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return kDevices; }
  c10::DeviceIndex getCurrentDevice() const override { return 0; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t bytes) const override {
    c10::DataPtr grown = allocator().allocate(bytes);
    const size_t keep = std::min(bytes, storage.nbytes());
    if (keep > 0) std::memcpy(grown.get(), storage.data(), keep);
    storage.set_data_ptr_noswap(std::move(grown));
    storage.set_nbytes(bytes);
  }
};

struct RegisterHooks {
  RegisterHooks() { at::RegisterPrivateUse1HooksInterface(new Hooks()); }
} register_hooks;

}  // namespace

// ---- the shared state's functions (test_device.h) ------------------------------------------

c10::StreamId current_stream() { return tls_stream; }

bool is_capturing(c10::StreamId stream) {
  std::lock_guard<std::mutex> lock(state_mutex());
  return capture_of(stream) != nullptr;
}

bool launch_is_recorded() { return is_capturing(tls_stream); }

std::atomic<int64_t> launch_delay_us{0};

void set_launch_delay_us(int64_t us) { launch_delay_us = us; }

std::unique_lock<std::recursive_mutex> run_on_stream() {
  if (const int64_t delay = launch_delay_us.load()) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay));
  }
  std::recursive_mutex* lock = nullptr;
  {
    std::lock_guard<std::mutex> guard(state_mutex());
    auto& slot = stream_locks()[tls_stream];
    if (!slot) slot = std::make_unique<std::recursive_mutex>();
    lock = slot.get();
  }
  return std::unique_lock<std::recursive_mutex>(*lock);
}

void launch(const char* what, Node work) {
  {
    std::lock_guard<std::mutex> lock(state_mutex());
    if (Capture* capture = capture_of(tls_stream)) {
      if (!capture->invalid.empty()) refuse(*capture, std::string(what) + " after an error");
      capture->launches[tls_stream] += 1;
      if (tls_stream != capture->origin) capture->unjoined.insert(tls_stream);
      capture->nodes.push_back(std::move(work));
      return;
    }
  }
  const auto on_stream = run_on_stream();
  work();
}

void check_host_sync(const char* what, c10::StreamId stream) {
  std::lock_guard<std::mutex> lock(state_mutex());
  if (Capture* capture = capture_refusing_sync(stream)) refuse(*capture, what);
}

std::pair<uint64_t, c10::MempoolId_t> begin_capture(c10::MempoolId_t pool,
                                                    at::GraphCaptureMode mode) {
  TORCH_CHECK(tls_stream != 0,
              "testdev: graphs must be captured on a non-default stream (as CUDA's)");
  if (pool == c10::MempoolId_t{0, 0}) pool = {next_pool++, 0};
  std::lock_guard<std::mutex> lock(state_mutex());
  TORCH_CHECK(!capture_of(tls_stream), "testdev: stream ", tls_stream, " is already capturing");
  allocator().use_pool(pool);
  Capture capture;
  capture.id = next_capture++;
  capture.origin = tls_stream;
  capture.thread = std::this_thread::get_id();
  capture.mode = mode;
  capture.pool = pool;
  capture.launches[tls_stream] = 0;
  stream_captures()[tls_stream] = capture.id;
  const uint64_t id = capture.id;
  captures().emplace(id, std::move(capture));
  return {id, pool};
}

std::vector<Node> end_capture(uint64_t id) {
  std::lock_guard<std::mutex> lock(state_mutex());
  const auto found = captures().find(id);
  TORCH_CHECK(found != captures().end(), "testdev: capture_end without a capture");
  Capture capture = std::move(found->second);
  captures().erase(found);
  for (const auto& [stream, launches] : capture.launches) stream_captures().erase(stream);
  TORCH_CHECK(capture.invalid.empty(), "testdev: the capture was invalidated: ", capture.invalid,
              ": ", kCapturingError);
  if (!capture.unjoined.empty()) {
    std::string streams;
    for (const auto stream : capture.unjoined) streams.append(" ").append(std::to_string(stream));
    TORCH_CHECK(false, "testdev: capture_end: side stream(s)", streams,
                " not joined to the capturing stream (as cudaErrorStreamCaptureUnjoined)");
  }
  return std::move(capture.nodes);
}

c10::MempoolId_t new_pool_id() { return {0, next_pool++}; }

void release_pool(c10::MempoolId_t pool) { allocator().release_pool(pool); }

int64_t pool_reserved_bytes(c10::MempoolId_t pool) { return allocator().pool_reserved(pool); }

}  // namespace testdev
