"""Warm start: a compiled denoiser loaded from its artifact in a fresh process,
against the cold path (``torch.compile`` + first call) in a fresh process beside it.

    .venv/bin/python bench/warm_start.py [--models flux sd3 sd] [--routes graph_only]
                                         [--repeats 3] [--no-write]

The denoisers of bench/call_cost.py (``MODELS``), each called with the arguments its pipeline
gives it in one step, under ``torch.no_grad()``, compiled as docs/usage.md's serving recipe
says: a module-level ``run(model, *args, **kwargs)`` under ``torch.compile(...,
fullgraph=True, backend="graphdispatch", options={route: True, "guard_filter_fn":
torch.compiler.keep_tensor_guards_unsafe})``. One process saves the artifact
(``aot_compile`` + ``save_compiled_function``); then, per repeat, one fresh process for each
path, interleaved:

- **warm**: imports torch and builds the model (not timed; on ``graph_with_compile`` then
  imports Inductor's ``compile_fx``, timed apart: a process that uses Inductor at all pays
  it, cold or warm), then times the load
  (``torch.compiler.load_compiled_function``, importing whatever of Dynamo is not imported
  yet) and the first call (graphdispatch records the CPU graph from the real inputs and
  replays it: its output is a replayed output), then a second call (a replay alone);
- **cold**: the same set-up, then times ``aot_compile`` (Dynamo's trace, our compile) and the
  first call: what a process without an artifact pays.

One intra-op thread. Wall-clock seconds (``time.perf_counter``), medians over the repeats,
ratios from this one run. Each call's output is compared bit for bit with eager on the same
model (on ``graph_with_compile``, whose kernels are Inductor's, with the saving process's
output, and with eager within 1e-4); each process's counters must show one capture and a
replay per call, no fallback. Memory: the process's peak resident set (``ru_maxrss``) after
the two calls minus after building the model. Artifact bytes: the saved file's size. The
cold path runs after the save on the same machine: Inductor's on-disk cache is warm for it.

Writes the section ``## Warm start`` of bench/RESULTS.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

SECTION = "## Warm start"
HERE = Path(__file__).resolve().parent


def run(model: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """What is compiled: the serving recipe's module-level function calling the model."""
    return model(*args, **kwargs)


def _first(out: Any) -> torch.Tensor:
    return out[0] if isinstance(out, tuple) else out.sample


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(mode: str, key: str, route: str, path: str) -> dict[str, Any]:
    """One measurement in this (fresh) process; ``mode``: save, warm or cold."""
    from call_cost import MODELS  # bench/ is on sys.path when run

    import graphdispatch

    model, args, kwargs = MODELS[key][2]()
    model = model.eval()
    options = {route: True, "guard_filter_fn": torch.compiler.keep_tensor_guards_unsafe}
    with torch.no_grad():
        eager = _first(model(*args, **kwargs))
        graphdispatch.reset()
        dynamo_imported = "torch._dynamo" in sys.modules
        start = time.perf_counter()
        if mode == "warm" and route == "graph_with_compile":
            importlib.import_module("torch._inductor.compile_fx")  # reported apart
        imports = time.perf_counter() - start
        rss = _rss_mb()
        start = time.perf_counter()
        if mode == "warm":
            with open(path, "rb") as f:
                fn = torch.compiler.load_compiled_function(f)
        else:
            compiled = torch.compile(run, fullgraph=True, backend="graphdispatch", options=options)
            fn = compiled.aot_compile(((model, *args), kwargs))
        ready = time.perf_counter()
        first = _first(fn(model, *args, **kwargs))
        done = time.perf_counter()
        second = _first(fn(model, *args, **kwargs))
        again = time.perf_counter()
    if mode == "save":
        fn.save_compiled_function(path)
        torch.save(first, path + ".pt")
    # Inductor's kernels are not eager's: on graph_with_compile the saving process's output
    # is the oracle, and eager's only within tolerance.
    oracle = eager if route == "graph_only" or mode == "save" else torch.load(path + ".pt")
    stats = graphdispatch.stats()
    return {
        "inductor_import_s": imports,
        "ready_s": ready - start,
        "first_s": done - ready,
        "second_s": again - done,
        "dynamo_imported": dynamo_imported,
        "exact": torch.equal(first, oracle) and torch.equal(second, oracle),
        "close": torch.allclose(first, eager, rtol=1e-4, atol=1e-4),
        "captures": stats["captures"],
        "replays": stats["replays"],
        "fallbacks": stats["fallbacks"],
        "rss_growth_mb": _rss_mb() - rss,
    }


def spawn(mode: str, key: str, route: str, path: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", mode, key, route, path],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{mode} {key} {route} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(key: str, route: str, repeats: int, folder: str) -> dict[str, Any]:
    path = os.path.join(folder, f"{key}-{route}.bin")
    saved = spawn("save", key, route, path)
    assert saved["close"], f"save {key} {route}: {saved}"
    runs: dict[str, list[dict[str, Any]]] = {"warm": [], "cold": []}
    for _ in range(repeats):
        for mode in runs:
            r = spawn(mode, key, route, path)
            assert r["exact"] and r["close"] and not r["fallbacks"], f"{mode} {key}: {r}"
            assert r["captures"] == 1 and r["replays"] == 2, f"{mode} {key}: {r}"
            runs[mode].append(r)
    med = {
        mode: {
            k: statistics.median(r[k] for r in rs)
            for k in ("inductor_import_s", "ready_s", "first_s", "second_s")
        }
        | {"rss_growth_mb": max(r["rss_growth_mb"] for r in rs)}
        for mode, rs in runs.items()
    }
    med["bytes"] = os.path.getsize(path)
    med["dynamo_imported"] = all(r["dynamo_imported"] for r in runs["warm"])
    return med


def report(results: dict[tuple[str, str], dict[str, Any]], repeats: int) -> tuple[str, list]:
    from call_cost import MODELS

    lines = [
        f"{'model':6} {'route':18} {'(Inductor import)':>17} {'warm: load':>10} {'1st call':>9} "
        f"{'to output':>9} "
        f"{'2nd call':>9} {'cold: compile':>13} {'1st call':>9} {'to output':>9} "
        f"{'warm/cold':>9} {'bytes':>10} {'peak RSS +MB warm/cold':>22}"
    ]
    verdicts = []
    for (key, route), m in results.items():
        w, c = m["warm"], m["cold"]
        warm_total, cold_total = w["ready_s"] + w["first_s"], c["ready_s"] + c["first_s"]
        lines.append(
            f"{MODELS[key][0]:6} {route:18} {w['inductor_import_s']:17.3f} "
            f"{w['ready_s']:10.3f} {w['first_s']:9.3f} "
            f"{warm_total:9.3f} {w['second_s']:9.4f} {c['ready_s']:13.3f} {c['first_s']:9.3f} "
            f"{cold_total:9.3f} {warm_total / cold_total:9.3f} {m['bytes']:10d} "
            f"{w['rss_growth_mb']:10.1f}/{c['rss_growth_mb']:.1f}"
        )
        target = 0.2 if route == "graph_only" else 1.0
        imports = w["inductor_import_s"]
        with_imports = (
            f"; {warm_total + imports:.3f} s with Inductor's import, {imports:.3f} s, which the "
            "cold path pays too"
            if route == "graph_with_compile"
            else ""
        )
        verdicts.append(
            f"{MODELS[key][0]}, {route}: load to first replayed output {warm_total:.3f} s "
            f"({'within' if warm_total <= target else 'over'} the {target} s target"
            f"{with_imports}), "
            f"{warm_total / cold_total:.2f}x the cold path's {cold_total:.3f} s; bit-exact with "
            f"{'eager' if route == 'graph_only' else 'the saving process'}; artifact "
            f"{m['bytes'] / 1e6:.2f} MB"
        )
    text = "\n".join(
        [
            f"median of {repeats} fresh processes per path, wall-clock seconds",
            *lines,
            f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} "
            f"cores, load average {os.getloadavg()[0]:.1f} at the end",
        ]
    )
    return text, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/warm_start.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--models", nargs="+", default=["flux", "sd3", "sd"])
    parser.add_argument(
        "--routes", nargs="+", choices=["graph_only", "graph_with_compile"], default=["graph_only"]
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--child", nargs=4, metavar=("MODE", "MODEL", "ROUTE", "PATH"))
    args = parser.parse_args(argv)
    if args.child:
        torch.set_num_threads(1)  # as the other benches: a shared 2-core machine's noise
        print(json.dumps(child(*args.child)))
        return 0
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for key in args.models:
            for route in args.routes:
                results[key, route] = measure(key, route, args.repeats, folder)
                print(key, route, results[key, route], flush=True)
    text, verdicts = report(results, args.repeats)
    all_dynamo = all(m["dynamo_imported"] for m in results.values())
    print(text + "\n" + "\n".join(verdicts))
    if not args.no_write:
        from results_md import write_section

        body = (
            f"{SECTION}\n\nCommand (from the repository root):\n\n```\n.venv/bin/python "
            f"bench/warm_start.py --models {' '.join(args.models)} --routes "
            f"{' '.join(args.routes)} --repeats {args.repeats}\n```\n\n"
            "See the docstring of bench/warm_start.py: `warm` is a fresh process loading the "
            "artifact (`load`) and calling it (`1st call`: records and replays), `cold` a "
            "fresh process compiling (`aot_compile`: Dynamo's trace and our compile) and "
            "calling; `to output` is from the start of the load or compile to the first "
            "call's output, after importing torch and building the model (which imports "
            f"Dynamo{'' if all_dynamo else ' in some runs'}: diffusers does), and on the warm "
            "path after importing Inductor, shown apart.\n\n"
            f"```\n{text}\n```\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n"
        )
        write_section(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
