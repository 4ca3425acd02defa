"""Real CUDA graphs: the graph routes against eager on a device. Marked `device`; skipped
without CUDA (scripts/gpu-check.sh runs them on a GPU machine)."""

import pytest
import torch

import graphdispatch

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 128)
        self.b = torch.nn.Linear(128, 64)

    def forward(self, x):
        return self.b(torch.nn.functional.gelu(self.a(x))) + x


@pytest.mark.parametrize("route", ["graph_only", "graph_with_compile"])
def test_cuda_graph_route_matches_eager(route):
    model = Mlp().cuda().eval()
    compiled = torch.compile(model, backend="graphdispatch", options={route: True})
    with torch.no_grad():
        outs = []
        for _ in range(4):
            x = torch.randn(8, 64, device="cuda")
            outs.append((compiled(x), model(x)))
        for got, expected in outs:  # outputs held across later replays stay valid
            torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
    stats = graphdispatch.stats()
    assert stats["routes"] == {route: 1}
    assert stats["captures"] == 1 and stats["replays"] == 4
    assert stats["fallbacks"] == {}


def test_data_dependent_graph_is_refused():
    def fn(x):
        return x * x.sum().item()

    compiled = torch.compile(fn, backend="graphdispatch", options={"graph_only": True})
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for _ in range(3):
            x = torch.randn(16, device="cuda")
            torch.testing.assert_close(compiled(x), fn(x))
    stats = graphdispatch.stats()
    # Refused as a whole before any capture (graph_analysis.graph_refusal, as case C12 on the
    # CPU): each call runs without a graph, counted under that one reason.
    assert stats["fallbacks"] == {"data_dependent": 3} and stats["captures"] == 0
    assert not torch.cuda.is_current_stream_capturing()
    # Later captures still work.
    ok = torch.compile(lambda x: x + 1, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(4, device="cuda")
    torch.testing.assert_close(ok(x), x + 1)


def counting_capture_begins(monkeypatch):
    """Counts torch.cuda.CUDAGraph.capture_begin calls: proof that a capture was attempted."""
    calls = []
    original = torch.cuda.CUDAGraph.capture_begin

    def capture_begin(self, *args, **kwargs):
        calls.append(kwargs.get("pool"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_begin", capture_begin)
    return calls


def test_failed_capture_falls_back_and_later_captures_work(monkeypatch):
    # Case G2. A device-to-host copy inside the graph: legal in eager, forbidden while
    # capturing. The graph has no data-dependent shapes, so it is not refused up front: the
    # capture itself is begun and fails.
    def fn(x):
        return x + x.cpu().to(x.device)

    begins = counting_capture_begins(monkeypatch)
    compiled = torch.compile(fn, backend="graphdispatch", options={"graph_only": True})
    for n in range(3):  # new signatures: each one a capture that is begun and fails
        x = torch.randn(16 + n, 1024, device="cuda")
        torch.testing.assert_close(compiled(x), fn(x))
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {"capture_failed": 3} and stats["captures"] == 0
    assert len(begins) >= 3  # the captures really began (not refused before capture_begin)
    assert not torch.cuda.is_current_stream_capturing()
    ok = torch.compile(lambda x: x * 3, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(8, device="cuda")
    torch.testing.assert_close(ok(x), x * 3)
    assert graphdispatch.stats()["captures"] == 1


@pytest.mark.xfail(
    torch.__version__ < "2.12",
    strict=True,
    raises=RuntimeError,
    reason="capture_end leaves the allocator routing to the pool before "
    "pytorch#180395; only private functions could end it (docs/usage.md)",
)
def test_failed_capture_leaves_empty_cache_working_and_memory_recycled(monkeypatch):
    # Case G2, what torch >= 2.12 makes possible: the device left as before the failure.
    def fn(x):
        return x + x.cpu().to(x.device)

    begins = counting_capture_begins(monkeypatch)
    compiled = torch.compile(fn, backend="graphdispatch", options={"graph_only": True})
    reserved = []
    for n in range(6):
        x = torch.randn(16 + n, 1024, device="cuda")
        torch.testing.assert_close(compiled(x), fn(x))
        torch.cuda.empty_cache()  # raises while the allocator still routes to a pool
        reserved.append(torch.cuda.memory_reserved())
    assert graphdispatch.stats()["fallbacks"] == {"capture_failed": 6}
    assert len(begins) >= 6
    assert reserved[-1] <= reserved[1]  # freed inputs are recycled: reserved memory plateaus
    graph, static = torch.cuda.CUDAGraph(), torch.zeros(4, device="cuda")
    with torch.cuda.graph(graph):  # empties the cache itself
        static.add_(1)
    graph.replay()
    torch.testing.assert_close(static, torch.ones(4, device="cuda"))


def test_inside_callers_own_graph_records_into_it():
    compiled = torch.compile(lambda x: x * 2, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(32, device="cuda")
    compiled(x)  # capture our own entry first
    graph = torch.cuda.CUDAGraph()
    static_x = torch.randn(32, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        compiled(static_x)  # warm up the caller's way
        with torch.cuda.graph(graph, stream=stream):
            static_y = compiled(static_x)
    torch.cuda.current_stream().wait_stream(stream)
    static_x.copy_(torch.arange(32.0, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static_y, torch.arange(32.0, device="cuda") * 2)


def test_cpu_inputs_on_a_gpu_machine_take_the_default_route():
    compiled = torch.compile(lambda x: x + 1, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(4)
    torch.testing.assert_close(compiled(x), x + 1)
    assert graphdispatch.stats()["routes"] == {"default": 1}


class Gemm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(256, 256, device="cuda") / 16)

    def forward(self, x):
        return torch.relu(x @ self.w) @ self.w.t()


def test_survivors_of_an_eviction_replay_correctly_after_empty_cache():
    # Case G1: evicting one GEMM graph must not free the cuBLAS workspace the others replay with.
    model = Gemm().eval()
    # dynamic=True: one FX graph, so one runner sees the five signatures.
    compiled = torch.compile(
        model, backend="graphdispatch", options={"graph_only": True, "max_entries": 4}, dynamic=True
    )
    inputs = [torch.randn(b, 256, device="cuda") for b in (8, 16, 24, 32, 40)]
    with torch.no_grad():
        for x in inputs:
            compiled(x)
        assert graphdispatch.stats()["evictions"] == 1
        torch.cuda.empty_cache()  # returns freed segments to the device: a use is then a fault
        for x in inputs[1:]:  # the survivors
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-3, atol=1e-3)
        torch.cuda.synchronize()
    assert graphdispatch.stats()["fallbacks"] == {}


def test_new_captures_work_after_reset_eviction_and_deleting_the_model(monkeypatch):
    # Case G3: the pool outlives the last graph captured into it.
    begins = counting_capture_begins(monkeypatch)

    def run(options, n):
        model = Mlp().cuda().eval()
        compiled = torch.compile(model, backend="graphdispatch", options=options, dynamic=True)
        with torch.no_grad():
            x = torch.randn(n, 64, device="cuda")
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        return model, compiled

    model, compiled = run({"graph_only": True}, 4)
    graphdispatch.reset()  # every graph reset
    run({"graph_only": True}, 5)
    with torch.no_grad():  # max_entries=1: the second signature evicts the first entry
        _, one = run({"graph_only": True, "max_entries": 1}, 6)
        one(torch.randn(7, 64, device="cuda"))
    del model, compiled, one
    torch._dynamo.reset()
    run({"graph_only": True}, 8)
    assert graphdispatch.stats()["fallbacks"] == {}
    assert len(set(begins)) == 1  # one pool, held alive throughout


def test_a_pool_without_holder_is_replaced_after_its_last_graph(monkeypatch):
    # Case G3 where the framework refuses the empty holder graph: capture, release every graph
    # in the pool, capture again. Into the released id the allocator asserts (pytorch#198794);
    # the factory takes a new id instead.
    from graphdispatch import _C
    from graphdispatch._framework_graphs import FrameworkGraphFactory

    graphs = FrameworkGraphFactory("cuda")

    def refuse(device, handle):
        raise RuntimeError("empty graphs refused (as on a framework without them)")

    monkeypatch.setattr(graphs, "_hold", refuse)
    runner = _C.GraphRunner(
        lambda x: (x * 2 + 1,), [False], _C.PyGraphFactory(graphs), max_entries=1
    )
    for n in (8, 16, 24):  # each signature evicts the previous entry, the pool's only graph
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(runner(x)[0], x * 2 + 1)
    runner.clear()
    torch.cuda.synchronize()
    x = torch.randn(32, device="cuda")
    torch.testing.assert_close(runner(x)[0], x * 2 + 1)
    assert graphdispatch.stats()["fallbacks"] == {} and graphdispatch.stats()["captures"] == 4


def test_one_entry_from_two_threads_on_two_streams_matches_eager():
    # Case G4: the entry's buffers are shared; only device-side ordering keeps the calls apart.
    import threading

    model = Gemm().eval()
    compiled = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
    with torch.no_grad():
        compiled(torch.randn(64, 256, device="cuda"))
    results, errors = {}, []

    def worker(k):
        stream = torch.cuda.Stream()
        try:
            with torch.no_grad(), torch.cuda.stream(stream):
                for i in range(50):
                    x = torch.full((64, 256), float(k * 100 + i) / 1000, device="cuda")
                    results[(k, i)] = (x, compiled(x))
            stream.synchronize()
        except Exception as error:  # surfaced by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with torch.no_grad():
        for x, got in results.values():
            torch.testing.assert_close(got, model(x), rtol=1e-3, atol=1e-3)
    assert graphdispatch.stats()["captures"] == 1


def test_warmup_of_a_new_entry_never_disturbs_a_replay_on_another_thread():
    # Case G5: warmup runs on its own stream and workspace, apart from live graphs'.
    import threading

    model = Gemm().eval()
    compiled = torch.compile(
        model,
        backend="graphdispatch",
        options={"graph_only": True, "warmup_iters": 3},
        dynamic=False,
    )
    with torch.no_grad():
        compiled(torch.randn(128, 256, device="cuda"))
    stop, results = threading.Event(), []

    def replayer():
        stream = torch.cuda.Stream()
        with torch.no_grad(), torch.cuda.stream(stream):
            while not stop.is_set():
                x = torch.randn(128, 256, device="cuda")
                results.append((x, compiled(x)))
        stream.synchronize()

    thread = threading.Thread(target=replayer)
    thread.start()
    with torch.no_grad():
        for b in (136, 144, 152, 160):  # new entries: warmup and capture while replays run
            compiled(torch.randn(b, 256, device="cuda"))
    stop.set()
    thread.join()
    with torch.no_grad():
        for x, got in results:
            torch.testing.assert_close(got, model(x), rtol=1e-3, atol=1e-3)
    assert results and graphdispatch.stats()["captures"] == 5


def test_user_streams_never_alias_the_runtime_streams():
    # Case G8: c10's pool gives its 32 streams per priority round-robin; ours are not from it.
    from graphdispatch import _C

    compiled = torch.compile(lambda x: x + 1, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(4, device="cuda")
    torch.testing.assert_close(compiled(x), x + 1)  # the pipeline (and its streams) now exist
    ours = set(_C._testing.pipeline_streams("cuda:0"))
    assert len(ours) == 3
    users = {torch.cuda.Stream(priority=p).stream_id for p in (0, -1) for _ in range(64)}
    assert not ours & users


def test_empty_cache_is_held_off_in_every_spelling_during_capture():
    from graphdispatch import _C
    from graphdispatch import _capture_hold_off as capture_hold_off
    from graphdispatch._backend import graph_factory

    seen = []

    def fn(x):  # run by the runner itself (no Dynamo), so the checks run at capture time
        if torch.cuda.is_current_stream_capturing():
            seen.append(
                [
                    f is capture_hold_off._no_empty_cache
                    for f in (
                        torch.cuda.empty_cache,
                        torch.cuda.memory.empty_cache,
                        torch.accelerator.empty_cache,
                        torch.accelerator.memory.empty_cache,
                    )
                ]
            )
        return (x * 2,)

    runner = _C.GraphRunner(fn, [False], graph_factory("cuda"))
    x = torch.randn(4, device="cuda")
    torch.testing.assert_close(runner(x)[0], x * 2)
    assert seen == [[True] * 4] and graphdispatch.stats()["captures"] == 1
    assert torch.cuda.empty_cache is not capture_hold_off._no_empty_cache
