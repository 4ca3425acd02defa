// The CPU graph driven through the runner without Python: recorded once, replayed from C++.
// Eager ATen (the same callable run directly) is the oracle; values are compared exactly.

#include "runtime/cpu_graph/cpu_graph.h"

#include "runtime/graph_runner.h"
#include "runtime/stats.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <thread>

namespace graphdispatch {
namespace {

class CpuGraphTest : public ::testing::Test {
 protected:
  void SetUp() override { Stats::get().reset(); }
  std::shared_ptr<CpuGraphFactory> factory = std::make_shared<CpuGraphFactory>();
};

void expect_equal(const std::vector<c10::IValue>& got, const std::vector<c10::IValue>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_TRUE(at::equal(got[k].toTensor(), want[k].toTensor())) << "output " << k;
  }
}

// A block of ops a transformer runs: matmul with a transposed weight (a view of a static
// input), a multi-output op with an out= overload (native_layer_norm), one without
// (attention), softmax and an elementwise tail.
std::vector<c10::IValue> block(const std::vector<c10::IValue>& in) {
  const auto& x = in[0].toTensor();
  const auto& w = in[1].toTensor();
  auto h = at::matmul(x, w.t());
  auto norm = at::native_layer_norm(h, {h.size(-1)}, {}, {}, 1e-5);
  auto q = std::get<0>(norm).view({1, 2, x.size(0), -1});
  auto attention = std::get<0>(at::_scaled_dot_product_flash_attention_for_cpu(q, q, q));
  auto [top, where] = at::max(attention.softmax(-1), -1);
  return {attention.flatten(0, 1) * 2 + 1, top, where};
}

TEST_F(CpuGraphTest, ReplaysMatchEagerWithAndWithoutOutOverloads) {
  GraphRunner runner(block, {false, true}, factory, RunnerOptions{});
  auto w = at::randn({16, 8});
  for (int i = 0; i < 4; ++i) {
    auto x = at::randn({6, 8});
    expect_equal(runner({x, w}), block({x, w}));
  }
  EXPECT_EQ(Stats::get().captures, 1);
  EXPECT_EQ(Stats::get().replays, 4);
  const auto text = runner.entries().at(0)->graph_description();
  EXPECT_NE(text.find("through out="), std::string::npos) << text;
  EXPECT_EQ(text.find(" 0 copied"), std::string::npos) << text;  // attention has no out=
}

TEST_F(CpuGraphTest, InPlaceOpsOnInputsWriteOncePerCall) {
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    auto x = in[0].toTensor();
    x.mul_(2).add_(1);
    return {x.sum(0, /*keepdim=*/true)};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  for (int i = 0; i < 3; ++i) {
    auto x = at::randn({5, 3});
    auto expected = x.clone();
    auto want = fn({expected});
    expect_equal(runner({x}), want);
    EXPECT_TRUE(at::equal(x, expected));
  }
  EXPECT_EQ(Stats::get().replays, 3);
}

TEST_F(CpuGraphTest, HostReadFailsTheCaptureNamingTheOp) {
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    const auto& x = in[0].toTensor();
    return {x * x.max().item<float>()};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  for (int i = 0; i < 2; ++i) {
    auto x = at::randn({4});
    expect_equal(runner({x}), fn({x}));  // eager's values through the fallback, not a baked max
  }
  auto entry = runner.entries().at(0);
  EXPECT_EQ(entry->reason(), FallbackReason::kCaptureFailed);
  EXPECT_NE(entry->detail().find("aten::_local_scalar_dense"), std::string::npos)
      << entry->detail();
  EXPECT_EQ(Stats::get().fallbacks().at("capture_failed"), 2);
}

TEST_F(CpuGraphTest, DataDependentShapeFailsTheCapture) {
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    return {at::nonzero(in[0].toTensor() > 0)};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  auto x = at::randn({8});
  expect_equal(runner({x}), fn({x}));
  EXPECT_NE(runner.entries().at(0)->detail().find("aten::nonzero"), std::string::npos);
}

TEST_F(CpuGraphTest, RandomOpsDrawNewNumbersOnEveryReplayAsEagerDoes) {
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    const auto& x = in[0].toTensor();
    return {x + at::randn_like(x), at::empty_like(x).uniform_()};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  auto x = at::randn({6});
  at::manual_seed(7);
  std::vector<std::vector<c10::IValue>> got;
  for (int i = 0; i < 3; ++i) got.push_back(runner({x}));
  at::manual_seed(7);
  for (int i = 0; i < 3; ++i) expect_equal(got[i], fn({x}));
  EXPECT_FALSE(at::equal(got[0][0].toTensor(), got[1][0].toTensor()));
  // The generator is where eager leaves it.
  auto after_graph = at::randn({2});
  at::manual_seed(7);
  for (int i = 0; i < 3; ++i) fn({x});
  EXPECT_TRUE(at::equal(after_graph, at::randn({2})));
}

TEST_F(CpuGraphTest, IntermediatesShareMemoryByLifetime) {
  // Ten 64 KiB intermediates, each dead after the next op: the arena holds a few, not ten.
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    auto h = in[0].toTensor();
    for (int i = 0; i < 10; ++i) h = at::sin(h) + 1;
    return {h};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  auto x = at::randn({128, 128});  // 64 KiB
  expect_equal(runner({x}), fn({x}));
  const auto bytes = runner.entries().at(0)->bytes();
  const std::int64_t block = 128 * 128 * 4;
  EXPECT_LE(bytes, 4 * block);  // the input buffer, the output and two live intermediates
  auto y = at::randn({128, 128});
  expect_equal(runner({y}), fn({y}));
}

TEST_F(CpuGraphTest, ProgramKeepsNoStaticInputAlive) {
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    return {at::matmul(in[0].toTensor(), in[1].toTensor().t())};
  };
  GraphRunner runner(fn, {false, true}, factory, RunnerOptions{});
  auto w = at::randn({4, 3});
  c10::weak_intrusive_ptr<c10::StorageImpl> storage(w.storage().getWeakStorageImpl());
  auto x = at::randn({2, 3});
  expect_equal(runner({x, w}), fn({x, w}));
  EXPECT_EQ(runner.num_entries(), 1u);
  w.reset();  // the entry still exists; the weight's memory is freed all the same (case C34)
  EXPECT_TRUE(storage.expired());
  runner.drop_dead_entries();
  EXPECT_EQ(runner.num_entries(), 0u);
}

TEST_F(CpuGraphTest, ConstantsMadeOutsideTheDispatcherAreKept) {
  // A Python number becomes a wrapped-number tensor that only the op holds.
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    const auto& x = in[0].toTensor();
    return {at::mul(x, at::scalar_to_tensor(3.5)), at::add(x, at::ones({1}))};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  for (int i = 0; i < 3; ++i) {
    auto x = at::randn({5});
    expect_equal(runner({x}), fn({x}));
  }
  EXPECT_EQ(Stats::get().replays, 3);
}

// Case C72: a list of new tensors is copied into the recorded ones on every replay.
TEST_F(CpuGraphTest, NewTensorsInAListReplay) {
  auto fn = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    auto parts = at::split_with_sizes_copy(in[0].toTensor(), {2, 3});
    return {parts[0] * 2, parts[1] + 1};
  };
  GraphRunner runner(fn, {false}, factory, RunnerOptions{});
  for (int i = 0; i < 3; ++i) {
    auto x = at::randn({5});
    expect_equal(runner({x}), fn({x}));
  }
  EXPECT_EQ(Stats::get().captures, 1);
  EXPECT_EQ(Stats::get().replays, 3);
}

// Ten ops whose intermediates all stay alive to the sum: a workspace of about ten inputs.
std::vector<c10::IValue> wide(const std::vector<c10::IValue>& in) {
  const auto& x = in[0].toTensor();
  std::vector<at::Tensor> parts;
  for (int i = 0; i < 10; ++i) parts.push_back(at::sin(x + i));
  auto total = parts[0];
  for (int i = 1; i < 10; ++i) total = total + parts[i] * parts[i - 1];
  return {total};
}

TEST_F(CpuGraphTest, EntriesShareOneWorkspaceSizedForTheLargest) {
  // Note [Shared workspace]: four sizes of one graph, the largest captured first (as warmup
  // orders them), and a second graph hold one block, as large as the largest need; every
  // replay matches eager.
  GraphRunner first(wide, {false}, factory, RunnerOptions{});
  GraphRunner second(wide, {false}, factory, RunnerOptions{});
  auto need = [&](std::int64_t n) { return first.entry_for({at::empty({n})})->shared_bytes(); };
  for (std::int64_t n : {1024, 256, 64, 16}) {
    auto x = at::randn({n});
    expect_equal(first({x}), wide({x}));
    EXPECT_EQ(Stats::get().workspace_bytes, need(1024));
  }
  EXPECT_GT(need(1024), 9 * 1024 * 4);  // nine 1024-float intermediates alive together
  EXPECT_EQ(first.entry_bytes(), first.own_entry_bytes() + need(1024));
  auto x = at::randn({1024});
  expect_equal(second({x}), wide({x}));
  for (std::int64_t n : {16, 1024, 64, 256}) {  // each entry in turn: values, one block
    auto y = at::randn({n});
    expect_equal(first({y}), wide({y}));
    expect_equal(second({x * 2}), wide({x * 2}));
  }
  EXPECT_EQ(Stats::get().workspace_bytes, need(1024));
  // A larger need grows the pool: the entries not replaying move to the new block at once, and
  // the old one is freed (case C87).
  auto big = at::randn({4096});
  expect_equal(first({big}), wide({big}));
  EXPECT_EQ(Stats::get().workspace_bytes, need(4096));
  for (std::int64_t n : {16, 1024, 64, 256}) first({at::randn({n})});
  second({x});
  EXPECT_EQ(Stats::get().workspace_bytes, need(4096));
  first.clear();
  second.clear();
  EXPECT_EQ(Stats::get().workspace_bytes, 0);  // freed with its last entry
}

TEST_F(CpuGraphTest, ConcurrentReplaysOfEntriesSharingAWorkspaceStayExact) {
  // Replays of different entries on different threads each lease their own block.
  GraphRunner runner(wide, {false}, factory, RunnerOptions{});
  std::vector<at::Tensor> shapes{at::randn({512}), at::randn({500})};
  for (const auto& x : shapes) runner({x});
  std::vector<std::thread> threads;
  std::vector<int> wrong(shapes.size(), 0);
  for (std::size_t t = 0; t < shapes.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        auto x = at::randn_like(shapes[t]);
        wrong[t] += !at::equal(runner({x})[0].toTensor(), wide({x})[0].toTensor());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong, std::vector<int>(shapes.size(), 0));
  EXPECT_LE(Stats::get().workspace_bytes, 2 * runner.entry_for({shapes[0]})->shared_bytes());
}

}  // namespace
}  // namespace graphdispatch
