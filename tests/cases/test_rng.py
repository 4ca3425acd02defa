"""C29, C33 (tests/cases/README.md): a graph with no random ops never saves,
restores or locks the global generator, so other threads' draws never repeat and a child forked
while a thread is inside the generator does not hang; a graph with random ops stays reproducible
from a seed, as eager is, whatever the cache holds."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
import torch._dynamo
from cases_helpers import GRAPH_ONLY, compiled, stats
from fork_child import FORK_HELPER
from torch._dynamo.utils import counters

import graphdispatch


def no_random_ops(x):
    return torch.tanh(x @ x.t()) + 1


# ---- C29: captures on one thread, draws on another ------------------------------------------


def test_c29_captures_without_random_ops_never_rewind_another_threads_draws():
    G = torch.compile(no_random_ops, backend="graphdispatch", options=GRAPH_ONLY, dynamic=True)
    G(torch.ones(2, 3))  # Dynamo traces here, once: its own RNG save/restore is not under test
    frames = counters["frames"]["total"]
    captures = stats()["captures"]

    torch.manual_seed(1234)
    done, draws, errors = threading.Event(), [], []

    def draw():  # thread B: a few hundred draws at least, all while A captures
        try:
            while not done.is_set() or len(draws) < 300:
                # Two numbers a draw: a repeat then cannot be a float32 coincidence.
                draws.append(tuple(torch.randn(2).tolist()))
        except BaseException as error:
            errors.append(error)

    b = threading.Thread(target=draw)
    b.start()
    try:
        for n in range(3, 33):  # thread A: a new shape each call, so each call captures
            x = torch.ones(n, 3)
            torch.testing.assert_close(G(x), no_random_ops(x))
    finally:
        done.set()
        b.join()
    assert errors == []
    assert counters["frames"]["total"] == frames  # no Dynamo recompile in the window
    assert stats()["captures"] - captures == 30 and stats()["fallbacks"] == {}

    assert len(draws) >= 300
    repeats = len(draws) - len(set(draws))
    assert repeats == 0, f"{repeats} of {len(draws)} draws of thread B repeat an earlier one"
    # A graph without random ops does not touch the generator at all: B's draws are exactly
    # the seeded sequence, as if B were alone.
    gen = torch.Generator().manual_seed(1234)
    assert draws == [tuple(torch.randn(2, generator=gen).tolist()) for _ in draws]


# ---- with random ops: a seed reproduces eager, cold or warm cache ----------------------------


class NoisyBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.drop = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(self.lin(x)) + torch.rand_like(x)


def test_c29_random_ops_are_reproducible_from_a_seed_whatever_the_cache_state():
    model = NoisyBlock().train()  # dropout active; built before seeding (init draws numbers)
    G = compiled(model)
    shapes = [(4, 8), (4, 8), (2, 8), (4, 8), (3, 8), (3, 8)]  # new shapes capture mid-sequence

    def run(fn):
        torch.manual_seed(0)
        return [fn(torch.ones(shape)) for shape in shapes]

    with torch.no_grad():
        cold = run(G)  # every first call of a shape captures here
        expected = run(model)
        warm = run(G)  # every call replays here
        graphdispatch.reset()  # entries and counters emptied: captures again, mid-sequence
        again = run(G)
    after_reset = stats()
    torch.testing.assert_close(cold, expected, rtol=0, atol=0)
    torch.testing.assert_close(warm, expected, rtol=0, atol=0)
    torch.testing.assert_close(again, expected, rtol=0, atol=0)
    assert not torch.equal(expected[0], expected[1])  # the draws do differ between calls
    # Three shapes captured, every call served by a graph: the reproducibility is the graph's.
    assert after_reset["captures"] == 3 and after_reset["fallbacks"] == {}
    assert after_reset["replays"] == len(shapes)


# ---- C33: fork while another thread is inside the generator ----------------------------------

FORK_SCRIPT = FORK_HELPER + textwrap.dedent("""
    import json, threading, time
    import torch, graphdispatch

    def f(x):
        return torch.tanh(x @ x.t()) + 1

    G = torch.compile(f, backend="graphdispatch",
                      options={"graph_only": True, "device_graph": "emulated"})
    x = torch.ones(3, 3)
    G(x)  # Dynamo traces in the parent; the child only captures (a forked child starts empty)

    stop = threading.Event()

    def busy():  # holds the CPU generator's mutex most of the time
        while not stop.is_set():
            torch.randn(1 << 22)

    drawing = threading.Thread(target=busy, daemon=True)
    drawing.start()
    time.sleep(0.2)

    def eager():
        return f(x).tolist()

    def first_call():
        y = G(x)
        s = graphdispatch.stats()
        return {"value": y.tolist(), "captures": s["captures"], "fallbacks": s["fallbacks"]}

    report = {"expected": f(x).tolist(), "eager": in_child(eager, 15), "compiled": []}
    for _ in range(5):  # five forks at random points of the drawing loop
        report["compiled"].append(in_child(first_call, 15))
        if not report["compiled"][-1]["ok"]:
            break
    stop.set()
    drawing.join()  # exiting while it is inside torch.randn can abort the interpreter's exit
    print(json.dumps(report), flush=True)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_c33_child_forked_while_a_thread_draws_does_not_hang_on_its_first_capture(graph_kind):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHDISPATCH_")}
    env["OMP_NUM_THREADS"] = "1"
    script = FORK_SCRIPT.replace('"device_graph": "emulated"', f'"device_graph": "{graph_kind}"')
    try:
        proc = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=150, env=env
        )
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"the fork script itself hung: {error}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    # The setup is sound: eager in such a child does not hang.
    assert report["eager"] == {"ok": True, "value": report["expected"]}, report["eager"]
    for child in report["compiled"]:
        assert child["ok"], child["error"]
        assert child["value"]["value"] == report["expected"]
        assert child["value"]["captures"] == 1 and child["value"]["fallbacks"] == {}
    assert len(report["compiled"]) == 5
