#include "runtime/cpu_graph/workspace.h"

#include "runtime/stats.h"

#include <c10/core/CPUAllocator.h>

namespace graphdispatch {

Workspace::Block::Block(std::int64_t bytes)
    : data(c10::GetCPUAllocator()->allocate(static_cast<std::size_t>(bytes))), bytes(bytes) {}

Workspace::Lease::~Lease() {
  if (block_) Workspace::get().give_back(std::move(block_));
}

Workspace::Need::Need(std::int64_t bytes) : bytes_(bytes) {
  auto& pool = Workspace::get();
  std::lock_guard<std::mutex> lock(*pool.mutex_);
  const auto before = pool.size();
  pool.needs_.insert(bytes);
  pool.resized(before);
}

Workspace::Need& Workspace::Need::operator=(Need&& other) noexcept {
  std::swap(bytes_, other.bytes_);
  return *this;
}

Workspace::Need::~Need() {
  if (bytes_ == 0) return;
  auto& pool = Workspace::get();
  std::lock_guard<std::mutex> lock(*pool.mutex_);
  const auto before = pool.size();
  pool.needs_.erase(pool.needs_.find(bytes_));
  pool.resized(before);
}

Workspace& Workspace::get() {
  static auto* pool = new Workspace();  // never destroyed: storages may outlive static teardown
  return *pool;
}

void Workspace::join(Tenant* tenant) {
  std::lock_guard<std::mutex> lock(*mutex_);
  tenants_.insert(tenant);
}

void Workspace::leave(Tenant* tenant) {
  std::lock_guard<std::mutex> lock(*mutex_);
  tenants_.erase(tenant);
}

std::shared_ptr<Workspace::Block> Workspace::free_block() {
  for (const auto& weak : free_) {
    auto block = weak.lock();
    if (block && block->bytes == size()) return block;
  }
  auto block = take_new();
  free_.emplace_back(block);
  return block;
}

void Workspace::resized(std::int64_t before) {
  if (size() == before || size() == 0 || tenants_.empty()) return;
  // Tenants hold their own lock while they replay and try it here, so this never waits.
  const auto block = free_block();
  for (auto* tenant : tenants_) tenant->repoint_if_idle(block);
}

std::shared_ptr<Workspace::Block> Workspace::take_new() {
  const auto bytes = size();
  Stats::get().workspace_bytes.fetch_add(bytes, std::memory_order_relaxed);
  return std::shared_ptr<Block>(new Block(bytes), [](Block* block) {
    Stats::get().workspace_bytes.fetch_sub(block->bytes, std::memory_order_relaxed);
    delete block;
  });
}

Workspace::Lease Workspace::take(const Block* preferred) {
  std::lock_guard<std::mutex> lock(*mutex_);
  const auto bytes = size();
  std::shared_ptr<Block> chosen;
  std::size_t kept = 0;
  for (auto& weak : free_) {
    auto block = weak.lock();
    if (!block || block->bytes != bytes) continue;  // freed, or sized for needs gone or grown
    if (!chosen || block.get() == preferred) {
      if (chosen) free_[kept++] = chosen;
      chosen = std::move(block);
    } else {
      free_[kept++] = std::move(weak);
    }
  }
  free_.resize(kept);
  if (chosen) return Lease(std::move(chosen));
  return Lease(take_new());
}

void Workspace::give_back(std::shared_ptr<Block> block) {
  std::lock_guard<std::mutex> lock(*mutex_);
  if (block->bytes == size()) free_.emplace_back(block);
}

void Workspace::reset_after_fork() {
  (void)mutex_.release();
  mutex_ = std::make_unique<std::mutex>();
}

namespace {
void release_block_ref(void* ctx) { delete static_cast<std::shared_ptr<Workspace::Block>*>(ctx); }
}  // namespace

void point_into(c10::StorageImpl* storage, const std::shared_ptr<Workspace::Block>& block,
                std::int64_t bytes_offset) {
  storage->set_data_ptr_noswap(c10::DataPtr(static_cast<char*>(block->data.get()) + bytes_offset,
                                            new std::shared_ptr<Workspace::Block>(block),
                                            &release_block_ref, c10::Device(c10::kCPU)));
}

}  // namespace graphdispatch
