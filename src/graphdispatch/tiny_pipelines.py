"""Real diffusers pipelines built from tiny configs, for the demo, the tests and the bench.

Each builder returns a ``TinyPipeline``: a diffusers pipeline object with random weights (no
download), its denoiser's attribute name (``unet`` or ``transformer``), and the keyword
arguments of one ``pipe(**call_kwargs)`` call: prompt embeddings passed directly (the text
encoders and tokenizers are None, so no tokenizer or text model is needed), a 16x16 image
(8x8 latents), VAE decode included, ``output_type="pt"`` (float32 images in [0, 1], shape
(1, 3, 16, 16)). Compile the denoiser exactly as users do::

    tiny = build("sd3", torch.device("cpu"), steps=4)
    tiny.pipe.transformer = torch.compile(tiny.pipe.transformer, backend="graphdispatch", ...)
    images = tiny.pipe(**tiny.call_kwargs()).images

Pipelines (diffusers >= 0.30; the classes need ``transformers`` to import):

- ``sd``: ``StableDiffusionPipeline``, ``UNet2DConditionModel``, classifier-free guidance
  (guidance_scale 7.5: the UNet runs on a batch of 2), ``DDIMScheduler`` with Stable Diffusion
  2's v-prediction config, which keeps an untrained UNet's latents of order one;
- ``sd3``: ``StableDiffusion3Pipeline``, ``SD3Transformer2DModel`` (MMDiT), classifier-free
  guidance, ``FlowMatchEulerDiscreteScheduler``; passes the timestep as ``t.expand(batch)``;
- ``flux``: ``FluxPipeline``, ``FluxTransformer2DModel`` with guidance embedding (guidance-
  distilled: one batch of 1 per step), dynamic shifting as FLUX.1-dev's scheduler config;
  passes both timestep and guidance as expanded tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

PIPELINES = ("sd", "sd3", "flux")
HEIGHT = WIDTH = 16


@dataclass
class TinyPipeline:
    """A pipeline, the attribute holding its denoiser, and what one call passes."""

    name: str  # the pipeline class name
    pipe: Any
    denoiser: str  # "unet" or "transformer"
    steps: int
    device: torch.device
    kwargs: dict[str, Any] = field(default_factory=dict)

    def call_kwargs(self, on_step: Callable[[], None] | None = None) -> dict[str, Any]:
        """Arguments of one seeded call; ``on_step()`` runs after every denoising step."""
        kwargs = dict(
            self.kwargs,
            num_inference_steps=self.steps,
            height=HEIGHT,
            width=WIDTH,
            output_type="pt",
            generator=torch.Generator(self.device).manual_seed(0),
        )
        if on_step is not None:

            def callback(pipe: Any, step: int, timestep: Any, tensors: dict) -> dict:
                on_step()
                return tensors

            kwargs["callback_on_step_end"] = callback
        return kwargs

    @property
    def model(self) -> torch.nn.Module:
        return getattr(self.pipe, self.denoiser)

    @model.setter
    def model(self, module: Any) -> None:
        setattr(self.pipe, self.denoiser, module)


def _vae(shift_factor: float | None = None, scaling_factor: float = 0.18215) -> Any:
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        latent_channels=4,
        block_out_channels=(8, 16),
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        layers_per_block=1,
        norm_num_groups=8,
        sample_size=HEIGHT,
        scaling_factor=scaling_factor,
        shift_factor=shift_factor,
    )


def _embeddings(*shapes: tuple[int, ...]) -> list[torch.Tensor]:
    return [torch.randn(*shape) for shape in shapes]


def tiny_unet() -> Any:
    """The demo's tiny ``UNet2DConditionModel``, weights drawn from the global generator: 8x8
    latents of 4 channels, blocks of 32 and 64 channels (one cross-attention block each way),
    text features of 32."""
    from diffusers import UNet2DConditionModel

    return UNet2DConditionModel(
        sample_size=8,
        in_channels=4,
        out_channels=4,
        block_out_channels=(32, 64),
        layers_per_block=1,
        cross_attention_dim=32,
        attention_head_dim=8,
        norm_num_groups=8,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
    )


def build_sd() -> tuple[Any, str, dict[str, Any]]:
    from diffusers import DDIMScheduler, StableDiffusionPipeline

    unet = tiny_unet()
    scheduler = DDIMScheduler(
        num_train_timesteps=1000,
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
        prediction_type="v_prediction",
    )
    pipe = StableDiffusionPipeline(
        vae=_vae(),
        text_encoder=None,
        tokenizer=None,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    positive, negative = _embeddings((1, 4, 32), (1, 4, 32))
    return (
        pipe,
        "unet",
        {"prompt_embeds": positive, "negative_prompt_embeds": negative, "guidance_scale": 7.5},
    )


def tiny_sd3_transformer(**overrides: Any) -> Any:
    """The demo's tiny ``SD3Transformer2DModel`` (4 latent channels, 2 layers, 4 heads of 8,
    text features of 32), weights drawn from the global generator; ``overrides`` replace or
    add config entries (``qk_norm="rms_norm"`` for SD3.5's)."""
    from diffusers import SD3Transformer2DModel

    config = dict(
        sample_size=8,
        patch_size=2,
        in_channels=4,
        out_channels=4,
        num_layers=2,
        attention_head_dim=8,
        num_attention_heads=4,
        joint_attention_dim=32,
        caption_projection_dim=32,
        pooled_projection_dim=16,
        pos_embed_max_size=8,
    )
    return SD3Transformer2DModel(**{**config, **overrides})


def build_sd3() -> tuple[Any, str, dict[str, Any]]:
    from diffusers import (
        FlowMatchEulerDiscreteScheduler,
        StableDiffusion3Pipeline,
    )

    transformer = tiny_sd3_transformer()
    pipe = StableDiffusion3Pipeline(
        transformer=transformer,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=3.0),
        vae=_vae(shift_factor=0.0609, scaling_factor=1.5305),
        text_encoder=None,
        tokenizer=None,
        text_encoder_2=None,
        tokenizer_2=None,
        text_encoder_3=None,
        tokenizer_3=None,
    )
    positive, negative, pooled, negative_pooled = _embeddings(
        (1, 6, 32), (1, 6, 32), (1, 16), (1, 16)
    )
    return (
        pipe,
        "transformer",
        {
            "prompt_embeds": positive,
            "negative_prompt_embeds": negative,
            "pooled_prompt_embeds": pooled,
            "negative_pooled_prompt_embeds": negative_pooled,
            "guidance_scale": 5.0,
        },
    )


def tiny_flux_transformer(num_layers: int = 1, num_single_layers: int = 1) -> Any:
    """The demo's tiny ``FluxTransformer2DModel``, weights drawn from the global generator: 16
    latent channels, 2 heads of 8, text features of 32, ``num_layers`` double and
    ``num_single_layers`` single blocks. One call's inputs: ``tiny_flux_inputs()``."""
    from diffusers import FluxTransformer2DModel

    return FluxTransformer2DModel(
        patch_size=1,
        in_channels=16,
        num_layers=num_layers,
        num_single_layers=num_single_layers,
        attention_head_dim=8,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=16,
        guidance_embeds=True,
        axes_dims_rope=(2, 2, 4),
    )


def tiny_flux_inputs(timestep: float = 0.5) -> dict[str, Any]:
    """Keyword arguments of one ``tiny_flux_transformer()`` call, ``return_dict=False``: a 4x4
    latent image (16 tokens of 16 channels, float32) and 6 text tokens, drawn from the global
    generator; guidance 3.5, zero position ids."""
    return dict(
        hidden_states=torch.randn(1, 16, 16),
        encoder_hidden_states=torch.randn(1, 6, 32),
        pooled_projections=torch.randn(1, 16),
        timestep=torch.tensor([timestep]),
        guidance=torch.tensor([3.5]),
        img_ids=torch.zeros(16, 3),
        txt_ids=torch.zeros(6, 3),
        return_dict=False,
    )


def build_flux() -> tuple[Any, str, dict[str, Any]]:
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxPipeline

    transformer = tiny_flux_transformer()
    # FLUX.1-dev's scheduler config: the shift depends on the image's sequence length.
    scheduler = FlowMatchEulerDiscreteScheduler(
        shift=3.0,
        use_dynamic_shifting=True,
        base_shift=0.5,
        max_shift=1.15,
        base_image_seq_len=256,
        max_image_seq_len=4096,
    )
    pipe = FluxPipeline(
        scheduler=scheduler,
        vae=_vae(shift_factor=0.1159, scaling_factor=0.3611),
        text_encoder=None,
        tokenizer=None,
        text_encoder_2=None,
        tokenizer_2=None,
        transformer=transformer,
    )
    positive, pooled = _embeddings((1, 6, 32), (1, 16))
    return (
        pipe,
        "transformer",
        {"prompt_embeds": positive, "pooled_prompt_embeds": pooled, "guidance_scale": 3.5},
    )


BUILDERS = {"sd": build_sd, "sd3": build_sd3, "flux": build_flux}


def build(key: str, device: torch.device, steps: int) -> TinyPipeline:
    """The seeded pipeline ``key`` (one of PIPELINES) on ``device``, in float32, eval mode.

    Raises KeyError naming the valid keys for an unknown ``key``.
    """
    if key not in BUILDERS:
        raise KeyError(f"unknown pipeline {key!r}; valid: {', '.join(PIPELINES)}")
    torch.manual_seed(0)
    pipe, denoiser, kwargs = BUILDERS[key]()
    pipe = pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    kwargs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    getattr(pipe, denoiser).eval()
    return TinyPipeline(type(pipe).__name__, pipe, denoiser, steps, device, kwargs)
