"""Numbers that change on every call (case C89): entries, captures and the cost of a call.

    .venv/bin/python bench/changing_numbers.py [--calls N] [--no-write]

A classifier-free-guidance step (``uncond + scale * (text - uncond)`` on a 4x64x64 latent,
with the scale also through ``1 - scale``) compiled with ``graph_only`` under ``dynamic=True``
and called ``N`` times, each with a new guidance scale and new latents, on the CPU graph (which
reads the scale at replay: one entry) and on the emulated graph (standing for a device graph:
each value keyed, bounded at 64 entries, later values without a graph). Reports each graph's
entries, captures and fallbacks, and its time per call over eager's on the same calls, measured
in one run, interleaved (median of the per-call ratios). Every call's values are checked
against eager, byte for byte.

Writes the section ``## Numbers that change every call`` of bench/RESULTS.md unless
``--no-write``.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time

import torch
from results_md import write_section  # bench/ is on sys.path when run

import graphdispatch

SECTION = "## Numbers that change every call"


def cfg(uncond, text, scale: float):
    return (uncond + scale * (text - uncond)) * (1 - scale * 0.01)


def measure(kind: str, calls: int) -> dict:
    torch._dynamo.reset()
    graphdispatch.reset()
    options = {"graph_only": True, "device_graph": kind}
    G = torch.compile(cfg, backend="graphdispatch", options=options, dynamic=True)
    ratios, wrong = [], 0
    with torch.no_grad():
        for k in range(calls):
            uncond, text = torch.randn(4, 64, 64), torch.randn(4, 64, 64)
            scale = 1.0 + 8.0 * k / calls
            start = time.perf_counter()
            got = G(uncond, text, scale)
            graph = time.perf_counter() - start
            start = time.perf_counter()
            expected = cfg(uncond, text, scale)
            eager = time.perf_counter() - start
            wrong += not torch.equal(got, expected)
            if k >= 2:  # past Dynamo's compiles
                ratios.append(graph / eager)
    s = graphdispatch.stats()
    return {
        "kind": kind,
        "entries": s["entries"],
        "captures": s["captures"],
        "fallbacks": sum(s["fallbacks"].values()),
        "ratio": statistics.median(ratios),
        "wrong": wrong,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = [measure(kind, args.calls) for kind in ("cpu", "emulated")]
    lines = [
        SECTION,
        "",
        f"`.venv/bin/python bench/changing_numbers.py --calls {args.calls}` "
        f"({platform.machine()}, torch {torch.__version__}, one intra-op thread): a guidance "
        f"step on a 4x64x64 latent under `dynamic=True`, {args.calls} calls, a new guidance "
        f"scale and new latents each; time per call over eager's, median of the per-call ratios "
        f"from the third call.",
        "",
        "| graph | entries | captures | fallbacks (`number_values`) | call / eager | wrong |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r['kind']} | {r['entries']} | {r['captures']} | {r['fallbacks']} "
            f"| {r['ratio']:.2f}x | {r['wrong']} |"
            for r in rows
        ),
    ]
    body = "\n".join(lines) + "\n"
    print(body)
    if not args.no_write:
        write_section(body)
    return 0 if all(r["wrong"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
