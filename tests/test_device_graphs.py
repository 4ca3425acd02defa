"""Framework device graphs without a device: the C++ runner drives a Python adapter through the same
protocol it uses for torch.cuda.CUDAGraph, and the capture hold-off (gc, empty_cache) is scoped and
restored on every exit path (Note [Capture], Note [Device pools]). A fake framework with the
allocator state a CUDA capture touches (pool use counts, routing) checks which pool each capture
gets and what every failure leaves (cases G2, G3, G6, G8)."""

import gc
import logging
import types
import warnings

import pytest
import torch

import graphdispatch
from graphdispatch import _C
from graphdispatch import _capture_hold_off as capture_hold_off
from graphdispatch import _device_graphs as device_graphs
from graphdispatch._capture_hold_off import HOLD_OFF
from graphdispatch._device_graphs import choose_kind, warn_without_warmup
from graphdispatch._framework_graphs import FrameworkGraph, FrameworkGraphFactory


class FakeFrameworkGraph:
    """Stands in for torch.cuda.CUDAGraph: records the calls the adapter makes."""

    def __init__(self, log, fail_capture=False):
        self.log = log
        self.fail_capture = fail_capture

    def capture_begin(self, pool=None):
        self.log.append(("capture_begin", gc.isenabled()))

    def capture_end(self):
        self.log.append(("capture_end", gc.isenabled()))
        if self.fail_capture:
            raise RuntimeError("capture invalidated")

    def replay(self):
        self.log.append(("replay",))

    def reset(self):
        self.log.append(("reset",))


class FakeGraphs:
    """The adapter factory the C++ PyGraphFactory calls."""

    name = "fake"

    def __init__(self):
        self.log = []
        self.module = types.SimpleNamespace(empty_cache=lambda: "real")

    def create(self, device):
        assert device == "cpu"
        return FrameworkGraph(
            FakeFrameworkGraph(self.log), {}, [self.module], lambda: self.log.append(("failed",))
        )

    def is_capturing(self, device):
        return False


def test_runner_drives_framework_graph_protocol():
    graphs = FakeGraphs()
    runner = _C.GraphRunner(lambda x: (x + 1,), [False], _C.PyGraphFactory(graphs), max_entries=1)
    x = torch.randn(4)
    runner(x)
    runner(x)
    assert [c[0] for c in graphs.log] == ["capture_begin", "capture_end", "replay", "replay"]
    # gc held off during the capture
    assert all(
        enabled is False
        for name, *rest in graphs.log
        if name.startswith("capture")
        for enabled in rest
    )
    assert gc.isenabled()
    runner(torch.randn(5))  # a new signature evicts the first entry: its graph is reset
    assert ("reset",) in graphs.log
    assert graphdispatch.stats()["evictions"] == 1


def test_failed_capture_restores_gc_and_empty_cache():
    log = []
    module = types.SimpleNamespace(empty_cache=lambda: "real")
    failed = []
    adapter = FrameworkGraph(
        FakeFrameworkGraph(log, fail_capture=True), {}, [module], lambda: failed.append(1)
    )
    adapter.capture_begin()
    assert not gc.isenabled() and module.empty_cache() is None  # held off
    adapter.capture_abort()  # the graph's capture_end raises; the hold-off still ends
    assert gc.isenabled() and module.empty_cache() == "real"
    assert len(failed) == 1  # the factory is told, so it can retire the device's pool


def test_hold_off_is_reentrant_and_restores_prior_gc_state():
    module = types.SimpleNamespace(empty_cache=lambda: "real")
    gc.disable()
    try:
        HOLD_OFF.enter([module])
        HOLD_OFF.enter([module])
        HOLD_OFF.exit()
        assert module.empty_cache() is None  # still inside the outer capture
        HOLD_OFF.exit()
        assert module.empty_cache() == "real"
        assert not gc.isenabled()  # it was off before: left off
    finally:
        gc.enable()


def test_user_error_in_capture_reaches_user_and_restores():
    graphs = FakeGraphs()

    def fn(x):
        if not gc.isenabled():  # only inside the capture
            raise ValueError("bad model")
        return (x * 2,)

    runner = _C.GraphRunner(fn, [False], _C.PyGraphFactory(graphs), warmup_iters=0)
    x = torch.randn(3)
    assert torch.equal(runner(x)[0], x * 2)  # served by the fallback path
    assert gc.isenabled()
    assert graphdispatch.stats()["fallbacks"] == {"capture_failed": 1}
    assert runner.entry_reason(x)[0] == "capture_failed"


@pytest.mark.parametrize("kind", ["cuda", "npu", "accelerator"])
def test_device_kinds_unavailable_for_cpu_inputs(kind):
    chosen, reason = choose_kind(kind, torch.device("cpu"))
    assert chosen is None and "CPU" in reason
    assert choose_kind("emulated", torch.device("cpu"))[0] == "emulated"


class FakeAllocator:
    """The allocator state a CUDA capture touches, as CUDACachingAllocator and the host
    allocator keep it: pools with use counts, and the pools allocations are routed to.
    ``ends_routing_on_failure`` is torch with pytorch#180395 (2.12+)."""

    def __init__(self, ends_routing_on_failure=True):
        self.ends_routing_on_failure = ends_routing_on_failure
        self.use_count = {}
        self.routing = []
        self.handles = 0

    def graph_pool_handle(self):
        self.handles += 1
        return (0, self.handles)

    def begin(self, pool):
        if pool in self.routing:
            raise RuntimeError("beginAllocateToPool: already recording to mempool_id")
        if self.use_count.get(pool, 1) == 0:
            raise RuntimeError("use_count > 0 INTERNAL ASSERT FAILED")
        self.use_count[pool] = self.use_count.get(pool, 0) + 1
        self.routing.append(pool)


class FakeCudaGraph:
    """torch.cuda.CUDAGraph's capture protocol over a FakeAllocator, with CUDAGraph.cpp's
    order: routing begins before the stream capture, a failed capture_end reports after (or,
    without the fix, before) ending it, pool() needs a finished capture."""

    def __init__(self, graphs):
        self.graphs = graphs
        self.allocator = graphs.allocator
        self.pool_id = None
        self.captured = False
        self.invalid = False
        self.holder = graphs.next_is_holder  # the graph that keeps a new pool alive
        graphs.next_is_holder = False
        graphs.made.append(self)

    def capture_begin(self, pool=None, capture_error_mode="global"):
        self.graphs.calls.append(("capture_begin", pool, capture_error_mode, gc.isenabled()))
        self.pool_id = pool
        self.allocator.begin(pool)
        self.graphs.capturing = self
        if self.graphs.fail_begin and not self.holder:
            raise RuntimeError("cudaStreamBeginCapture: operation not permitted")

    def capture_end(self):
        self.graphs.capturing = None
        if self.holder and self.graphs.refuse_empty:
            self.allocator.routing.remove(self.pool_id)
            self.allocator.use_count[self.pool_id] -= 1  # the refused graph's use, given back
            raise RuntimeError("capture of an empty graph refused")
        if self.invalid or (self.graphs.fail_end and not self.holder):
            if self.allocator.ends_routing_on_failure:
                self.allocator.routing.remove(self.pool_id)
            raise RuntimeError("operation failed due to a previous error during capture")
        self.allocator.routing.remove(self.pool_id)
        self.captured = True

    def pool(self):
        if not self.captured:
            raise RuntimeError("Called CUDAGraph::pool() without a preceding successful capture.")
        return self.pool_id

    def replay(self):
        pass

    def reset(self):
        if self.captured:
            self.allocator.use_count[self.pool_id] -= 1
            self.captured = False


class FakeCudaGraphs(FrameworkGraphFactory):
    """The CUDA factory with the framework calls replaced by the fakes."""

    def __init__(self, allocator=None, kind="cuda"):
        super().__init__(kind)
        self.allocator = allocator or FakeAllocator()
        self.module = types.SimpleNamespace(empty_cache=lambda: "real")
        self.made, self.calls = [], []
        self.capturing = None
        self.fail_begin = self.fail_end = self.refuse_empty = False
        self.next_is_holder = False

    def _new_graph(self, device, pool):
        return FakeCudaGraph(self), {"pool": pool, "capture_error_mode": "thread_local"}

    def _hold(self, device, handle):
        self.next_is_holder = True
        return super()._hold(device, handle)

    def _module(self):
        return self.allocator

    def _spellings(self):
        return [self.module]

    def _reserved_bytes(self, device):
        return None

    def is_capturing(self, device):
        return False


def entry_pools(graphs):
    """The pool each entry capture (not a pool holder's) was given, in order."""
    return [g.pool_id for g in graphs.made if not g.holder]


def test_every_capture_gets_the_held_pool_and_it_outlives_its_graphs():
    graphs = FakeCudaGraphs()
    runner = _C.GraphRunner(lambda x: (x + 1,), [False], _C.PyGraphFactory(graphs), max_entries=1)
    for n in (3, 4, 5):  # each new signature evicts the previous entry: its graph is reset
        x = torch.randn(n)
        assert torch.equal(runner(x)[0], x + 1)
    runner.clear()  # as graphdispatch.reset() does: every entry's graph reset
    pool = graphs.allocator.handles
    assert [c[1] for c in graphs.calls] == [(0, 1)] * 4  # the holder, then three entries
    assert graphs.allocator.use_count == {(0, pool): 1}  # the holder's use keeps it alive
    x = torch.randn(6)
    assert torch.equal(runner(x)[0], x + 1)  # no use_count assert: the pool is alive
    assert graphdispatch.stats()["captures"] == 4 and graphs.allocator.routing == []


@pytest.mark.parametrize("fixed_torch", [True, False])
def test_invalidated_capture_ends_routing_and_retires_the_pool(fixed_torch, monkeypatch):
    from torch.torch_version import TorchVersion

    monkeypatch.setattr(torch, "__version__", TorchVersion("2.13.0" if fixed_torch else "2.11.0"))
    graphs = FakeCudaGraphs(FakeAllocator(ends_routing_on_failure=fixed_torch))

    def fn(x):
        if graphs.capturing is not None and x.shape[0] == 3:
            graphs.capturing.invalid = True  # as a device-to-host copy invalidates a capture
            raise RuntimeError("operation not permitted when stream is capturing")
        return (x * 2,)

    runner = _C.GraphRunner(fn, [False], _C.PyGraphFactory(graphs), warmup_iters=0)
    x = torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert torch.equal(runner(x)[0], x * 2)  # served without a graph
    # Without the fix the user is told that empty_cache() will raise (docs/usage.md).
    assert [("pytorch#180395" in str(w.message)) for w in caught] == ([] if fixed_torch else [True])
    assert graphdispatch.stats()["fallbacks"] == {"capture_failed": 1}
    assert gc.isenabled() and graphs.module.empty_cache() == "real"
    # With the fix the allocator routes nowhere; without it only private functions could end
    # the routing, which are not called: the failed pool is left, never captured into again.
    assert graphs.allocator.routing == ([] if fixed_torch else [(0, 1)])
    # The holder was reset: only the failed capture's use.
    assert graphs.allocator.use_count[(0, 1)] == 1
    y = torch.randn(4)
    assert torch.equal(runner(y)[0], y * 2)
    assert entry_pools(graphs) == [(0, 1), (0, 2)]  # the next capture got a new, held pool
    assert graphdispatch.stats()["captures"] == 1


def test_failure_in_capture_begin_or_end_retires_the_pool_and_restores():
    graphs = FakeCudaGraphs()
    runner = _C.GraphRunner(lambda x: (x - 1,), [False], _C.PyGraphFactory(graphs), warmup_iters=0)
    graphs.fail_begin = True  # after routing began, as CUDAGraph::capture_begin orders it
    x = torch.randn(2)
    assert torch.equal(runner(x)[0], x - 1)
    graphs.fail_begin, graphs.fail_end = False, True  # e.g. instantiation failing
    y = torch.randn(3)
    assert torch.equal(runner(y)[0], y - 1)
    assert graphdispatch.stats()["fallbacks"] == {"capture_failed": 2}
    assert gc.isenabled() and graphs.module.empty_cache() == "real"
    graphs.fail_end = False
    z = torch.randn(4)
    assert torch.equal(runner(z)[0], z - 1)
    assert entry_pools(graphs) == [(0, 1), (0, 2), (0, 3)]  # a new pool after each failure
    assert graphdispatch.stats()["captures"] == 1


def test_model_error_during_capture_keeps_the_pool():
    graphs = FakeCudaGraphs()

    def fn(x):
        if graphs.capturing is not None and x.shape[0] == 2:
            raise ValueError("bad model")  # a Python error: the stream capture stays valid
        return (x + 3,)

    runner = _C.GraphRunner(fn, [False], _C.PyGraphFactory(graphs), warmup_iters=0)
    for n in (2, 5):
        x = torch.randn(n)
        assert torch.equal(runner(x)[0], x + 3)
    assert graphs.allocator.routing == []  # capture_end ended the interrupted capture
    assert entry_pools(graphs) == [(0, 1), (0, 1)]  # no failure of the pool: kept
    assert graphdispatch.stats()["captures"] == 1


def test_npu_captures_in_thread_local_mode_into_a_held_pool(monkeypatch):
    allocator = FakeAllocator()

    class FakeNpuGraphs(FakeCudaGraphs):  # the factory's own NPU branch, over a fake torch.npu
        _new_graph = FrameworkGraphFactory._new_graph
        _module = FrameworkGraphFactory._module

    graphs = FakeNpuGraphs(allocator, kind="npu")
    npu = types.SimpleNamespace(
        NPUGraph=lambda: FakeCudaGraph(graphs), graph_pool_handle=allocator.graph_pool_handle
    )
    monkeypatch.setattr(torch, "npu", npu, raising=False)
    runner = _C.GraphRunner(lambda x: (x * 5,), [False], _C.PyGraphFactory(graphs))
    x = torch.randn(3)
    assert torch.equal(runner(x)[0], x * 5)
    assert [c[1:3] for c in graphs.calls] == [((0, 1), "thread_local")] * 2  # holder, entry


def test_hold_off_covers_every_public_empty_cache():
    spellings = [
        (torch.cuda, "empty_cache"),
        (torch.cuda.memory, "empty_cache"),
        (torch.accelerator, "empty_cache"),
        (torch.accelerator.memory, "empty_cache"),
    ]
    originals = [getattr(ns, name) for ns, name in spellings]
    HOLD_OFF.enter(FrameworkGraphFactory("cuda")._spellings())
    try:
        assert all(getattr(ns, name) is capture_hold_off._no_empty_cache for ns, name in spellings)
    finally:
        HOLD_OFF.exit()
    assert [getattr(ns, name) for ns, name in spellings] == originals


def test_warmup_iters_zero_on_a_device_warns_once(caplog, monkeypatch):
    monkeypatch.setattr(device_graphs, "_NO_WARMUP_WARNED", set())
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        warn_without_warmup("cuda", 1)
        warn_without_warmup("emulated", 0)
        warn_without_warmup("cuda", 0)
        warn_without_warmup("cuda", 0)
    assert [r.getMessage().split(":")[1].strip() for r in caplog.records] == [
        "warmup_iters=0 with cuda graphs"
    ]


def test_accelerator_graphs_pass_through_a_callers_capture(monkeypatch):
    # torch.accelerator has no capture query; the device type's module has (case G8).
    capturing = []
    fake = types.SimpleNamespace(
        is_current_stream_capturing=lambda: bool(capturing), current_device=lambda: 0
    )
    monkeypatch.setattr(torch, "xpu", fake)
    graphs = FrameworkGraphFactory("accelerator")
    assert graphs.is_capturing("xpu:0") is False
    capturing.append(1)
    assert graphs.is_capturing("xpu:0") is True


def test_a_framework_refusing_empty_graphs_still_captures(caplog):
    graphs = FakeCudaGraphs()
    graphs.refuse_empty = True
    runner = _C.GraphRunner(lambda x: (x + 2,), [False], _C.PyGraphFactory(graphs))
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        for n in (3, 4):
            x = torch.randn(n)
            assert torch.equal(runner(x)[0], x + 2)
    assert "an empty graph cannot hold the pool" in caplog.text
    # Not the refused holder's pool: its use came and went, so a capture into it would assert.
    assert entry_pools(graphs) == [(0, 2), (0, 2)] and graphdispatch.stats()["captures"] == 2


def test_a_pool_without_holder_is_replaced_after_its_last_graph():
    # Capture, release every graph in the pool, capture again: the allocator asserts on the
    # released id (pytorch#198794), so the factory takes a new one.
    graphs = FakeCudaGraphs()
    graphs.refuse_empty = True
    runner = _C.GraphRunner(
        lambda x: (x * 3,), [False], _C.PyGraphFactory(graphs), max_entries=1, warmup_iters=0
    )
    for n in (3, 4):  # the second signature evicts the first entry, then both share the pool
        x = torch.randn(n)
        assert torch.equal(runner(x)[0], x * 3)
    runner.clear()  # the pool's last graph released
    x = torch.randn(5)
    assert torch.equal(runner(x)[0], x * 3)
    assert graphdispatch.stats()["fallbacks"] == {} and graphdispatch.stats()["captures"] == 3
    assert entry_pools(graphs) == [(0, 2), (0, 2), (0, 3)]  # no second holder tried
    assert graphs.allocator.use_count == {(0, 1): 0, (0, 2): 0, (0, 3): 1}


def test_npu_warns_once_before_its_stream_budget(caplog, monkeypatch):
    from graphdispatch import _framework_graphs as framework_graphs

    monkeypatch.setattr(framework_graphs, "NPU_GRAPHS_WARNING", 3)
    graphs = FakeCudaGraphs(kind="npu")
    runner = _C.GraphRunner(lambda x: (x + 4,), [False], _C.PyGraphFactory(graphs), max_entries=8)
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        for n in (1, 2, 3, 4, 5):
            x = torch.randn(n)
            assert torch.equal(runner(x)[0], x + 4)
    warned = [r.getMessage() for r in caplog.records if "device streams" in r.getMessage()]
    assert warned == [
        "graphdispatch: 3 NPU graphs are live on cpu; torch_npu runs out of device streams at "
        "about 1,900: lower max_entries or max_total_entry_bytes"
    ]
