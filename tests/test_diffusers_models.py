"""The graph route, on the CPU graph and the emulated graph, on real diffusers models (random
weights, tiny configs) matches eager PyTorch step by step, with one capture per signature and
replays after it."""

import pytest
import torch

import graphdispatch

diffusers = pytest.importorskip("diffusers")
from graphdispatch.tiny_pipelines import tiny_unet  # noqa: E402


def tiny_dit():
    return diffusers.DiTTransformer2DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        in_channels=4,
        out_channels=4,
        num_layers=2,
        sample_size=8,
        patch_size=2,
        num_embeds_ada_norm=10,
        norm_num_groups=8,
    )


def unet_inputs(step):
    g = torch.Generator().manual_seed(step)
    return (
        torch.randn(2, 4, 8, 8, generator=g),
        torch.tensor(10 * step + 1),
        torch.randn(2, 7, 32, generator=g),
    )


def dit_inputs(step):
    g = torch.Generator().manual_seed(step)
    return (
        torch.randn(2, 4, 8, 8, generator=g),
        torch.tensor([step, step + 1]),
        torch.tensor([1, 3]),
    )


def run(model, inputs, call):
    return (
        model(*inputs, return_dict=False)[0]
        if call is None
        else call(*inputs, return_dict=False)[0]
    )


@pytest.mark.parametrize(
    "make, inputs",
    [(tiny_unet, unet_inputs), (tiny_dit, dit_inputs)],
    ids=["UNet2DConditionModel", "DiTTransformer2DModel"],
)
@pytest.mark.parametrize("graph", ["cpu", "emulated"])
def test_graph_route_matches_eager(make, inputs, graph):
    torch.manual_seed(0)
    model = make().eval()
    compiled = torch.compile(
        model, backend="graphdispatch", options={"graph_only": True, "device_graph": graph}
    )
    with torch.no_grad():
        for step in range(3):
            expected = run(model, inputs(step), None)
            got = run(model, inputs(step), compiled)
            torch.testing.assert_close(got, expected, rtol=0, atol=1e-5)
    stats = graphdispatch.stats()
    # Each graph (a graph break makes more than one) captures its one signature once, then
    # every call of it replays.
    graphs = stats["routes"]["graph_only"]
    assert stats["captures"] == graphs and stats["replays"] == 3 * graphs, stats
    assert stats["fallbacks"] == {}
