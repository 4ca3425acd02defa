"""The runner's host overhead per replay on the test device's graph, beside the CPU graph's.

    .venv/bin/python bench/testdev_overhead.py [--repeats 7] [--calls 2000] [--no-write]

bench/overhead.py's method: a trivial callable (it returns its first input, a static one for
N > 1), N float32 inputs of 16 elements, N // 2 static; µs of the calling thread's CPU time per
call, median over ``--repeats`` runs of ``--calls`` calls, the columns interleaved within each
repeat. Overhead = runner - direct call. Columns: the CPU graph (CPU inputs) and the
``accelerator`` graph on the test device (tests/testdev.py; its ``torch.accelerator.Graph``
through the Python adapter, _framework_graphs.py). "copy": the caller's tensors, so every
dynamic input is copied (on the test device one ``_foreach_copy_`` through its boxed fallback);
"in place": the entry's buffers, no copies. The test device's numbers are its host costs, not a
real device's: they show the adapter's share of a replay. Writes the section
``## Replay host overhead on the test device`` of bench/RESULTS.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from pathlib import Path

import torch
from overhead import NUMEL, per_call_us, trivial  # bench/ is on sys.path when run
from results_md import write_section

import graphdispatch
from graphdispatch import _C
from graphdispatch._device_graphs import make_factory

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import testdev  # noqa: E402  (the test device's loader)

SIZES = (1, 8, 64)
SECTION = "## Replay host overhead on the test device"


def runner_and_args(kind: str, device: torch.device, n: int):
    is_static = [i < n // 2 for i in range(n)]
    torch.manual_seed(0)
    args = [torch.randn(NUMEL).to(device) for _ in range(n)]
    args = [torch.nn.Parameter(a, requires_grad=False) if s else a for a, s in zip(args, is_static)]
    runner = _C.GraphRunner(trivial, is_static, make_factory(kind), written_inputs=[])
    runner.capture(*args)
    return runner, args


def measure(n: int, device: torch.device, repeats: int, calls: int) -> dict:
    """{(kind, scenario): (direct µs, runner µs)} for ``n`` inputs."""
    cases = {}
    for kind, on in (("cpu", torch.device("cpu")), ("accelerator", device)):
        runner, args = runner_and_args(kind, on, n)
        cases[(kind, "copy")] = (runner, args)
        cases[(kind, "in place")] = (runner, list(runner.input_buffers(*args)))
    samples = {key: ([], []) for key in cases}
    for runner, args in cases.values():
        per_call_us(runner, args, calls // 10)  # warm caches and the allocator
    for _ in range(repeats):
        for key, (runner, args) in cases.items():
            samples[key][0].append(per_call_us(trivial, args, calls))
            samples[key][1].append(per_call_us(runner, args, calls))
    stats = graphdispatch.stats()
    if stats["fallbacks"] or stats["captures"] != 2:
        sys.exit(f"testdev_overhead.py: the runners did not replay as expected: {stats}")
    graphdispatch.reset()
    return {key: tuple(statistics.median(v) for v in pair) for key, pair in samples.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--no-write", action="store_true")
    options = parser.parse_args()
    device = testdev.load()
    torch.set_num_threads(1)
    lines = [
        f"median of {options.repeats} repeats x {options.calls} calls, µs of thread CPU time "
        "per call; overhead = runner - direct",
        f"{'scenario':<9} {'N':>4} {'CPU graph ovh':>14} {'test device ovh':>16} {'ratio':>6}",
    ]
    with torch.no_grad():
        for scenario in ("copy", "in place"):
            for n in SIZES:
                result = measure(n, device, options.repeats, options.calls)
                cpu = result[("cpu", scenario)][1] - result[("cpu", scenario)][0]
                dev = result[("accelerator", scenario)][1] - result[("accelerator", scenario)][0]
                lines.append(f"{scenario:<9} {n:>4} {cpu:>14.2f} {dev:>16.2f} {dev / cpu:>6.2f}")
    lines.append(
        f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} "
        f"cores, load average {os.getloadavg()[0]:.1f} at the end"
    )
    table = "\n".join(lines)
    print(table)
    if not options.no_write:
        write_section(
            f"{SECTION}\n\n```sh\n.venv/bin/python bench/testdev_overhead.py\n```\n\n"
            "A trivial callable replayed by the runner on the CPU graph (CPU inputs) and on the "
            "test device's `torch.accelerator.Graph` (the `accelerator` kind, through the "
            "Python adapter); see the docstring of bench/testdev_overhead.py. The test "
            "device's input copies run through its boxed fallback, so the copy rows show its "
            "host cost, not a real device's.\n\n```\n" + table + "\n```\n"
        )


if __name__ == "__main__":
    main()
