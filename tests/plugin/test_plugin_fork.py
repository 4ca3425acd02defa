"""C20 and fork safety (docs/usage.md, "Fork"): a forked child gets fresh locks and run-once state
(``os.register_at_fork``), starts with empty graph caches and never replays the parent's
graphs. Every child wait has a 10 s timeout, so a deadlock fails the test instead of hanging."""

from __future__ import annotations

from fork_child import FORK_HELPER


def test_fork_after_import_child_uses_api(run_py):  # C20(a)
    out = run_py(
        FORK_HELPER
        + """
import torch
import graphdispatch

def child():
    opts = graphdispatch.check_options({"max-entries": 2})
    gm = torch.fx.symbolic_trace(lambda x: x * 2 + 1)
    x = torch.randn(8)
    fn = graphdispatch.Backend(graph_only=True, device_graph="emulated")(gm, [x])
    ok = bool(torch.allclose(fn(x), x * 2 + 1))
    captures = graphdispatch.stats()["captures"]
    return {"max_entries": opts["max_entries"], "ok": ok, "captures": captures}

print(json.dumps({"child": in_child(child, timeout=10)}))
"""
    )
    assert out["child"] == {"ok": True, "value": {"max_entries": 2, "ok": True, "captures": 1}}


LOCK_HELD_AT_FORK = (
    FORK_HELPER
    + """
import threading
import torch
import graphdispatch
from graphdispatch import _backend as backend, _capture_hold_off as capture_hold_off
from graphdispatch._once import RunOnce

parent = os.getpid()
release = threading.Event()
holding = threading.Barrier(4)

# 1. A run-once step in progress in a parent thread: its condition is held around the state
#    change and the step is "running" when the parent forks.
def slow_step():
    if os.getpid() == parent:
        holding.wait(timeout=10)
        release.wait(timeout=30)
step = RunOnce("held-at-fork", slow_step)

# 2. Python locks of the backend held by a thread.
def hold_python_locks():
    with backend._FACTORIES_LOCK, backend._ROUTES_LOCK, capture_hold_off.HOLD_OFF._lock:
        holding.wait(timeout=10)
        release.wait(timeout=30)

# 3. A runner's C++ insert mutex and the device's capture lock: a capture in progress in a
#    parent thread (the graph's function blocks inside warm-up).
blocked_once = threading.Event()

@torch.fx.wrap
def block_in_parent(x):
    if os.getpid() == parent and x.numel() == 3 and not blocked_once.is_set():
        blocked_once.set()  # warm-up blocks; the capture after it does not
        holding.wait(timeout=10)
        release.wait(timeout=30)
    return x + 1

class M(torch.nn.Module):
    def forward(self, x):
        return block_in_parent(x) * 2

gm = torch.fx.symbolic_trace(M())
x = torch.randn(4)
fn = graphdispatch.Backend(graph_only=True, device_graph="emulated", lazy_capture=True)(gm, [x])
fn(x)  # a captured entry for shape (4,)

threads = [threading.Thread(target=step), threading.Thread(target=hold_python_locks),
           threading.Thread(target=fn, args=(torch.randn(3),))]
for t in threads:
    t.start()
holding.wait(timeout=10)  # every thread is now inside its lock

def child():
    step()  # the parent's running step is forgotten; the child runs it (returns at once)
    with backend._FACTORIES_LOCK, backend._ROUTES_LOCK:
        pass
    factory = backend.graph_factory("emulated")
    y = torch.randn(3)
    out = fn(y)  # the runner's insert mutex and the capture lock, fresh in the child
    return {"step_done": step.done, "ok": bool(torch.allclose(out, (y + 1) * 2)),
            "captures": graphdispatch.stats()["captures"]}

result = in_child(child, timeout=10)
release.set()
for t in threads:
    t.join(timeout=30)
y = torch.randn(3)
print(json.dumps({"child": result, "parent_step_done": step.done,
                  "parent_threads_alive": [t.is_alive() for t in threads],
                  "parent_ok": bool(torch.allclose(fn(y), (y + 1) * 2)),
                  "parent_captures": graphdispatch.stats()["captures"]}))
"""
)


def test_lock_held_by_parent_thread_at_fork(run_py):  # C20(b)
    out = run_py(LOCK_HELD_AT_FORK)
    assert out["child"] == {"ok": True, "value": {"step_done": True, "ok": True, "captures": 1}}
    assert out["parent_step_done"] is True
    assert out["parent_threads_alive"] == [False, False, False]
    # The parent's capture, blocked across the fork, completed normally.
    assert out["parent_ok"] is True and out["parent_captures"] == 2


def test_child_never_replays_parent_graphs(run_py):  # C20(d)
    out = run_py(
        FORK_HELPER
        + """
import torch
import graphdispatch
from graphdispatch import _backend as backend

f = lambda x: torch.sin(x) * 3
c = torch.compile(f, backend="graphdispatch",
                  options={"graph_only": True, "device_graph": "emulated"})
x = torch.randn(8)
c(x); c(x)
parent_before = {"entries": sum(r.num_entries for r in list(backend._RUNNERS)),
                 "captures": graphdispatch.stats()["captures"]}

def child():
    entries_at_start = [r.num_entries for r in list(backend._RUNNERS)]
    stats_at_start = graphdispatch.stats()
    y = torch.randn(8)
    ok = bool(torch.allclose(c(y), f(y)))
    return {"entries_at_start": entries_at_start, "captures_at_start": stats_at_start["captures"],
            "routes_at_start": stats_at_start["routes"],
            "captures_after_call": graphdispatch.stats()["captures"], "ok": ok}

result = in_child(child, timeout=10)
y = torch.randn(8)
parent_ok = bool(torch.allclose(c(y), f(y)))
parent_after = {"entries": sum(r.num_entries for r in list(backend._RUNNERS)),
                "captures": graphdispatch.stats()["captures"], "ok": parent_ok}
print(json.dumps({"child": result, "parent_before": parent_before, "parent_after": parent_after}))
"""
    )
    assert out["parent_before"] == {"entries": 1, "captures": 1}
    child = out["child"]
    assert child["ok"] is True, child
    value = child["value"]
    assert value["entries_at_start"] == [0]  # the child's runner starts empty
    assert value["captures_at_start"] == 0 and value["routes_at_start"] == {}
    assert value["captures_after_call"] == 1 and value["ok"]  # captured anew in the child
    # The parent's graph is untouched by the child.
    assert out["parent_after"] == {"entries": 1, "captures": 1, "ok": True}


def test_after_fork_hook_takes_no_lock_and_does_not_log(run_py):
    # Every lock the hooks could touch is held by a parent thread, and logging's handlers are
    # replaced by one that records: the child's hooks must finish without either.
    out = run_py(
        FORK_HELPER
        + """
import logging, threading
import torch
import graphdispatch
from graphdispatch import _once, _backend as backend

records = []
class Record(logging.Handler):
    def emit(self, record):
        records.append(record.getMessage())
logging.getLogger().addHandler(Record())
logging.getLogger().setLevel(logging.DEBUG)

graphdispatch.stats()  # the extension loaded, so its fork hook has state to reset
def child():
    return {"records": list(records), "hooks": sorted(_once._FORK_HOOKS),
            "steps_running": [s.name for s in list(_once._ALL) if s._running]}
records.clear()
print(json.dumps({"child": in_child(child, timeout=10)}))
"""
    )
    value = out["child"]["value"]
    assert value["records"] == []
    assert value["hooks"] == [
        "graphdispatch._backend._reset_after_fork",
        "graphdispatch._framework_graphs._reset_after_fork",
    ]
    assert value["steps_running"] == []
