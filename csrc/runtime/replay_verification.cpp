#include "runtime/replay_verification.h"

#include "runtime/rng_state_guard.h"
#include "runtime/signature.h"
#include "runtime/tensor_layout.h"
#include "runtime/written_statics.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/isclose.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <sstream>

namespace graphdispatch {
namespace {

// Why output `k` of the replay differs from the non-graph path's, or "" when it does not.
std::string difference(const c10::IValue& got, const c10::IValue& want, std::size_t k, double rtol,
                       double atol) {
  const std::string at_output = "output " + std::to_string(k) + ": ";
  if (got.isTensor() != want.isTensor()) return at_output + "a tensor on one path only";
  if (!got.isTensor()) {
    // Non-tensor outputs are graph constants; compared where the kind has a value.
    bool same = got.tagKind() == want.tagKind();
    if (same && got.isInt()) same = got.toInt() == want.toInt();
    if (same && got.isDouble()) same = got.toDouble() == want.toDouble();
    if (same && got.isBool()) same = got.toBool() == want.toBool();
    return same ? "" : at_output + "values differ";
  }
  const auto& a = got.toTensor();
  const auto& b = want.toTensor();
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) {
    return at_output + "replay gave " + describe_tensor(a) + ", the non-graph path " +
           describe_tensor(b);
  }
  const bool inexact = at::isFloatingType(a.scalar_type()) || at::isComplexType(a.scalar_type());
  const bool close = inexact ? at::isclose(a, b, rtol, atol, /*equal_nan=*/true).all().item<bool>()
                             : at::equal(a, b);
  if (close) return "";
  const auto diff = at::isComplexType(a.scalar_type())
                        ? a.sub(b).abs()
                        : a.to(at::kDouble).sub(b.to(at::kDouble)).abs();  // bool has no sub
  const double max_diff = diff.max().item<double>();
  std::ostringstream text;
  text << at_output << "max |difference| " << max_diff << " (rtol " << rtol << ", atol " << atol
       << ")";
  return text.str();
}

}  // namespace

Verified replay_verified(Entry& entry, const Callable& fn, const std::vector<c10::IValue>& inputs,
                         const RunnerOptions& options) {
  RECORD_FUNCTION("graphdispatch::verify", std::vector<c10::IValue>());
  const auto& static_written = entry.static_written();
  std::vector<c10::IValue> copies = inputs;
  for (auto i : entry.dynamic_positions()) copies[i] = clone_keeping_layout(inputs[i].toTensor());
  // Static inputs the graph writes are written in place by the check's run, as eager writes
  // them (a static input viewing another then sees the write); their values before and after
  // it are kept, and the before ones put back, so the replay writes them once.
  const WrittenStatics before(inputs, static_written);
  // Both paths start from one RNG state, so random ops draw the same numbers on both; the
  // replay's draws are the call's, as without verification.
  RngStateGuard rng(entry.device(), options.draws_random);
  auto expected = fn(copies);
  rng.restore();
  const WrittenStatics after(inputs, static_written);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    // An output that is a written static input would change with the put-back below.
    const auto& view = entry.outputs().view(k);
    const bool on_written = view && std::find(static_written.begin(), static_written.end(),
                                              view->position) != static_written.end();
    if (on_written) expected[k] = expected[k].toTensor().clone(at::MemoryFormat::Preserve);
  }
  before.put_back(inputs);
  Verified result{entry.replay(inputs, options), ""};
  TORCH_INTERNAL_ASSERT(expected.size() == result.outputs.size());
  for (std::size_t k = 0; k < expected.size() && result.mismatch.empty(); ++k) {
    result.mismatch =
        difference(result.outputs[k], expected[k], k, options.verify_rtol, options.verify_atol);
  }
  if (result.mismatch.empty()) return result;
  // The replay wrote its (wrong) values of written inputs back; the non-graph ones win.
  for (auto i : entry.dynamic_written()) inputs[i].toTensor().copy_(copies[i].toTensor());
  after.put_back(inputs);
  for (std::size_t k = 0; k < expected.size(); ++k) {
    // Outputs that view inputs stay on the caller's tensors, which now hold the right values.
    if (!entry.outputs().view(k)) result.outputs[k] = std::move(expected[k]);
  }
  return result;
}

}  // namespace graphdispatch
