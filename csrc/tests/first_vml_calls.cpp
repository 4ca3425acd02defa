// Before any test of the binary: the first call of every oneMKL VML function ATen uses, made on
// one thread (Note [First VML call]).

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <initializer_list>

namespace graphdispatch {
namespace {

// Note [First VML call]
// ATen computes float and double sin, cos, exp, log, sqrt, tanh, ... of contiguous memory with
// oneMKL's vector math (VML, ATen/cpu/vml.h), each intra-op thread on its own chunk (grain 2048
// elements). oneMKL 2024.2, the one torch 2.13's CPU wheels carry, picks each VML function's
// kernel on that function's first call in the process; when several threads make that first call
// at once, one of them can run a low-accuracy kernel over its whole chunk, though every call asks
// for high accuracy (pytorch#188792, seen on Sapphire Rapids Xeons, this project's CI machine).
// Every later call is right. ctest runs each test in a process of its own, so a test whose eager
// oracle makes the process's first call of such an op on a large tensor can compare the graph's
// right values with a wrong oracle: most likely why CpuGraphTest.IntermediatesShareMemoryByLifetime
// failed once ("output 0" is the output's index): GCC evaluates expect_equal's second argument, the
// oracle, first, so its at::sin on 16384 floats was the process's first. A replay never makes a
// first call: warmup and capture run the same ops before it. One call per op and dtype on a single
// element (far below the grain size: one thread) settles every kernel before the first test; the
// pytest session does the same (tests/conftest.py).
class FirstVmlCalls final : public ::testing::Environment {
 public:
  void SetUp() override {
    // The ops ATen routes to VML (IMPLEMENT_VML_MKL in ATen/cpu/vml.h), both dtypes it covers.
    const std::initializer_list<at::Tensor (*)(const at::Tensor&)> ops = {
        &at::acos, &at::asin,  &at::atan, &at::cos, &at::erf,  &at::erfc, &at::erfinv, &at::exp,
        &at::log,  &at::log10, &at::log2, &at::sin, &at::sqrt, &at::tan,  &at::tanh,   &at::trunc};
    for (const auto dtype : {at::kFloat, at::kDouble}) {
      const auto half = at::full({1}, 0.5, at::TensorOptions().dtype(dtype));
      for (auto* op : ops) op(half);
    }
  }
};

// Registered before gtest_main's main() runs the tests; GoogleTest owns the environment.
[[maybe_unused]] const auto* const first_vml_calls =
    ::testing::AddGlobalTestEnvironment(new FirstVmlCalls());

}  // namespace
}  // namespace graphdispatch
