"""Lazy setup (Note [Lazy loading]): each step runs once, on first use, under a lock; a failed step
is retried by the next call without re-applying the steps that succeeded; Inductor's setup never
runs on the graph_only route."""

from __future__ import annotations

import threading

import pytest

from graphdispatch._once import RunOnce, Setup

THREADS = 8


def _run_concurrently(fn, n=THREADS):
    """Calls ``fn`` from ``n`` threads released together; returns their exceptions (or None)."""
    barrier = threading.Barrier(n)
    errors = [None] * n

    def work(i):
        barrier.wait(timeout=10)
        try:
            fn()
        except Exception as error:  # noqa: BLE001 - collected for the assertions
            errors[i] = error

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
        assert not t.is_alive(), "a setup thread hung"
    return errors


class Counter:
    def __init__(self, fail_first: int = 0):
        self.calls = 0
        self.fail_first = fail_first
        self._lock = threading.Lock()

    def __call__(self):
        with self._lock:
            self.calls += 1
            call = self.calls
        threading.Event().wait(0.01)  # widen the window in which other threads arrive
        if call <= self.fail_first:
            raise RuntimeError(f"injected failure {call}")


def test_concurrent_first_use_runs_once():
    fn = Counter()
    step = RunOnce("step", fn)
    errors = _run_concurrently(step)
    assert errors == [None] * THREADS
    assert fn.calls == 1 and step.attempts == 1 and step.done


def test_failed_step_is_retried_by_the_next_caller():
    fn = Counter(fail_first=1)
    step = RunOnce("step", fn)
    errors = _run_concurrently(step)
    # One thread saw the failure; one other thread retried and succeeded; the rest waited.
    assert sum(e is not None for e in errors) == 1
    assert fn.calls == 2 and step.attempts == 2 and step.done


def test_setup_does_not_reapply_succeeded_steps():
    a, b, c = Counter(), Counter(fail_first=1), Counter()
    setup = Setup("route", RunOnce("a", a), RunOnce("b", b), RunOnce("c", c))
    with pytest.raises(RuntimeError, match="injected failure 1"):
        setup()
    assert (a.calls, b.calls, c.calls) == (1, 1, 0)
    assert setup.succeeded() == ["a"] and not setup.done
    setup()
    assert (a.calls, b.calls, c.calls) == (1, 2, 1)
    assert setup.done and setup.succeeded() == ["a", "b", "c"]
    setup()  # done: no step runs again
    assert (a.calls, b.calls, c.calls) == (1, 2, 1)


def test_route_setups_are_ordered_and_inductor_free_for_graph_only():
    from graphdispatch import _backend as backend

    names = {
        route: [s.name for s in setup.steps]
        for route, setup in ((r, route.setup) for r, route in backend.ROUTES.items())
    }
    assert names == {
        "graph_only": ["extension"],
        "graph_with_compile": ["extension", "inductor"],
        "default": ["inductor"],
    }


CONCURRENT_COMPILES = """
import json, sys, threading
import torch
import graphdispatch
from graphdispatch import _backend as backend

made = []
real_make_factory = backend.make_factory
def counting_make_factory(kind):
    made.append(kind)
    return real_make_factory(kind)
backend.make_factory = counting_make_factory

class M(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2 + 1

gms = [torch.fx.symbolic_trace(M()) for _ in range(8)]
x = torch.randn(16)
barrier = threading.Barrier(8)
results = [None] * 8
def work(i):
    barrier.wait(timeout=10)
    fn = graphdispatch.Backend(graph_only=True, device_graph="emulated")(gms[i], [x])
    results[i] = bool(torch.allclose(fn(x), torch.relu(x) * 2 + 1))
threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join(timeout=60)
print(json.dumps({
    "results": results, "extension_attempts": backend.LOAD_EXTENSION.attempts,
    "inductor_attempts": backend.SETUP_INDUCTOR.attempts, "factories_made": made,
    "compile_fx_loaded": "torch._inductor.compile_fx" in sys.modules,
    "captures": graphdispatch.stats()["captures"], "routes": graphdispatch.stats()["routes"],
}))
"""


def test_concurrent_first_compiles_set_up_once(run_py):
    out = run_py(CONCURRENT_COMPILES)
    assert out["results"] == [True] * THREADS
    assert out["extension_attempts"] == 1
    assert out["factories_made"] == ["emulated"]
    assert out["captures"] == THREADS and out["routes"] == {"graph_only": THREADS}
    # graph_only never runs Inductor's setup.
    assert out["inductor_attempts"] == 0 and out["compile_fx_loaded"] is False


def test_failed_route_setup_is_retried_through_backend(run_py):
    out = run_py("""
        import json
        import torch
        import graphdispatch
        from graphdispatch import _backend as backend

        real = backend.LOAD_EXTENSION._fn
        calls = []
        def fail_once():
            calls.append(1)
            if len(calls) == 1:
                raise ImportError("injected: extension failed to load")
            real()
        backend.LOAD_EXTENSION._fn = fail_once

        gm = torch.fx.symbolic_trace(lambda x: x * 2)
        x = torch.randn(4)
        make = lambda: graphdispatch.Backend(graph_only=True, device_graph="emulated")(gm, [x])
        try:
            make()
            first = None
        except ImportError as e:
            first = str(e)
        fn = make()
        ok = bool(torch.equal(fn(x), x * 2))
        done = backend.ROUTES["graph_only"].setup.done
        print(json.dumps({"first": first, "calls": len(calls), "ok": ok,
                          "routes": backend.route_counts(), "done": done}))
    """)
    assert out["first"] == "injected: extension failed to load"
    assert out["calls"] == 2 and out["ok"] and out["done"]
    assert out["routes"] == {"graph_only": 1}  # the failed attempt chose no route


def test_graph_with_compile_setup_keeps_succeeded_steps(run_py):
    # The real two-step route setup; the Inductor step (an import, no compile) fails once.
    out = run_py("""
        import json
        from graphdispatch import _backend as backend
        real = backend.SETUP_INDUCTOR._fn
        calls = []
        def fail_once():
            calls.append(1)
            if len(calls) == 1:
                raise RuntimeError("injected: inductor setup failed")
            real()
        backend.SETUP_INDUCTOR._fn = fail_once
        setup = backend.ROUTES["graph_with_compile"].setup
        try:
            setup()
        except RuntimeError:
            pass
        after_failure = setup.succeeded()
        attempts_1 = (backend.LOAD_EXTENSION.attempts, backend.SETUP_INDUCTOR.attempts)
        setup()
        attempts_2 = (backend.LOAD_EXTENSION.attempts, backend.SETUP_INDUCTOR.attempts)
        print(json.dumps({"after_failure": after_failure, "attempts_1": attempts_1,
                          "attempts_2": attempts_2, "done": setup.done,
                          "default_done": backend.ROUTES["default"].setup.done}))
    """)
    assert out["after_failure"] == ["extension"]
    assert out["attempts_1"] == [1, 1]
    assert out["attempts_2"] == [1, 2]  # the extension step was not re-applied
    assert out["done"] and out["default_done"]  # the shared Inductor step is done for all routes
