"""Helpers for the field cases (tests/cases/README.md): routes, compiling with
graphdispatch, a direct runner, counters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch._dynamo

import graphdispatch

GRAPH_ONLY = {"graph_only": True, "device_graph": "emulated"}
GRAPH_WITH_COMPILE = {"graph_with_compile": True, "device_graph": "emulated"}

# Inductor costs 20-60 s a graph on a small CPU: only a few cases take that route.
ROUTES = [
    pytest.param(GRAPH_ONLY, id="graph_only"),
    pytest.param(GRAPH_WITH_COMPILE, id="graph_with_compile", marks=pytest.mark.inductor),
]

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


GRAPH_KINDS = ("emulated", "cpu")


@pytest.fixture(params=GRAPH_KINDS)
def graph_kind(request):
    """Runs a test on each graph a CPU has, the emulated one (re-runs the FX graph on replay)
    and the CPU graph (replays recorded ops from C++ on fixed memory, as a device graph does):
    GRAPH_ONLY and ``runner()`` use it. Modules opt in with ``pytestmark``."""
    GRAPH_ONLY["device_graph"] = request.param
    yield request.param
    GRAPH_ONLY["device_graph"] = "emulated"


def compiled(fn: Callable, options: dict[str, Any] = GRAPH_ONLY, **extra: Any) -> Callable:
    return torch.compile(fn, backend="graphdispatch", options={**options, **extra})


def runner(fn: Callable, is_static: list[bool], kind: str | None = None, **kwargs: Any) -> Any:
    """A GraphRunner over ``fn`` (positional tensors in, a tuple out), without Dynamo, on
    ``kind`` (default: GRAPH_ONLY's graph, which tests/cases/conftest.py sets per run)."""
    from graphdispatch import _C
    from graphdispatch._device_graphs import make_factory

    return _C.GraphRunner(fn, is_static, make_factory(kind or GRAPH_ONLY["device_graph"]), **kwargs)


def capturing() -> bool:
    """True while this thread is inside a capture of the emulated or the CPU graph: what a
    device's "stream is capturing" query says."""
    from graphdispatch import _C

    return _C._testing.emulated_capturing() or _C._testing.cpu_graph_capturing()


def assert_same_layout(got: torch.Tensor, expected: torch.Tensor) -> None:
    """``got`` is eager's ``expected``: values (to float32 rounding), shape and strides."""
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)
    assert got.shape == expected.shape
    assert got.stride() == expected.stride(), (got.stride(), expected.stride())


def stats() -> dict[str, Any]:
    return graphdispatch.stats()


def fallbacks(reason: str) -> int:
    return graphdispatch.stats()["fallbacks"].get(reason, 0)
