"""The ``graph_passes`` option: users' FX passes run on Dynamo's graph before capture, with
``graphdispatch.patterns.fuse_rms_norm`` as the example, checked on a real tiny SD3.5-style
transformer (query and key norms written out by hand, diffusers' ``RMSNorm``) against eager
PyTorch."""

from __future__ import annotations

import pytest
import torch

import graphdispatch
from graphdispatch._backend import run_graph_passes
from graphdispatch.patterns import fuse_rms_norm
from graphdispatch.tiny_pipelines import tiny_sd3_transformer

diffusers = pytest.importorskip("diffusers")


def tiny_sd35():
    """The demo's tiny SD3 transformer with SD3.5's ``qk_norm="rms_norm"``, and one step's
    inputs under classifier-free guidance (a batch of 2)."""
    torch.manual_seed(0)
    model = tiny_sd3_transformer(qk_norm="rms_norm").eval()
    inputs = dict(
        hidden_states=torch.randn(2, 4, 8, 8),
        encoder_hidden_states=torch.randn(2, 6, 32),
        pooled_projections=torch.randn(2, 16),
        timestep=torch.tensor([500.0]).expand(2),
        return_dict=False,
    )
    norms = sum(isinstance(m, diffusers.models.normalization.RMSNorm) for m in model.modules())
    return model, inputs, norms


def graph_ops(model, inputs, passes):
    """Targets of the call_function nodes of the graph Dynamo traces, after ``passes``."""
    seen = []

    def backend(gm, example_inputs):
        run_graph_passes(gm, passes)
        seen.extend(n.target for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    with torch.no_grad():
        torch.compile(model, backend=backend)(**inputs)
    return seen


def test_fuse_rms_norm_fires_on_sd35_and_replays_bit_exact():
    model, inputs, norms = tiny_sd35()
    assert norms >= 4
    with torch.no_grad():
        expected = model(**inputs)[0]
    compiled = torch.compile(
        model,
        backend="graphdispatch",
        options={"graph_only": True, "graph_passes": [fuse_rms_norm]},
    )
    with torch.no_grad():
        for step in range(3):
            inputs["hidden_states"] = torch.randn(2, 4, 8, 8)
            expected = model(**inputs)[0]
            # torch.rms_norm runs the hand-written chain's ops in its order on the CPU: exact.
            assert torch.equal(compiled(**inputs)[0], expected), step
    stats = graphdispatch.stats()
    assert stats["graph_passes"] == {"fuse_rms_norm": norms}, stats
    assert stats["routes"] == {"graph_only": 1}, stats
    assert stats["captures"] == 1 and stats["replays"] == 3 and stats["fallbacks"] == {}, stats


def test_fuse_rms_norm_leaves_one_op_per_norm():
    model, inputs, norms = tiny_sd35()
    before = graph_ops(model, inputs, [])
    torch._dynamo.reset()
    after = graph_ops(model, inputs, [fuse_rms_norm])
    assert after.count(torch.rms_norm) == norms and before.count(torch.rms_norm) == 0
    assert before.count(torch.rsqrt) - after.count(torch.rsqrt) == norms
    assert len(before) - len(after) == norms * 3  # add, rsqrt and two muls became one op


def test_other_dtypes_and_shapes_are_left_alone():
    def norm(x, w):
        return x * torch.rsqrt(x.to(torch.float32).pow(2).mean(-1, keepdim=True) + 1e-6) * w

    x, w = torch.randn(2, 8), torch.randn(8)
    gm = torch.fx.symbolic_trace(norm)
    for node in gm.graph.nodes:  # Dynamo's example values, as the pass reads them
        node.meta["example_value"] = {"x": x.bfloat16(), "w": w.bfloat16()}.get(node.name)
    assert fuse_rms_norm(gm) == 0
    for node in gm.graph.nodes:
        node.meta["example_value"] = {"x": x, "w": torch.randn(2, 8)}.get(node.name)
    assert fuse_rms_norm(gm) == 0  # a weight that is not one per channel


@pytest.mark.parametrize("route", ["graph_only", "graph_with_compile"])
def test_a_users_pass_runs_before_capture_and_its_count_is_kept(route):
    def swap_sin_for_cos(gm):
        n = 0
        for node in gm.graph.nodes:
            if node.target is torch.sin:
                node.target, n = torch.cos, n + 1
        return n

    fn = torch.compile(
        lambda x: torch.sin(x) * 2,
        backend="graphdispatch",
        options={route: True, "graph_passes": (swap_sin_for_cos,)},
    )
    x = torch.randn(5)
    # Inductor's vectorised cos is not ATen's to the bit.
    exact = route == "graph_only"
    with torch.no_grad():
        for _ in range(2):
            torch.testing.assert_close(
                fn(x), torch.cos(x) * 2, rtol=0 if exact else 1e-6, atol=0 if exact else 1e-6
            )
    stats = graphdispatch.stats()
    assert stats["graph_passes"] == {
        "test_a_users_pass_runs_before_capture_and_its_count_is_kept.<locals>.swap_sin_for_cos": 1
    }
    assert stats["routes"] == {route: 1}
    assert stats["replays"] == 2 and stats["fallbacks"] == {}, stats


@pytest.mark.parametrize(
    "value, message",
    [
        (fuse_rms_norm, "expected a list or tuple of callables, got function"),
        ([fuse_rms_norm, 3], "expected a list or tuple of callables, got int 3 at index 1"),
    ],
)
def test_bad_passes_are_refused_naming_the_option(value, message):
    with pytest.raises(TypeError, match="graphdispatch option 'graph_passes': " + message):
        graphdispatch.Backend(graph_passes=value)


def test_a_pass_returning_something_else_is_named():
    fn = torch.compile(
        lambda x: x + 1,
        backend=graphdispatch.Backend(graph_only=True, graph_passes=[lambda gm: "done"]),
    )
    with pytest.raises(Exception, match="must return an int .rewrites made. or None, got str"):
        fn(torch.randn(3))


def test_the_environment_cannot_set_passes(monkeypatch):
    from graphdispatch import config

    monkeypatch.setenv("GRAPHDISPATCH_GRAPH_PASSES", "mod:fn")
    with pytest.raises(ValueError, match="GRAPHDISPATCH_GRAPH_PASSES.*takes Python callables"):
        config._read_environment()
