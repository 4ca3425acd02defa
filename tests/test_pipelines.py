"""Real diffusers pipelines driven through their own ``__call__`` (tiny configs, random weights),
the denoiser compiled as users assign it, on the CPU graph and the emulated graph: images equal
to eager's (bit-exact on the CPU graph), no fallbacks, one capture per signature, every call a
replay (issue: real pipelines)."""

import pytest
import torch

pytest.importorskip("diffusers")
pytest.importorskip("transformers")

import graphdispatch  # noqa: E402
from graphdispatch import demo  # noqa: E402
from graphdispatch.tiny_pipelines import PIPELINES, build  # noqa: E402

CPU = torch.device("cpu")
GRAPH_ROUTES = [
    pytest.param(demo.Route("graph_only", "cpu", {"graph_only": True}), id="cpu"),
    pytest.param(demo.Route("graph_only", "emulated", {"graph_only": True, "device_graph": "emulated"}),
                 id="emulated"),
]
STEPS = 3


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("route", GRAPH_ROUTES)
@pytest.mark.parametrize("key", PIPELINES)
def test_pipeline_replays_every_denoising_step(key, route):
    _, reference = demo.run_route(key, demo.Route("eager", "none", None), STEPS, CPU, None)
    result, images = demo.run_route(key, route, STEPS, CPU, reference)

    assert demo.check(result) is None, result
    assert result["fallbacks"] == {}
    # One graph, one signature (classifier-free guidance is batched): one capture, and each of
    # the two pipeline calls' steps a replay.
    assert result["graphs"] == 1 and result["captures"] == 1, result
    assert result["replays"] == 2 * STEPS, result
    torch.testing.assert_close(images, reference, rtol=0, atol=demo.ATOL)
    if route.graph == "cpu":
        assert torch.equal(images, reference)


@pytest.mark.parametrize("route", GRAPH_ROUTES)
def test_pipeline_under_inference_mode_and_unsafe_outputs(route):
    # Services often call under inference_mode, and trade clones for speed.
    tiny = build("sd3", CPU, STEPS)
    with torch.inference_mode():
        expected = tiny.pipe(**tiny.call_kwargs()).images
    tiny.model = torch.compile(tiny.model, backend="graphdispatch", options={
        **route.options, "safe_output_mode": False})
    with torch.inference_mode():
        for _ in range(2):
            images = tiny.pipe(**tiny.call_kwargs()).images
            torch.testing.assert_close(images, expected, rtol=0, atol=demo.ATOL)
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {} and stats["captures"] == 1 and stats["replays"] == 2 * STEPS
