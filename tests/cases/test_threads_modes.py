"""C14-C16: concurrent first calls, grad and inference modes, and a model that changes after
capture."""

import json
import os
import subprocess
import sys
import textwrap
import threading

import pytest
import torch
from cases_helpers import compiled, fallbacks, runner, stats
from fork_child import FORK_HELPER

# ---- C14: concurrent first calls -----------------------------------------------------------------

THREADS = 32


def _race(call):
    barrier = threading.Barrier(THREADS)
    inputs = [torch.randn(16, 16) for _ in range(THREADS)]
    results, errors = [None] * THREADS, []

    def work(k):
        try:
            barrier.wait()
            results[k] = call(inputs[k])
        except BaseException as error:  # reported below, with the thread's input
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for x, y in zip(inputs, results):
        torch.testing.assert_close(y, torch.tanh(x @ x))


def test_c14_concurrent_first_calls_through_dynamo():
    _race(compiled(lambda x: torch.tanh(x @ x)))
    # Dynamo itself may compile the frame again in racing threads; each graph it hands us is
    # captured once, for the one key.
    assert stats()["captures"] == stats()["routes"]["graph_only"]
    assert stats()["fallbacks"] == {}


def test_c14_concurrent_first_calls_in_the_runner():
    r = runner(lambda x: (torch.tanh(x @ x),), [False])
    _race(lambda x: r(x)[0])
    assert stats()["captures"] == 1 and stats()["replays"] == THREADS


# ---- C15: grad mode, inference mode, requires_grad -----------------------------------------------


def _check(got, expected):
    torch.testing.assert_close(got, expected)
    assert got.requires_grad == expected.requires_grad
    assert got.is_inference() == expected.is_inference()


def test_c15_no_grad_with_an_input_that_requires_grad():
    lin = torch.nn.Linear(8, 8)
    G = compiled(lin)
    x = torch.randn(4, 8, requires_grad=True)
    with torch.no_grad():
        _check(G(x), lin(x))
        _check(G(x), lin(x))


def test_c15_inference_mode():
    lin = torch.nn.Linear(8, 8)
    G = compiled(lin)
    with torch.inference_mode():
        x = torch.randn(4, 8)
        _check(G(x), lin(x))
        _check(G(x), lin(x))


def test_c15_no_grad_then_enable_grad_never_shares_a_graph():
    lin = torch.nn.Linear(8, 8)
    G = compiled(lin)
    x = torch.randn(4, 8)
    with torch.no_grad():
        _check(G(x), lin(x))
    with torch.enable_grad():
        out = G(x)
        _check(out, lin(x))
        out.sum().backward()  # autograd history is there, as in eager
    assert lin.weight.grad is not None
    assert fallbacks("requires_grad") >= 1
    with torch.no_grad():
        _check(G(x), lin(x))


def test_c15_runner_keys_grad_mode_and_serves_inference_mode_from_no_grad():
    r = runner(lambda x: (x * 2,), [False])
    x = torch.randn(4)
    with torch.no_grad():
        r(x)
    r(x)
    assert r.num_entries == 2  # grad mode is keyed
    with torch.inference_mode():
        out = r(x)[0]
    # Inference mode is no_grad for the kernels: its entry, outputs as eager's (C25).
    assert out.is_inference() and torch.equal(out, x * 2)
    assert r.num_entries == 2


def test_c15_parameter_free_fn_under_grad_mode():
    G = compiled(lambda a, b: a * b + 1)
    a, b = torch.randn(8), torch.randn(8)
    for _ in range(2):
        _check(G(a, b), a * b + 1)
    assert stats()["captures"] == 1 and stats()["fallbacks"] == {}


# ---- C16: the model changes after capture --------------------------------------------------------


def test_c16_outputs_follow_the_current_parameters_dtype_and_autocast():
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 16)
    G = compiled(lin)
    x = torch.randn(4, 16)
    with torch.no_grad():
        torch.testing.assert_close(G(x), lin(x))
        lin.weight = torch.nn.Parameter(torch.randn(16, 16))
        torch.testing.assert_close(G(x), lin(x))
        lin.load_state_dict({"weight": torch.randn(16, 16), "bias": torch.randn(16)}, assign=True)
        torch.testing.assert_close(G(x), lin(x))

        lin.half()
        xh = x.half()
        torch.testing.assert_close(G(xh), lin(xh))
        lin.float()
        torch.testing.assert_close(G(x), lin(x))
        lin.half()
        out = G(xh)
        assert out.dtype == torch.float16
        torch.testing.assert_close(out, lin(xh))

        lin.float()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inside = G(x)
            expected = lin(x)
        assert inside.dtype == expected.dtype == torch.bfloat16
        torch.testing.assert_close(inside, expected)
        outside = G(x)
        assert outside.dtype == torch.float32
        torch.testing.assert_close(outside, lin(x))


def test_c16_runner_keys_autocast_state():
    r = runner(lambda x, w: (x @ w,), [False, True])
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    assert r(x, w)[0].dtype == torch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = r(x, w)[0]
        expected = x @ w
    assert got.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(got, expected)
    assert r(x, w)[0].dtype == torch.float32
    assert r.num_entries == 2


NESTED_SCRIPT = """
import torch, graphdispatch

OPTIONS = {"graph_only": True, "device_graph": "emulated"}

def inner(x):
    return x * 3 + 1

inner_c = torch.compile(inner, backend="graphdispatch", options=OPTIONS)

@torch.library.custom_op("nested_case::calls_compiled", mutates_args=())
def calls_compiled(x: torch.Tensor) -> torch.Tensor:
    return inner_c(x).clone()

@calls_compiled.register_fake
def _(x):
    return torch.empty_like(x)

def outer(x):
    return calls_compiled(x) + 1

outer_c = torch.compile(outer, backend="graphdispatch", options=OPTIONS)
with torch.no_grad():
    for _ in range(3):
        torch.testing.assert_close(outer_c(torch.ones(3)), outer(torch.ones(3)))
print(graphdispatch.stats()["replays"], graphdispatch.stats()["fallbacks"])
"""


def test_a_compiled_function_called_inside_another_ones_capture_runs_without_deadlock(graph_kind):
    # A custom op calling another compiled model: the outer capture (its warmup too) holds the
    # device's capture lock; the inner call must run its work, not wait for that lock.
    import subprocess
    import sys

    script = NESTED_SCRIPT.replace('"device_graph": "emulated"', f'"device_graph": "{graph_kind}"')
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    replays, fallbacks = proc.stdout.split(maxsplit=1)
    assert int(replays) >= 3 and fallbacks.strip() == "{}"


C67_SCRIPT = FORK_HELPER + textwrap.dedent("""
    import threading
    import torch, graphdispatch
    from graphdispatch import _C

    def f(x):
        return torch.tanh(x @ x.t()) + 1

    G = torch.compile(f, backend="graphdispatch",
                      options={"graph_only": True, "device_graph": "cpu"})
    x = torch.ones(3, 3)
    G(x)  # Dynamo traces in the parent; the child only captures (a forked child starts empty)

    locked = threading.Event()
    holder = threading.Thread(target=_C._testing.with_out_variants_locked, args=(locked.set, 3.0))
    holder.start()
    locked.wait()

    def first_call():
        y = G(x)
        s = graphdispatch.stats()
        return {"value": y.tolist(), "captures": s["captures"], "fallbacks": s["fallbacks"]}

    report = {"expected": f(x).tolist(), "child": in_child(first_call, 15)}
    holder.join()
    print(json.dumps(report), flush=True)
""")


# C67: a child forked while a parent thread holds the CPU graph's out= overload cache captures
# (the fork hook gives the child a cache of its own).
@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_c67_child_forked_while_a_thread_holds_the_out_variant_cache_captures(graph_kind):
    if graph_kind != "cpu":
        pytest.skip("the out= overload cache is the CPU graph's")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHDISPATCH_")}
    proc = subprocess.run(
        [sys.executable, "-c", C67_SCRIPT], capture_output=True, text=True, timeout=150, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    child = report["child"]
    assert child["ok"], child["error"]
    assert child["value"] == {"value": report["expected"], "captures": 1, "fallbacks": {}}


# Note [Shared workspace]: a replay nested in another (a custom op's kernel calling a compiled
# model while the outer CPU graph replays) leases a workspace block of its own.
@torch.library.custom_op("threads_modes::call_inner", mutates_args=())
def _call_inner(x: torch.Tensor) -> torch.Tensor:
    return _INNER[0](x)


@_call_inner.register_fake
def _(x):
    return torch.empty_like(x)


_INNER: list = []


def test_a_replay_nested_in_another_gets_its_own_workspace():
    torch.manual_seed(0)
    inner = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.GELU(), torch.nn.Linear(64, 8))
    _INNER[:] = [compiled(inner)]

    def outer(x):
        h = torch.sin(x) * 3
        return _call_inner(h) + h.cos()

    G = compiled(outer)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(4, 8)
            h = torch.sin(x) * 3
            torch.testing.assert_close(G(x), inner(h) + h.cos(), rtol=0, atol=0)
    s = stats()
    assert s["captures"] == 2 and s["fallbacks"] == {}, s
    assert s["replays"] == 4 + 4, s  # the outer graph's and, inside each, the inner one's
