#include "runtime/graph_runner.h"

#include "runtime/admission.h"
#include "runtime/process_budget.h"
#include "runtime/replay_verification.h"
#include "runtime/runner_option_table.h"
#include "runtime/stats.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <functional>
#include <string>
#include <tuple>
#include <utility>

namespace graphdispatch {

namespace {

// The shared memory a cache's entries need, counted once: the largest need, since they share
// it (Note [Shared workspace]).
template <class Cache>
std::size_t shared_need(const Cache& cache) {
  std::int64_t need = 0;
  for (const auto& item : cache.items()) need = std::max(need, std::get<1>(item)->shared_bytes());
  return static_cast<std::size_t>(need);
}

// Counts `evicted` evictions; the first time for `logged`, logs `message()`.
void note_evictions(std::size_t evicted, std::atomic<bool>& logged, const LogSink& log,
                    const std::function<std::string()>& message) {
  if (evicted == 0) return;
  Stats::get().evictions.fetch_add(static_cast<std::int64_t>(evicted), std::memory_order_relaxed);
  if (!logged.exchange(true) && log) log(message());
}

}  // namespace

GraphRunner::GraphRunner(Callable fn, std::vector<bool> is_static,
                         std::shared_ptr<DeviceGraphFactory> graphs, RunnerOptions options)
    : fn_(std::move(fn)),
      graphs_(std::move(graphs)),
      options_(std::move(options)),
      state_(std::make_unique<State>(options_)) {
  static_versions_.push_back(std::make_unique<const std::vector<bool>>(std::move(is_static)));
  statics_.store(static_versions_.back().get(), std::memory_order_release);
  check_runner_options(options_);
  ProcessBudget::get().join(this);
}

GraphRunner::~GraphRunner() { ProcessBudget::get().leave(this); }

std::optional<std::pair<std::uint64_t, Signature>> GraphRunner::budget_victim(
    Eviction eviction, const Signature* keep) const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.next_victim(eviction, keep);
}

std::shared_ptr<Entry> GraphRunner::evict_for_budget(const Signature& sig) {
  std::unique_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.erase(sig);
}

void GraphRunner::check_arity(const std::vector<c10::IValue>& inputs) const {
  TORCH_CHECK(inputs.size() == statics().size(), "graphdispatch: expected ", statics().size(),
              " inputs, got ", inputs.size());
}

std::shared_ptr<Entry> GraphRunner::lookup(const Signature& sig) const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.find(sig);
}

std::shared_ptr<Entry> GraphRunner::entry_for(const std::vector<c10::IValue>& inputs) const {
  check_arity(inputs);
  return lookup(Signature::of(inputs, statics()));
}

std::size_t GraphRunner::num_entries() const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.size();
}

std::vector<std::shared_ptr<Entry>> GraphRunner::entries() const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  std::vector<std::shared_ptr<Entry>> out;
  for (auto& item : state_->cache.items()) out.push_back(std::move(std::get<1>(item)));
  return out;
}

std::size_t GraphRunner::entry_bytes() const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.bytes() + shared_need(state_->cache);
}

std::size_t GraphRunner::own_entry_bytes() const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.bytes();
}

void GraphRunner::replay_graphs() const {
  for (const auto& entry : entries()) {
    if (!entry->is_negative()) entry->replay_graph();
  }
}

void GraphRunner::clear() {
  std::vector<std::shared_ptr<Entry>> dropped;
  {
    std::lock_guard<std::mutex> inserting(state_->insert_mutex);
    std::unique_lock<std::shared_mutex> lock(state_->cache_mutex);
    dropped = state_->cache.take_all();
    state_->unsettled.clear();
    state_->failing_calls.clear();
  }
  // `dropped` is destroyed here, outside the locks: resetting a framework graph takes the GIL,
  // which a thread waiting for these locks may hold.
}

void GraphRunner::reset_after_fork() {
  // The parent's entries hold its device graphs and its locks may be held by a thread that
  // does not exist here: leak them rather than destroy them.
  (void)state_.release();
  state_ = std::make_unique<State>(options_);
}

void GraphRunner::drop_dead_entries() {
  std::vector<std::pair<Signature, std::shared_ptr<Entry>>> dead;
  {
    std::unique_lock<std::shared_mutex> lock(state_->cache_mutex);
    dead = state_->cache.take_if([&](const Entry& e) { return e.lost_static_input().has_value(); });
  }
  for (const auto& [sig, entry] : dead) {
    state_->recaptures.on_lost(sig, *entry->lost_static_input(), entry->replays());
  }
  // `dead` is destroyed here, outside the cache lock (see clear()).
}

std::string GraphRunner::moving_static_input(const Signature& sig,
                                             const std::vector<c10::IValue>& inputs) {
  const auto refused = state_->recaptures.refused(sig);
  if (!refused) return "";
  const auto i = refused->position;
  return options_.input(i) + ": " + describe_layout(inputs[i].toTensor()) +
         " (a parameter, buffer or state tensor read in place) was freed or replaced " +
         std::to_string(refused->lost) +
         " times, each time before a second call could replay "
         "its graph (max_recaptures=" +
         std::to_string(options_.max_recaptures) + ")";
}

std::vector<std::shared_ptr<Entry>> GraphRunner::stop_reading_in_place(
    std::size_t position, const std::vector<c10::IValue>& inputs) {
  auto in_place = statics();
  in_place[position] = false;
  static_versions_.push_back(std::make_unique<const std::vector<bool>>(std::move(in_place)));
  statics_.store(static_versions_.back().get(), std::memory_order_release);
  if (options_.log) {
    options_.log(options_.input(position) + ": " + describe_layout(inputs[position].toTensor()) +
                 " (read in place) came at another address of the same tensor on " +
                 std::to_string(options_.max_recaptures + 1) +
                 " captures in a row (a view of a live buffer at a moving offset: a ring buffer, "
                 "a KV-cache window), each a new entry; it is copied in as an argument from now "
                 "on, one entry for every offset. Pass it as an argument, or take the view inside "
                 "the compiled function");
  }
  std::unique_lock<std::shared_mutex> lock(state_->cache_mutex);
  state_->unsettled.clear();
  return state_->cache.take_all();  // every key held its address
}

std::shared_ptr<Entry> GraphRunner::find_or_capture(const Signature& given,
                                                    const std::vector<c10::IValue>& inputs,
                                                    bool* unsettled) {
  auto& stats = Stats::get();
  std::vector<std::shared_ptr<Entry>> dropped;  // destroyed after the lock, declared before it
  std::lock_guard<std::mutex> inserting(state_->insert_mutex);
  Signature sig = given;
  // An input read in place may have become a copied one since the caller made its key.
  if (static_versions_.size() > 1) sig = Signature::of(inputs, statics());
  // Another thread may have captured this key while we waited.
  if (auto found = lookup(sig)) return found;
  if (auto pending = state_->unsettled.find(sig); pending != state_->unsettled.end()) {
    if (unsettled) *unsettled = true;
    return pending->second;  // a compile-time capture failed: this call settles it
  }

  drop_dead_entries();  // a loss not yet reported would let this capture go uncounted
  std::shared_ptr<Entry> entry;
  if (auto refused = refusal(inputs, sig, options_)) {
    entry = Entry::negative(refused->reason, std::move(refused->detail),
                            describe_signature(inputs, statics()));
  } else if (auto moving = moving_static_input(sig, inputs); !moving.empty()) {
    // Not cached: the next call brings yet another address.
    return Entry::negative(FallbackReason::kStaticInputsMoving, std::move(moving),
                           describe_signature(inputs, statics()));
  } else if (auto growing = state_->numbers.refused(inputs, statics(), options_)) {
    // Not cached either (Note [Numbers in the key]): one entry per value is what is bounded.
    return Entry::negative(FallbackReason::kNumberValues, std::move(*growing),
                           describe_signature(inputs, statics()));
  } else {
    std::int64_t replays = 0;  // beyond each entry's first, which serves its capturing call
    for (const auto& e : entries()) replays += std::max<std::int64_t>(e->replays() - 1, 0);
    if (auto moving =
            state_->views.on_capture(inputs, statics(), replays, options_.max_recaptures)) {
      dropped = stop_reading_in_place(*moving, inputs);
      sig = Signature::of(inputs, statics());
    }
    try {
      entry = Entry::capture(fn_, inputs, statics(), *graphs_, options_);
      stats.captures.fetch_add(1, std::memory_order_relaxed);
      state_->failing_calls.erase(sig);
      if (auto growing = state_->numbers.on_capture(inputs, statics(), options_);
          growing && options_.log) {
        options_.log(*growing);
      }
    } catch (const Interrupt&) {
      throw;  // an interrupt is the caller's, not a reason to give up on this signature
    } catch (const std::exception& e) {
      // c10 errors carry a C++ backtrace in what(); the reason needs only the message.
      const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
      std::string message = c10_error ? c10_error->what_without_backtrace() : e.what();
      auto failed = Entry::negative(FallbackReason::kCaptureFailed, std::move(message),
                                    describe_signature(inputs, statics()));
      // Note [Failed captures]: not the signature's verdict until a call settles it. Bounded:
      // one per signature that failed and has not been called since.
      state_->unsettled[sig] = failed;
      if (unsettled) *unsettled = true;
      return failed;
    }
  }
  insert(sig, entry);
  if (!entry->is_negative() && options_.watch) {
    std::vector<at::Tensor> read_in_place;
    const auto& is_static = statics();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (is_static[i] && inputs[i].isTensor()) read_in_place.push_back(inputs[i].toTensor());
    }
    if (!read_in_place.empty()) options_.watch(read_in_place);
  }
  return entry;
}

void GraphRunner::insert(const Signature& sig, const std::shared_ptr<Entry>& entry) {
  std::shared_ptr<Entry> displaced;  // one evicted
  std::vector<std::shared_ptr<Entry>> over_budget;
  {
    std::unique_lock<std::shared_mutex> lock(state_->cache_mutex);
    displaced = state_->cache.insert(sig, entry, static_cast<std::size_t>(entry->bytes()));
    over_budget =
        state_->cache.evict_over_budget(sig, [](const auto& c) { return shared_need(c); });
  }
  // Outside the cache lock: the budget takes each runner's lock in turn, this one's included.
  std::vector<std::shared_ptr<Entry>> over_process_budget;
  if (options_.max_total_entry_bytes != 0 && entry->bytes() > 0) {
    over_process_budget =
        ProcessBudget::get().enforce(options_.max_total_entry_bytes, options_.eviction, this, sig);
  }
  const std::string order =
      options_.eviction == Eviction::kLru ? "the least recently used" : "the oldest";
  note_evictions(over_process_budget.size(), over_process_budget_logged_, options_.log, [&] {
    return "the entries of all compiled graphs hold more than max_total_entry_bytes=" +
           std::to_string(options_.max_total_entry_bytes) + ": evicting across graphs, " + order +
           " first";
  });
  note_evictions(displaced ? 1 : 0, evicting_logged_, options_.log, [&] {
    return "entry cache full (max_entries=" + std::to_string(options_.max_entries) +
           "): evicting; input signatures keep changing, which defeats graph reuse";
  });
  note_evictions(over_budget.size(), over_budget_logged_, options_.log, [&] {
    return "entries hold more than max_entry_bytes=" + std::to_string(options_.max_entry_bytes) +
           ": evicting " + order;
  });
  // The evicted entries are destroyed when this returns, outside the cache lock.
}

std::vector<c10::IValue> GraphRunner::settle_failed_capture(
    const Signature& sig, const std::shared_ptr<Entry>& failed,
    const std::vector<c10::IValue>& inputs) {
  // Settled by one call: whoever finds the verdict still unsettled takes it.
  auto take = [&] {
    auto pending = state_->unsettled.find(sig);
    if (pending == state_->unsettled.end() || pending->second != failed) return false;
    state_->unsettled.erase(pending);
    return true;
  };
  std::vector<c10::IValue> outputs;
  try {
    outputs = fall_back(FallbackReason::kCaptureFailed, failed->detail(), inputs);
  } catch (const Interrupt&) {
    throw;  // says nothing about the capture; the next call settles it
  } catch (...) {
    // Eager raises too: the call's values failed the capture, not the signature.
    std::lock_guard<std::mutex> inserting(state_->insert_mutex);
    if (take() && ++state_->failing_calls[sig] >= kFailingCallsPerSignature && !lookup(sig)) {
      state_->failing_calls.erase(sig);
      if (options_.log) {
        options_.log("capture failed on " + std::to_string(kFailingCallsPerSignature) +
                     " calls with this signature, each of which raised without a graph too; "
                     "calls with this signature now use the fallback path: " +
                     failed->detail().substr(0, 500));
      }
      insert(sig, failed);
    }
    throw;
  }
  std::lock_guard<std::mutex> inserting(state_->insert_mutex);
  if (take() && !lookup(sig)) {
    if (options_.log) {
      options_.log("capture failed, calls with this signature use the fallback path: " +
                   failed->detail().substr(0, 500));
    }
    state_->failing_calls.erase(sig);
    insert(sig, failed);
  }
  return outputs;
}

std::vector<c10::IValue> GraphRunner::fall_back(FallbackReason reason, const std::string& detail,
                                                const std::vector<c10::IValue>& inputs) {
  RECORD_FUNCTION("graphdispatch::fallback", std::vector<c10::IValue>());
  const auto& about = fallback_reason_info(reason);
  Stats::get().add_fallback(reason);
  if (options_.log && !about.logged_where_decided && state_->first_fallback(reason)) {
    // Nothing else tells a user whose values are right that no graph ever runs.
    std::string message =
        "calls of this graph run without a graph (fallback " + std::string(about.name) + ")";
    if (!detail.empty()) message += ": " + detail.substr(0, 300);
    options_.log(message + "; " + std::string(about.advice) +
                 ". Said once per graph and reason; stats()['fallbacks'] counts every call.");
  }
  return fn_(inputs);
}

std::vector<c10::IValue> GraphRunner::replay_verified(const Signature& sig,
                                                      const std::shared_ptr<Entry>& entry,
                                                      const std::vector<c10::IValue>& inputs) {
  auto checked = graphdispatch::replay_verified(*entry, fn_, inputs, options_);
  auto& stats = Stats::get();
  stats.verified_replays.fetch_add(1, std::memory_order_relaxed);
  if (checked.mismatch.empty()) return std::move(checked.outputs);
  stats.add_fallback(FallbackReason::kVerifyMismatch);
  if (options_.log) {
    options_.log("a replay differs from the non-graph path at " + checked.mismatch +
                 "; signature " + entry->signature().substr(0, 600) +
                 ". The entry is disabled: calls with this signature run without a graph "
                 "(fallback " +
                 std::string(fallback_reason_name(FallbackReason::kVerifyMismatch)) +
                 "); this call returned the non-graph result");
  }
  auto disabled =
      Entry::negative(FallbackReason::kVerifyMismatch, checked.mismatch, entry->signature());
  std::shared_ptr<Entry> replaced;
  {
    std::lock_guard<std::mutex> inserting(state_->insert_mutex);
    std::unique_lock<std::shared_mutex> lock(state_->cache_mutex);
    // Another thread may have replaced (or evicted) it meanwhile; then leave theirs.
    if (state_->cache.find(sig) == entry) replaced = state_->cache.insert(sig, disabled, 0);
  }
  return std::move(checked.outputs);  // `replaced` is destroyed here, outside the locks
}

void GraphRunner::capture(const std::vector<c10::IValue>& inputs) {
  check_arity(inputs);
  if (inside_a_capture(inputs)) return;
  const auto sig = Signature::of(inputs, statics());
  if (!lookup(sig)) find_or_capture(sig, inputs);
}

std::vector<c10::IValue> GraphRunner::operator()(const std::vector<c10::IValue>& inputs) {
  check_arity(inputs);
  auto& stats = Stats::get();
  if (inside_a_capture(inputs)) return fn_(inputs);

  const auto sig = Signature::of(inputs, statics());
  auto entry = lookup(sig);
  if (entry) {
    stats.cache_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats.cache_misses.fetch_add(1, std::memory_order_relaxed);
    bool unsettled = false;
    entry = find_or_capture(sig, inputs, &unsettled);
    if (unsettled) return settle_failed_capture(sig, entry, inputs);
  }
  if (entry->is_negative()) return fall_back(*entry->reason(), entry->detail(), inputs);
  if (auto overlap = entry->aliasing().static_overlap(inputs)) {
    const auto [dynamic, static_input] = *overlap;
    return fall_back(FallbackReason::kAliasedInputs,
                     options_.input(dynamic) + ": " + describe_layout(inputs[dynamic].toTensor()) +
                         " overlaps " + options_.input(static_input) +
                         " (read in place) in memory, and the graph writes one of them",
                     inputs);
  }
  if (options_.verify_replays > 0 && entry->claim_verification(options_.verify_replays)) {
    return replay_verified(sig, entry, inputs);
  }
  return entry->replay(inputs, options_);
}

}  // namespace graphdispatch
