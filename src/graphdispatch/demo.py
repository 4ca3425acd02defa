"""Runs real diffusers pipelines through graphdispatch's routes beside eager PyTorch.

    python -m graphdispatch.demo [--pipeline sd|sd3|flux|all] [--steps N] [--json] [--threads N]

What it does. Builds ``StableDiffusionPipeline`` (UNet, classifier-free guidance),
``StableDiffusion3Pipeline`` (MMDiT) and ``FluxPipeline`` (guidance-distilled transformer) from
tiny configs with random weights (``graphdispatch.tiny_pipelines``: no download, prompt
embeddings passed directly, VAE decode included) and drives each through its own ``__call__``,
on the best device (CUDA, else NPU, else CPU; there with one intra-op thread unless
``--threads`` says otherwise), once per route, the denoiser assigned as users assign it
(``pipe.transformer = torch.compile(pipe.transformer, backend="graphdispatch", ...)``):

- ``eager``: plain PyTorch, the reference;
- ``default``: aot_autograd + Inductor, no capture;
- the graph routes: ``graph_with_compile`` (Inductor, then a CUDA/NPU/accelerator graph) where
  the device has graphs; on the CPU both ``graph_only`` with the CPU graph, which records the
  ops below autograd once and replays them from C++ on fixed memory, and ``graph_with_compile``
  with the ``cpp_wrapper`` graph (Inductor's C++ wrapper, its generated entry called from C++
  on every replay).

Each route calls the pipeline twice with the same seed: the first call compiles and captures
(its wall time is ``first_call_s``), the second is timed per denoising step (the time between
consecutive ``callback_on_step_end`` calls, the device synchronized; ``median_ms``) and its
images are compared with eager's (``max_abs_diff``, images in [0, 1]).

Pass rule. Every route's images are within ATOL of eager's. Each graph route also has no
fallbacks, one capture per compiled graph (a fixed-shape pipeline gives each graph one
signature), no capture in the second call, replays >= its model calls minus the first, and
every model call but the first (which compiles) on the fast path (Note [Fast path]).
Inductor reorders float32 reductions (about 1e-6 on these images); ATOL leaves a wide margin
for that while catching a stale replay, which is off by order 0.1. Exit status 0 when the rule
holds, 1 otherwise. Progress goes to stderr, so ``--json`` stdout is one JSON object:
{"device", "pipelines", "steps", "threads", "atol", "ok", "results": [{"pipeline", "model",
"route", "graph", "median_ms", "first_call_s", "max_abs_diff", "model_calls", "graphs",
"captures", "replays", "fast_path_calls", "fallbacks" ({reason: calls}), "failure"}]}.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo

import graphdispatch
from graphdispatch._device_graphs import choose_kind
from graphdispatch.tiny_pipelines import PIPELINES, TinyPipeline, build

# Max |route - eager| over the float32 images (values in [0, 1]).
ATOL = 1e-3
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
    options: dict[str, Any] | None  # graphdispatch options; None means eager
    backend: str = "graphdispatch"


def graph_routes(device: torch.device) -> list[Route]:
    if device.type == "cpu":  # both graph routes: the CPU graph, Inductor's C++ entry
        return [
            Route("graph_only", "cpu", {"graph_only": True}),
            Route("graph_with_compile", "cpp_wrapper", {"graph_with_compile": True}),
        ]
    kind, _ = choose_kind("auto", device, compiled=True)
    return [Route("graph_with_compile", kind or "emulated", {"graph_with_compile": True})]


def routes_for(device: torch.device) -> list[Route]:
    return [Route("eager", "none", None), Route("default", "none", {}), *graph_routes(device)]


def compile_denoiser(tiny: TinyPipeline, route: Route) -> None:
    """Assigns the compiled denoiser as users do: ``pipe.unet = torch.compile(pipe.unet, ...)``."""
    if route.options is None:
        return
    if route.backend == "graphdispatch":
        tiny.model = torch.compile(tiny.model, backend="graphdispatch", options=route.options)
    else:  # a PyTorch backend beside ours (the bench's cudagraph trees column)
        tiny.model = torch.compile(tiny.model, **route.options)


# ---- one pipeline on one route ---------------------------------------------------------------


def synchronize(device: torch.device) -> None:
    if device.type != "cpu":
        torch.accelerator.synchronize(device)


def timed_call(tiny: TinyPipeline) -> tuple[torch.Tensor, list[float], float]:
    """(images, ms per denoising step, seconds for the whole call) of one seeded call."""
    marks: list[float] = []

    def on_step() -> None:
        synchronize(tiny.device)
        marks.append(time.perf_counter())

    start = time.perf_counter()
    with torch.no_grad():
        images = tiny.pipe(**tiny.call_kwargs(on_step)).images
    synchronize(tiny.device)
    total = time.perf_counter() - start
    steps = [(b - a) * 1e3 for a, b in zip(marks, marks[1:])]
    return images, steps, total


def run_route(
    key: str, route: Route, steps: int, device: torch.device, reference: torch.Tensor | None
) -> tuple[dict[str, Any], torch.Tensor]:
    """One route's result row and images; the pipeline is built afresh for it."""
    torch._dynamo.reset()
    graphdispatch.reset()
    tiny = build(key, device, steps)
    compile_denoiser(tiny, route)
    graph = "" if route.graph == "none" else f" ({route.graph} graph)"
    progress(f"{tiny.name}: {route.name}{graph}, 2 calls of {steps} steps")
    _, _, first_call_s = timed_call(tiny)
    after_first = graphdispatch.stats()
    images, step_ms, _ = timed_call(tiny)
    stats = graphdispatch.stats()
    result = {
        "pipeline": tiny.name,
        "model": type(getattr(tiny.model, "_orig_mod", tiny.model)).__name__,
        "route": route.name,
        "graph": route.graph,
        "median_ms": statistics.median(step_ms) if step_ms else float("nan"),
        "first_call_s": first_call_s,
        "max_abs_diff": 0.0 if reference is None else (images - reference).abs().max().item(),
        # Each of these pipelines calls its denoiser once per step (guidance is batched).
        "model_calls": 2 * steps,
        "graphs": sum(stats["routes"].values()),
        "captures": stats["captures"],
        "captures_second_call": stats["captures"] - after_first["captures"],
        "replays": stats["replays"],
        # Model calls that skipped Dynamo's frame handling (Note [Fast path]).
        "fast_path_calls": stats["fast_path"]["calls"],
        "fallbacks": {k: v for k, v in stats["fallbacks"].items() if v},
    }
    return result, images


def check(result: dict[str, Any]) -> str | None:
    """Why ``result`` fails the pass rule, or None."""
    if not result["max_abs_diff"] <= ATOL:  # also catches NaN
        return f"max_abs_diff {result['max_abs_diff']:.3g} > {ATOL:g}"
    if result["graph"] == "none":
        return None
    if result["fallbacks"]:
        return f"fallbacks {result['fallbacks']}"
    if result["captures"] != result["graphs"]:
        return f"{result['captures']} captures for {result['graphs']} graphs of one signature each"
    if result["captures_second_call"]:
        return f"{result['captures_second_call']} captures in the second call"
    if result["replays"] < result["model_calls"] - 1:
        return f"{result['replays']} replays for {result['model_calls']} model calls"
    if result["fast_path_calls"] != result["model_calls"] - 1:  # the first one compiles
        return (
            f"{result['fast_path_calls']} fast-path calls for {result['model_calls']} model calls"
        )
    return None


def run_pipeline(
    key: str, steps: int, device: torch.device, routes: list[Route]
) -> list[dict[str, Any]]:
    results, reference = [], None
    for route in routes:
        result, images = run_route(key, route, steps, device, reference)
        if reference is None:
            reference = images
        result["failure"] = check(result)
        results.append(result)
    torch._dynamo.reset()
    graphdispatch.reset()
    return results


# ---- output ----------------------------------------------------------------------------------


def table(device: torch.device, results: list[dict[str, Any]]) -> str:
    header = (
        f"{'pipeline':<25} {'route':<19} {'device':<6} {'graph':<9} {'ms/step':>8} "
        f"{'first s':>8} {'max|diff|':>10} {'calls':>5} {'captures':>8} {'replays':>7} "
        f"{'fallbacks':>9}  check"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(
            f"{r['pipeline']:<25} {r['route']:<19} {device.type:<6} {r['graph']:<9} "
            f"{r['median_ms']:>8.2f} {r['first_call_s']:>8.2f} {r['max_abs_diff']:>10.2e} "
            f"{r['model_calls']:>5} {r['captures']:>8} {r['replays']:>7} "
            f"{sum(r['fallbacks'].values()):>9}  {r['failure'] or 'ok'}"
        )
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m graphdispatch.demo",
        description="Tiny random-weight diffusers pipelines (StableDiffusionPipeline, "
        "StableDiffusion3Pipeline, FluxPipeline) driven through their own __call__: "
        "eager, graphdispatch's default route and its graph route (the CPU graph "
        "on the CPU), with time per step, the difference from eager and the graph counters.",
        epilog=f"Pass rule: images within {ATOL:g} (max abs diff) of eager's; on the graph route "
        "no fallbacks, one capture per graph, every later call a replay. Otherwise the "
        "exit status is 1.",
    )
    parser.add_argument(
        "--pipeline",
        choices=(*PIPELINES, "all"),
        default="all",
        help="which pipeline to run (default: all)",
    )
    parser.add_argument(
        "--steps", type=int, default=4, help="denoising steps per call (default: 4)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="intra-op threads on the CPU (default: 1; 0 keeps PyTorch's choice). "
        "With more threads than idle cores, OpenMP barriers wait for "
        "descheduled threads and a step's time swings by 100x",
    )
    args = parser.parse_args(argv)
    if args.threads < 0:
        parser.error("--threads: expected >= 0")
    if args.steps < 2:
        parser.error("--steps: expected >= 2 (a step time is the gap between two steps)")
    return args


def prepare_device(device: torch.device, threads: int) -> None:
    if device.type == "cpu" and threads:
        torch.set_num_threads(threads)  # before compiling: Inductor's CPU code depends on it
    if device.type == "cuda":
        # Eager convolutions would otherwise run in TF32 (10-bit mantissa) while Inductor's
        # generated kernels do not, and the comparison would measure that instead of us.
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = best_device()
    prepare_device(device, args.threads)
    keys = PIPELINES if args.pipeline == "all" else (args.pipeline,)
    progress(
        f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} intra-op "
        f"threads, pipelines {', '.join(keys)}"
    )
    results = [r for key in keys for r in run_pipeline(key, args.steps, device, routes_for(device))]
    ok = all(r["failure"] is None for r in results)
    if args.json:
        print(
            json.dumps(
                {
                    "device": str(device),
                    "pipelines": list(keys),
                    "steps": args.steps,
                    "threads": torch.get_num_threads(),
                    "atol": ATOL,
                    "results": results,
                    "ok": ok,
                }
            )
        )
    else:
        print(table(device, results))
        print(
            f"\ntolerance: max abs diff of images vs eager <= {ATOL:g} (float32, images in "
            f"[0, 1]); ms/step is the median over the second call's steps\n"
            + ("ok" if ok else "FAILED")
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
