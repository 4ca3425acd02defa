"""The three tiny denoisers beside ONNX Runtime, what a CPU user would pick instead (case C80).

    .venv/bin/python -m pip install onnxruntime onnxscript   # bench-only extras
    .venv/bin/python bench/onnx_runtime.py [--models flux sd3 sd] [--repeats 7] [--calls 20]
                                           [--no-write]

Each denoiser of bench/call_cost.py (``MODELS``), called with the arguments its pipeline passes
in one step, is exported with ``torch.onnx.export(dynamo=True)`` and run by ONNX Runtime's CPU
execution provider with one intra-op and one inter-op thread (default graph optimisations, all
on). Beside it, in the same process: eager, Inductor ``default`` (``torch.compile(model)``),
graphdispatch ``graph_only`` (the CPU graph) and ``graph_with_compile`` (Inductor's C++ entry
called from C++), both on the fast path. Wall time (``time.perf_counter``), one intra-op thread,
median over ``--repeats`` repeats of ``--calls`` calls, the columns interleaved within each
repeat; ratios from the one run. ONNX Runtime's inputs are the same tensors as numpy arrays
(the copy into numpy is outside the timed call); its output is compared with eager's.

Where the time goes in ONNX Runtime: its profiler (``enable_profiling``) over ``--calls`` calls,
summed per op type, against the CPU graph's recorded program per ATen op (``torch.profiler``
over the same number of calls of ``graph_only``): the op kinds each spends most in.

Writes the section ``## Beside ONNX Runtime`` of bench/RESULTS.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo

# bench/ is on sys.path when run
from call_cost import MODELS
from cpu_graph import sample
from results_md import write_section

import graphdispatch

SECTION = "## Beside ONNX Runtime"
TOP = 6  # op kinds listed per runtime


def wall_us(fn: Callable[[], Any], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def interleaved_wall(columns: dict[str, Callable[[], Any]], repeats: int, calls: int) -> dict:
    samples: dict[str, list[float]] = {name: [] for name in columns}
    for _ in range(repeats):
        for name, fn in columns.items():
            samples[name].append(wall_us(fn, calls))
    return {name: statistics.median(v) for name, v in samples.items()}


def flat_inputs(args: tuple, kwargs: dict) -> list[torch.Tensor]:
    """The tensors of one call, in the order torch.onnx.export names its graph's inputs."""
    leaves = list(args) + [v for v in kwargs.values()]
    return [v for v in leaves if isinstance(v, torch.Tensor)]


def ort_session(model: torch.nn.Module, args: tuple, kwargs: dict, folder: str) -> Any:
    import onnxruntime as ort

    path = os.path.join(folder, "model.onnx")
    torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, f=path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"]), path


def ort_feed(session: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    by_name = {k: v for k, v in kwargs.items() if isinstance(v, torch.Tensor)}
    positional = iter(v for v in args if isinstance(v, torch.Tensor))
    feed = {}
    for i in session.get_inputs():
        value = by_name.get(i.name)
        feed[i.name] = (value if value is not None else next(positional)).numpy()
    return feed


def ort_op_times(model_path: str, feed: dict[str, Any], calls: int) -> dict[str, float]:
    """µs per call summed per ONNX op type, from ONNX Runtime's profiler; "kernels a call"
    counts the kernels run."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    # Beside the exported model (a temporary folder), not in the working directory.
    options.profile_file_prefix = os.path.join(os.path.dirname(model_path), "ort_profile")
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    for _ in range(calls):
        session.run(None, feed)
    profile = session.end_profiling()
    with open(profile) as f:
        events = json.load(f)
    os.remove(profile)
    per_op: dict[str, float] = {"kernels a call": 0.0}
    for e in events:
        op = e.get("args", {}).get("op_name")
        if e.get("cat") == "Node" and op and e["name"].endswith("_kernel_time"):
            per_op[op] = per_op.get(op, 0.0) + e["dur"] / calls
            per_op["kernels a call"] += 1 / calls
    return per_op


def torch_op_times(fn: Callable[[], Any], calls: int) -> dict[str, float]:
    """µs per call of self CPU time per ATen op, from torch.profiler; "kernels a call" counts
    the ATen ops run (ops an op calls included)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            fn()
    aten = [e for e in prof.key_averages() if e.key.startswith("aten::")]
    per_op = {e.key: e.self_cpu_time_total / calls for e in aten}
    per_op["kernels a call"] = sum(e.count for e in aten) / calls
    return per_op


def top(times: dict[str, float]) -> str:
    ranked = sorted(
        (kv for kv in times.items() if kv[0] != "kernels a call"), key=lambda kv: -kv[1]
    )
    listed = ", ".join(f"{name} {us:.0f}" for name, us in ranked[:TOP])
    return f"{times['kernels a call']:.0f} kernels a call; {listed}"


def measure(key: str, repeats: int, calls: int) -> dict[str, Any]:
    torch._dynamo.reset()
    graphdispatch.reset()
    model, args, kwargs = MODELS[key][2]()
    kwargs = {**kwargs, "return_dict": False}
    with torch.no_grad(), tempfile.TemporaryDirectory() as folder:
        expected = sample(model(*args, **kwargs))
        session, path = ort_session(model, args, kwargs, folder)
        feed = ort_feed(session, args, kwargs)
        ort_out = torch.from_numpy(session.run(None, feed)[0])
        columns: dict[str, Callable[[], Any]] = {
            "eager": lambda: model(*args, **kwargs),
            "ONNX Runtime": lambda: session.run(None, feed),
        }
        inductor = torch.compile(model)
        columns["Inductor default"] = lambda: inductor(*args, **kwargs)
        for route in ("graph_only", "graph_with_compile"):
            c = torch.compile(model, backend="graphdispatch", options={route: True})
            columns[route] = lambda c=c: c(*args, **kwargs)
        diffs = {"ONNX Runtime": (ort_out - expected).abs().max().item()}
        for name, fn in columns.items():
            if name not in ("eager", "ONNX Runtime"):
                for _ in range(2):
                    out = fn()
                diffs[name] = (sample(out) - expected).abs().max().item()
        times = interleaved_wall(columns, repeats, calls)
        ops = {
            "ONNX Runtime": ort_op_times(path, feed, calls),
            "graph_only": torch_op_times(columns["graph_only"], calls),
        }
    return {"times": times, "diffs": diffs, "ops": ops}


def report(key: str, r: dict[str, Any]) -> tuple[str, list[str]]:
    t = r["times"]
    ort_us, eager = t["ONNX Runtime"], t["eager"]
    lines = [MODELS[key][1], "", f"{'column':22} {'µs/call':>9} {'x eager':>8} {'x ORT':>7}"]
    for name, us in t.items():
        lines.append(f"{name:22} {us:9.1f} {us / eager:8.2f} {us / ort_us:7.2f}")
    lines += [
        "",
        "max |out - eager|: " + ", ".join(f"{k} {v:.1e}" for k, v in r["diffs"].items()),
        f"ONNX Runtime per op type (µs a call): {top(r['ops']['ONNX Runtime'])}",
        f"graph_only per ATen op (µs a call, self): {top(r['ops']['graph_only'])}",
    ]
    label = MODELS[key][0]
    verdict = (
        f"{label}: ONNX Runtime {ort_us / eager:.2f}x eager; `graph_with_compile` "
        f"{t['graph_with_compile'] / ort_us:.2f}x ONNX Runtime, `graph_only` "
        f"{t['graph_only'] / ort_us:.2f}x, Inductor `default` {t['Inductor default'] / ort_us:.2f}x"
    )
    return "\n".join(lines), [verdict]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/onnx_runtime.py", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    texts, verdicts = [], []
    for key in args.models:
        text, said = report(key, measure(key, args.repeats, args.calls))
        print(text + "\n" + "\n".join(said), flush=True)
        texts.append(text)
        verdicts += said
    import onnxruntime

    text = "\n\n".join(
        [
            f"median of {args.repeats} repeats x {args.calls} calls, µs of wall time per call, "
            "1 thread",
            *texts,
            f"torch {torch.__version__}, onnxruntime {onnxruntime.__version__}, Python "
            f"{platform.python_version()}, {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f} at the end",
        ]
    )
    if not args.no_write:
        write_section(
            f"{SECTION}\n\nCommand (from the repository root, after `.venv/bin/python -m pip "
            "install onnxruntime onnxscript`):\n\n```\n.venv/bin/python bench/onnx_runtime.py "
            f"--models {' '.join(args.models)} --repeats {args.repeats} --calls {args.calls}"
            f"\n```\n\nSee the docstring of bench/onnx_runtime.py for what each column runs.\n\n"
            f"```\n{text}\n```\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
