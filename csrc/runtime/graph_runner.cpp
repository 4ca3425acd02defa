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
      is_static_(std::move(is_static)),
      graphs_(std::move(graphs)),
      options_(std::move(options)),
      state_(std::make_unique<State>(options_)) {
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
  TORCH_CHECK(inputs.size() == is_static_.size(), "graphdispatch: expected ", is_static_.size(),
              " inputs, got ", inputs.size());
}

std::shared_ptr<Entry> GraphRunner::lookup(const Signature& sig) const {
  std::shared_lock<std::shared_mutex> lock(state_->cache_mutex);
  return state_->cache.find(sig);
}

std::shared_ptr<Entry> GraphRunner::entry_for(const std::vector<c10::IValue>& inputs) const {
  check_arity(inputs);
  return lookup(Signature::of(inputs, is_static_));
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

std::shared_ptr<Entry> GraphRunner::find_or_capture(const Signature& sig,
                                                    const std::vector<c10::IValue>& inputs) {
  auto& stats = Stats::get();
  std::lock_guard<std::mutex> inserting(state_->insert_mutex);
  // Another thread may have captured this key while we waited.
  if (auto found = lookup(sig)) return found;

  drop_dead_entries();  // a loss not yet reported would let this capture go uncounted
  std::shared_ptr<Entry> entry;
  if (auto refused = refusal(inputs, sig, options_)) {
    entry = Entry::negative(refused->reason, std::move(refused->detail),
                            describe_signature(inputs, is_static_));
  } else if (auto moving = moving_static_input(sig, inputs); !moving.empty()) {
    // Not cached: the next call brings yet another address.
    return Entry::negative(FallbackReason::kStaticInputsMoving, std::move(moving),
                           describe_signature(inputs, is_static_));
  } else {
    try {
      entry = Entry::capture(fn_, inputs, is_static_, *graphs_, options_);
      stats.captures.fetch_add(1, std::memory_order_relaxed);
      if (auto growing = state_->numbers.on_capture(inputs, is_static_, options_);
          growing && options_.log) {
        options_.log(*growing);
      }
    } catch (const Interrupt&) {
      throw;  // an interrupt is the caller's, not a reason to give up on this signature
    } catch (const std::exception& e) {
      // c10 errors carry a C++ backtrace in what(); the reason needs only the message.
      const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
      std::string message = c10_error ? c10_error->what_without_backtrace() : e.what();
      if (options_.log) {
        options_.log("capture failed, calls with this signature use the fallback path: " +
                     message.substr(0, 500));
      }
      entry = Entry::negative(FallbackReason::kCaptureFailed, std::move(message),
                              describe_signature(inputs, is_static_));
    }
  }
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
  if (!entry->is_negative() && options_.watch) {
    std::vector<at::Tensor> statics;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (is_static_[i] && inputs[i].isTensor()) statics.push_back(inputs[i].toTensor());
    }
    if (!statics.empty()) options_.watch(statics);
  }
  return entry;  // the evicted entries are destroyed here, outside every lock
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
  const auto sig = Signature::of(inputs, is_static_);
  if (!lookup(sig)) find_or_capture(sig, inputs);
}

std::vector<c10::IValue> GraphRunner::operator()(const std::vector<c10::IValue>& inputs) {
  check_arity(inputs);
  auto& stats = Stats::get();
  if (inside_a_capture(inputs)) return fn_(inputs);

  const auto sig = Signature::of(inputs, is_static_);
  auto entry = lookup(sig);
  if (entry) {
    stats.cache_hits.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats.cache_misses.fetch_add(1, std::memory_order_relaxed);
    entry = find_or_capture(sig, inputs);
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
