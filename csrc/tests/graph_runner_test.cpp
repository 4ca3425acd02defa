// The runner driven without Python: a C++ callable, the emulated graph, and a fake graph that
// records what the runner asked of it (the way PyTorch tests device-generic code against a
// fake guard). Eager ATen is the oracle.

#include "runtime/graph_runner.h"

#include "runtime/stats.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <thread>

namespace graphdispatch {
namespace {

struct GraphLog {
  std::atomic<int> created{0}, captured{0}, aborted{0}, replayed{0}, reset{0};
};

/// Emulated semantics plus a log of the protocol.
class FakeGraph final : public DeviceGraph {
 public:
  explicit FakeGraph(GraphLog& log) : log_(log) {}
  void capture_begin(std::function<void()> rerun) override { rerun_ = std::move(rerun); }
  void capture_end(const std::vector<c10::IValue>&) override { ++log_.captured; }
  void capture_abort() noexcept override { ++log_.aborted; }
  void replay() override {
    ++log_.replayed;
    rerun_();
  }
  void reset() override { ++log_.reset; }
  bool runs_during_capture() const override { return true; }

 private:
  GraphLog& log_;
  std::function<void()> rerun_;
};

class FakeFactory final : public DeviceGraphFactory {
 public:
  std::unique_ptr<DeviceGraph> create(c10::Device) override {
    ++log.created;
    return std::make_unique<FakeGraph>(log);
  }
  bool is_capturing(c10::Device) override { return false; }
  std::string name() const override { return "fake"; }
  GraphLog log;
};

std::vector<c10::IValue> mul_add(const std::vector<c10::IValue>& in) {
  return {in[0].toTensor() * 2 + in[1].toTensor()};
}

/// A graph whose replay does nothing: its outputs stay what the capture computed.
class StaleGraph final : public DeviceGraph {
 public:
  void capture_begin(std::function<void()>) override {}
  void capture_end(const std::vector<c10::IValue>&) override {}
  void capture_abort() noexcept override {}
  void replay() override {}
  void reset() override {}
  bool runs_during_capture() const override { return false; }
  std::optional<std::int64_t> pool_bytes() const override { return 1000; }
};

class StaleFactory final : public DeviceGraphFactory {
 public:
  std::unique_ptr<DeviceGraph> create(c10::Device) override {
    return std::make_unique<StaleGraph>();
  }
  bool is_capturing(c10::Device) override { return false; }
  std::string name() const override { return "stale"; }
};

class GraphRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override { Stats::get().reset(); }
  std::shared_ptr<FakeFactory> factory = std::make_shared<FakeFactory>();
};

TEST_F(GraphRunnerTest, ReplayMatchesEagerAndCapturesOncePerSignature) {
  GraphRunner runner(mul_add, {false, false}, factory, RunnerOptions{});
  for (int i = 0; i < 4; ++i) {
    auto a = at::randn({3, 5}), b = at::randn({3, 5});
    auto out = runner({a, b});
    EXPECT_TRUE(at::equal(out[0].toTensor(), a * 2 + b));
  }
  EXPECT_EQ(factory->log.created, 1);
  EXPECT_EQ(factory->log.replayed, 4);
  EXPECT_EQ(Stats::get().captures, 1);
  EXPECT_EQ(Stats::get().cache_hits, 3);
}

TEST_F(GraphRunnerTest, SafeOutputsAreNotOverwrittenByLaterReplays) {
  GraphRunner runner(mul_add, {false, false}, factory, RunnerOptions{});
  auto a1 = at::randn({4}), b1 = at::randn({4});
  auto y1 = runner({a1, b1})[0].toTensor();
  runner({at::randn({4}), at::randn({4})});
  EXPECT_TRUE(at::equal(y1, a1 * 2 + b1));
}

TEST_F(GraphRunnerTest, UnsafeOutputsAreFreshTensorsOverTheStaticOutputs) {
  RunnerOptions options;
  options.safe_output_mode = false;
  GraphRunner runner(mul_add, {false, false}, factory, options);
  auto a1 = at::randn({4}), b1 = at::randn({4});
  auto y1 = runner({a1, b1})[0].toTensor();
  const void* static_output = y1.data_ptr();
  y1.unsqueeze_(0);  // the caller's metadata change stays on the caller's object (case C31)
  auto a2 = at::randn({4}), b2 = at::randn({4});
  auto y2 = runner({a2, b2})[0].toTensor();
  EXPECT_FALSE(y1.is_same(y2));
  EXPECT_EQ(y2.data_ptr(), static_output);
  // Note [Outputs still held]: y1, held across the replay, was moved out of its way.
  EXPECT_NE(y1.data_ptr(), static_output);
  EXPECT_TRUE(at::equal(y1[0], a1 * 2 + b1));
  EXPECT_EQ(Stats::get().held_outputs_copied, 1);
  EXPECT_EQ(y2.sizes(), at::IntArrayRef({4}));
  EXPECT_TRUE(at::equal(y2, a2 * 2 + b2));
  // Growing it would move the memory the graph writes: its storage cannot be resized.
  EXPECT_THROW(y2.resize_({1000}), c10::Error);
  EXPECT_TRUE(at::equal(runner({a2, b2})[0].toTensor(), a2 * 2 + b2));
}

TEST_F(GraphRunnerTest, EvictionResetsGraphsAndSurvivorsStayCorrect) {
  RunnerOptions options;
  options.max_entries = 2;
  std::vector<std::string> logged;
  options.log = [&](const std::string& m) { logged.push_back(m); };
  GraphRunner runner(mul_add, {false, false}, factory, options);
  for (int n = 1; n <= 5; ++n) runner({at::randn({n}), at::randn({n})});
  EXPECT_EQ(runner.num_entries(), 2u);
  EXPECT_EQ(factory->log.reset, 3);
  EXPECT_EQ(Stats::get().evictions, 3);
  EXPECT_EQ(logged.size(), 1u);  // one line when eviction starts, not one per eviction
  auto a = at::randn({5}), b = at::randn({5});
  EXPECT_TRUE(at::equal(runner({a, b})[0].toTensor(), a * 2 + b));
}

TEST_F(GraphRunnerTest, CopySkippedWhenCallerPassesTheBuffer) {
  GraphRunner runner(mul_add, {false, false}, factory, RunnerOptions{});
  auto a = at::randn({8}), b = at::randn({8});
  runner({a, b});
  auto entry = runner.entry_for({a, b});
  ASSERT_NE(entry, nullptr);
  auto buffers = entry->arguments({a, b});
  buffers[0].toTensor().copy_(a);
  const auto copied_before = Stats::get().bytes_copied.load();
  auto out = runner({buffers[0], b});
  EXPECT_TRUE(at::equal(out[0].toTensor(), a * 2 + b));
  EXPECT_EQ(Stats::get().copies_skipped, 1);
  EXPECT_EQ(Stats::get().bytes_copied - copied_before, static_cast<int64_t>(b.nbytes()));
}

TEST_F(GraphRunnerTest, MutationOfACallerTensorAppliedOncePerCall) {
  auto add_one = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    in[0].toTensor().add_(1);
    return {in[0].toTensor() * in[1].toTensor()};
  };
  GraphRunner runner(add_one, {false, false}, factory, RunnerOptions{});
  auto x = at::zeros({8}), y = at::arange(8, at::kFloat);
  for (int i = 1; i <= 3; ++i) {
    auto out = runner({x, y})[0].toTensor();
    EXPECT_TRUE(at::equal(out, y * i));
  }
  EXPECT_TRUE(at::equal(x, at::full({8}, 3.0)));
}

TEST_F(GraphRunnerTest, CaptureFailureBecomesNegativeEntryAndFallsBack) {
  int calls = 0;
  auto flaky = [&](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    ++calls;
    // Stands in for a host sync that capture forbids: fails on the entry's buffers only.
    TORCH_CHECK(calls != 2, "operation not permitted when stream is capturing");
    return {in[0].toTensor() + 1};
  };
  RunnerOptions options;
  options.warmup_iters = 1;
  GraphRunner runner(flaky, {false}, factory, options);
  auto x = at::randn({3});
  EXPECT_TRUE(at::equal(runner({x})[0].toTensor(), x + 1));
  EXPECT_TRUE(at::equal(runner({x})[0].toTensor(), x + 1));
  EXPECT_EQ(factory->log.aborted, 1);
  EXPECT_EQ(Stats::get().captures, 0);
  EXPECT_EQ(Stats::get().fallbacks().at("capture_failed"), 2);
  auto entry = runner.entry_for({x});
  ASSERT_TRUE(entry && entry->is_negative());
  EXPECT_NE(entry->detail().find("not permitted"), std::string::npos);
  EXPECT_EQ(factory->log.created, 1);  // not retried on every call
}

TEST_F(GraphRunnerTest, EachSetOfWeightsGetsItsOwnEntry) {
  auto linear = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    return {at::matmul(in[0].toTensor(), in[1].toTensor())};
  };
  GraphRunner runner(linear, {false, true}, factory, RunnerOptions{});
  auto x = at::randn({2, 4});
  auto w1 = at::randn({4, 4}), w2 = at::randn({4, 4});
  for (int round = 0; round < 3; ++round) {
    for (const auto& w : {w1, w2}) {
      EXPECT_TRUE(at::allclose(runner({x, w})[0].toTensor(), at::matmul(x, w)));
    }
  }
  EXPECT_EQ(Stats::get().captures, 2);  // case C41: one per weight set, then replays
  EXPECT_EQ(Stats::get().replays, 6);
  EXPECT_EQ(Stats::get().recaptures, 0);
  EXPECT_EQ(runner.num_entries(), 2u);
}

TEST_F(GraphRunnerTest, EntriesHoldStaticInputsWeakly) {
  auto linear = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    return {at::matmul(in[0].toTensor(), in[1].toTensor())};
  };
  const auto live_before = Stats::get().live_entries.load();
  const auto bytes_before = Stats::get().live_entry_bytes.load();
  GraphRunner runner(linear, {false, true}, factory, RunnerOptions{});
  auto x = at::randn({2, 4});
  auto w = at::randn({4, 4});
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> weak(w.getIntrusivePtr());
  runner({x, w});
  runner({x, w});
  EXPECT_EQ(Stats::get().live_entries - live_before, 1);
  EXPECT_GT(Stats::get().live_entry_bytes - bytes_before, 0);
  w.reset();
  EXPECT_TRUE(weak.expired());  // case C34: the entry does not keep the weight alive
  runner.drop_dead_entries();
  EXPECT_EQ(runner.num_entries(), 0u);
  EXPECT_EQ(Stats::get().live_entries.load(), live_before);
  EXPECT_EQ(Stats::get().live_entry_bytes.load(), bytes_before);
}

TEST_F(GraphRunnerTest, StaticInputThatKeepsMovingFallsBackAfterMaxRecaptures) {
  auto step = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    return {in[0].toTensor() * 0.5 + in[1].toTensor()};
  };
  RunnerOptions options;
  options.max_recaptures = 2;
  std::vector<std::string> logged;
  options.log = [&](const std::string& m) { logged.push_back(m); };
  GraphRunner runner(step, {true, false}, factory, options);
  auto x = at::randn({4});
  auto h = at::zeros({4});
  for (int i = 0; i < 6; ++i) {
    auto expected = h * 0.5 + x;
    auto next = runner({h, x})[0].toTensor();
    EXPECT_TRUE(at::allclose(next, expected));
    h = next;  // the state is replaced: the entry that read the old one can never replay
    runner.drop_dead_entries();
  }
  EXPECT_EQ(Stats::get().captures, 3);  // case C35: 1 + max_recaptures
  EXPECT_EQ(Stats::get().recaptures, 2);
  EXPECT_EQ(Stats::get().fallbacks().at("static_inputs_moving"), 3);
  int warnings = 0;
  for (const auto& m : logged) warnings += m.find("static_inputs_moving") != std::string::npos;
  EXPECT_EQ(warnings, 1);

  // Case C47: the state stops moving. The kStableCalls-th call in a row with the same `h`
  // refills the budget: it captures, every later one replays.
  const auto replays = Stats::get().replays.load();
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(at::allclose(runner({h, x})[0].toTensor(), h * 0.5 + x));
  }
  EXPECT_EQ(Stats::get().captures, 4);
  EXPECT_EQ(Stats::get().fallbacks().at("static_inputs_moving"), 3 + kStableCalls - 1);
  EXPECT_EQ(Stats::get().replays - replays, 6 - (kStableCalls - 1));
}

TEST_F(GraphRunnerTest, ProcessBudgetEvictsAcrossRunners) {
  // Case C49: one budget for every runner; the other runner's oldest entry goes first.
  RunnerOptions options;
  GraphRunner probe(mul_add, {false, false}, factory, options);
  probe({at::randn({64}), at::randn({64})});
  const auto one = probe.entry_bytes();
  probe.clear();
  options.max_total_entry_bytes = one * 3 / 2;
  GraphRunner a(mul_add, {false, false}, factory, options),
      b(mul_add, {false, false}, factory, options);
  auto x = at::randn({64}), y = at::randn({64});
  a({x, y});
  EXPECT_EQ(a.num_entries(), 1u);
  EXPECT_TRUE(at::equal(b({x, y})[0].toTensor(), x * 2 + y));
  EXPECT_EQ(a.num_entries(), 0u);  // evicted by b's capture
  EXPECT_EQ(b.num_entries(), 1u);
  EXPECT_EQ(Stats::get().evictions, 1);
  EXPECT_TRUE(at::equal(a({x, y})[0].toTensor(), x * 2 + y));  // a captures again, b's goes
  EXPECT_EQ(b.num_entries(), 0u);
  EXPECT_EQ(Stats::get().evictions, 2);
}

TEST_F(GraphRunnerTest, WrittenInputOverlappingAStaticInputFallsBack) {
  // Case C27: forward(view): view.add_(1); return buf.sum(), called with buf[0].
  auto write_then_read = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    in[0].toTensor().add_(1);
    return {in[1].toTensor().sum()};
  };
  RunnerOptions options;
  options.writes_known = true;
  options.written_inputs = {0};
  GraphRunner runner(write_then_read, {false, true}, factory, options);
  auto buf = at::zeros({4});
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(runner({buf.narrow(0, 0, 1), buf})[0].toTensor().item<float>(), 1.0f * i);
  }
  EXPECT_EQ(Stats::get().fallbacks().at("aliased_inputs"), 3);
  // A separate tensor is no alias: the same entry replays.
  auto other = at::zeros({1});
  EXPECT_EQ(runner({other, buf})[0].toTensor().item<float>(), 3.0f);
  EXPECT_EQ(Stats::get().fallbacks().at("aliased_inputs"), 3);
  EXPECT_TRUE(at::equal(other, at::ones({1})));
}

TEST_F(GraphRunnerTest, RunnerCalledInsideAnotherCaptureRunsItsWork) {
  // A custom op calling another compiled model: the outer warmup and capture hold the device's
  // capture lock, so the inner runner must run its callable rather than capture.
  GraphRunner inner(mul_add, {false, false}, factory, RunnerOptions{});
  auto outer_fn = [&](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    return {inner({in[0], in[1]})[0].toTensor() + 1};
  };
  RunnerOptions options;
  options.warmup_iters = 2;
  GraphRunner outer(outer_fn, {false, false}, factory, options);
  auto a = at::randn({4}), b = at::randn({4});
  EXPECT_TRUE(at::allclose(outer({a, b})[0].toTensor(), a * 2 + b + 1));
  EXPECT_EQ(outer.num_entries(), 1u);
}

TEST_F(GraphRunnerTest, OverlappingInputsThatNothingWritesAreCaptured) {
  RunnerOptions options;
  options.writes_known = true;  // mul_add writes nothing
  GraphRunner runner(mul_add, {false, false}, factory, options);
  auto base = at::randn({100});
  auto a = base.narrow(0, 0, 10), b = base.narrow(0, 5, 10);
  runner({a, b});
  EXPECT_TRUE(at::equal(runner({a, b})[0].toTensor(), a * 2 + b));
  EXPECT_EQ(Stats::get().fallbacks().count("aliased_inputs"), 0u);
  EXPECT_EQ(Stats::get().replays, 2);
}

TEST_F(GraphRunnerTest, AliasedDynamicInputsFallBack) {
  GraphRunner runner(mul_add, {false, false}, factory, RunnerOptions{});
  auto base = at::randn({100});
  auto a = base.narrow(0, 0, 10), b = base.narrow(0, 5, 10);
  EXPECT_TRUE(at::equal(runner({a, b})[0].toTensor(), a * 2 + b));
  EXPECT_EQ(Stats::get().fallbacks().at("aliased_inputs"), 1);
  EXPECT_EQ(factory->log.created, 0);
}

TEST_F(GraphRunnerTest, ConcurrentFirstCallsCaptureOnce) {
  auto slow = [](const std::vector<c10::IValue>& in) -> std::vector<c10::IValue> {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return {in[0].toTensor() * 3};
  };
  GraphRunner runner(slow, {false}, factory, RunnerOptions{});
  constexpr int kThreads = 16;
  std::barrier start(kThreads);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto x = at::full({64}, static_cast<double>(t));
      start.arrive_and_wait();
      if (!at::equal(runner({x})[0].toTensor(), x * 3)) ++wrong;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(factory->log.created, 1);
  EXPECT_EQ(Stats::get().captures, 1);
}

TEST_F(GraphRunnerTest, EmulatedGraphMatchesEager) {
  GraphRunner runner(mul_add, {false, false}, std::make_shared<EmulatedGraphFactory>(),
                     RunnerOptions{});
  for (int i = 0; i < 3; ++i) {
    auto a = at::randn({2, 2}), b = at::randn({2, 2});
    EXPECT_TRUE(at::equal(runner({a, b})[0].toTensor(), a * 2 + b));
  }
}

TEST_F(GraphRunnerTest, VerificationCatchesAStaleReplayAndDisablesTheEntry) {
  RunnerOptions options;
  options.verify_replays = 3;
  std::vector<std::string> logged;
  options.log = [&](const std::string& m) { logged.push_back(m); };
  GraphRunner runner(mul_add, {false, false}, std::make_shared<StaleFactory>(), options);
  auto a1 = at::randn({4}), b1 = at::randn({4});
  // The capture computed these very inputs: the stale replay is right once.
  EXPECT_TRUE(at::equal(runner({a1, b1})[0].toTensor(), a1 * 2 + b1));
  EXPECT_TRUE(Stats::get().fallbacks().empty());
  for (int i = 0; i < 2; ++i) {
    auto a = at::randn({4}), b = at::randn({4});
    EXPECT_TRUE(at::equal(runner({a, b})[0].toTensor(), a * 2 + b));
  }
  EXPECT_EQ(Stats::get().fallbacks().at("verify_mismatch"), 2);  // the mismatch, then a fallback
  EXPECT_EQ(Stats::get().verified_replays, 2);
  EXPECT_EQ(Stats::get().replays, 2);
  ASSERT_EQ(logged.size(), 1u);  // one warning, not one per fallback
  EXPECT_NE(logged[0].find("output 0: max |difference|"), std::string::npos) << logged[0];
  EXPECT_NE(logged[0].find("0: [4]/float32 strides (1)"), std::string::npos) << logged[0];
  auto entry = runner.entry_for({a1, b1});
  ASSERT_TRUE(entry && entry->is_negative());
  EXPECT_EQ(entry->reason(), FallbackReason::kVerifyMismatch);
}

TEST_F(GraphRunnerTest, VerificationPassesOnAGoodGraphAndStopsAfterK) {
  RunnerOptions options;
  options.verify_replays = 2;
  GraphRunner runner(mul_add, {false, false}, factory, options);
  for (int i = 0; i < 5; ++i) {
    auto a = at::randn({4}), b = at::randn({4});
    EXPECT_TRUE(at::equal(runner({a, b})[0].toTensor(), a * 2 + b));
  }
  EXPECT_EQ(Stats::get().verified_replays, 2);
  EXPECT_EQ(Stats::get().replays, 5);
  EXPECT_TRUE(Stats::get().fallbacks().empty());
}

TEST_F(GraphRunnerTest, ByteBudgetCountsBuffersAndPoolAndEvicts) {
  RunnerOptions options;
  // Each entry: two float buffers of n elements plus the 1000 pool bytes StaleGraph reports.
  options.max_entry_bytes = 2 * (2 * 4 * 4 + 1000);
  GraphRunner runner(mul_add, {false, false}, std::make_shared<StaleFactory>(), options);
  runner.capture({at::randn({4}), at::randn({4})});
  EXPECT_EQ(runner.entry_bytes(), 2u * 4 * 4 + 1000);
  EXPECT_EQ(runner.entries().at(0)->bytes(), 2 * 4 * 4 + 1000);
  runner.capture({at::randn({4, 1}), at::randn({4, 1})});
  EXPECT_EQ(runner.num_entries(), 2u);
  runner.capture({at::randn({2, 2}), at::randn({2, 2})});
  EXPECT_EQ(runner.num_entries(), 2u);
  EXPECT_EQ(Stats::get().evictions, 1);
  EXPECT_EQ(runner.entry_for({at::randn({4}), at::randn({4})}), nullptr);  // FIFO: the oldest
}

}  // namespace
}  // namespace graphdispatch
