"""What ``verify_replays`` costs: per-call time of a verified replay, of a plain replay, and of
replays after the K verified ones.

    .venv/bin/python bench/verify.py [--repeats 9] [--calls 1000] [--no-write]

Three C++ ``GraphRunner``s over one model on the emulated graph (CPU), as the graph_only route
builds them (without Dynamo's per-call guards, which would add the same to each), differing
only in ``verify_replays``:

- off: ``verify_replays=0``;
- every call: ``verify_replays`` larger than the calls made, so every replay is verified
  (clone of the dynamic inputs, one non-graph run, one comparison per output);
- after K: ``verify_replays=3``, timed after its 3 verified replays: the steady state.

Two models: ``add`` (``x + 1`` on 16 floats: the fixed cost per call) and ``mlp`` (two
256x256 linear layers and a GELU, batch 8). µs of the calling thread's CPU time per call,
median over ``--repeats`` rounds of ``--calls`` calls; the three are interleaved within every
round, in an order rotated every round. On the emulated graph a replay re-runs the graph, so
"every call" is about twice "off" plus the clones and comparisons; on a device the replay is
cheaper and the ratio larger.

Writes the section ``## Replay verification`` of bench/RESULTS.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch

import graphdispatch
from graphdispatch import _C
from graphdispatch._device_graphs import make_factory

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results_md import write_section  # noqa: E402

SECTION = "## Replay verification"
# The docstring's paragraphs between the command and the last one (which names this section).
DESCRIPTION = "\n\n".join(__doc__.strip().split("\n\n")[2:-1])


def models() -> dict[str, tuple[torch.nn.Module, torch.Tensor]]:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(), torch.nn.Linear(256, 256))

    class Add(torch.nn.Module):
        def forward(self, x):
            return x + 1

    return {"add": (Add(), torch.randn(16)), "mlp": (mlp.eval(), torch.randn(8, 256))}


def per_call_us(fn, x: torch.Tensor, calls: int) -> float:
    start = time.thread_time_ns()
    for _ in range(calls):
        fn(x)
    return (time.thread_time_ns() - start) / calls / 1e3


def measure(model: torch.nn.Module, x: torch.Tensor, repeats: int, calls: int) -> dict[str, float]:
    def runner(verify_replays: int):
        return _C.GraphRunner(
            lambda t: (model(t),), [False], make_factory("emulated"), verify_replays=verify_replays
        )

    variants = {
        "off": runner(0),
        "every call": runner(10 * repeats * calls + 10),
        "after K": runner(3),
    }
    for fn in variants.values():
        per_call_us(fn, x, 10)  # capture, and the K verified replays of "after K"
    samples: dict[str, list[float]] = {name: [] for name in variants}
    names = list(variants)
    for r in range(repeats):
        for name in names[r % 3 :] + names[: r % 3]:
            samples[name].append(per_call_us(variants[name], x, calls))
    return {name: statistics.median(v) for name, v in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true", help="print only; leave RESULTS.md")
    args = parser.parse_args()
    torch.set_num_threads(1)
    graphdispatch.reset()
    lines = [
        f"median of {args.repeats} rounds x {args.calls} calls, µs of thread CPU time per call",
        f"{'model':<5} {'off':>9} {'every call':>11} {'after K':>9} "
        f"{'every/off':>10} {'after/off':>10}",
    ]
    ratios = {}
    with torch.no_grad():
        for name, (model, x) in models().items():
            r = measure(model, x, args.repeats, args.calls)
            ratios[name] = (r["every call"] / r["off"], r["after K"] / r["off"])
            lines.append(
                f"{name:<5} {r['off']:>9.2f} {r['every call']:>11.2f} {r['after K']:>9.2f} "
                f"{ratios[name][0]:>10.2f} {ratios[name][1]:>10.3f}"
            )
    stats = graphdispatch.stats()
    if stats["fallbacks"]:
        sys.exit(
            f"verify.py: calls fell back, the timings are not of replays: {stats['fallbacks']}"
        )
    lines.append(
        f"verified replays {stats['verified_replays']}, replays {stats['replays']}; torch "
        f"{torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    )
    table = "\n".join(lines)
    verdict = (
        f"**A verified replay costs {ratios['add'][0]:.1f}x a plain one for `add` and "
        f"{ratios['mlp'][0]:.1f}x for `mlp`; once an entry's K replays are verified, calls "
        f"cost {ratios['add'][1]:.2f}x and {ratios['mlp'][1]:.2f}x (nothing but a counter "
        f"check).**"
    )
    print(table)
    print(verdict)
    if not args.no_write:
        write_section(
            f"{SECTION}\n\nCommand (from the repository root):\n\n```\n"
            f".venv/bin/python bench/verify.py\n```\n\n{DESCRIPTION}"
            f"\n\n```\n{table}\n```\n\n{verdict}\n"
        )


if __name__ == "__main__":
    main()
