"""Runs real diffusers models through graphdispatch's routes beside eager PyTorch.

    python -m graphdispatch.demo [--model unet|dit|all] [--steps N] [--json] [--threads N]

What it does. Builds two models from ``diffusers`` from tiny configs with random weights (no
download): ``UNet2DConditionModel`` (latents 1x4x8x8, text context 1x4x32) denoised by
``DDIMScheduler`` (v-prediction), and the DiT-style ``SD3Transformer2DModel`` (MMDiT, same latent shape, text
context 1x4x32, pooled 1x16) denoised by ``FlowMatchEulerDiscreteScheduler``. Each model runs
the same seeded denoising loop of ``--steps`` steps, in float32, under ``torch.no_grad()``,
on the best device (CUDA, else NPU, else CPU; there with one intra-op thread unless
``--threads`` says otherwise), once per route:

- ``eager``: plain PyTorch, the reference;
- ``default``: ``torch.compile(model, backend="graphdispatch")``, aot_autograd + Inductor,
  no capture;
- the graph route: ``graph_with_compile`` (Inductor, then a CUDA/NPU/accelerator graph) where
  the device has graphs; on the CPU ``graph_only`` with the emulated graph, which keeps the
  static-buffer semantics of a device graph but re-runs the FX graph on replay, so it checks
  correctness, not speed.

What it measures. Median wall time per denoising step (model call plus scheduler step, the
device synchronized) in ms, the first step excluded because it compiles and captures (its time
is reported as first_step_s); the max absolute difference of the final latents from eager;
captures and replays from ``graphdispatch.stats()``.

Pass rule. Every route's final latents are within ATOL of eager's, and the graph route
replayed at least once. Inductor reorders float32 reductions and fuses pointwise ops, which
moved the final latents (of order one) by about 1e-6 after 10 steps and 5e-6 after 100 on the
CPU; ATOL leaves a wide margin for that (TF32 is turned off on CUDA so eager convolutions do
not round more coarsely than Inductor) while catching a stale or misordered replay, which is
off by order one. Exit status 0
when the rule holds, 1 otherwise. Progress goes to stderr, so ``--json`` stdout is one JSON
object: {"device", "model" ("unet", "dit" or "unet+dit"), "steps", "threads", "atol", "ok",
"results": [{"model" (class name), "route", "graph" ("none" without capture), "median_ms",
"max_abs_diff", "first_step_s", "captures", "replays", "fallbacks", "routes", "failure"}]}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch._dynamo

import graphdispatch
from graphdispatch.device_graphs import choose_kind

# Max |route - eager| over the final float32 latents (values of order one).
ATOL = 1e-3
MODELS = ("unet", "dit")
_START = time.perf_counter()


def progress(message: str) -> None:
    print(f"[{time.perf_counter() - _START:6.1f}s] {message}", file=sys.stderr, flush=True)


# ---- device and routes -----------------------------------------------------------------------

def best_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if importlib.util.find_spec("torch_npu") is not None:
        import torch_npu  # noqa: F401  (registers torch.npu)

        if torch.npu.is_available():
            return torch.device("npu")
    return torch.device("cpu")


@dataclass(frozen=True)
class Route:
    name: str
    graph: str  # the device graph kind, "none" without capture
    options: dict[str, Any] | None  # torch.compile options; None means eager


def routes_for(device: torch.device) -> list[Route]:
    kind, _ = choose_kind("auto", device)
    if kind is None:
        graph = Route("graph_only", "emulated", {"graph_only": True, "device_graph": "emulated"})
    else:
        graph = Route("graph_with_compile", kind, {"graph_with_compile": True})
    return [Route("eager", "none", None), Route("default", "none", {}), graph]


# ---- models and their denoising loops --------------------------------------------------------

@dataclass
class Workload:
    """A model, its scheduler and fixed inputs; ``predict(model, latents, t)`` is one call."""

    name: str
    model: torch.nn.Module
    scheduler: Any
    latents: torch.Tensor
    predict: Callable[[Callable, torch.Tensor, torch.Tensor], torch.Tensor]


def build_unet(device: torch.device) -> Workload:
    from diffusers import DDIMScheduler, UNet2DConditionModel

    torch.manual_seed(0)
    model = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=(32, 64),
        layers_per_block=1, cross_attention_dim=32, attention_head_dim=8, norm_num_groups=8,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    context = torch.randn(1, 4, 32).to(device)

    def predict(model: Callable, latents: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        # A fresh timestep tensor each step, as a pipeline passes it: a dynamic input.
        return model(latents, t.repeat(latents.shape[0]), context).sample

    # Stable Diffusion 2's scheduler config. Its v-prediction keeps the latents of an untrained
    # model of order one; with epsilon prediction they grow without bound and the early steps'
    # 1/sqrt(alpha_bar) amplifies rounding by ~15x a step.
    scheduler = DDIMScheduler(
        num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
        clip_sample=False, set_alpha_to_one=False, steps_offset=1, prediction_type="v_prediction")
    return Workload("UNet2DConditionModel", model.to(device).eval(), scheduler,
                    torch.randn(1, 4, 8, 8).to(device), predict)


def build_dit(device: torch.device) -> Workload:
    from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel

    torch.manual_seed(0)
    model = SD3Transformer2DModel(
        sample_size=8, patch_size=2, in_channels=4, out_channels=4, num_layers=2,
        attention_head_dim=8, num_attention_heads=4, joint_attention_dim=32,
        caption_projection_dim=32, pooled_projection_dim=16, pos_embed_max_size=8)
    context = torch.randn(1, 4, 32).to(device)
    pooled = torch.randn(1, 16).to(device)

    def predict(model: Callable, latents: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return model(latents, encoder_hidden_states=context, pooled_projections=pooled,
                     timestep=t.repeat(latents.shape[0])).sample

    return Workload("SD3Transformer2DModel", model.to(device).eval(),
                    FlowMatchEulerDiscreteScheduler(), torch.randn(1, 4, 8, 8).to(device), predict)


BUILDERS = {"unet": build_unet, "dit": build_dit}


def synchronize(device: torch.device) -> None:
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def denoise(work: Workload, model: Callable, steps: int, device: torch.device) -> tuple[torch.Tensor, list[float]]:
    """(final latents, ms per step) of one denoising loop from the workload's fixed start."""
    work.scheduler.set_timesteps(steps, device=device)  # also resets the scheduler's step index
    latents = work.latents.clone()
    times = []
    with torch.no_grad():
        for t in work.scheduler.timesteps:
            start = time.perf_counter()
            noise = work.predict(model, latents, t)
            latents = work.scheduler.step(noise, t, latents).prev_sample
            synchronize(device)
            times.append((time.perf_counter() - start) * 1e3)
    return latents, times


def run_route(work: Workload, route: Route, steps: int, device: torch.device,
              reference: torch.Tensor | None) -> tuple[dict[str, Any], torch.Tensor]:
    torch._dynamo.reset()
    graphdispatch.reset()
    if route.options is None:
        model: Callable = work.model
    else:
        model = torch.compile(work.model, backend="graphdispatch", options=route.options)
    graph = "" if route.graph == "none" else f" ({route.graph} graph)"
    progress(f"{work.name}: {route.name}{graph}, {steps} steps")
    latents, times = denoise(work, model, steps, device)
    stats = graphdispatch.stats()
    diff = 0.0 if reference is None else (latents - reference).abs().max().item()
    result = {
        "route": route.name, "graph": route.graph,
        "median_ms": statistics.median(times[1:]), "max_abs_diff": diff,
        "first_step_s": times[0] / 1e3, "captures": stats["captures"], "replays": stats["replays"],
        "fallbacks": sum(stats["fallbacks"].values()), "routes": stats["routes"],
    }
    return result, latents


def check(result: dict[str, Any]) -> str | None:
    """Why ``result`` fails the pass rule, or None."""
    if not result["max_abs_diff"] <= ATOL:  # also catches NaN
        return f"max_abs_diff {result['max_abs_diff']:.3g} > {ATOL:g}"
    if result["graph"] != "none" and result["replays"] == 0:
        return f"no replay (routes taken: {result['routes']})"
    return None


def run_model(key: str, steps: int, device: torch.device) -> list[dict[str, Any]]:
    progress(f"building {key}")
    work = BUILDERS[key](device)
    results, reference = [], None
    for route in routes_for(device):
        result, latents = run_route(work, route, steps, device, reference)
        if reference is None:
            reference = latents
        result["model"] = work.name
        result["failure"] = check(result)
        results.append(result)
    torch._dynamo.reset()
    graphdispatch.reset()
    return results


# ---- output ----------------------------------------------------------------------------------

def table(device: torch.device, results: list[dict[str, Any]]) -> str:
    header = (f"{'model':<22} {'route':<19} {'device':<6} {'graph':<9} {'ms/step':>8} "
              f"{'first s':>8} {'max|diff|':>10} {'captures':>8} {'replays':>7}  check")
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r['model']:<22} {r['route']:<19} {device.type:<6} {r['graph']:<9} "
            f"{r['median_ms']:>8.2f} {r['first_step_s']:>8.2f} {r['max_abs_diff']:>10.2e} "
            f"{r['captures']:>8} {r['replays']:>7}  {r['failure'] or 'ok'}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m graphdispatch.demo",
        description="Denoising loops of tiny random-weight diffusers models (UNet2DConditionModel, "
                    "SD3Transformer2DModel) run eagerly, on graphdispatch's default route and on "
                    "its graph route (emulated on the CPU), with time per step and the difference "
                    "from eager.",
        epilog=f"Tolerance: each route's final float32 latents must be within {ATOL:g} (max abs "
               "diff) of eager's, and the graph route must replay; otherwise the exit status is 1.")
    parser.add_argument("--model", choices=(*MODELS, "all"), default="all",
                        help="which model to run (default: all)")
    parser.add_argument("--steps", type=int, default=10, help="denoising steps per route (default: 10)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads on the CPU (default: 1; 0 keeps PyTorch's choice). "
                             "With more threads than idle cores, OpenMP barriers wait for "
                             "descheduled threads and a step's time swings by 100x")
    args = parser.parse_args(argv)
    if args.threads < 0:
        parser.error("--threads: expected >= 0")
    if args.steps < 2:
        parser.error("--steps: expected >= 2 (the first step compiles and is not timed)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = best_device()
    if device.type == "cpu" and args.threads:
        torch.set_num_threads(args.threads)  # before compiling: Inductor's CPU code depends on it
    if device.type == "cuda":
        # Eager convolutions would otherwise run in TF32 (10-bit mantissa) while Inductor's
        # generated kernels do not, and the comparison would measure that instead of us.
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
    keys = MODELS if args.model == "all" else (args.model,)
    progress(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} intra-op "
             f"threads, models {', '.join(keys)}")
    results = [r for key in keys for r in run_model(key, args.steps, device)]
    ok = all(r["failure"] is None for r in results)
    if args.json:
        print(json.dumps({"device": str(device), "model": "+".join(keys), "steps": args.steps,
                          "threads": torch.get_num_threads(), "atol": ATOL, "results": results,
                          "ok": ok}))
    else:
        print(table(device, results))
        print(f"\ntolerance: max abs diff of final latents vs eager <= {ATOL:g} (float32); "
              f"ms/step is the median over steps 2..{args.steps}; "
              + ("graph 'emulated' re-runs the graph on the CPU: no speed-up is expected.\n"
                 if device.type == "cpu" else "\n")
              + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
