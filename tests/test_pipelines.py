"""Real diffusers pipelines driven through their own ``__call__`` (tiny configs, random weights),
the denoiser compiled as users assign it, on the CPU graph and the emulated graph: images equal
to eager's (bit-exact on the CPU graph), no fallbacks, one capture per signature, every call a
replay."""

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
    pytest.param(
        demo.Route("graph_only", "emulated", {"graph_only": True, "device_graph": "emulated"}),
        id="emulated",
    ),
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
    # Every call after the first, which compiled, skipped Dynamo's frame handling.
    assert result["fast_path_calls"] == 2 * STEPS - 1, result
    torch.testing.assert_close(images, reference, rtol=0, atol=demo.ATOL)
    if route.graph == "cpu":
        assert torch.equal(images, reference)


@pytest.mark.parametrize("route", GRAPH_ROUTES)
def test_pipeline_under_inference_mode_and_unsafe_outputs(route):
    # Services often call under inference_mode, and trade clones for speed.
    tiny = build("sd3", CPU, STEPS)
    with torch.inference_mode():
        expected = tiny.pipe(**tiny.call_kwargs()).images
    tiny.model = torch.compile(
        tiny.model, backend="graphdispatch", options={**route.options, "safe_output_mode": False}
    )
    with torch.inference_mode():
        for _ in range(2):
            images = tiny.pipe(**tiny.call_kwargs()).images
            torch.testing.assert_close(images, expected, rtol=0, atol=demo.ATOL)
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {} and stats["captures"] == 1 and stats["replays"] == 2 * STEPS


def per_step_latents(tiny):
    """One pipeline call of ``tiny``: the latents after each denoising step, and the images."""
    steps = []

    def keep(pipe, step, timestep, tensors):
        steps.append(tensors["latents"].clone())
        return tensors

    kwargs = dict(tiny.call_kwargs(), callback_on_step_end=keep)
    with torch.no_grad():
        images = tiny.pipe(**kwargs).images
    return steps, images


@pytest.mark.parametrize("route", GRAPH_ROUTES)
@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
def test_first_block_cache_steps_equal_eager(safe, route):
    # Case C46: First-Block-Cache keeps the previous step's residuals (outputs of the compiled
    # graphs) across steps; a replay overwriting them in unsafe mode made it skip blocks where
    # eager computes them. Held outputs are now copied away first, so every step is eager's.
    from diffusers import FirstBlockCacheConfig

    def cached():
        tiny = build("flux", CPU, 5)
        tiny.model.enable_cache(FirstBlockCacheConfig(threshold=0.2))
        return tiny

    expected, expected_images = per_step_latents(cached())
    tiny = cached()
    tiny.model = torch.compile(
        tiny.model, backend="graphdispatch", options={**route.options, "safe_output_mode": safe}
    )
    got, images = per_step_latents(tiny)
    for step, (a, b) in enumerate(zip(got, expected)):
        assert torch.equal(a, b), f"step {step}: max |difference| {(a - b).abs().max()}"
    assert torch.equal(images, expected_images)
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {} and stats["replays"] > stats["captures"] > 0, stats
    # Not vacuous: in unsafe mode the cache did hold outputs across a replay.
    assert (stats["held_outputs_copied"] > 0) != safe, stats


# On the CPU graph one ControlNet graph reads a tensor value on the host (aten::_local_scalar_dense)
# and is refused, as a CUDA capture would be: the pin holds on the emulated graph.
@pytest.mark.parametrize("route", GRAPH_ROUTES[1:])
def test_controlnet_pipeline_with_the_conditioning_scale_changed_between_runs(route):
    # StableDiffusionControlNetPipeline with the UNet and the ControlNet compiled; each scale's
    # second run replays every step, images equal eager's.
    from diffusers import ControlNetModel, StableDiffusionControlNetPipeline

    tiny = build("sd", CPU, STEPS)
    torch.manual_seed(1)
    # One downsampling step in the conditioning embedding: 16x16 images, 8x8 latents.
    controlnet = ControlNetModel.from_unet(
        tiny.pipe.unet, conditioning_embedding_out_channels=(16, 32)
    )
    pipe = StableDiffusionControlNetPipeline(**tiny.pipe.components, controlnet=controlnet.eval())
    pipe.set_progress_bar_config(disable=True)
    image = torch.rand(1, 3, 16, 16)

    def run(scale):
        with torch.no_grad():
            return pipe(
                **tiny.call_kwargs(), image=image, controlnet_conditioning_scale=scale
            ).images

    expected = {scale: run(scale) for scale in (1.0, 0.5)}
    pipe.unet = torch.compile(pipe.unet, backend="graphdispatch", options=route.options)
    pipe.controlnet = torch.compile(pipe.controlnet, backend="graphdispatch", options=route.options)
    for scale in (1.0, 0.5, 1.0):
        assert torch.equal(run(scale), expected[scale])
        warm = graphdispatch.stats()
        assert torch.equal(run(scale), expected[scale])
        stats = graphdispatch.stats()
        assert stats["captures"] == warm["captures"], stats
        assert stats["replays"] == warm["replays"] + 2 * STEPS and stats["fallbacks"] == {}, stats
