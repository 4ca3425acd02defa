"""graph_with_compile on the CPU: Inductor's C++ wrapper, its generated entry called from C++ on
replay (Note [Inductor's C++ entry]). Oracle: eager PyTorch, within Inductor's float32
reordering; compiles are few and tiny (Inductor is slow on two cores)."""

from __future__ import annotations

import logging

import pytest
import torch

import graphdispatch
from graphdispatch._backend import _RUNNERS

pytestmark = pytest.mark.inductor


def graphs():
    return [e["graph"] for r in _RUNNERS for e in r.entries()]


def test_replays_call_the_entry_directly_and_match_eager():
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    model.eval()
    compiled = torch.compile(
        model, backend="graphdispatch", options={"graph_with_compile": True, "verify_replays": 2}
    )
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(3, 8)
            x_before = x.clone()
            out = compiled(x)
            torch.testing.assert_close(out, model(x))
            assert torch.equal(x, x_before)  # the caller's tensor is read, never written
            out.fill_(0)  # a safe output is the caller's: the next replay is unaffected
    stats = graphdispatch.stats()
    assert stats["routes"] == {"graph_with_compile": 1}, stats
    assert stats["captures"] == 1 and stats["replays"] == 4, stats
    assert stats["verified_replays"] == 2 and stats["fallbacks"] == {}, stats
    assert graphs() == ["calls Inductor's C++ entry directly (5 inputs, 1 outputs)"]


def test_an_output_viewing_an_input_and_a_written_input_call_the_entry_directly():
    # Case C92: the view is of the entry's input buffer, fixed memory; Inductor writes y in place.
    def fn(x, y):
        y.add_(1)  # written once per call, as eager writes it
        return x.t(), (x * y).sin()

    compiled = torch.compile(fn, backend="graphdispatch", options={"graph_with_compile": True})
    y = torch.randn(4, 5)
    y_eager = y.clone()
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 5)  # a new input each call: the view must be of this one
            t, s = compiled(x, y)
            t_eager, s_eager = fn(x, y_eager)
            assert torch.equal(y, y_eager)
            assert t.data_ptr() == x.data_ptr() and torch.equal(t, t_eager)
            torch.testing.assert_close(s, s_eager)
    stats = graphdispatch.stats()
    assert stats["captures"] == 1 and stats["replays"] == 3 and stats["fallbacks"] == {}, stats
    assert graphs() == ["calls Inductor's C++ entry directly (2 inputs, 2 outputs)"]


def literal16(x):
    return x * torch.tensor([i / 7 for i in range(16)])  # 16 elements: an Inductor constant


# C77: Inductor's Python side appends its constants (a literal of 16 or more elements, frozen
# parameters) to the entry's arguments, which a direct call would not pass.
@pytest.mark.parametrize("freezing", [False, True], ids=["literal", "freezing"])
def test_c77_graphs_with_inductor_constants_rerun_through_python(freezing, caplog):
    model = torch.nn.Linear(16, 16).eval()
    fn = model if freezing else literal16
    caplog.set_level(logging.INFO, logger="graphdispatch")
    with torch._inductor.config.patch(freezing=freezing), torch.no_grad():
        compiled = torch.compile(fn, backend="graphdispatch", options={"graph_with_compile": True})
        for _ in range(3):
            x = torch.randn(2, 16)
            torch.testing.assert_close(compiled(x), fn(x))
    stats = graphdispatch.stats()
    assert stats["captures"] == 1 and stats["replays"] == 3 and stats["fallbacks"] == {}, stats
    # The compiled function re-run, Python and all; each entry says why (case C92).
    assert graphs() == [
        "re-runs Inductor's compiled function through Python: Inductor's C++ entry takes "
        "constants besides the graph's inputs"
    ]
    assert (
        "cpp_wrapper graph re-runs the compiled function: Inductor's C++ entry takes constants "
        "besides the graph's inputs" in caplog.text
    )


def float_region(x, w):
    with torch.autocast("cpu", enabled=False):  # conv_tbc: called through the dispatcher
        return torch.conv_tbc(x.float(), w.float(), torch.zeros(w.shape[2])) * 1.0


# C76 on the direct call: the entry runs with autocast excluded, as aot_autograd's wrapper runs
# it; the ops it calls through the dispatcher would otherwise cast again.
def test_c76_autocast_off_region_under_autocast_calls_the_entry_directly():
    compiled = torch.compile(
        float_region, backend="graphdispatch", options={"graph_with_compile": True}
    )
    with torch.no_grad():
        for _ in range(3):
            x, w = torch.randn(6, 2, 16), torch.randn(3, 16, 8)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                torch.testing.assert_close(compiled(x, w), float_region(x, w))
    stats = graphdispatch.stats()
    assert stats["captures"] == 1 and stats["replays"] == 3 and stats["fallbacks"] == {}, stats
    assert graphs() == ["calls Inductor's C++ entry directly (2 inputs, 1 outputs)"]
