#pragma once

#include <c10/core/StorageImpl.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace graphdispatch {

// Note [Shared workspace]
// A CPU graph's intermediates (what the work makes and does not return) live in a workspace
// shared by every CPU-graph entry of the process, as a device's entries share one graph pool
// (vLLM and sglang capture their largest size first and let every smaller graph reuse its
// blocks); its outputs, input buffers and constants stay its own. Nothing in a workspace
// outlives one replay: each replayed step writes what it made before anything reads it.
// - A replay leases a block no other replay uses and gives it back when it ends, so replays
//   of different entries on different threads, and a replay nested in another (a custom op's
//   Python kernel calling a compiled function), each get their own; one thread replaying in
//   turn uses one block.
// - Every block is as large as the largest need of the programs alive. A program points its
//   intermediates' storages into the block it leased, and repoints them only when it leases a
//   different one (Workspace::Lease::block).
// - Blocks are owned by the storages pointing into them and by the leases: a block nothing is
//   bound to is freed at once, and a tensor a stray holder kept stays valid memory.
// - An intermediate that something besides the recording still holds when the capture ends (a
//   custom op's kernel kept its argument) would outlive the replay: it is placed in the entry's
//   own arena instead (keep_held_intermediates in cpu_graph.cpp).
// - Counted once: `Stats::workspace_bytes` is the bytes of the live blocks.
// - The largest need, whatever the order of capture (case C87): when the largest need changes
//   (a program with a larger need is built, the largest one goes), every program not replaying
//   is repointed into one free block of the new size, so blocks of the old size are freed at
//   once instead of staying until each program that points into one replays again (captured
//   smallest first, the workspace held the sum of the needs). A program replaying now keeps
//   its block until its next replay.

/// The process-wide pool of CPU-graph workspaces (Note [Shared workspace]). Thread-safe.
class Workspace final {
 public:
  /// A block of `bytes` bytes from c10's CPU allocator (64-byte aligned). A program's own
  /// arena (its outputs) is one too.
  struct Block final {
    explicit Block(std::int64_t bytes);
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    c10::DataPtr data;
    const std::int64_t bytes;
  };

  /// A block held for one replay; given back to the pool when destroyed.
  class Lease final {
   public:
    explicit Lease(std::shared_ptr<Block> block) : block_(std::move(block)) {}
    Lease(Lease&&) = default;
    Lease(const Lease&) = delete;
    ~Lease();
    const std::shared_ptr<Block>& block() const { return block_; }

   private:
    std::shared_ptr<Block> block_;
  };

  /// A program's need, registered while it lives: blocks are the largest one registered.
  class Need final {
   public:
    Need() = default;
    explicit Need(std::int64_t bytes);
    Need(const Need&) = delete;
    Need& operator=(const Need&) = delete;
    Need& operator=(Need&& other) noexcept;
    ~Need();
    std::int64_t bytes() const { return bytes_; }

   private:
    std::int64_t bytes_ = 0;
  };

  /// A program whose intermediates point into a block (Note [Shared workspace]).
  class Tenant {
   public:
    /// Points the intermediates into `block` unless the tenant is replaying now; never blocks.
    virtual void repoint_if_idle(const std::shared_ptr<Block>& block) = 0;

   protected:
    ~Tenant() = default;
  };

  static Workspace& get();

  /// `tenant` is repointed whenever the largest need changes, until left.
  void join(Tenant* tenant);
  void leave(Tenant* tenant);

  /// A block no other lease holds, at least the largest registered need: `preferred` when it
  /// is free and large enough (the program's storages point into it already), else another
  /// free one, else a new one.
  Lease take(const Block* preferred);
  /// In a forked child: a new mutex (Note [Fork] in _once.py); blocks leased by a parent
  /// thread stay leased.
  void reset_after_fork();

 private:
  Workspace() = default;
  void give_back(std::shared_ptr<Block> block);
  std::int64_t size() const { return needs_.empty() ? 0 : *needs_.rbegin(); }
  /// Under mutex_: a new block of size(), counted in Stats::workspace_bytes.
  std::shared_ptr<Block> take_new();
  /// Under mutex_: a free block of size(), made when there is none.
  std::shared_ptr<Block> free_block();
  /// Under mutex_, after the needs changed: repoints the tenants when size() is not `before`.
  void resized(std::int64_t before);

  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  std::multiset<std::int64_t> needs_;
  std::vector<std::weak_ptr<Block>> free_;  // not leased; alive while something points in
  std::set<Tenant*> tenants_;
};

/// `storage`'s memory becomes `bytes_offset` bytes into `block`; the storage holds the block.
void point_into(c10::StorageImpl* storage, const std::shared_ptr<Workspace::Block>& block,
                std::int64_t bytes_offset);

}  // namespace graphdispatch
