#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graphdispatch {

// Note [Eviction]
// A runner's entries are bounded by count (max_entries) and by the bytes they hold
// (max_entry_bytes: input buffers plus what the capture added to the graph pool; on the CPU
// graph its arena and constants, the shared workspace counted once), the process's by
// max_total_entry_bytes (Note [Process byte budget]). The victim is the oldest inserted (FIFO,
// as MindIE-SD evicts) or the least recently used. The entry just captured and negative entries
// are never evicted for bytes. Evicting resets the graph and frees the buffers once no replay
// holds them; survivors stay correct. One log line says when eviction starts: it usually means
// dynamic shapes defeat the cache (case C10).

/// Which entry a full cache gives up: the oldest inserted ("fifo", as MindIE-SD does) or the
/// least recently used ("lru").
enum class Eviction { kFifo, kLru };

/// A bounded map from cache key to entry with FIFO or LRU eviction, bounded by a count of
/// entries and by a budget of bytes (each value's size as given to `insert`).
///
/// Owns shared references to its values; an evicted value stays alive for as long as a caller
/// still holds it (a replay in flight finishes on it). Thread-safety: `find` is const and may
/// run concurrently with other `find`s (it only stamps an atomic use counter, so LRU hits need
/// no exclusive lock); everything else needs the caller's exclusive lock. The LRU victim search
/// costs O(entries) and runs only when a full cache inserts. No anchor evicts by memory.
/// Insertions and uses are stamped from one clock shared by every cache of a type, so victims
/// of several caches compare (the process byte budget, Note [Process byte budget]).
template <class Key, class Value, class Hash = std::hash<Key>>
class EntryCache final {
 public:
  /// max_entries = 0 and max_bytes = 0 mean unbounded.
  EntryCache(std::size_t max_entries, Eviction eviction, std::size_t max_bytes = 0)
      : max_entries_(max_entries), max_bytes_(max_bytes), eviction_(eviction) {}

  std::size_t size() const { return slots_.size(); }
  /// Bytes held by the values now in the cache, as given to `insert`.
  std::size_t bytes() const { return bytes_; }

  /// The value for `key`, or nullptr.
  std::shared_ptr<Value> find(const Key& key) const {
    auto it = slots_.find(key);
    if (it == slots_.end()) return nullptr;
    it->second.last_use.store(++clock_, std::memory_order_relaxed);
    return it->second.value;
  }

  /// Inserts `key`, or replaces its value; `bytes` is what the value holds. Returns the value
  /// that left the cache: the one replaced, or the one evicted to make room for one more
  /// entry; nullptr if none did. The byte budget is applied by `evict_over_budget`.
  std::shared_ptr<Value> insert(const Key& key, std::shared_ptr<Value> value,
                                std::size_t bytes = 0) {
    auto it = slots_.find(key);
    if (it != slots_.end()) {
      std::swap(it->second.value, value);
      bytes_ = bytes_ - it->second.bytes + bytes;
      it->second.bytes = bytes;
      it->second.last_use.store(++clock_, std::memory_order_relaxed);
      return value;
    }
    std::shared_ptr<Value> victim;
    if (max_entries_ != 0 && slots_.size() >= max_entries_) victim = evict_one(nullptr);
    Slot& slot = slots_[key];
    slot.value = std::move(value);
    slot.bytes = bytes;
    bytes_ += bytes;
    slot.inserted = ++clock_;
    slot.last_use.store(slot.inserted, std::memory_order_relaxed);
    order_.push_back(key);
    return victim;
  }

  /// Evicts (in the order `eviction` says) until the values hold at most max_bytes together
  /// with `shared(*this)` (bytes the values need from memory they share, counted once), never
  /// `keep` (the entry just inserted: it is about to serve a call) and never a value of 0
  /// bytes (a negative entry: evicting it frees nothing). Returns the evicted values; `keep`
  /// alone may stay over the budget.
  template <class Shared>
  std::vector<std::shared_ptr<Value>> evict_over_budget(const Key& keep, Shared shared) {
    std::vector<std::shared_ptr<Value>> victims;
    while (max_bytes_ != 0 && bytes_ + shared(*this) > max_bytes_) {
      auto victim = evict_one(&keep, /*holding_bytes=*/true);
      if (!victim) break;
      victims.push_back(std::move(victim));
    }
    return victims;
  }
  std::vector<std::shared_ptr<Value>> evict_over_budget(const Key& keep) {
    return evict_over_budget(keep, [](const EntryCache&) { return std::size_t{0}; });
  }

  /// (stamp, key) of the value the byte budget would evict next in `eviction`'s order (its
  /// insertion stamp for FIFO, its last use for LRU), among values holding bytes, never
  /// `keep`; nullopt when there is none. Stamps of caches of one type compare.
  std::optional<std::pair<std::uint64_t, Key>> next_victim(Eviction eviction,
                                                           const Key* keep) const {
    std::optional<std::pair<std::uint64_t, Key>> best;
    for (const auto& [key, slot] : slots_) {
      if (slot.bytes == 0 || (keep != nullptr && key == *keep)) continue;
      const auto stamp = eviction == Eviction::kFifo
                             ? slot.inserted
                             : slot.last_use.load(std::memory_order_relaxed);
      if (!best || stamp < best->first) best.emplace(stamp, key);
    }
    return best;
  }

  /// Removes `key`; returns its value, or nullptr when absent.
  std::shared_ptr<Value> erase(const Key& key) {
    auto it = slots_.find(key);
    if (it == slots_.end()) return nullptr;
    auto value = std::move(it->second.value);
    bytes_ -= it->second.bytes;
    slots_.erase(it);
    order_.erase(std::find(order_.begin(), order_.end(), key));
    return value;
  }

  /// (key, value, bytes) of every entry, oldest inserted first.
  std::vector<std::tuple<Key, std::shared_ptr<Value>, std::size_t>> items() const {
    std::vector<std::tuple<Key, std::shared_ptr<Value>, std::size_t>> out;
    out.reserve(order_.size());
    for (const auto& key : order_) {
      const Slot& slot = slots_.at(key);
      out.emplace_back(key, slot.value, slot.bytes);
    }
    return out;
  }

  /// Removes the entries whose value satisfies `dead(value)` and hands (key, value) of each to
  /// the caller, who destroys them outside its lock. O(entries).
  template <class Predicate>
  std::vector<std::pair<Key, std::shared_ptr<Value>>> take_if(Predicate dead) {
    std::vector<std::pair<Key, std::shared_ptr<Value>>> taken;
    for (auto o = order_.begin(); o != order_.end();) {
      auto it = slots_.find(*o);
      if (!dead(*it->second.value)) {
        ++o;
        continue;
      }
      taken.emplace_back(*o, std::move(it->second.value));
      bytes_ -= it->second.bytes;
      slots_.erase(it);
      o = order_.erase(o);
    }
    return taken;
  }

  /// Empties the cache and hands its values to the caller, who destroys them (outside its
  /// lock: destroying an entry may need the GIL).
  std::vector<std::shared_ptr<Value>> take_all() {
    std::vector<std::shared_ptr<Value>> values;
    values.reserve(slots_.size());
    for (auto& [key, slot] : slots_) values.push_back(std::move(slot.value));
    slots_.clear();
    order_.clear();
    bytes_ = 0;
    return values;
  }

 private:
  struct Slot {
    std::shared_ptr<Value> value;
    std::size_t bytes = 0;
    std::uint64_t inserted = 0;
    mutable std::atomic<std::uint64_t> last_use{0};
  };

  /// Evicts the FIFO or LRU victim other than `*keep` (and, with `holding_bytes`, among the
  /// values of more than 0 bytes); nullptr when there is none.
  std::shared_ptr<Value> evict_one(const Key* keep, bool holding_bytes = false) {
    auto use = [&](auto o) { return slots_.at(*o).last_use.load(std::memory_order_relaxed); };
    auto victim_pos = order_.end();
    for (auto o = order_.begin(); o != order_.end(); ++o) {
      if (keep != nullptr && *o == *keep) continue;
      if (holding_bytes && slots_.at(*o).bytes == 0) continue;
      if (victim_pos == order_.end()) {
        victim_pos = o;
        if (eviction_ == Eviction::kFifo) break;
      } else if (use(o) < use(victim_pos)) {
        victim_pos = o;
      }
    }
    if (victim_pos == order_.end()) return nullptr;
    auto it = slots_.find(*victim_pos);
    auto value = std::move(it->second.value);
    bytes_ -= it->second.bytes;
    slots_.erase(it);
    order_.erase(victim_pos);
    return value;
  }

  std::size_t max_entries_;
  std::size_t max_bytes_;
  Eviction eviction_;
  std::size_t bytes_ = 0;
  static inline std::atomic<std::uint64_t> clock_{0};
  std::unordered_map<Key, Slot, Hash> slots_;
  std::deque<Key> order_;  // insertion order; the FIFO victim is the front
};

}  // namespace graphdispatch
