#include "runtime/cpu_graph/cpu_graph.h"

#include "runtime/cpu_graph/memory_plan.h"
#include "runtime/cpu_graph/out_variant.h"
#include "runtime/cpu_graph/workspace.h"
#include "runtime/tensor_layout.h"

#include <ATen/Context.h>
#include <ATen/native/TensorFactories.h>
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace graphdispatch {
namespace {

constexpr std::int64_t kAlignment = 64;  // bytes; what c10's CPU allocator gives each block
constexpr std::int64_t kToTheEnd = std::numeric_limits<std::int64_t>::max();

// Ops that change only a tensor's metadata: the recording already holds the result.
bool metadata_only(const c10::OperatorHandle& op) {
  if (op.hasTag(at::Tag::inplace_view)) return true;
  const auto& name = op.operator_name().name;
  return name == "aten::resize_" || name == "aten::resize_as_" || name == "aten::set_";
}

// Only ATen's own ops are known to do nothing but return what their schema says (a collective's
// `wait_tensor` returns its input and must still run).
bool is_aten(const c10::OperatorHandle& op) {
  return op.operator_name().name.rfind("aten::", 0) == 0;
}

void wait_for(const at::Tensor& collective_result) {
  static const auto wait = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("_c10d_functional::wait_tensor", "")
                               .typed<at::Tensor(const at::Tensor&)>();
  wait.call(collective_result);
}

void for_each_tensor(const c10::IValue& v, const std::function<void(const at::Tensor&)>& f) {
  map_tensors(v, [&](const at::Tensor& t) {
    if (t.defined()) f(t);
    return t;
  });
}

c10::StorageImpl* storage_of(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

// How a step replays. kFill: an allocation under deterministic mode, replayed as the fill its
// kernel did (Note [Deterministic fill]).
enum class Kind { kSkip, kCall, kOut, kCopy, kFill };

// Where a storage came from, and the first thing a replayed step did with it.
enum class Origin { kExternal, kMade, kAllocated };
enum class FirstUse { kNone, kRead, kWrite, kLift };

// One storage the recording saw (Note [CPU graph]).
struct StorageUse final {
  Origin origin = Origin::kExternal;
  std::int64_t first = -1;  // the step that made it; -1 for external storage
  std::int64_t last = -1;
  std::int64_t refs = 0;  // tensors of the recording and distinct outputs holding it
  FirstUse first_use = FirstUse::kNone;
  std::int64_t first_use_step = -1;
  bool held = false;     // held elsewhere when its op returned it (RecordedOp::held)
  bool written = false;  // by a replayed step
  bool output = false;
  bool kept = false;  // an intermediate something still holds when the capture ends
};

// What the recording holds: how each step replays and every storage's uses, in first-seen order.
struct Classified final {
  std::vector<Kind> kinds;
  // Per step, per return, per tensor in it: a storage the step made.
  std::vector<std::vector<std::vector<bool>>> fresh;
  std::unordered_map<c10::StorageImpl*, StorageUse> uses;
  std::vector<c10::StorageImpl*> order;
};

bool writes_argument(const c10::OperatorHandle& op, std::size_t k) {
  const auto& info = op.schema().arguments()[k].alias_info();
  return info != nullptr && info->isWrite();
}

std::string step_name(const std::vector<RecordedOp>& ops, std::int64_t step) {
  std::ostringstream text;
  text << c10::toString(ops[static_cast<std::size_t>(step)].op.operator_name()) << " (op " << step
       << ")";
  return text.str();
}

Classified classify(const std::vector<RecordedOp>& ops, bool deterministic_fill) {
  Classified c;
  c.kinds.assign(ops.size(), Kind::kSkip);
  c.fresh.resize(ops.size());
  auto use = [&](const at::Tensor& t, std::int64_t step, std::optional<Origin> origin) {
    auto [it, added] = c.uses.try_emplace(storage_of(t));
    if (added) {
      c.order.push_back(storage_of(t));
      if (origin) {
        it->second.origin = *origin;
        it->second.first = step;
      }
    }
    it->second.last = std::max(it->second.last, step);
    ++it->second.refs;
    return added;
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto step = static_cast<std::int64_t>(i);
    const auto& op = ops[i];
    for (const auto& a : op.arguments) {
      for_each_tensor(a, [&](const at::Tensor& t) { use(t, step, std::nullopt); });
    }
    const auto origin = uninitialized(op.op) ? Origin::kAllocated : Origin::kMade;
    bool any_fresh = false, all_fresh = !op.returns.empty();
    for (const auto& r : op.returns) {
      // Per tensor of the return: one, or each of a list (`split_with_sizes_copy`,
      // `_foreach_add`, a custom op's Tensor[]; case C72), made here or not.
      std::vector<bool> fresh;
      for_each_tensor(r, [&](const at::Tensor& t) { fresh.push_back(use(t, step, origin)); });
      if (r.isTensor() && fresh.size() == 1 && fresh[0] && op.held[c.fresh[i].size()]) {
        c.uses.at(storage_of(r.toTensor())).held = true;
      }
      for (bool f : fresh) any_fresh |= f;
      all_fresh &= r.isTensor() && fresh.size() == 1 && fresh[0];
      c.fresh[i].push_back(std::move(fresh));
    }
    auto& kind = c.kinds[i];
    if (origin == Origin::kAllocated && deterministic_fill && op.returns.size() == 1 &&
        op.returns[0].isTensor()) {
      // Not a write for the audit: memory a kernel then fills outside the dispatcher (case
      // C57) must still be refused, or the replay would hand out the fill.
      kind = Kind::kFill;
      continue;
    } else if (origin == Origin::kAllocated) {
      kind = Kind::kSkip;  // fixed memory; what fills it is decided where it is placed
    } else if (any_fresh) {
      kind = all_fresh && op.out ? Kind::kOut : Kind::kCopy;
    } else if ((op.op.schema().is_mutable() && !metadata_only(op.op)) || !is_aten(op.op) ||
               op.returns.empty()) {
      kind = Kind::kCall;  // writes, acts beyond its returns, or exists for its effect
    }
    const bool lifts = lifts_a_literal(op.op);
    if (kind == Kind::kSkip && !lifts) continue;
    for (std::size_t k = 0; k < op.arguments.size(); ++k) {
      const bool write = writes_argument(op.op, k);
      for_each_tensor(op.arguments[k], [&](const at::Tensor& t) {
        auto& u = c.uses.at(storage_of(t));
        u.written |= write;
        if (u.first_use != FirstUse::kNone) return;
        u.first_use = lifts ? FirstUse::kLift : write ? FirstUse::kWrite : FirstUse::kRead;
        u.first_use_step = step;
      });
    }
  }
  return c;
}

// An output that is a view holds its base (autograd's view record), which holds the storage. A
// base that only such outputs hold (and its own Python wrapper: wrapper_only) is no other holder:
// a literal made inside the graph and returned as a view (case C93). A base something else
// holds too (a global tensor returned as a view) still counts as a holder.
void mark_outputs(Classified& c, const std::vector<c10::IValue>& outputs) {
  std::unordered_set<const c10::TensorImpl*> seen;
  std::unordered_map<c10::TensorImpl*, std::size_t> views_of;  // base -> output views holding it
  for (const auto& out : outputs) {
    for_each_tensor(out, [&](const at::Tensor& t) {
      auto found = c.uses.find(storage_of(t));
      if (found == c.uses.end()) return;
      auto& u = found->second;
      u.output = true;
      if (u.origin != Origin::kExternal) u.last = kToTheEnd;
      if (!seen.insert(t.unsafeGetTensorImpl()).second) return;
      ++u.refs;
      if (t.is_view() && t._base().defined() &&
          t._base().storage().unsafeGetStorageImpl() == storage_of(t)) {
        ++views_of[t._base().unsafeGetTensorImpl()];
      }
    });
  }
  for (const auto& [base, views] : views_of) {
    if (seen.count(base) != 0) continue;  // an output itself, counted above
    if (c10::raw::intrusive_ptr::use_count(base) <= views + wrapper_only(base)) {
      ++c.uses.at(base->storage().unsafeGetStorageImpl()).refs;
    }
  }
}

// Where one storage lives (Note [CPU graph]).
enum class Place { kVouched, kConstant, kLiteral, kArena, kOwnCopy };

// The whole of `storage` as a 1-d uint8 tensor that holds it.
at::Tensor bytes_of(c10::StorageImpl* storage) {
  auto t = at::detail::make_tensor<c10::TensorImpl>(
      c10::Storage(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(storage)),
      c10::DispatchKeySet(c10::DispatchKey::CPU), caffe2::TypeMeta::Make<std::uint8_t>());
  t.unsafeGetTensorImpl()->set_sizes_contiguous({static_cast<std::int64_t>(storage->nbytes())});
  return t;
}

// Copies a copied op's new return into the recorded one: only the part a zero stride does not
// repeat, which the new return must repeat too (case C62).
void copy_return(const at::Tensor& to, const at::Tensor& from) {
  if (!is_expanded(to)) {
    to.copy_(from);
    return;
  }
  const auto strides = to.strides();
  auto part = from;
  for (std::int64_t d = 0; d < to.dim(); ++d) {
    if (strides[d] != 0 || to.size(d) <= 1) continue;
    TORCH_CHECK(from.stride(d) == 0 || from.size(d) <= 1,
                "CPU graph replay: an op returned a tensor that is not expanded along dimension ",
                d, " as it was at capture (strides ", from.strides(), ", captured ", strides, ")");
    part = part.narrow(d, 0, 1);
  }
  unexpanded(to).copy_(part);
}

// The capture audit: where each storage lives (Note [CPU graph]), or a c10::Error naming the
// op and why the capture is refused.
std::vector<Place> audit(const std::vector<RecordedOp>& ops, const Classified& c,
                         const std::unordered_set<const c10::StorageImpl*>& vouched) {
  auto refuse = [&](const StorageUse& u, const char* why) {
    const auto step = u.first >= 0 ? u.first : u.first_use_step;
    TORCH_CHECK(false, "CPU graph capture: ", step >= 0 ? step_name(ops, step) : "an output", " ",
                why);
  };
  std::vector<Place> places;
  for (auto* storage : c.order) {
    const auto& u = c.uses.at(storage);
    // Held by nothing but the recording. For storage the work made, what its op's return
    // showed (a view output keeps its base alive, so counting references later would not
    // tell); for storage made before the work, its references now.
    const bool ours = u.origin == Origin::kExternal ? c10::raw::intrusive_ptr::use_count(storage) ==
                                                          static_cast<std::size_t>(u.refs)
                                                    : !u.held;
    Place place = Place::kArena;
    if (u.first_use == FirstUse::kLift && !vouched.count(storage)) {
      if (!ours) refuse(u, "lifts a literal that something else keeps");
      place = Place::kLiteral;
    } else if (u.origin == Origin::kExternal) {
      if (vouched.count(storage)) {
        place = Place::kVouched;
      } else if (!ours) {
        refuse(u,
               "reads a tensor made before the work that is not one of its inputs (held "
               "elsewhere: autocast's cast cache, a global, a module attribute not passed "
               "as an input), which the graph cannot vouch for");
      } else if (u.written) {
        refuse(u,
               "writes a tensor made outside the dispatcher, which the graph keeps as a "
               "constant");
      } else {
        place = Place::kConstant;
      }
    } else if (u.origin == Origin::kAllocated && u.first_use != FirstUse::kWrite &&
               storage->nbytes() > 0) {
      // Name the op whose kernel filled it: the first to read it, else the one that made it.
      TORCH_CHECK(false, "CPU graph capture: ",
                  step_name(ops, u.first_use_step >= 0 ? u.first_use_step : u.first),
                  " reads (or returns) memory that ", step_name(ops, u.first),
                  " allocated and no recorded op wrote: it was filled outside the dispatcher "
                  "(a kernel's own loop), so a replay would return the capture's values");
    } else if (!ours) {
      if (u.output) refuse(u, "returns a tensor that something else holds too");
      if (u.written) refuse(u, "returns a tensor that something else holds and the work writes");
      place = Place::kOwnCopy;
    }
    places.push_back(place);
  }
  return places;
}

// Note [Shared workspace]: an intermediate the work made that something besides the recording
// still holds when the capture ends (a custom op's kernel that kept its argument in a global)
// would be rewritten by every other entry's replay if it lived in the shared workspace. It
// stays in the entry's own arena instead, alive to the end of the replay, so it changes only
// at the entry's next call, as an input buffer such a kernel keeps does (docs/usage.md
// "Custom ops"). Each tensor of the recording is a TensorImpl of its own (RecordedOp), so more
// references to the storage than the recording's tensors means another holder. An own copy
// (Place::kOwnCopy) stays there too: its original is held by definition, so a later kernel
// keeping the copy (the replay hands it the copy) cannot be told apart; such ops are rare.
void keep_held_intermediates(Classified& c, const std::vector<Place>& places) {
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    auto* storage = c.order[k];
    auto& u = c.uses.at(storage);
    if ((places[k] != Place::kArena && places[k] != Place::kOwnCopy) || u.output) continue;
    if (places[k] == Place::kOwnCopy ||
        c10::raw::intrusive_ptr::use_count(storage) > static_cast<std::size_t>(u.refs)) {
      u.kept = true;
      u.last = kToTheEnd;
    }
  }
}

// Storages the recording's tensors move onto: non-owning ones over vouched memory, and own
// copies in the arena.
using Rebound = std::unordered_map<c10::StorageImpl*, c10::intrusive_ptr<c10::StorageImpl>>;

void rebind(Rebound& rebound, c10::StorageImpl* storage, c10::DataPtr data) {
  rebound.emplace(storage, c10::make_intrusive<c10::StorageImpl>(
                               c10::StorageImpl::use_byte_size_t(), storage->sym_nbytes(),
                               std::move(data), /*allocator=*/nullptr, /*resizable=*/false));
}

// The bytes the program keeps as constants, literals included.
std::int64_t constant_bytes(const Classified& c, const std::vector<Place>& places) {
  std::int64_t bytes = 0;
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    if (places[k] == Place::kConstant || places[k] == Place::kLiteral) {
      bytes += static_cast<std::int64_t>(c.order[k]->nbytes());
    }
  }
  return bytes;
}

// Blocks placed by lifetime (memory_plan.h): (offsets, bytes).
MemoryPlan plan_blocks(const Classified& c, const std::vector<std::size_t>& positions) {
  std::vector<Lifetime> lifetimes;
  for (auto k : positions) {
    const auto& u = c.uses.at(c.order[k]);
    lifetimes.push_back({u.first, u.last, static_cast<std::int64_t>(c.order[k]->nbytes())});
  }
  return plan_memory(lifetimes, kAlignment);
}

struct Placed final {
  std::int64_t arena_bytes = 0;
  CpuGraph::WorkspaceSlots workspace;  // not yet pointing anywhere
  std::int64_t workspace_bytes = 0;
};

// The outputs, the intermediates something else keeps and the own copies (keep_held_intermediates)
// in the program's own arena, own copies rebound to storages there; every other storage the work
// made in the shared workspace (Note [Shared workspace]).
Placed place(const Classified& c, const std::vector<Place>& places, Rebound& rebound) {
  Placed placed;
  std::vector<std::size_t> outputs, intermediates;  // positions in c.order
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    if ((places[k] != Place::kArena && places[k] != Place::kOwnCopy) || c.order[k]->nbytes() == 0) {
      continue;
    }
    const auto& u = c.uses.at(c.order[k]);
    (u.output || u.kept ? outputs : intermediates).push_back(k);
  }
  const auto own = plan_blocks(c, outputs);
  if (own.bytes > 0) {
    auto arena = std::make_shared<Workspace::Block>(own.bytes);
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      auto* storage = c.order[outputs[j]];
      if (places[outputs[j]] == Place::kOwnCopy) {  // the original is someone else's: not moved
        rebind(rebound, storage, c10::DataPtr(nullptr, c10::Device(c10::kCPU)));
        storage = rebound.at(storage).get();
      }
      point_into(storage, arena, own.offsets[j]);
    }
  }
  const auto shared = plan_blocks(c, intermediates);
  for (std::size_t j = 0; j < intermediates.size(); ++j) {
    auto* storage = c.order[intermediates[j]];  // own copies are in the arena
    placed.workspace.emplace_back(c10::intrusive_ptr<c10::StorageImpl>::reclaim_copy(storage),
                                  shared.offsets[j]);
  }
  placed.arena_bytes = own.bytes;
  placed.workspace_bytes = shared.bytes;
  return placed;
}

// Vouched memory, read through non-owning storages (added to `rebound`); returns the (live,
// pristine) bytes of each constant the program writes or hands out, put back every replay.
std::vector<std::pair<at::Tensor, at::Tensor>> keep_external(const std::vector<RecordedOp>& ops,
                                                             const Classified& c,
                                                             const std::vector<Place>& places,
                                                             Rebound& rebound) {
  std::vector<std::pair<at::Tensor, at::Tensor>> restores;
  for (std::size_t k = 0; k < c.order.size(); ++k) {
    auto* storage = c.order[k];
    const auto& u = c.uses.at(storage);
    if (places[k] == Place::kVouched) {
      rebind(rebound, storage, c10::DataPtr(storage->mutable_data(), storage->device()));
    } else if (places[k] == Place::kLiteral && (u.written || u.output)) {
      restores.emplace_back(bytes_of(storage),
                            ops[static_cast<std::size_t>(u.first_use_step)].literal);
    } else if (places[k] == Place::kConstant && u.output) {
      restores.emplace_back(bytes_of(storage), bytes_of(storage).clone());
    }
  }
  return restores;
}

// Moves the replayed steps' tensors onto their rebound storages. A TensorImpl is shared by
// every argument, return and output that holds it, so its storage is swapped for all of them.
void move_tensors(const std::vector<RecordedOp>& ops, const Classified& c, const Rebound& rebound) {
  auto move = [&](const at::Tensor& t) {
    auto found = rebound.find(storage_of(t));
    if (found != rebound.end()) {
      t.unsafeGetTensorImpl()->set_storage_keep_dtype(c10::Storage(found->second));
    }
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (c.kinds[i] == Kind::kSkip) continue;
    for (const auto& a : ops[i].arguments) for_each_tensor(a, move);
    for (const auto& r : ops[i].returns) for_each_tensor(r, move);
  }
}

}  // namespace

bool& cpu_graph_capturing() {
  static thread_local bool capturing = false;
  return capturing;
}

void CpuGraph::capture_inputs(const std::vector<c10::IValue>& arguments) {
  vouched_.clear();
  for (const auto& a : arguments) {
    for_each_tensor(a, [&](const at::Tensor& t) { vouched_.insert(storage_of(t)); });
  }
}

void CpuGraph::capture_begin(std::function<void()>) {
  reset();
  // Note [Deterministic fill]: read once, as the kernels the capture runs read it.
  auto& ctx = at::globalContext();
  deterministic_fill_ = ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory();
  recorder_ = std::make_unique<OpRecorder>();
  cpu_graph_capturing() = true;
}

void CpuGraph::capture_end(const std::vector<c10::IValue>& outputs) {
  cpu_graph_capturing() = false;
  auto ops = recorder_->take();
  recorder_.reset();
  build(std::move(ops), outputs);
  vouched_.clear();
}

void CpuGraph::capture_abort() noexcept {
  cpu_graph_capturing() = false;
  recorder_.reset();
  vouched_.clear();
  reset();
}

void CpuGraph::reset() {
  Workspace::get().leave(this);
  steps_.clear();
  restores_.clear();
  stack_.clear();
  in_workspace_.clear();
  workspace_need_ = Workspace::Need();
  bound_ = nullptr;
  arena_bytes_ = recorded_ = through_out_ = copied_ = 0;
}

void CpuGraph::build(std::vector<RecordedOp> ops, const std::vector<c10::IValue>& outputs) {
  recorded_ = static_cast<std::int64_t>(ops.size());
  auto c = classify(ops, deterministic_fill_);
  mark_outputs(c, outputs);
  const auto places = audit(ops, c, vouched_);
  keep_held_intermediates(c, places);
  Rebound rebound;
  auto placed = place(c, places, rebound);
  arena_bytes_ = placed.arena_bytes + constant_bytes(c, places);
  in_workspace_ = std::move(placed.workspace);
  workspace_need_ = Workspace::Need(placed.workspace_bytes);
  for (auto& [live, pristine] : keep_external(ops, c, places, rebound)) {
    restores_.push_back({std::move(live), std::move(pristine)});
  }
  move_tensors(ops, c, rebound);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto kind = c.kinds[i];
    if (kind == Kind::kSkip) continue;
    if (kind == Kind::kFill) {
      steps_.push_back(emit_fill(ops[i]));
      continue;
    }
    steps_.push_back(
        emit(std::move(ops[i]), kind == Kind::kOut, kind == Kind::kCopy ? &c.fresh[i] : nullptr));
    through_out_ += kind == Kind::kOut;
    copied_ += kind == Kind::kCopy;
  }
  if (!in_workspace_.empty()) {
    bind(Workspace::get().take(bound_).block());
    Workspace::get().join(this);
  }
}

void CpuGraph::repoint_if_idle(const std::shared_ptr<Workspace::Block>& block) {
  std::unique_lock<std::mutex> idle(replaying_, std::try_to_lock);
  if (idle.owns_lock() && !in_workspace_.empty()) bind(block);
}

void CpuGraph::bind(const std::shared_ptr<Workspace::Block>& block) {
  if (block.get() == bound_) return;
  for (const auto& [storage, offset] : in_workspace_) point_into(storage.get(), block, offset);
  bound_ = block.get();
}

CpuGraph::Step CpuGraph::emit(RecordedOp op, bool through_out,
                              const std::vector<std::vector<bool>>* fresh) {
  Step step{op.op, op.keys, {}, {}, false, op.tls};
  if (through_out) {
    step.op = op.out->op;
    for (auto k : op.out->arguments) step.arguments.push_back(op.arguments[k]);
    for (const auto& r : op.returns) step.arguments.push_back(r);
  } else {
    step.arguments = std::move(op.arguments);
  }
  step.keys = redispatch_keys(step.op, step.keys, step.arguments);
  if (fresh != nullptr) {
    for (std::size_t k = 0; k < op.returns.size(); ++k) {
      std::vector<at::Tensor> to;
      std::size_t n = 0;
      for_each_tensor(op.returns[k], [&](const at::Tensor& t) {
        to.push_back((*fresh)[k][n++] ? t : at::Tensor());
      });
      step.copy_to.push_back(std::move(to));
    }
    step.waits = is_async_collective(step.op);
  }
  return step;
}

CpuGraph::Step CpuGraph::emit_fill(const RecordedOp& allocation) {
  static const auto fill = c10::Dispatcher::singleton().findSchemaOrThrow("aten::fill_", "Scalar");
  const auto& result = allocation.returns[0].toTensor();
  // The value eager's kernel wrote: NaN for floating and complex types, the largest value
  // otherwise (at::native::fill_empty_deterministic_), read off a tensor it fills.
  auto probe = at::empty({1}, result.options().memory_format(std::nullopt));
  at::native::fill_empty_deterministic_(probe);
  Step step{fill, allocation.keys, {allocation.returns[0], probe.item()},
            {},   false,           allocation.tls};
  step.keys = redispatch_keys(step.op, step.keys, step.arguments);
  return step;
}

void CpuGraph::replay() {
  const std::lock_guard<std::mutex> replaying(replaying_);
  std::optional<Workspace::Lease> lease;
  if (!in_workspace_.empty()) {
    lease.emplace(Workspace::get().take(bound_));
    bind(lease->block());
  }
  for (const auto& r : restores_) {
    std::memcpy(r.live.data_ptr(), r.pristine.const_data_ptr(), r.pristine.nbytes());
  }
  // Every step puts the keys back when it ends: one reading serves them all.
  const auto now = c10::impl::tls_local_dispatch_key_set();
  for (const auto& step : steps_) {
    const c10::impl::ForceDispatchKeyGuard dispatch_as_captured(as_captured(step.tls, now));
    stack_.assign(step.arguments.begin(), step.arguments.end());
    // Note [Steps in the profiler]
    // A redispatch runs no RecordFunction (the dispatcher's call does), so without this range
    // a profiler would see only the ops a kernel calls inside and charge the step's own time
    // to them or to graphdispatch::replay. Each step is the range eager's call of its operator
    // would open, with its arguments where asked.
    std::optional<at::RecordFunction> range;
    if (auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::FUNCTION);
        C10_UNLIKELY(callbacks.has_value())) {
      range.emplace(std::move(*callbacks));
      const auto schema = std::cref(step.op.schema());
      if (range->needsInputs()) {
        range->before(schema, c10::ArrayRef<const c10::IValue>(stack_.data(), stack_.size()));
      } else {
        range->before(schema);
      }
    }
    step.op.redispatchBoxed(step.keys, &stack_);
    range.reset();
    for (std::size_t k = 0; k < step.copy_to.size(); ++k) {
      const auto& to = step.copy_to[k];
      if (to.empty()) continue;  // an undefined return
      const auto& from = stack_[k];
      if (from.isTensor()) {
        if (step.waits) wait_for(from.toTensor());
        if (to[0].defined()) copy_return(to[0], from.toTensor());
        continue;
      }
      const auto list = from.toTensorList();
      TORCH_CHECK(list.size() == to.size(), "CPU graph replay: ", step.op.operator_name(),
                  " returned ", list.size(), " tensors, ", to.size(), " at capture");
      for (std::size_t n = 0; n < to.size(); ++n) {
        if (step.waits) wait_for(list[n]);
        if (to[n].defined()) copy_return(to[n], list[n]);
      }
    }
  }
  stack_.clear();
}

std::string CpuGraph::describe() const {
  std::ostringstream text;
  text << recorded_ << " ops recorded, " << steps_.size() << " replayed (" << through_out_
       << " through out=, " << copied_ << " copied), arena " << arena_bytes_ << " bytes, workspace "
       << workspace_need_.bytes() << " bytes (shared)";
  if (!restores_.empty()) text << ", " << restores_.size() << " constants put back";
  return text.str();
}

}  // namespace graphdispatch
