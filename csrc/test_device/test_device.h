#pragma once

// The test device's shared state: its streams, its captures and its allocator's pools, as
// the three files of csrc/test_device/ use them (device.cpp keeps them, ops.cpp launches onto
// them, graph.cpp captures and replays). Internal to the test device; tests reach it through
// tests/testdev.py.
//
// Note [Test device]
// A PrivateUse1 device of host memory, renamed "testdev" by the Python helper, that behaves as
// a stream-capturing accelerator does, so the device-graph routes run for real on a CPU
// machine. What it models:
// - Memory: a caching allocator with private pools (MempoolId_t). During a capture, what is
//   allocated on a stream of the capture comes from the capture's pool; a pool lives while a
//   graph holds a use of it, and a capture into a pool whose uses all ended hits the
//   allocator's assert, as CUDACachingAllocator's create_or_incref does (pytorch#198794).
//   Freed memory of a pool is handed to the next allocation in that pool at once, whatever
//   graph still reads it: a request takes the smallest cached block that fits, split when
//   larger, and freed blocks merge with their free neighbours, as CUDA's allocator does.
// - Work: every op runs the CPU kernel on the device memory at once, except on a stream that
//   is capturing, where it is recorded (with the addresses of its tensors) and not run.
//   Output shapes during a capture come from the op's meta kernel. New device memory holds
//   NaN (0xFF bytes), cached memory what was there: a captured output shows either until a
//   replay writes it. Views run at once (no device work). Work on one stream runs in order
//   whichever thread launches it (a lock per stream); work on two streams may overlap.
// - Streams and events: a capture starts on one stream (never the default stream); a stream
//   that waits for an event recorded in the capture joins it, and must be joined back (the
//   capturing stream waits for an event recorded on it after its last launch) before the
//   capture ends, or capture_end raises, as cudaErrorStreamCaptureUnjoined does.
// - Refusals during a capture, each raising "operation not permitted when stream is
//   capturing" and invalidating the capture (its capture_end then raises too): a host
//   synchronisation (.item(), a copy to or from the host, synchronize() of the device, a
//   capturing stream or a captured event, querying a captured event) from the capturing
//   thread or, for a "global"/"default" capture, from any thread; and an allocation by the
//   capturing thread on a stream outside the capture (memory the graph would read from
//   outside its pool).
// What it proves, on every CI run: the framework adapter drives a real torch.accelerator.Graph
// (capture_begin, capture_end, replay, reset, pool()); pools are held and released as a
// caching allocator does it (Note [Device pools]); a route that needs a capture to run its
// work shows NaN, one that syncs the host falls back; the copy pipeline's fork and join of
// streams is complete; stats()' bytes are the allocator's, and entries captured largest first
// reuse the largest's memory (tests/test_testdev_routes.py). It found that an entry's static
// outputs may lie in an earlier capture's intermediates (Note [Outputs still held]).
// What only a real device shows (scripts/gpu-check.sh): real kernels and their speed; real
// asynchrony (here eager work has finished when its launch returns, so a missing event
// between two streams never reads stale data); device libraries' lazy workspaces (cases G1,
// G5); pinned memory and non-blocking copies; Inductor's code for the device (it has no code
// generator for this one, so graph_with_compile raises as torch.compile's default does); the
// exact refusals of the device's capture mode; NPU's stream budget; memory size and OOM.
// Loaded, it is the process's torch.accelerator (PrivateUse1 comes first), so CUDA tests
// never share a process with it.

#include <ATen/core/GraphImplInterface.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace testdev {

constexpr c10::DeviceType kType = c10::DeviceType::PrivateUse1;
constexpr c10::DeviceIndex kDevices = 1;

/// Recorded work: one launch, run again on every replay.
using Node = std::function<void()>;

/// The calling thread's current stream on the device.
c10::StreamId current_stream();
/// Whether `stream` belongs to a capture in progress.
bool is_capturing(c10::StreamId stream);

/// Runs `work` now, or appends it to the capture the current stream belongs to. `what` names
/// the op in errors.
void launch(const char* what, Node work);
/// Whether a launch on the current stream is recorded instead of run.
bool launch_is_recorded();
/// Held while work runs on the current stream: one stream's work runs in order, as on a
/// device, whichever threads launch it.
std::unique_lock<std::recursive_mutex> run_on_stream();
/// For tests: every launch that runs waits `us` microseconds first (0: none), so launches
/// from several threads interleave as a device's queue takes them.
void set_launch_delay_us(int64_t us);
/// Raises, invalidating the capture concerned, when a host synchronisation named `what` is
/// not allowed now (Note [Test device]). `stream`: the stream it waits for, 0 for none.
void check_host_sync(const char* what, c10::StreamId stream);

/// Starts a capture on the current stream into `pool` ({0, 0}: a new pool); returns its id and
/// the pool it uses. Raises on the default stream or on a stream already capturing.
std::pair<uint64_t, c10::MempoolId_t> begin_capture(c10::MempoolId_t pool,
                                                    at::GraphCaptureMode mode);
/// Ends capture `id`: its recorded nodes. Raises (the capture ended, its pool use kept for the
/// caller to release) when the capture was invalidated or a side stream is not joined.
std::vector<Node> end_capture(uint64_t id);

/// A new pool id for graph_pool_handle-style callers.
c10::MempoolId_t new_pool_id();
/// Ends one graph's use of `pool`; with the last use, its cached memory is freed and the pool
/// is gone once its last block is.
void release_pool(c10::MempoolId_t pool);
/// Bytes reserved by `pool` (cached and in use); 0 for an unknown pool; for {0, 0}, the
/// bytes of every private pool.
int64_t pool_reserved_bytes(c10::MempoolId_t pool);

}  // namespace testdev
