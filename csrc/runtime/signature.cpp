#include "runtime/signature.h"

#include "runtime/memory_span.h"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <c10/util/hash.h>
#include <torch/csrc/autograd/forward_grad.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <utility>

namespace graphdispatch {
namespace {

enum Tag : std::int64_t { kTensor = 1, kInt, kDouble, kBool, kNone, kModes, kAlias, kGenerator };

constexpr std::int64_t kAlignmentBytes = 16;

void append_modes(std::vector<std::int64_t>& w, c10::DeviceType device_type) {
  w.push_back(kModes);
  w.push_back(at::GradMode::is_enabled());
  for (auto type : {c10::DeviceType::CPU, device_type}) {
    // Device types without autocast (meta, ...) would throw on the query.
    const bool on =
        at::autocast::is_autocast_available(type) && at::autocast::is_autocast_enabled(type);
    w.push_back(on);
    w.push_back(on ? static_cast<std::int64_t>(at::autocast::get_autocast_dtype(type)) : -1);
  }
  // Process-wide flags that choose among the kernels of one op (sdpa_kernel's backends and
  // their order, cuDNN, oneDNN, deterministic algorithms, matmul precision): a graph replays
  // the kernel its capture chose (case C66); with deterministic algorithms, whether `empty`
  // fills its result, which the CPU graph replays as a step of its own (case C82).
  auto& ctx = at::globalContext();
  std::int64_t bits = 0;
  int bit = 0;
  for (bool on :
       {ctx.userEnabledFlashSDP(), ctx.userEnabledMemEfficientSDP(), ctx.userEnabledMathSDP(),
        ctx.userEnabledCuDNNSDP(), ctx.userEnabledOverrideableSDP(), ctx.userEnabledCuDNN(),
        ctx.userEnabledMkldnn(), ctx.deterministicAlgorithms(),
        ctx.deterministicAlgorithms() && ctx.deterministicFillUninitializedMemory(),
        ctx.allowTF32CuBLAS()}) {
    bits |= static_cast<std::int64_t>(on) << bit++;
  }
  w.push_back(bits);
  w.push_back(static_cast<std::int64_t>(ctx.float32MatmulPrecision()));
  for (auto backend : ctx.sDPPriorityOrder()) w.push_back(static_cast<std::int64_t>(backend));
}

void append_tensor(std::vector<std::int64_t>& w, const at::Tensor& t, bool is_static) {
  w.push_back(kTensor);
  w.push_back(static_cast<std::int64_t>(t.device().type()));
  w.push_back(t.device().index());
  w.push_back(static_cast<std::int64_t>(t.scalar_type()));
  w.push_back(t.requires_grad());
  w.push_back(t.dim());
  for (auto s : t.sizes()) w.push_back(s);
  for (auto s : t.strides()) w.push_back(s);
  // A copied input lands in an entry-owned buffer: the caller's alignment changes no kernel,
  // and keying on it would capture again for each `scheduler.timesteps[i]` view (case C23).
  if (is_static) {
    w.push_back((t.storage_offset() * static_cast<std::int64_t>(t.itemsize())) % kAlignmentBytes);
  }
}

// PyTorch's Python names ("float32"), which users see everywhere else.
const char* dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float:
      return "float32";
    case c10::ScalarType::Double:
      return "float64";
    case c10::ScalarType::Half:
      return "float16";
    case c10::ScalarType::BFloat16:
      return "bfloat16";
    case c10::ScalarType::Long:
      return "int64";
    case c10::ScalarType::Int:
      return "int32";
    case c10::ScalarType::Short:
      return "int16";
    case c10::ScalarType::Char:
      return "int8";
    case c10::ScalarType::Byte:
      return "uint8";
    case c10::ScalarType::Bool:
      return "bool";
    default:
      return c10::toString(t);
  }
}

}  // namespace

Signature Signature::of(const std::vector<c10::IValue>& inputs,
                        const std::vector<bool>& is_static) {
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(inputs.size() == is_static.size());
  Signature sig;
  auto& w = sig.layout_;
  w.reserve(inputs.size() * 10 + 8);
  c10::DeviceType device_type = c10::DeviceType::CPU;
  // The bytes each dynamic tensor spans, for the aliasing check.
  std::vector<Span> spans;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      append_tensor(w, t, is_static[i]);
      if (t.device().type() != c10::DeviceType::CPU) device_type = t.device().type();
      if (is_static[i]) {
        sig.addresses_.push_back(reinterpret_cast<std::intptr_t>(t.data_ptr()));
      } else if (auto span = span_of(t, i)) {
        spans.push_back(*span);
      }
    } else if (v.isInt()) {
      w.push_back(kInt);
      w.push_back(v.toInt());
    } else if (v.isDouble()) {
      const double d = v.toDouble();
      std::int64_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      w.push_back(kDouble);
      w.push_back(bits);
    } else if (v.isBool()) {
      w.push_back(kBool);
      w.push_back(v.toBool());
    } else if (v.isNone()) {
      w.push_back(kNone);
    } else if (v.isGenerator()) {
      // Keyed by identity only so the refusal can be cached (refusal() in admission.h).
      w.push_back(kGenerator);
      w.push_back(reinterpret_cast<std::intptr_t>(v.toGenerator().unsafeGetGeneratorImpl()));
    } else {
      TORCH_CHECK(false, "graphdispatch: input at position ", i,
                  ": expected a tensor, int, float, bool, None or torch.Generator, got ",
                  v.tagKind());
    }
  }
  append_modes(w, device_type);
  // Levels are entered and left in order, so any active level means level 0 is.
  sig.forward_ad_ = torch::autograd::ForwardADLevel::try_get_by_idx(0) != nullptr;
  w.push_back(sig.forward_ad_);
  // Views of one storage that share no byte (`latents.unbind(0)`, grids sliced from one
  // tensor) are separate inputs: each is copied into its own buffer (case C39). Pairs are
  // few (inputs are rarely views of each other), so a quadratic scan over the sorted spans
  // stops early.
  if (spans.size() > 1) {
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    for (std::size_t k = 0; k < spans.size(); ++k) {
      for (std::size_t j = k + 1; j < spans.size() && spans[j].begin < spans[k].end; ++j) {
        const auto pair = std::minmax(spans[k].position, spans[j].position);
        sig.overlaps_.emplace_back(pair.first, pair.second);
      }
    }
    std::sort(sig.overlaps_.begin(), sig.overlaps_.end());
    for (const auto& [first, second] : sig.overlaps_) {
      w.push_back(kAlias);
      w.push_back(static_cast<std::int64_t>(first));
      w.push_back(static_cast<std::int64_t>(second));
    }
  }
  std::size_t h = w.size();
  for (auto word : w) h = c10::hash_combine(h, static_cast<std::size_t>(word));
  for (auto word : sig.addresses_) h = c10::hash_combine(h, static_cast<std::size_t>(word));
  sig.hash_ = h;
  return sig;
}

std::string describe_tensor(const at::Tensor& t) {
  std::string out = "[";
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (d) out += ", ";
    out += std::to_string(t.size(d));
  }
  out += "]/";
  out += dtype_name(t.scalar_type());
  return out;
}

std::string describe_layout(const at::Tensor& t) {
  std::string out = describe_tensor(t) + " strides (";
  for (std::int64_t d = 0; d < t.dim(); ++d) {
    if (d) out += ", ";
    out += std::to_string(t.stride(d));
  }
  return out + ")";
}

std::string describe_signature(const std::vector<c10::IValue>& inputs,
                               const std::vector<bool>& is_static) {
  std::string out;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const auto& v = inputs[i];
    out += std::to_string(i) + ": ";
    if (v.isTensor()) {
      const auto& t = v.toTensor();
      out += describe_layout(t);
      if (!t.is_cpu()) out += " on " + t.device().str();
      if (is_static[i]) out += " static";
      if (t.requires_grad()) out += " requires_grad";
    } else if (v.isInt()) {
      out += "int " + std::to_string(v.toInt());
    } else if (v.isDouble()) {
      std::ostringstream text;
      text << v.toDouble();
      out += "float " + text.str();
    } else if (v.isBool()) {
      out += v.toBool() ? "bool true" : "bool false";
    } else if (v.isNone()) {
      out += "None";
    } else {
      out += "generator";
    }
    out += "; ";
  }
  return out + (at::GradMode::is_enabled() ? "grad mode on" : "grad mode off");
}

void check_input_match(const at::Tensor& captured, const at::Tensor& given, std::size_t position) {
  TORCH_CHECK(captured.sizes() == given.sizes() && captured.scalar_type() == given.scalar_type(),
              "input mismatch at position ", position, ": captured ", describe_tensor(captured),
              ", got ", describe_tensor(given));
}

c10::Device device_of(const std::vector<c10::IValue>& inputs) {
  for (const auto& v : inputs) {
    if (v.isTensor() && !v.toTensor().is_cpu()) return v.toTensor().device();
  }
  return c10::kCPU;
}

}  // namespace graphdispatch
