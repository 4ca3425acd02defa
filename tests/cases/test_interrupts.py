"""C32: KeyboardInterrupt, SystemExit and other BaseExceptions that are not Exceptions propagate
from a capture as from eager, and leave no entry marked failed: the next call captures."""

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
from cases_helpers import compiled, stats

RAISE = {"error": None}


@torch.library.custom_op("gdtest::interruptible", mutates_args=())
def interruptible(x: torch.Tensor) -> torch.Tensor:
    error, RAISE["error"] = RAISE["error"], None
    if error is not None:
        raise error
    return x * 2


@interruptible.register_fake
def _(x):
    return torch.empty_like(x)


def model(x):
    return interruptible(x + 1) - 1


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit, GeneratorExit])
@pytest.mark.parametrize("lazy", [True, False], ids=["at_first_call", "at_compile"])
def test_c32_base_exceptions_propagate_from_capture_and_leave_nothing_failed(error, lazy):
    G = compiled(model, lazy_capture=lazy)
    x = torch.randn(4)
    RAISE["error"] = error()
    with pytest.raises(error):
        G(x)
    assert stats()["fallbacks"] == {}  # not a capture_failed entry
    torch.testing.assert_close(G(x), model(x))
    torch.testing.assert_close(G(x), model(x))
    assert stats()["captures"] == 1 and stats()["replays"] == 2 and stats()["fallbacks"] == {}


def test_c32_an_ordinary_exception_still_becomes_a_counted_fallback():
    G = compiled(model, lazy_capture=True)
    x = torch.randn(4)
    RAISE["error"] = RuntimeError("op failed during capture")
    torch.testing.assert_close(G(x), model(x))  # served by the non-graph path
    assert stats()["fallbacks"] == {"capture_failed": 1} and stats()["captures"] == 0


CHILD = textwrap.dedent("""
    import json, sys, time
    import torch, graphdispatch

    @torch.library.custom_op("gdchild::slow", mutates_args=())
    def slow(x: torch.Tensor) -> torch.Tensor:
        if not slow.done:
            slow.done = True
            print("capturing", flush=True)
            time.sleep(60)  # the parent's SIGINT lands here
        return x * 2
    slow.done = False

    @slow.register_fake
    def _(x):
        return torch.empty_like(x)

    G = torch.compile(lambda x: slow(x) + 1, backend="graphdispatch",
                      options={"graph_only": True, "device_graph": "emulated"})
    x = torch.ones(3)
    try:
        G(x)
        interrupted = False
    except KeyboardInterrupt:
        interrupted = True
    after = graphdispatch.stats()
    y = G(x)
    print(json.dumps({"interrupted": interrupted, "after": after, "final": graphdispatch.stats(),
                      "value": y.tolist()}), flush=True)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_c32_real_sigint_during_the_first_call(graph_kind):
    script = CHILD.replace('"device_graph": "emulated"', f'"device_graph": "{graph_kind}"')
    child = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        assert child.stdout.readline().strip() == "capturing"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert child.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    assert report["interrupted"] is True
    assert report["after"]["fallbacks"] == {} and report["after"]["captures"] == 0
    assert report["final"]["captures"] == 1 and report["final"]["replays"] == 1
    assert report["final"]["fallbacks"] == {}
    assert report["value"] == [3.0, 3.0, 3.0]
