"""Framework device graphs without a device: the C++ runner drives a Python adapter through
the same protocol it uses for torch.cuda.CUDAGraph, and the capture hold-off (gc, empty_cache)
is scoped and restored on every exit path (design 2.4)."""

import gc
import types

import pytest
import torch

import graphdispatch
from graphdispatch import _C
from graphdispatch.device_graphs import HOLD_OFF, _FrameworkGraph, choose_kind


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
        return _FrameworkGraph(FakeFrameworkGraph(self.log), {}, self.module,
                               lambda g: None, lambda g: self.log.append(("failed",)))

    def is_capturing(self, device):
        return False


def test_runner_drives_framework_graph_protocol():
    graphs = FakeGraphs()
    runner = _C.GraphRunner(lambda x: (x + 1,), [False], _C.PyGraphFactory(graphs), max_entries=1)
    x = torch.randn(4)
    runner(x)
    runner(x)
    assert [c[0] for c in graphs.log] == ["capture_begin", "capture_end", "replay", "replay"]
    assert all(enabled is False for name, *rest in graphs.log if name.startswith("capture")
               for enabled in rest)  # gc held off during the capture
    assert gc.isenabled()
    runner(torch.randn(5))  # a new signature evicts the first entry: its graph is reset
    assert ("reset",) in graphs.log
    assert graphdispatch.stats()["evictions"] == 1


def test_failed_capture_restores_gc_and_empty_cache():
    log = []
    module = types.SimpleNamespace(empty_cache=lambda: "real")
    failed = []
    adapter = _FrameworkGraph(FakeFrameworkGraph(log, fail_capture=True), {}, module,
                              lambda g: None, failed.append)
    adapter.capture_begin()
    assert not gc.isenabled() and module.empty_cache() is None  # held off
    adapter.capture_abort()  # the graph's capture_end raises; the hold-off still ends
    assert gc.isenabled() and module.empty_cache() == "real"
    assert len(failed) == 1  # the factory is told, so it can retire the device's pool


def test_hold_off_is_reentrant_and_restores_prior_gc_state():
    module = types.SimpleNamespace(empty_cache=lambda: "real")
    gc.disable()
    try:
        HOLD_OFF.enter(module)
        HOLD_OFF.enter(module)
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
