"""Per-step time of real diffusers pipelines on each route, side by side in one run.

    .venv/bin/python bench/pipelines.py [--device cpu|cuda|npu] [--pipeline sd|sd3|flux|all]
                                        [--steps N] [--rounds N] [--threads N] [--json]
                                        [--no-write]

The pipelines are the demo's (``graphdispatch.tiny_pipelines``: tiny random-weight
StableDiffusionPipeline, StableDiffusion3Pipeline, FluxPipeline, driven through their own
``__call__`` with the denoiser compiled as users assign it). Per pipeline, each route gets its
own pipeline and makes one call to compile and capture (``first call s``); then ``--rounds``
timed calls per route, the routes interleaved in a rotating order so that machine noise hits
them alike. The figure is the median time between consecutive denoising steps over all timed
calls (device synchronized), in ms, and its ratios to eager's and to ``default``'s (Inductor)
in the same run. Routes:

- ``eager``; ``default`` (graphdispatch without capture: aot_autograd + Inductor);
- ``graph_with_compile`` (Inductor, then the device graph; on the CPU Inductor's C++ wrapper,
  its generated entry called from our C++ on replay: graph ``cpp_wrapper``);
- ``graph_only`` (the FX graph captured as is); on the CPU twice: with the emulated graph,
  re-run as eager would, and with the CPU graph, the ops recorded once and replayed from C++
  on fixed memory (the column that shows the launch saving on this machine);
- on CUDA, ``reduce-overhead``: ``torch.compile(mode="reduce-overhead")``, PyTorch's cudagraph
  trees, the column to beat.

Each result also carries the captures, replays and fallbacks of graphdispatch's routes, and the
max |image - eager|, so a fast but wrong or non-replaying route cannot pass unnoticed.

On the CPU with every pipeline (and without ``--json``) it writes the section ``## Diffusers
pipelines, per denoising step`` of bench/RESULTS.md and the plot ``bench/plots/pipelines.png``
(ms per step per route and pipeline) unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

import torch
import torch._dynamo
from results_md import save_plot, write_section  # bench/ is on sys.path when run

import graphdispatch
from graphdispatch import demo
from graphdispatch._device_graphs import choose_kind
from graphdispatch.tiny_pipelines import PIPELINES, build

SECTION = "## Diffusers pipelines, per denoising step"


def routes(device: torch.device) -> list[demo.Route]:
    kind, _ = choose_kind("auto", device, compiled=True)
    graph = kind or "emulated"
    extra = {} if kind else {"device_graph": "emulated"}
    out = [
        demo.Route("eager", "none", None),
        demo.Route("default", "none", {}),
        demo.Route("graph_with_compile", graph, {"graph_with_compile": True, **extra}),
    ]
    if device.type == "cpu":
        # Always named: on the CPU `auto` has a graph for both routes, so `extra` is empty
        # there, and the same options twice would be one compile (Dynamo reuses it).
        out.append(
            demo.Route("graph_only", "emulated", {"graph_only": True, "device_graph": "emulated"})
        )
    only, _ = choose_kind("auto", device)
    out.append(demo.Route("graph_only", only, {"graph_only": True}))
    if device.type == "cuda":
        out.append(
            demo.Route(
                "reduce-overhead",
                "cudagraph_trees",
                {"mode": "reduce-overhead"},
                backend="inductor",
            )
        )
    return out


def counters() -> dict[str, Any]:
    stats = graphdispatch.stats()
    return {
        "captures": stats["captures"],
        "replays": stats["replays"],
        "fallbacks": sum(stats["fallbacks"].values()),
    }


def bench_pipeline(key: str, device: torch.device, steps: int, rounds: int) -> list[dict[str, Any]]:
    """One row per route; routes' timed calls interleaved so machine noise hits all alike."""
    torch._dynamo.reset()
    graphdispatch.reset()
    runs = []
    for route in routes(device):
        tiny = build(key, device, steps)
        demo.compile_denoiser(tiny, route)
        before = counters()
        _, _, first_call_s = demo.timed_call(tiny)
        runs.append(
            {
                "route": route,
                "tiny": tiny,
                "first_call_s": first_call_s,
                "step_ms": [],
                "counted": {k: counters()[k] - v for k, v in before.items()},
            }
        )
    for round_ in range(rounds):
        for run in runs[round_ % len(runs) :] + runs[: round_ % len(runs)]:  # rotate the order
            before = counters()
            run["images"], step_ms, _ = demo.timed_call(run["tiny"])
            run["step_ms"] += step_ms
            for k, v in counters().items():
                run["counted"][k] += v - before[k]
    reference = runs[0]["images"]  # eager's
    eager_ms = statistics.median(runs[0]["step_ms"])
    default_ms = statistics.median(runs[1]["step_ms"])  # Inductor, the CPU's column to beat
    rows = []
    for run in runs:
        median = statistics.median(run["step_ms"])
        rows.append(
            {
                "pipeline": run["tiny"].name,
                "route": run["route"].name,
                "graph": run["route"].graph,
                "median_ms": median,
                "vs_eager": median / eager_ms,
                "vs_default": median / default_ms,
                "first_call_s": run["first_call_s"],
                "max_abs_diff": (run["images"] - reference).abs().max().item(),
                "model_calls": (rounds + 1) * steps,
                **run["counted"],
            }
        )
    return rows


def table(rows: list[dict[str, Any]], device: torch.device, steps: int, rounds: int) -> str:
    lines = [
        f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} intra-op threads; "
        f"{steps} steps a call, {rounds} timed calls a route, interleaved; "
        "median ms per denoising step",
        "| pipeline | route | graph | ms/step | × eager | × default | first call s | max abs diff "
        "| model calls | captures | replays | fallbacks |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['pipeline']} | {r['route']} | {r['graph']} | {r['median_ms']:.2f} | "
            f"{r['vs_eager']:.2f} | {r['vs_default']:.2f} | {r['first_call_s']:.1f} | "
            f"{r['max_abs_diff']:.1e} | "
            f"{r['model_calls']} | {r['captures']} | {r['replays']} | {r['fallbacks']} |"
        )
    return "\n".join(lines)


def plot(rows: list[dict[str, Any]]) -> str:
    """Grouped bars: ms per step, one group per pipeline, one bar per route (log scale)."""
    pipelines = list(dict.fromkeys(r["pipeline"] for r in rows))
    columns = list(dict.fromkeys(f"{r['route']} ({r['graph']})" for r in rows))

    def draw(ax: Any) -> None:
        width = 0.8 / len(columns)
        for j, column in enumerate(columns):
            values = [
                next(
                    r["median_ms"]
                    for r in rows
                    if r["pipeline"] == p and f"{r['route']} ({r['graph']})" == column
                )
                for p in pipelines
            ]
            ax.bar([i + j * width for i in range(len(pipelines))], values, width, label=column)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(pipelines))], pipelines)
        ax.set_yscale("log")
        ax.set_ylabel("ms per denoising step (log)")
        ax.set_title("Tiny diffusers pipelines on the CPU, 1 thread: ms per step by route")
        ax.legend(fontsize=8)

    return save_plot("pipelines", draw)


def verdicts(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    for name in dict.fromkeys(r["pipeline"] for r in rows):
        mine = {(r["route"], r["graph"]): r for r in rows if r["pipeline"] == name}
        cpu = mine[("graph_only", "cpu")]
        gwc = next(r for (route, _), r in mine.items() if route == "graph_with_compile")
        default = mine[("default", "none")]
        out.append(
            f"{name}: CPU graph (`graph_only`) {cpu['vs_default']:.2f}x Inductor `default`, "
            f"`graph_with_compile` ({gwc['graph']}) {gwc['vs_default']:.2f}x (target <= 0.8); "
            f"first call {cpu['first_call_s']:.1f} s and {gwc['first_call_s']:.1f} s against "
            f"`default`'s {default['first_call_s']:.1f} s"
        )
    return out


def write(text: str, rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    link = plot(rows)
    body = (
        f"{SECTION}\n\nCommand (from the repository root):\n\n```\n.venv/bin/python "
        f"bench/pipelines.py --steps {args.steps} --rounds {args.rounds}\n```\n\n"
        "Tiny random-weight pipelines from `graphdispatch.tiny_pipelines` (16x16 images, 8x8 "
        "latents), driven through their own `__call__`, the denoiser assigned as "
        "`pipe.transformer = torch.compile(...)`. Per route: one call to compile and capture "
        "(`first call s`, with Inductor's on-disk cache as earlier runs left it), then the "
        "timed calls, the routes interleaved in a rotating order; the median time between "
        "consecutive steps (scheduler step included, VAE decode not). One intra-op thread; "
        "ratios within the run are what to read. See the docstring of bench/pipelines.py for "
        "the routes.\n\n"
        f"![ms per step per route]({link})\n\n{text}\n\n"
        + "\n".join(f"- {v}" for v in verdicts(rows))
        + "\n"
    )
    write_section(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/pipelines.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--device", default=None, help="cpu, cuda or npu (default: the demo's best device)"
    )
    parser.add_argument("--pipeline", choices=(*PIPELINES, "all"), default="all")
    parser.add_argument(
        "--steps", type=int, default=10, help="denoising steps per call (default: 10)"
    )
    parser.add_argument("--rounds", type=int, default=5, help="timed calls per route (default: 5)")
    parser.add_argument(
        "--threads", type=int, default=1, help="intra-op threads on the CPU (default: 1)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    parser.add_argument(
        "--no-write", action="store_true", help="leave bench/RESULTS.md and the plot as they are"
    )
    args = parser.parse_args(argv)
    if args.steps < 2 or args.rounds < 1:
        parser.error("--steps: expected >= 2; --rounds: expected >= 1")
    device = torch.device(args.device) if args.device else demo.best_device()
    demo.prepare_device(device, args.threads)
    keys = PIPELINES if args.pipeline == "all" else (args.pipeline,)
    rows = [row for key in keys for row in bench_pipeline(key, device, args.steps, args.rounds)]
    if args.json:
        print(
            json.dumps(
                {
                    "device": str(device),
                    "torch": torch.__version__,
                    "steps": args.steps,
                    "rounds": args.rounds,
                    "threads": torch.get_num_threads(),
                    "results": rows,
                }
            )
        )
        return 0
    text = table(rows, device, args.steps, args.rounds)
    print(text)
    if device.type == "cpu" and keys == PIPELINES and not args.no_write:
        write(text, rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
