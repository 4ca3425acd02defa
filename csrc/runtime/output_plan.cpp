#include "runtime/output_plan.h"

#include "runtime/stats.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/from_blob.h>

#include <map>
#include <mutex>

namespace graphdispatch {
namespace {

// What the replays on devices handed out in unsafe mode, weakly held (Note [Outputs still
// held]): one list for every device, since a replay on one device copies away only the
// outputs of its own device that are still held and keeps the others.
struct DeviceHandedOut {
  std::mutex mutex;
  std::vector<std::pair<c10::Device, c10::weak_intrusive_ptr<c10::StorageImpl>>> storages;
};

DeviceHandedOut* device_handed_out = new DeviceHandedOut();  // leaked: used until exit

// Gives `held` memory of its own on `device` holding its values (one copy, counted).
void copy_away(c10::StorageImpl& held, c10::Device device) {
  const auto bytes = at::TensorOptions().dtype(at::kByte).device(device);
  const auto n = static_cast<std::int64_t>(held.nbytes());
  auto own = at::empty({n}, bytes);
  // The device is given, so for_blob does not ask the driver where the pointer lives.
  own.copy_(
      at::for_blob(held.mutable_data(), {n}).options(bytes).target_device(device).make_tensor(),
      /*non_blocking=*/true);
  // The holder's tensors read their storage's memory, wherever it is: they now read `own`'s.
  held.set_data_ptr_noswap(std::move(own.storage().unsafeGetStorageImpl()->mutable_data_ptr()));
  Stats::get().held_outputs_copied.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

OutputPlan::OutputPlan(std::vector<c10::IValue> static_outputs,
                       const std::vector<c10::IValue>& args)
    : static_outputs_(std::move(static_outputs)) {
  const auto n = static_outputs_.size();
  views_.assign(n, std::nullopt);
  group_.assign(n, -1);
  // The outputs handed out as copies, and how many of them lie in each storage.
  std::vector<std::size_t> copied;
  std::map<const void*, int> outputs_in;
  for (std::size_t k = 0; k < n; ++k) {
    if (!static_outputs_[k].isTensor()) continue;
    const auto& out = static_outputs_[k].toTensor();
    for (std::size_t i = 0; i < args.size() && !views_[k]; ++i) {
      if (args[i].isTensor()) views_[k] = view_of_input(out, args[i].toTensor(), i);
    }
    if (views_[k] || !out.defined() || !out.has_storage()) continue;
    if (!out.device().is_cpu()) device_ = out.device();
    copied.push_back(k);
    ++outputs_in[out.storage().data()];
  }
  std::vector<Span> spans;
  std::map<const void*, std::int64_t> group_of;  // storage -> index in group_storages_
  for (auto k : copied) {
    const auto& out = static_outputs_[k].toTensor();
    if (auto span = span_of(out, k)) spans.push_back(*span);
    const void* storage = out.storage().data();
    const bool dense = out.is_non_overlapping_and_dense() ||
                       (is_expanded(out) && unexpanded(out).is_non_overlapping_and_dense());
    if (outputs_in[storage] == 1 && dense) continue;  // the cheap path: clone it
    auto [group, added] =
        group_of.emplace(storage, static_cast<std::int64_t>(group_storages_.size()));
    if (added) {
      group_storages_.push_back(
          at::empty({0}, out.options().dtype(at::kByte))
              .set_(out.storage(), 0, {static_cast<std::int64_t>(out.storage().nbytes())}, {1}));
    }
    group_[k] = group->second;
  }
  spans_ = SpanSet(std::move(spans));
}

bool OutputPlan::overlaps_static_outputs(const at::Tensor& t, std::size_t position) const {
  if (spans_.empty()) return false;
  auto span = span_of(t, position);
  return span && spans_.overlapping(*span);
}

void OutputPlan::write(const std::vector<c10::IValue>& outputs) {
  TORCH_INTERNAL_ASSERT(outputs.size() == static_outputs_.size());
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].isTensor() || views_[k]) continue;
    auto& dst = static_outputs_[k].toTensor();
    const auto& src = outputs[k].toTensor();
    if (dst.is_same(src)) continue;
    // A zero-stride output is written through its unexpanded part (Note [Expanded tensors]).
    if (is_expanded(dst)) {
      unexpanded(dst).copy_(unexpanded(src));
    } else {
      dst.copy_(src);
    }
  }
}

std::vector<c10::IValue> OutputPlan::hand_out(const std::vector<c10::IValue>& inputs,
                                              bool safe) const {
  std::vector<c10::IValue> outputs;
  outputs.reserve(static_outputs_.size());
  std::vector<at::Tensor> copies(safe ? group_storages_.size() : 0);
  for (std::size_t k = 0; k < static_outputs_.size(); ++k) {
    const auto& v = static_outputs_[k];
    if (views_[k]) {
      outputs.emplace_back(views_[k]->of(inputs[views_[k]->position].toTensor()));
      continue;
    }
    if (!v.isTensor() || !v.toTensor().defined()) {
      outputs.push_back(v);
      continue;
    }
    const auto& out = v.toTensor();
    if (!safe) {
      if (out.numel() == 0) {  // no memory to share; a storage of its own stays resizable
        outputs.emplace_back(at::empty_strided(out.sizes(), out.strides(), out.options()));
        continue;
      }
      // A storage of its own that cannot be resized, over the static output's memory, which it
      // keeps alive (Note [Outputs]).
      // The device is given, so from_blob does not ask the driver where the pointer lives.
      outputs.emplace_back(
          with_math_bits_of(at::from_blob(
                                out.data_ptr(), out.sizes(), out.strides(), [keep = out](void*) {},
                                out.options(), out.device()),
                            out));
      continue;
    }
    const auto group = group_[k];
    if (group < 0) {
      outputs.emplace_back(clone_keeping_layout(out));
      continue;
    }
    auto& copy = copies[static_cast<std::size_t>(group)];
    if (!copy.defined()) copy = group_storages_[static_cast<std::size_t>(group)].clone();
    outputs.emplace_back(with_math_bits_of(
        at::empty({0}, out.options())
            .set_(copy.storage(), out.storage_offset(), out.sizes(), out.strides()),
        out));
  }
  return outputs;
}

void OutputPlan::copy_away_held_outputs() {
  if (device_) {
    std::lock_guard<std::mutex> lock(device_handed_out->mutex);
    std::vector<std::pair<c10::Device, c10::weak_intrusive_ptr<c10::StorageImpl>>> others;
    for (auto& handed : device_handed_out->storages) {
      if (handed.first != *device_) {
        others.push_back(std::move(handed));
      } else if (auto held = handed.second.lock()) {
        copy_away(*held, *device_);
      }
    }
    device_handed_out->storages = std::move(others);
    return;
  }
  for (const auto& [k, storage] : handed_out_) {
    if (auto held = storage.lock()) copy_away(*held, static_outputs_[k].toTensor().device());
  }
  handed_out_.clear();
}

void OutputPlan::remember_handed_out(const std::vector<c10::IValue>& outputs) {
  std::unique_lock<std::mutex> lock;
  if (device_) lock = std::unique_lock<std::mutex>(device_handed_out->mutex);
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    // Views of inputs lie in the caller's memory, and empty outputs in none of the entry's.
    if (views_[k] || !outputs[k].isTensor()) continue;
    const auto& t = outputs[k].toTensor();
    if (!t.defined() || t.numel() == 0 || !t.has_storage()) continue;
    if (device_) {
      device_handed_out->storages.emplace_back(t.device(), t.storage().getWeakStorageImpl());
    } else {
      handed_out_.emplace_back(k, t.storage().getWeakStorageImpl());
    }
  }
}

void OutputPlan::reset_after_fork() { device_handed_out = new DeviceHandedOut(); }

}  // namespace graphdispatch
