"""The device-graph routes on the test device (Note [Test device] in
csrc/test_device/test_device.h): ``device_graph="accelerator"`` captures real
``torch.accelerator.Graph`` objects through the framework adapter (_framework_graphs.py), into
the device's pools, on the copy pipeline's streams. Oracle: eager PyTorch on the same device;
one capture per graph, every later call a replay."""

import gc
import os
import textwrap
import threading
from pathlib import Path

import pytest
import torch
from fork_child import FORK_HELPER
from plugin.plugin_helpers import run_script
from testdev import pool_reserved_bytes, slow_launches, testdev  # noqa: F401  (the fixture)

import graphdispatch
from graphdispatch import _C
from graphdispatch._framework_graphs import FrameworkGraphFactory

ACCELERATOR = {"graph_only": True, "device_graph": "accelerator"}


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 32)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x))) + x


def model_on(device):
    torch.manual_seed(0)
    return Mlp().to(device).eval()


def test_graph_only_replays_every_call_with_eagers_values(testdev):
    model = model_on(testdev)
    compiled = torch.compile(model, backend="graphdispatch", options=ACCELERATOR)
    with torch.no_grad():
        calls = [torch.randn(8, 32).to(testdev) for _ in range(4)]
        pairs = [(compiled(x), model(x)) for x in calls]
    for got, expected in pairs:  # outputs held across later replays keep their values
        assert got.device == testdev
        assert torch.equal(got.cpu(), expected.cpu())
    stats = graphdispatch.stats()
    assert stats["routes"] == {"graph_only": 1} and stats["fallbacks"] == {}
    assert stats["captures"] == 1 and stats["replays"] == 4


@pytest.mark.parametrize("copy_stream", [True, False])
def test_copy_pipeline_and_safe_outputs_off(testdev, copy_stream):
    # The copy stream's events order the input copies against the caller's stream (a fork
    # and join the device checks during capture); unsafe outputs are the static outputs.
    model = model_on(testdev)
    options = {**ACCELERATOR, "copy_stream": copy_stream, "safe_output_mode": False}
    compiled = torch.compile(model, backend="graphdispatch", options=options)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 32).to(testdev)
            assert torch.equal(compiled(x).cpu(), model(x).cpu())
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {} and stats["captures"] == 1 and stats["replays"] == 3


def test_eviction_then_clear_then_capture_uses_the_held_pool(testdev):
    # The fresh-pool fix (Note [Device pools]) on a real allocator: entries evicted, all
    # cleared, then a capture into the same pool id, which an empty graph holds alive (without
    # it, the allocator's use_count assert fires: test_testdev.py).
    runner = _C.GraphRunner(
        lambda x: (x * 2 + 1,),
        [False],
        _C.PyGraphFactory(FrameworkGraphFactory("accelerator")),
        max_entries=1,
    )
    for n in (3, 4, 5):
        x = torch.randn(n).to(testdev)
        assert torch.equal(runner(x)[0].cpu(), x.cpu() * 2 + 1)
    runner.clear()
    x = torch.randn(6).to(testdev)
    assert torch.equal(runner(x)[0].cpu(), x.cpu() * 2 + 1)
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {} and stats["captures"] == 4 and stats["evictions"] == 2


def test_a_host_sync_in_the_model_falls_back_and_later_captures_work(testdev):
    # Case G2 on a device that refuses for real: the capture is invalidated, the call served
    # without a graph, the pool retired; the next signature captures into a new pool.
    def fn(x):
        return x + x.cpu().to(x.device)

    compiled = torch.compile(fn, backend="graphdispatch", options=ACCELERATOR)
    x = torch.randn(4).to(testdev)
    assert torch.equal(compiled(x).cpu(), fn(x).cpu())
    stats = graphdispatch.stats()
    assert stats["captures"] == 0 and stats["fallbacks"] == {"capture_failed": 1}
    ok = torch.compile(lambda x: x * 7, backend="graphdispatch", options=ACCELERATOR)
    for _ in range(2):
        y = torch.randn(5).to(testdev)
        assert torch.equal(ok(y).cpu(), y.cpu() * 7)
    assert graphdispatch.stats()["captures"] == 1


def test_verified_replays_find_no_mismatch(testdev):
    model = model_on(testdev)
    options = {**ACCELERATOR, "verify_replays": 2}
    compiled = torch.compile(model, backend="graphdispatch", options=options)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(8, 32).to(testdev)
            assert torch.equal(compiled(x).cpu(), model(x).cpu())
    stats = graphdispatch.stats()
    assert stats["verified_replays"] == 2 and stats["fallbacks"] == {}


def test_threads_share_one_entry(testdev):
    model = model_on(testdev)
    compiled = torch.compile(model, backend="graphdispatch", options=ACCELERATOR)
    inputs = [torch.randn(8, 32).to(testdev) for _ in range(4)]
    with torch.no_grad():
        expected = [model(x).cpu() for x in inputs]
        compiled(inputs[0])  # capture once, then four threads replay
    results = [None] * 4

    def call(i):
        with torch.no_grad():
            results[i] = compiled(inputs[i]).cpu()

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(torch.equal(got, want) for got, want in zip(results, expected))
    stats = graphdispatch.stats()
    assert stats["captures"] == 1 and stats["replays"] == 5 and stats["fallbacks"] == {}


def test_entry_bytes_are_the_allocators_bytes(testdev):
    # The memory ledger: stats()' entry bytes are exactly the allocator's bytes in the pool the
    # entries share (what each capture added) plus each entry's input buffers (outside it).
    factory = FrameworkGraphFactory("accelerator")
    runner = _C.GraphRunner(
        lambda x: (torch.cat([x, x * 2]).relu(),), [False], _C.PyGraphFactory(factory)
    )
    inputs = 0
    for n in (256, 512, 1024):
        runner(torch.randn(n).to(testdev))
        inputs += n * 4  # float32, a multiple of the allocator's 512-byte rounding
        pool = factory._pools[str(testdev)]
        assert graphdispatch.stats()["entry_bytes"] == pool_reserved_bytes(pool.id) + inputs
    assert graphdispatch.stats()["entries"] == 3


def test_graph_with_compile_needs_an_inductor_backend_for_the_device(testdev):
    # Inductor has no code generator for a PrivateUse1 device that registers none: the route
    # raises as torch.compile's default backend does on it (no graph, no silent fallback).
    model = model_on(testdev)
    x = torch.randn(2, 32).to(testdev)
    for options in ({"graph_with_compile": True, "device_graph": "accelerator"}, None):
        torch._dynamo.reset()
        backend = "graphdispatch" if options else "inductor"
        compiled = torch.compile(model, backend=backend, options=options)
        with pytest.raises(Exception, match="testdev"), torch.no_grad():
            compiled(x)


def test_a_call_inside_a_callers_capture_is_recorded_into_it(testdev):
    # Case G8 on a capturing device: with an entry and without one, the call inside the
    # caller's capture is recorded into the caller's graph, and its replay computes the model.
    compiled = torch.compile(lambda x: x * 2 + 1, backend="graphdispatch", options=ACCELERATOR)
    x = torch.ones(4, device=testdev)
    for has_entry in (True, False):
        torch._dynamo.reset()
        graphdispatch.reset()
        if has_entry:
            compiled(x)
        graph = torch.accelerator.Graph()
        with torch.Stream(testdev):
            graph.capture_begin()
            y = compiled(x)
            graph.capture_end()
        x.copy_(torch.arange(4.0))
        graph.replay()
        assert torch.equal(y.cpu(), torch.arange(4.0) * 2 + 1)
        x.fill_(1.0)


@pytest.mark.parametrize("key", ["sd", "sd3", "flux"])
def test_demo_pipeline_replays_every_step(testdev, key):
    pytest.importorskip("diffusers")
    from graphdispatch import demo

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        eager = demo.Route("eager", "none", None)
        _, reference = demo.run_route(key, eager, 3, testdev, None)
        route = demo.Route("graph_only", "accelerator", ACCELERATOR)
        result, images = demo.run_route(key, route, 3, testdev, reference)
    finally:
        torch.set_num_threads(threads)
    assert demo.check(result) is None, result
    assert result["fallbacks"] == {} and result["captures"] == 1 and result["replays"] == 6
    assert images.device == testdev and torch.equal(images.cpu(), reference.cpu())


def test_deleting_the_model_frees_its_entries_device_memory(testdev):
    # Case C34 on a device allocator: the entries' buffers and static outputs go with the model.
    gc.collect()  # what earlier tests left to the collector
    before = torch.accelerator.memory_allocated()
    model = model_on(testdev)
    compiled = torch.compile(model, backend="graphdispatch", options=ACCELERATOR)
    with torch.no_grad():
        for batch in (2, 3):
            compiled(torch.randn(batch, 32).to(testdev))
    assert graphdispatch.stats()["entries"] == 2
    assert torch.accelerator.memory_allocated() > before
    del model, compiled
    gc.collect()
    torch._dynamo.reset()
    assert graphdispatch.stats()["entries"] == 0
    assert torch.accelerator.memory_allocated() == before


def test_explain_reports_the_accelerator_graph(testdev):
    model = model_on(testdev)
    with torch.no_grad():
        report = graphdispatch.explain(model, torch.randn(2, 32).to(testdev), options=ACCELERATOR)
    (graph,) = report.to_dict()["graphs"]
    assert graph["fallbacks"] == [] and report.stats["captures"] == 1
    assert "accelerator" in str(report)


def test_mindiesd_scenario_a_picks_the_accelerator_graph(testdev, restore_config):
    # MindIE-SD's scenario A with only the import changed; "auto" finds the device's graph.
    from graphdispatch.compat.mindiesd import CompilationConfig, MindieSDBackend

    model = model_on(testdev)
    CompilationConfig.aclgraph_only = True
    compiled = torch.compile(model, backend=MindieSDBackend())
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 32).to(testdev)
            assert torch.equal(compiled(x).cpu(), model(x).cpu())
    stats = graphdispatch.stats()
    assert stats["routes"] == {"graph_only": 1} and stats["fallbacks"] == {}
    assert stats["captures"] == 1 and stats["replays"] == 3


def test_a_held_unsafe_output_survives_another_entrys_replay(testdev):
    # Found on the test device (Note [Outputs still held]): entry A (large intermediates, freed
    # into the device's pool when its capture ends) is captured first; entry B's static output
    # is then cut from that freed memory, which A's graph writes on every replay. B's output,
    # held across a call of A, kept A's values before the fix; now A's replay first copies it
    # away, as B's own next replay would.
    def fn(x):
        return (((x * 2).sin() + 1).sum(0),)

    factory = _C.PyGraphFactory(FrameworkGraphFactory("accelerator"))  # a pool of its own
    runner = _C.GraphRunner(fn, [False], factory, safe_output_mode=False)
    x_a, x_b = torch.randn(64, 256).to(testdev), torch.randn(4, 256).to(testdev)
    runner(x_a)
    runner(x_b)
    (held,) = runner(x_b)
    expected = fn(x_b)[0].cpu()
    runner(x_a)
    stats = graphdispatch.stats()
    assert stats["captures"] == 2 and stats["held_outputs_copied"] == 1
    assert torch.equal(held.cpu(), expected)


def test_two_entries_called_from_threads_on_one_stream_get_their_own_values(testdev):
    # Found on the test device (Note [Replay]): entry B's static output is cut from entry A's
    # freed intermediates; a thread's replay of A launched between B's replay and the copy of
    # B's output wrote it first. Slowed launches make the threads interleave on every call.
    def fn(x):
        return (((x * 2).sin() + 1).sum(0),)

    factory = _C.PyGraphFactory(FrameworkGraphFactory("accelerator"))  # a pool of its own
    runner = _C.GraphRunner(fn, [False], factory)
    inputs = [torch.randn(64, 256).to(testdev), torch.randn(4, 256).to(testdev)]
    expected = [fn(x)[0].cpu() for x in inputs]
    for x in inputs:
        runner(x)
    wrong = []

    def call(i):
        for _ in range(2000):
            if not torch.equal(runner(inputs[i])[0].cpu(), expected[i]):
                wrong.append(i)

    with slow_launches(50):
        threads = [threading.Thread(target=call, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert wrong == [] and graphdispatch.stats()["captures"] == 2


FORK_SCRIPT = FORK_HELPER + textwrap.dedent("""
    import sys
    sys.path.insert(0, TESTS)
    import torch, graphdispatch, testdev
    device = testdev.load()
    G = torch.compile(lambda x: x * 3 - 1, backend="graphdispatch",
                      options={"graph_only": True, "device_graph": "accelerator"})
    x = torch.arange(4.0).to(device)
    G(x)  # an entry and the device's pool in the parent

    def child():
        # The child forgets entries and pools (Note [Fork]): its captures take a new pool.
        values = [G(x).cpu().tolist(), G(x * 2).cpu().tolist()]
        s = graphdispatch.stats()
        return {"values": values, "captures": s["captures"], "replays": s["replays"],
                "fallbacks": s["fallbacks"]}

    print(json.dumps({"child": in_child(child, 60), "parent": G(x).cpu().tolist()}), flush=True)
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX fork")
def test_a_forked_child_captures_on_the_device(testdev):
    tests = str(Path(__file__).resolve().parent)
    script = f"TESTS = {tests!r}\n" + FORK_SCRIPT
    report = run_script(script)
    child = report["child"]
    assert child["ok"], child
    expected = (torch.arange(4.0) * 3 - 1).tolist()
    assert child["value"]["values"] == [expected, (torch.arange(4.0) * 6 - 1).tolist()]
    counts = {k: child["value"][k] for k in ("captures", "replays", "fallbacks")}
    assert counts == {"captures": 1, "replays": 2, "fallbacks": {}}
    assert report["parent"] == expected


class Decay(torch.nn.Module):
    """State replaced by a new tensor every call (case C35)."""

    def __init__(self, device):
        super().__init__()
        self.register_buffer("h", torch.zeros(4, device=device))

    def forward(self, x):
        self.h = self.h * 0.5 + x
        return self.h * 2


def test_moving_state_recaptures_at_most_max_recaptures_times(testdev):
    # On a device allocator the replaced state's memory is handed out again at once: values
    # stay eager's, recaptures stay bounded, the rest falls back by its reason.
    model, eager = Decay(testdev), Decay(testdev)
    options = {**ACCELERATOR, "max_recaptures": 2}
    compiled = torch.compile(model, backend="graphdispatch", options=options)
    for k in range(12):
        x = torch.full((4,), float(k), device=testdev)
        assert torch.equal(compiled(x).cpu(), eager(x).cpu()), k
    assert torch.equal(model.h.cpu(), eager.h.cpu())
    stats = graphdispatch.stats()
    assert stats["recaptures"] <= 2 and stats["captures"] <= 3
    assert stats["replays"] + stats["fallbacks"]["static_inputs_moving"] == 12


NPU_SCRIPT = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, TESTS)
    import torch, graphdispatch, testdev
    from graphdispatch._device_graphs import choose_kind
    device = testdev.load("npu")  # PrivateUse1 named npu, with a torch.npu of NPUGraph
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)).to(device).eval()
    G = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
    equal = []
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 8).to(device)
            equal.append(torch.equal(G(x).cpu(), model(x).cpu()))
    s = graphdispatch.stats()
    print(json.dumps({"kind": choose_kind("auto", device)[0], "equal": equal,
                      "captures": s["captures"], "replays": s["replays"],
                      "fallbacks": s["fallbacks"]}), flush=True)
""")


def test_the_npu_kinds_adapter_on_the_device_named_npu(testdev):
    # The npu kind's own branch of the factory (NPUGraph, graph_pool_handle, capture_begin's
    # pool and thread_local mode), picked by "auto", over the same device renamed npu.
    tests = str(Path(__file__).resolve().parent)
    report = run_script(f"TESTS = {tests!r}\n" + NPU_SCRIPT)
    del report["_returncode"]
    assert report == {
        "kind": "npu",
        "equal": [True, True, True],
        "captures": 1,
        "replays": 3,
        "fallbacks": {},
    }


def flux_inputs(device, tokens):
    """tiny_flux_inputs() with ``tokens`` image tokens, on ``device``."""
    return dict(
        hidden_states=torch.randn(1, tokens, 16).to(device),
        encoder_hidden_states=torch.randn(1, 6, 32).to(device),
        pooled_projections=torch.randn(1, 16).to(device),
        timestep=torch.tensor([0.5]).to(device),
        guidance=torch.tensor([3.5]).to(device),
        img_ids=torch.zeros(tokens, 3).to(device),
        txt_ids=torch.zeros(6, 3).to(device),
        return_dict=False,
    )


def test_the_memory_ledger_of_eight_flux_sizes(testdev):
    # The serving ledger: each entry's bytes in stats() are exactly what its capture added to
    # the device's pool (the allocator's own count) plus its input buffers; captured largest
    # first (as graphdispatch.warmup orders them), the smaller entries reuse the largest's
    # freed intermediates, so the eight hold at most 1.15x the largest.
    pytest.importorskip("diffusers")
    from graphdispatch.tiny_pipelines import tiny_flux_transformer

    gc.collect()
    torch.accelerator.empty_cache()  # the pool keeps no memory of earlier tests' entries
    torch.manual_seed(0)
    model = tiny_flux_transformer().to(testdev).eval()
    # One graph for every size: each size one entry of it.
    compiled = torch.compile(model, backend="graphdispatch", options=ACCELERATOR, dynamic=True)

    def pool_bytes():  # the graph pools' bytes (only the backend's grows here)
        return pool_reserved_bytes((0, 0))

    per_entry = []
    with torch.no_grad():
        for tokens in (128, 112, 96, 80, 64, 48, 32, 16):
            kwargs = flux_inputs(testdev, tokens)
            entry_before, pool_before = graphdispatch.stats()["entry_bytes"], pool_bytes()
            torch.testing.assert_close(compiled(**kwargs)[0].cpu(), model(**kwargs)[0].cpu())
            buffers = sum(v.nbytes for v in kwargs.values() if isinstance(v, torch.Tensor))
            entry = graphdispatch.stats()["entry_bytes"] - entry_before
            assert entry == pool_bytes() - pool_before + buffers, tokens
            per_entry.append(entry)
    stats = graphdispatch.stats()
    assert stats["captures"] == 8 and stats["entries"] == 8 and stats["fallbacks"] == {}
    assert sum(per_entry) <= 1.15 * max(per_entry), per_entry
