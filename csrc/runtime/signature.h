#pragma once

#include <ATen/core/ivalue.h>
#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace graphdispatch {

// Note [Cache key]
// A replay is only correct when everything that decides which kernels run, and how they read
// their inputs, is what it was at capture. Shapes alone are not enough; the key holds, per
// tensor input: device type and index, dtype, shape, strides and requires_grad,
// and for static inputs (read where they are) the storage-offset alignment (bytes mod 16, since
// vectorised kernels pick paths by alignment; dynamic inputs are copied into fresh buffers);
// per non-tensor input: its kind and exact value (int, float bits, bool, None; a generator
// by identity, only so its refusal is cached); the thread-local modes that change kernels:
// grad mode and autocast (enabled, dtype) for the CPU and for the inputs' device type; and the
// process-wide flags that choose a kernel (case C66: SDPA backends and their order, cuDNN,
// oneDNN, deterministic algorithms and whether they fill `empty` (case C82), matmul
// precision). Inference mode changes no kernel
// (entries are captured outside it, Note [Inference mode] in entry.h): a key holding it would
// capture a graph at compile time, where Dynamo turns it off, that no call under
// torch.inference_mode() uses
// (case C25). Whether a forward-mode AD level is active: a replay computes no tangents, so
// such calls are refused (admission.h) under a key of their own. Dynamic inputs whose bytes
// overlap add which inputs overlap (Note [Aliasing]).
//
// The *layout* is all of the above; the key adds the static inputs' data pointers, since a
// graph reads them at the addresses it was captured with. So one FX graph serving several
// modules (instances of one class, experts) gets one entry per set of weights, each replaying
// (case C41), and a moved parameter is a new key rather than a stale entry.

/// A complete cache key: a flat word encoding plus its hash. Value type, cheap to move.
class Signature final {
 public:
  /// The key of one call. `is_static[i]` marks inputs Dynamo lifted (parameters, buffers);
  /// they are keyed with their addresses and never checked against each other for aliasing,
  /// since they are not copied. Throws c10::Error naming the position for an input kind the key
  /// cannot hold.
  static Signature of(const std::vector<c10::IValue>& inputs, const std::vector<bool>& is_static);

  bool operator==(const Signature& other) const {
    return hash_ == other.hash_ && addresses_ == other.addresses_ && layout_ == other.layout_;
  }
  std::size_t hash() const { return hash_; }
  /// The key without the static inputs' addresses: equal for two sets of weights of one module.
  const std::vector<std::int64_t>& layout() const { return layout_; }
  /// Every (earlier, later) pair of dynamic input positions whose bytes overlap.
  const std::vector<std::pair<std::size_t, std::size_t>>& overlaps() const { return overlaps_; }
  /// Whether a forward-mode AD level was active (torch.autograd.forward_ad.dual_level).
  bool forward_ad() const { return forward_ad_; }

  struct Hasher {
    std::size_t operator()(const Signature& s) const { return s.hash_; }
  };

 private:
  std::vector<std::int64_t> layout_;
  std::vector<std::int64_t> addresses_;
  std::size_t hash_ = 0;
  std::vector<std::pair<std::size_t, std::size_t>> overlaps_;
  bool forward_ad_ = false;
};

/// "[2, 3]/float32" — the form the mismatch message uses.
std::string describe_tensor(const at::Tensor& t);
/// "[2, 3]/float32 strides (3, 1)": what a fallback warning names.
std::string describe_layout(const at::Tensor& t);
/// A signature in words, for `explain` and the verification warning: per input its position
/// and "[2, 3]/float32 strides (3, 1)" (with "static" for a parameter or buffer,
/// "requires_grad" when set) or "int 7" / "float 0.5" / "bool true" / "None" / "generator",
/// then "grad mode on|off". Costs a string per input: called on a miss, never on a hit.
std::string describe_signature(const std::vector<c10::IValue>& inputs,
                               const std::vector<bool>& is_static);

/// The replay-time check of a buffer against the caller's tensor, kept as an invariant behind
/// the complete key. Throws c10::Error "input mismatch at position i: captured
/// <shape>/<dtype>, got <shape>/<dtype>".
void check_input_match(const at::Tensor& captured, const at::Tensor& given, std::size_t position);

/// The device a call runs on: the first non-CPU tensor input's, else the CPU.
c10::Device device_of(const std::vector<c10::IValue>& inputs);

}  // namespace graphdispatch
