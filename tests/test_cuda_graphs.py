"""Real CUDA graphs: the graph routes against eager on a device. Marked `device`; skipped
without CUDA (scripts/gpu-check.sh runs them on a GPU machine)."""

import pytest
import torch

import graphdispatch

pytestmark = [pytest.mark.device,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


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
    assert sum(stats["fallbacks"].values()) >= 3
    assert not torch.cuda.is_current_stream_capturing()
    # Later captures still work.
    ok = torch.compile(lambda x: x + 1, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(4, device="cuda")
    torch.testing.assert_close(ok(x), x + 1)


def test_failed_capture_falls_back_and_leaves_device_usable():
    # A device-to-host copy inside the graph: legal in eager, forbidden while capturing. The
    # graph has no data-dependent shapes, so it is not refused up front: capture itself fails.
    def fn(x):
        return x + x.cpu().to(x.device)

    compiled = torch.compile(fn, backend="graphdispatch", options={"graph_only": True})
    reserved = torch.cuda.memory_reserved()
    for _ in range(3):
        x = torch.randn(16, device="cuda")
        torch.testing.assert_close(compiled(x), fn(x))
    stats = graphdispatch.stats()
    assert stats["fallbacks"].get("capture_failed") == 3
    assert stats["captures"] == 0
    assert not torch.cuda.is_current_stream_capturing()
    ok = torch.compile(lambda x: x * 3, backend="graphdispatch", options={"graph_only": True})
    x = torch.randn(8, device="cuda")
    torch.testing.assert_close(ok(x), x * 3)
    assert graphdispatch.stats()["captures"] == 1
    assert torch.cuda.memory_reserved() <= reserved + 64 * 2**20  # no runaway pool growth


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
