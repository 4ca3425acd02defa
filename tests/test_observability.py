"""Seeing and trusting what the backend does (docs/usage.md, "Seeing what it does"): profiler
ranges, replay verification, the memory budget and warm-up. Oracles: a torch.profiler trace, eager
values, counted stats."""

from __future__ import annotations

import io
import logging
from collections import Counter

import pytest
import torch
import torch._dynamo
from cases.cases_helpers import GRAPH_ONLY, compiled, graph_kind, runner  # noqa: F401

import graphdispatch
from graphdispatch import _C
from graphdispatch._framework_graphs import FrameworkGraph

# Verification, budgets and warm-up on the emulated and the CPU graph.
pytestmark = pytest.mark.usefixtures("graph_kind")

RANGES = (
    "graphdispatch::capture",
    "graphdispatch::replay",
    "graphdispatch::copy_inputs",
    "graphdispatch::fallback",
)


def mul_add(a, b):
    return (a * 2 + b,)


def range_counts(prof) -> Counter:
    return Counter(e.name for e in prof.events() if e.name.startswith("graphdispatch::"))


# ---- profiler ranges ------------------------------------------------------------------------


def test_each_step_kind_is_a_named_profiler_range():
    r = runner(mul_add, [False, False], verify_replays=1)
    a, b = torch.randn(4), torch.randn(4)
    with (
        torch.no_grad(),
        torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof,
    ):
        r(a, b)  # capture, then a verified replay that copies both inputs in
        r(*r.input_buffers(a, b))  # the entry's own buffers: a replay without copies
        r(a, a)  # aliased inputs: the fallback path
    assert range_counts(prof) == {
        "graphdispatch::capture": 1,
        "graphdispatch::verify": 1,
        "graphdispatch::replay": 2,
        "graphdispatch::copy_inputs": 1,
        "graphdispatch::fallback": 1,
    }


def linear_relu(x, w, b):
    return (torch.relu(torch.addmm(b, x, w)) * 2,)


def test_a_cpu_graph_replay_shows_each_op_it_replays(graph_kind):
    """Note [Steps in the profiler]: each replayed op is a range inside graphdispatch::replay,
    named as eager's call of it; the oracle is eager's own trace of the same function."""
    if graph_kind != "cpu":
        pytest.skip("the emulated graph re-runs the FX graph, whose ops the dispatcher profiles")
    args = torch.randn(8, 16), torch.randn(16, 4), torch.randn(4)
    r = runner(linear_relu, [False, True, True])
    with torch.no_grad():
        r(*args)  # capture
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as eager:
            linear_relu(*args)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            r(*args)
            r(*args)
    top = Counter(e.name for e in eager.events() if e.cpu_parent is None)
    replayed = Counter(
        e.name
        for e in prof.events()
        if e.cpu_parent is not None and e.cpu_parent.name == "graphdispatch::replay"
    )
    for name in top:
        assert replayed[name] == 2 * top[name], (name, replayed)


def test_a_graph_refused_as_a_whole_falls_back_inside_a_range():
    fn = compiled(lambda x: x * x.sum().item())
    x = torch.randn(8)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        fn(x)  # compile outside the profile
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            torch.testing.assert_close(fn(x), x * x.sum().item())
    assert range_counts(prof) == {"graphdispatch::fallback": 1}
    assert graphdispatch.stats()["fallbacks"] == {"data_dependent": 2}


# ---- replay verification --------------------------------------------------------------------


class StaleGraphs:
    """A framework-graph factory whose graphs replay nothing: the static outputs keep what the
    capture computed, as a graph that lost its kernels' inputs would."""

    name = "stale"

    def create(self, device):
        class Stale:
            def capture_begin(self):
                pass

            def capture_end(self):
                pass

            def replay(self):
                pass

            def reset(self):
                pass

        return FrameworkGraph(Stale(), {}, [], lambda: None)

    def is_capturing(self, device):
        return False


def stale_runner(fn, n, **kwargs):
    return _C.GraphRunner(
        fn,
        [False] * n,
        _C.PyGraphFactory(StaleGraphs()),
        log=logging.getLogger("graphdispatch").warning,
        **kwargs,
    )


def test_verification_catches_a_stale_replay(caplog):
    r = stale_runner(mul_add, 2, verify_replays=2)
    a1, b1 = torch.randn(4), torch.randn(4)
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        assert torch.equal(r(a1, b1)[0], a1 * 2 + b1)  # the capture's own inputs: right once
        for _ in range(3):
            a, b = torch.randn(4), torch.randn(4)
            assert torch.equal(r(a, b)[0], a * 2 + b)  # the non-graph result, every time
    warnings = [rec.getMessage() for rec in caplog.records if rec.levelno == logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "output 0: max |difference|" in warnings[0]
    assert "0: [4]/float32 strides (1); 1: [4]/float32 strides (1)" in warnings[0]
    stats = graphdispatch.stats()
    # The mismatching call and the two after it run without a graph.
    assert stats["fallbacks"] == {"verify_mismatch": 3}
    assert stats["verified_replays"] == 2 and stats["replays"] == 2
    assert r.entry_reason(a1, b1)[0] == "verify_mismatch"


def test_without_verification_the_stale_replay_goes_unnoticed():
    # The oracle the option exists for: the same graph, unchecked, returns stale values.
    r = stale_runner(mul_add, 2)
    r(torch.randn(4), torch.randn(4))
    a, b = torch.randn(4), torch.randn(4)
    assert not torch.equal(r(a, b)[0], a * 2 + b)
    assert graphdispatch.stats()["fallbacks"] == {}


def test_mismatch_gives_the_caller_eager_mutations():
    def add_into(x, y):
        x.add_(y)
        return (x * 1,)

    r = stale_runner(add_into, 2, verify_replays=5, written_inputs=[0])
    r(torch.zeros(3), torch.ones(3))
    x, y = torch.full((3,), 5.0), torch.full((3,), 2.0)
    (out,) = r(x, y)
    assert torch.equal(x, torch.full((3,), 7.0))  # applied once, with eager's values
    assert torch.equal(out, torch.full((3,), 7.0))


def test_verified_replays_through_torch_compile_match_eager_and_random_ops_agree():
    # A correct graph passes verification, random ops included: both paths draw from one RNG
    # state, and the call's draws are eager's.
    def fn(x):
        return x * 3 + torch.rand_like(x)

    G = compiled(fn, verify_replays=3)
    for seed in range(4):
        x = torch.randn(6)
        torch.manual_seed(seed)
        expected = fn(x)
        torch.manual_seed(seed)
        torch.testing.assert_close(G(x), expected, rtol=0, atol=0)
    stats = graphdispatch.stats()
    assert stats["verified_replays"] == 3 and stats["replays"] == 4
    assert stats["fallbacks"] == {}


_JITTER = {"calls": 0}


@torch.library.custom_op("graphdispatch_test::jitter", mutates_args=())
def jitter(x: torch.Tensor) -> torch.Tensor:
    """x plus 1e-6 on every other call: a kernel whose low bits vary from run to run."""
    _JITTER["calls"] += 1
    return x + 1e-6 * (_JITTER["calls"] % 2)


@jitter.register_fake
def _(x):
    return torch.empty_like(x)


@pytest.mark.parametrize(
    "route, fallbacks", [("graph_only", {"verify_mismatch": 3}), ("graph_with_compile", {})]
)
def test_graph_only_compares_exactly_and_graph_with_compile_within_tolerances(
    monkeypatch, route, fallbacks
):
    from graphdispatch import _backend as backend

    # Inductor replaced by the FX graph itself: the tolerances are checked here, not Inductor.
    monkeypatch.setattr(backend, "_inductor", lambda gm, example_inputs, cudagraphs: gm.forward)
    G = torch.compile(
        lambda x: jitter(x * 2),
        backend="graphdispatch",
        options={route: True, "device_graph": "emulated", "verify_replays": 2},
    )
    with torch.no_grad():
        for _ in range(3):
            x = torch.ones(4)
            torch.testing.assert_close(G(x), x * 2, rtol=0, atol=1e-5)
    # graph_only: the first replay differs by 1e-6 and disables the entry, the rest fall back.
    assert graphdispatch.stats()["fallbacks"] == fallbacks


def test_verify_options_are_checked():
    with pytest.raises(
        ValueError, match="'verify_replays': expected an int in \\[0, 2\\*\\*63 - 1\\]"
    ):
        graphdispatch.check_options(verify_replays=-1)
    with pytest.raises(ValueError, match="'verify_rtol': expected a finite float >= 0, got nan"):
        graphdispatch.check_options(verify_rtol=float("nan"))
    with pytest.raises(TypeError, match="'verify_atol': expected float, got str"):
        graphdispatch.check_options(verify_atol="0")
    assert graphdispatch.check_options(verify_atol=0)["verify_atol"] == 0.0
    from graphdispatch import config

    floats = [option for option in config.OPTIONS if option.type is float]
    assert floats and all(option.low == 0 and option.high is not None for option in floats)
    assert config._parse_env("verify_rtol", " 1e-3 ") == 1e-3
    for text in ("1_0", "nan", "inf", "0x1", "١"):
        with pytest.raises(ValueError, match="expected a decimal number"):
            config._parse_env("verify_atol", text)


# ---- memory budget --------------------------------------------------------------------------


class PoolGraphs(StaleGraphs):
    """Graphs whose capture grows the device's reserved memory by ``pool_bytes``, read by the
    adapter around the capture as it reads torch.cuda.memory_reserved."""

    name = "pool"

    def __init__(self, pool_bytes):
        self.pool_bytes = pool_bytes
        self.reserved = 10_000

    def create(self, device):
        graphs = self

        class Recording:
            def capture_begin(self):
                pass

            def capture_end(self):
                graphs.reserved += graphs.pool_bytes

            def replay(self):
                pass

            def reset(self):
                pass

        return FrameworkGraph(Recording(), {}, [], lambda: None, reserved=lambda: self.reserved)


def test_entry_bytes_count_buffers_and_outputs(graph_kind):
    r = runner(mul_add, [False, False], max_entry_bytes=0)
    r.capture(torch.randn(8), torch.randn(8))
    (entry,) = r.entries()
    # Two float32 input buffers of 8, then on the emulated graph (no pool) the output of 8; the
    # CPU graph's arena holds the output in a 64-byte block, and the constant 2 (a Python number
    # wrapped as an 8-byte tensor), and its `a * 2` is in the shared workspace (one 64-byte
    # block), which the runner's bytes count once.
    graph_bytes, shared = (8 * 4, 0) if graph_kind == "emulated" else (64 + 8, 64)
    assert entry["bytes"] == 2 * 8 * 4 + graph_bytes and entry["shared_bytes"] == shared
    assert r.entry_bytes == entry["bytes"] + shared
    assert graphdispatch.stats()["workspace_bytes"] == shared
    assert entry["captured"] and entry["replays"] == 0


@pytest.mark.parametrize("eviction, survivor", [("fifo", 4), ("lru", 2)])
def test_budget_evicts_by_bytes_including_pool_memory(eviction, survivor):
    def per_entry(n):  # two buffers of n float32 plus 100 pool bytes
        return 2 * n * 4 + 100

    r = _C.GraphRunner(
        mul_add,
        [False, False],
        _C.PyGraphFactory(PoolGraphs(100)),
        max_entry_bytes=per_entry(3) + per_entry(4),
        eviction=eviction,
    )
    for n in (2, 4):
        r.capture(torch.randn(n), torch.randn(n))
    assert r.entry_bytes == per_entry(2) + per_entry(4)
    r(torch.randn(2), torch.randn(2))  # a use: LRU keeps n=2
    r.capture(torch.randn(3), torch.randn(3))  # over budget: the FIFO or LRU victim goes
    sizes = sorted(int(e["signature"].split("[")[1].split("]")[0]) for e in r.entries())
    assert sizes == sorted([3, survivor])
    assert graphdispatch.stats()["evictions"] == 1
    assert r.entry_bytes == per_entry(3) + per_entry(survivor)


def test_budget_through_torch_compile_matches_eager(graph_kind):
    # An entry holds its input buffer and, on the emulated graph, its output; the CPU graph's
    # arena holds the output in a 64-byte block and the constant 1, and `sin` is in the shared
    # workspace, counted once (64 bytes).
    per_entry = (lambda n: 2 * n * 4) if graph_kind == "emulated" else (lambda n: n * 4 + 64 + 8)
    shared = 0 if graph_kind == "emulated" else 64
    # dynamic=True: one graph, so one runner (and one budget) sees every size.
    G = torch.compile(
        lambda x: x.sin() + 1,
        backend="graphdispatch",
        dynamic=True,
        options={**GRAPH_ONLY, "max_entry_bytes": per_entry(16) + per_entry(15) + shared},
    )
    for n in (16, 16, 15, 14, 16):
        x = torch.randn(n)
        torch.testing.assert_close(G(x), x.sin() + 1, rtol=0, atol=0)
    stats = graphdispatch.stats()
    # 16 and 15 fit, 14 evicts 16, which then evicts 15.
    assert stats["captures"] == 4 and stats["evictions"] == 2, stats


# ---- warm-up --------------------------------------------------------------------------------


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_warmup_captures_every_input_set_and_returns_the_delta(monkeypatch):
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal
    model = torch.nn.Linear(4, 3)
    G = torch.compile(model, backend="graphdispatch", options=GRAPH_ONLY, dynamic=False)
    sets = [(torch.randn(n, 4),) for n in (1, 2, 4)] + [{"input": torch.randn(8, 4)}]
    delta = graphdispatch.warmup(G, sets)
    assert (
        delta["captures"] == 4 and delta["fallbacks"] == {} and delta["routes"] == {"graph_only": 4}
    )
    assert "graphdispatch warm-up" not in __import__("sys").stderr.getvalue()  # no bar
    # Serving afterwards: replays only, eager's values.
    before = graphdispatch.stats()
    with torch.no_grad():
        for n in (4, 1, 8, 2):
            x = torch.randn(n, 4)
            # Called as warmed up: Dynamo keys keyword and positional calls apart.
            out = G(input=x) if n == 8 else G(x)
            torch.testing.assert_close(out, model(x), rtol=0, atol=0)
    after = graphdispatch.stats()
    assert after["captures"] == before["captures"] and after["replays"] - before["replays"] == 4


def test_warmup_captures_the_largest_first_so_one_workspace_serves_all(graph_kind):
    # Note [Shared workspace]: the first capture sizes the CPU graph's workspace, and the
    # smaller ones reuse its one block.
    if graph_kind != "cpu":
        pytest.skip("only the CPU graph has a shared workspace")
    model = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    G = torch.compile(model, backend="graphdispatch", options=GRAPH_ONLY, dynamic=False)
    order, workspace = [], []

    def call(x):
        out = G(x)
        order.append(x.shape[0])
        workspace.append(graphdispatch.stats()["workspace_bytes"])
        return out

    delta = graphdispatch.warmup(call, [torch.randn(n, 4) for n in (1, 8, 2, 4)], progress=False)
    assert order == [8, 4, 2, 1] and delta["captures"] == 4 and delta["fallbacks"] == {}
    assert workspace[0] > 0 and workspace == [workspace[0]] * 4, workspace
    with torch.no_grad():
        for n in (2, 8, 1, 4):
            x = torch.randn(n, 4)
            torch.testing.assert_close(G(x), model(x), rtol=0, atol=0)
    assert graphdispatch.stats()["workspace_bytes"] == workspace[0]


def test_warmup_shows_a_bar_on_a_terminal(monkeypatch):
    terminal = Tty()
    monkeypatch.setattr("sys.stderr", terminal)
    G = torch.compile(lambda x: x + 1, backend="graphdispatch", options=GRAPH_ONLY, dynamic=False)
    delta = graphdispatch.warmup(G, [torch.randn(n) for n in (1, 2, 3)])
    assert delta["captures"] == 3
    assert "graphdispatch warm-up" in terminal.getvalue() and "3/3" in terminal.getvalue()


class ViewParameter(torch.nn.Module):
    """A parameter that views another, written in place: both are read where they are."""

    def __init__(self):
        super().__init__()
        self.base = torch.nn.Parameter(torch.arange(12.0).reshape(3, 4))
        self.row = torch.nn.Parameter(self.base.data[1])

    def forward(self, x):
        self.row.add_(x)
        return self.base.sum(), self.row * 1


def test_verified_replays_of_a_written_parameter_that_views_another():
    model, eager = ViewParameter(), ViewParameter()
    G = compiled(model, verify_replays=2)
    with torch.no_grad():
        for _ in range(4):
            x = torch.ones(4)
            for got, expected in zip(G(x), eager(x)):
                torch.testing.assert_close(got, expected, rtol=0, atol=0)
    torch.testing.assert_close(model.base, eager.base, rtol=0, atol=0)
    stats = graphdispatch.stats()
    assert stats["verified_replays"] == 2 and stats["replays"] == 4 and stats["fallbacks"] == {}
