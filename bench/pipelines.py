"""Per-step time of real diffusers pipelines on each route, side by side in one run.

    .venv/bin/python bench/pipelines.py [--device cpu|cuda|npu] [--pipeline sd|sd3|flux|all]
                                        [--steps N] [--threads N] [--json]

The pipelines are the demo's (``graphdispatch.tiny_pipelines``: tiny random-weight
StableDiffusionPipeline, StableDiffusion3Pipeline, FluxPipeline, driven through their own
``__call__`` with the denoiser compiled as users assign it). Per pipeline, each route builds the
pipeline afresh, makes one call to compile and capture, then a timed call; the figure is the
median time between consecutive denoising steps of the timed call (device synchronized), in
ms, and its ratio to eager's in the same run. Routes:

- ``eager``; ``default`` (graphdispatch without capture: aot_autograd + Inductor);
- ``graph_with_compile`` (Inductor, then the device graph; on the CPU the emulated graph, which
  re-runs the compiled function on replay, so it shows our per-call overhead over ``default``,
  not a speed-up);
- ``graph_only`` (the FX graph captured as is; on the CPU emulated, re-run as eager would);
- on CUDA, ``reduce-overhead``: ``torch.compile(mode="reduce-overhead")``, PyTorch's cudagraph
  trees, the column to beat.

Each result also carries the captures, replays and fallbacks of graphdispatch's routes, and the
max |image - eager|, so a fast but wrong or non-replaying route cannot pass unnoticed.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from graphdispatch import demo
from graphdispatch.device_graphs import choose_kind
from graphdispatch.tiny_pipelines import PIPELINES


def routes(device: torch.device) -> list[demo.Route]:
    kind, _ = choose_kind("auto", device)
    graph = kind or "emulated"
    extra = {} if kind else {"device_graph": "emulated"}
    out = [
        demo.Route("eager", "none", None),
        demo.Route("default", "none", {}),
        demo.Route("graph_with_compile", graph, {"graph_with_compile": True, **extra}),
        demo.Route("graph_only", graph, {"graph_only": True, **extra}),
    ]
    if device.type == "cuda":
        out.append(demo.Route("reduce-overhead", "cudagraph_trees", {"mode": "reduce-overhead"},
                              backend="inductor"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/pipelines.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cpu, cuda or npu (default: the demo's best device)")
    parser.add_argument("--pipeline", choices=(*PIPELINES, "all"), default="all")
    parser.add_argument("--steps", type=int, default=10, help="denoising steps per call (default: 10)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads on the CPU (default: 1)")
    parser.add_argument("--json", action="store_true", help="one JSON object instead of the table")
    args = parser.parse_args(argv)
    if args.steps < 3:
        parser.error("--steps: expected >= 3")
    device = torch.device(args.device) if args.device else demo.best_device()
    demo.prepare_device(device, args.threads)
    keys = PIPELINES if args.pipeline == "all" else (args.pipeline,)
    rows = []
    for key in keys:
        reference = None
        for route in routes(device):
            result, images = demo.run_route(key, route, args.steps, device, reference)
            if reference is None:
                reference = images
            rows.append(result)
    for row in rows:
        eager = next(r for r in rows if r["pipeline"] == row["pipeline"] and r["route"] == "eager")
        row["vs_eager"] = row["median_ms"] / eager["median_ms"]
    if args.json:
        print(json.dumps({"device": str(device), "torch": torch.__version__, "steps": args.steps,
                          "threads": torch.get_num_threads(), "results": rows}))
        return 0
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, "
          f"{args.steps} steps; median ms per step of the second call")
    print("| pipeline | route | graph | ms/step | × eager | first call s | max abs diff | captures | replays | fallbacks |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pipeline']} | {r['route']} | {r['graph']} | {r['median_ms']:.2f} | "
              f"{r['vs_eager']:.2f} | {r['first_call_s']:.1f} | {r['max_abs_diff']:.1e} | "
              f"{r['captures']} | {r['replays']} | {sum(r['fallbacks'].values())} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
