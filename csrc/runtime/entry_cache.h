#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphdispatch {

/// Which entry a full cache gives up: the oldest inserted ("fifo", the seed's MindIE-SD
/// behaviour) or the least recently used ("lru").
enum class Eviction { kFifo, kLru };

/// Parses "fifo" / "lru"; throws std::invalid_argument naming the value otherwise.
inline Eviction parse_eviction(const std::string& name) {
  if (name == "fifo") return Eviction::kFifo;
  if (name == "lru") return Eviction::kLru;
  throw std::invalid_argument("eviction: expected 'fifo' or 'lru', got '" + name + "'");
}

/// A bounded map from cache key to entry with FIFO or LRU eviction.
///
/// Owns shared references to its values; an evicted value stays alive for as long as a caller
/// still holds it (a replay in flight finishes on it). Thread-safety: `find` is const and may
/// run concurrently with other `find`s (it only stamps an atomic use counter, so LRU hits need
/// no exclusive lock); everything else needs the caller's exclusive lock. The LRU victim search
/// costs O(entries) and runs only when a full cache inserts.
template <class Key, class Value, class Hash = std::hash<Key>>
class EntryCache final {
 public:
  /// max_entries = 0 means unbounded.
  EntryCache(std::size_t max_entries, Eviction eviction)
      : max_entries_(max_entries), eviction_(eviction) {}

  std::size_t size() const { return slots_.size(); }

  /// The value for `key`, or nullptr.
  std::shared_ptr<Value> find(const Key& key) const {
    auto it = slots_.find(key);
    if (it == slots_.end()) return nullptr;
    it->second.last_use.store(++clock_, std::memory_order_relaxed);
    return it->second.value;
  }

  /// Inserts `key`, or replaces its value. Returns the value that left the cache: the one
  /// replaced, or the one evicted to make room; nullptr if none did.
  std::shared_ptr<Value> insert(const Key& key, std::shared_ptr<Value> value) {
    auto it = slots_.find(key);
    if (it != slots_.end()) {
      std::swap(it->second.value, value);
      it->second.last_use.store(++clock_, std::memory_order_relaxed);
      return value;
    }
    std::shared_ptr<Value> victim;
    if (max_entries_ != 0 && slots_.size() >= max_entries_) victim = evict_one();
    Slot& slot = slots_[key];
    slot.value = std::move(value);
    slot.last_use.store(++clock_, std::memory_order_relaxed);
    order_.push_back(key);
    return victim;
  }

  /// Empties the cache and hands its values to the caller, who destroys them (outside its
  /// lock: destroying an entry may need the GIL).
  std::vector<std::shared_ptr<Value>> take_all() {
    std::vector<std::shared_ptr<Value>> values;
    values.reserve(slots_.size());
    for (auto& [key, slot] : slots_) values.push_back(std::move(slot.value));
    slots_.clear();
    order_.clear();
    return values;
  }

 private:
  struct Slot {
    std::shared_ptr<Value> value;
    mutable std::atomic<std::uint64_t> last_use{0};
  };

  std::shared_ptr<Value> evict_one() {
    auto victim_pos = order_.begin();
    if (eviction_ == Eviction::kLru) {
      for (auto o = order_.begin(); o != order_.end(); ++o) {
        if (slots_.at(*o).last_use.load(std::memory_order_relaxed) <
            slots_.at(*victim_pos).last_use.load(std::memory_order_relaxed)) {
          victim_pos = o;
        }
      }
    }
    auto it = slots_.find(*victim_pos);
    auto value = std::move(it->second.value);
    slots_.erase(it);
    order_.erase(victim_pos);
    return value;
  }

  std::size_t max_entries_;
  Eviction eviction_;
  mutable std::atomic<std::uint64_t> clock_{0};
  std::unordered_map<Key, Slot, Hash> slots_;
  std::deque<Key> order_;  // insertion order; the FIFO victim is the front
};

}  // namespace graphdispatch
