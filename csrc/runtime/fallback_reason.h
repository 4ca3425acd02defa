#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace graphdispatch {

/// Why a call ran without a graph: the one list of fallback reasons. The runtime decides most
/// of them; the Python layer decides the graph-wide ones (data_dependent, explicit_generator in
/// the FX graph, autograd_region) and names them through the bindings, so every reason has one
/// spelling, one line of advice, and one row in docs/diagnosing.md (tests/test_explain.py keeps the
/// two equal).
enum class FallbackReason {
  kRequiresGrad,
  kAliasedInputs,
  kMixedDevices,
  kUnsupportedTensor,
  kExplicitGenerator,
  kDataDependent,
  kCaptureFailed,
  kStaticInputsMoving,
  kVerifyMismatch,
  kAutogradRegion,
  kNumberValues,
  kForwardAD,
};
inline constexpr std::size_t kFallbackReasonCount = 12;

struct FallbackReasonInfo final {
  FallbackReason reason;
  /// The reason in words: the key of stats()['fallbacks'], of warnings and of explain.
  std::string_view name;
  /// One line: what the user can do about it.
  std::string_view advice;
  /// True when the failure was already logged where it happened (the capture's error, the
  /// verification's mismatch), so the first fallback for it says nothing more.
  bool logged_where_decided;
};

/// Every reason, in the enum's order, which is the order docs/diagnosing.md lists them.
const std::array<FallbackReasonInfo, kFallbackReasonCount>& fallback_reasons();
const FallbackReasonInfo& fallback_reason_info(FallbackReason reason);
inline std::string_view fallback_reason_name(FallbackReason reason) {
  return fallback_reason_info(reason).name;
}
/// The reason called `name`, or nullopt for a name not in the list.
std::optional<FallbackReason> parse_fallback_reason(std::string_view name);

}  // namespace graphdispatch
