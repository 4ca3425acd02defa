"""The three tiny denoisers beside ONNX Runtime, what a CPU user would pick instead (case C80).

    .venv/bin/python -m pip install onnxruntime onnxscript   # bench-only extras
    .venv/bin/python bench/onnx_runtime.py [--models flux sd3 sd] [--repeats 7] [--calls 20]
                                           [--no-write]

Each denoiser of bench/call_cost.py (``MODELS``), called with the arguments its pipeline passes
in one step, is exported with ``torch.onnx.export(dynamo=True)`` and run by ONNX Runtime's CPU
execution provider with one intra-op and one inter-op thread (default graph optimisations, all
on). Beside it, in the same process: eager, Inductor ``default`` (``torch.compile(model)``),
graphdispatch ``graph_only`` (the CPU graph) and ``graph_with_compile`` (Inductor's C++ entry
called from C++), both on the fast path. Wall time (``time.perf_counter``) and the calling
thread's CPU time (``time.thread_time``: with one intra-op and one inter-op thread ONNX Runtime,
like torch, runs the whole call on the calling thread), one intra-op thread, median over
``--repeats`` repeats of ``--calls`` calls, the columns interleaved within each repeat; ratios
from the one run, of CPU time (on a shared machine a preempted call inflates wall time, not CPU
time), with the wall-time ratio to ONNX Runtime beside them. ONNX Runtime's inputs are the
same tensors as numpy arrays (the copy into numpy is outside the timed call); its output is
compared with eager's.

Where the time goes, kernel for kernel, after the timed columns: ``--calls`` calls of each of
ONNX Runtime (its profiler, ``enable_profiling``: each node's kernel time, after one call that is
not counted), ``graph_with_compile`` (a compile of its own with Inductor's
``cpp.enable_kernel_profile``, so each generated C++ kernel and each extern call into ATen's CPU
kernels (oneDNN, MKL) is a ``torch.profiler`` range) and ``graph_only`` (``torch.profiler``; each
op the CPU graph replays is a range, Note [Steps in the profiler] in cpu_graph.cpp).
Each outermost kernel's time, the ops it calls inside included, goes to one category, the same
on each side: GEMM (ONNX ``Gemm``/``MatMul`` by a matrix; ``aten::mm``/``addmm``), attention
(``Softmax``, a batched ``MatMul`` of heads; SDPA, ``bmm``, softmax), norm, conv (ONNX
Runtime's ``Conv``, in its NCHWc layout after its graph optimisations), elementwise (fused or
not), copies & layout (``Transpose``, ``Reshape``, ``Cast``, ``ReorderInput``/``ReorderOutput``;
``copy_``, ``clone``, ``_to_copy``, ``cat``, views, Inductor kernels that only copy) and other.
Each profiler's own cost is taken off every kernel: what it reads on a kernel that does nothing
(ONNX Runtime counts whole µs); each kernel's time is its median over the calls. "outside
kernels" is the timed call less its kernels: session and Dynamo overhead, our runner, the
replay's loop. The GEMMs are also listed per shape, ONNX Runtime against ``graph_only``'s
``aten::addmm``/``mm``: Inductor's extern call runs the same ATen kernel, but its kernel-profile
build wraps each one in a guard that copies its stack trace, so those rows read a little high.

Writes the section ``## Beside ONNX Runtime`` of bench/RESULTS.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
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
TOP = 6  # GEMM shapes listed
CALL = "onnx_runtime.py::call"  # the profiler range around one profiled call


def call_us(fn: Callable[[], Any], calls: int) -> tuple[float, float]:
    """(wall, this thread's CPU time) in µs per call over ``calls`` calls of ``fn``."""
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - wall) / calls * 1e6, (time.thread_time() - cpu) / calls * 1e6


def interleaved(columns: dict[str, Callable[[], Any]], repeats: int, calls: int) -> dict:
    """Per column, (wall, thread CPU) µs per call: the medians over ``repeats`` repeats, the
    columns interleaved within each."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in columns}
    for _ in range(repeats):
        for name, fn in columns.items():
            samples[name].append(call_us(fn, calls))
    return {
        name: tuple(statistics.median(s[i] for s in v) for i in (0, 1))
        for name, v in samples.items()
    }


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


# Where each kernel's time goes (Note in the docstring): one category per kernel, the same
# names on both sides. An ONNX MatMul whose second input is not a matrix (batched heads) is
# attention's (QK^T, AV); the profile's parameter_size cannot tell, it reads 0 once a weight
# is prepacked (and the weight's shape is then left out of the node's input shapes).
CATEGORIES = ("GEMM", "attention", "norm", "conv", "elementwise", "copies & layout", "other")
ORT_KINDS = {
    "GEMM": {"Gemm", "MatMul", "FusedMatMul", "FusedGemm"},
    "attention": {"Attention", "MultiHeadAttention", "GroupQueryAttention", "Softmax"},
    "norm": {
        "LayerNormalization",
        "SkipLayerNormalization",
        "SimplifiedLayerNormalization",
        "SkipSimplifiedLayerNormalization",
        "RMSNormalization",
        "GroupNorm",
        "InstanceNormalization",
        "ReduceMean",
    },
    "conv": {"Conv", "FusedConv", "ConvTranspose"},
    "elementwise": {
        "Add",
        "Mul",
        "Div",
        "Sub",
        "Neg",
        "Sigmoid",
        "Tanh",
        "Gelu",
        "FastGelu",
        "BiasGelu",
        "QuickGelu",
        "BiasAdd",
        "Erf",
        "Pow",
        "Sqrt",
        "Exp",
        "Cos",
        "Sin",
        "Where",
        "Relu",
        "Softplus",
        "Reciprocal",
        "Mish",
    },
    "copies & layout": {
        "Transpose",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Cast",
        "Concat",
        "Split",
        "Slice",
        "Expand",
        "Gather",
        "Identity",
        "Flatten",
        "Shape",
        "ReorderInput",
        "ReorderOutput",
        "Tile",
        "Pad",
    },
}
TORCH_KINDS = {
    "GEMM": {"mm", "addmm", "linear", "matmul", "_addmm_activation"},
    "attention": {
        "bmm",
        "baddbmm",
        "scaled_dot_product_attention",
        "_scaled_dot_product_flash_attention_for_cpu",
        "_scaled_dot_product_attention_math",
        "_softmax",
        "softmax",
        "_safe_softmax",
    },
    "norm": {
        "layer_norm",
        "native_layer_norm",
        "group_norm",
        "native_group_norm",
        "rms_norm",
        "_fused_rms_norm",
        "var_mean",
        "mean",
        "rsqrt",
    },
    "conv": {
        "conv2d",
        "convolution",
        "_convolution",
        "mkldnn_convolution",
        "_slow_conv2d_forward",
        "_nnpack_spatial_convolution",
        "conv_transpose2d",
    },
    "copies & layout": {
        "copy_",
        "clone",
        "_to_copy",
        "to",
        "contiguous",
        "cat",
        "stack",
        "index",
        "index_select",
        "constant_pad_nd",
        "view",
        "_unsafe_view",
        "reshape",
        "expand",
        "as_strided",
        "t",
        "transpose",
        "permute",
        "unsqueeze",
        "squeeze",
        "slice",
        "select",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "unflatten",
        "flatten",
        "alias",
        "narrow",
        "detach",
        "empty",
        "empty_strided",
        "empty_like",
        "resize_",
    },
    "elementwise": {
        "add",
        "add_",
        "mul",
        "mul_",
        "div",
        "div_",
        "sub",
        "rsub",
        "neg",
        "gelu",
        "silu",
        "sigmoid",
        "tanh",
        "exp",
        "cos",
        "sin",
        "pow",
        "sqrt",
        "relu",
        "clamp",
        "clamp_min",
        "where",
        "fill_",
        "zero_",
        "addcmul",
        "erf",
        "reciprocal",
        "abs",
    },
}
# Words of an Inductor kernel's name (its origin ops) that make it a norm, attention or copy
NORM_WORDS = ("layer_norm", "group_norm", "rms_norm", "var_mean", "rsqrt")
COPY_WORDS = ("constant_pad_nd", "_to_copy", "clone", "cat", "copy", "stack", "index")


def torch_category(name: str) -> str | None:
    """A torch.profiler event's category; None for a range that is not a kernel (graphdispatch's,
    Dynamo's, the compiled region's)."""
    kernel = re.sub(r"^graph_\d+_", "", name)
    if kernel.startswith("cpp_fused_"):  # an Inductor kernel (cpp.enable_kernel_profile)
        words = kernel[len("cpp_fused_") :].rstrip("0123456789").rstrip("_")
        if "softmax" in words:
            return "attention"
        if any(w in words for w in NORM_WORDS):
            return "norm"
        for w in COPY_WORDS:
            words = words.replace(w, "")
        return "copies & layout" if not words.strip("_") else "elementwise"
    if name.startswith("aoti_torch_cpu_"):  # an extern call's shim (ATen's CPU kernel, direct)
        op = name[len("aoti_torch_cpu_") :].removesuffix("_out")
    elif name.startswith("aten::"):
        op = name[len("aten::") :]
    else:
        return None
    return next((c for c, ops in TORCH_KINDS.items() if op in ops), "other")


def ort_category(op_type: str, second_input_dims: int) -> str:
    if op_type in ("MatMul", "FusedMatMul") and second_input_dims != 2:
        return "attention"
    return next((c for c, ops in ORT_KINDS.items() if op_type in ops), "other")


class Kernels:
    """One runtime's kernels in one call: µs and count per category and per kernel name, the
    GEMMs per shape (M, K, N), and the call's time outside kernels (``call_us``, its unprofiled
    thread CPU time, less the kernels' time). Each kernel's time is its median over the profiled
    calls (a preempted call does not count) less ``floor``, what the same profiler reads on a
    kernel that does nothing."""

    def __init__(self, floor: float) -> None:
        self.floor = floor
        self.us: dict[str, float] = {c: 0.0 for c in CATEGORIES}
        self.count: dict[str, float] = {c: 0.0 for c in CATEGORIES}
        self.by_name: dict[str, dict[str, list[float]]] = {c: {} for c in CATEGORIES}
        self.gemm: dict[tuple[int, int, int], float] = {}
        self.call_us = 0.0

    def add(self, category: str, name: str, us: float, mkn: tuple | None = None) -> None:
        us = max(us - self.floor, 0.0)
        self.us[category] += us
        self.count[category] += 1
        entry = self.by_name[category].setdefault(name, [0.0, 0.0])
        entry[0] += us
        entry[1] += 1
        if mkn is not None:
            self.gemm[mkn] = self.gemm.get(mkn, 0.0) + us

    @property
    def kernels_us(self) -> float:
        return sum(self.us.values())

    @property
    def outside_us(self) -> float:
        return self.call_us - self.kernels_us

    def top(self, category: str, n: int = 3) -> str:
        ranked = sorted(self.by_name[category].items(), key=lambda kv: -kv[1][0])[:n]
        return ", ".join(f"{k} {us:.0f} ({c:.0f})" for k, (us, c) in ranked)


def ort_profile(model_path: str, feed: dict[str, Any], calls: int) -> list[dict[str, Any]]:
    """The kernel events of ONNX Runtime's profiler (``enable_profiling``, whole µs) over
    ``calls`` calls after one that is not counted (its first run allocates and prepacks)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.enable_profiling = True
    # Beside the model (a temporary folder), not in the working directory.
    options.profile_file_prefix = os.path.join(os.path.dirname(model_path), "ort_profile")
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    for _ in range(calls + 1):
        session.run(None, feed)
    profile = session.end_profiling()
    with open(profile) as f:
        events = json.load(f)
    os.remove(profile)
    runs = sorted((e for e in events if e.get("name") == "model_run"), key=lambda e: e["ts"])
    after_first = runs[0]["ts"] + runs[0]["dur"]
    return [
        e
        for e in events
        if e.get("cat") == "Node"
        and e.get("args", {}).get("op_name")
        and e["name"].endswith("_kernel_time")
        and e["ts"] >= after_first
    ]


def ort_floor(folder: str, calls: int = 100) -> float:
    """What ONNX Runtime's profiler reads, median µs, on a kernel that does nothing: a chain of
    64 ``Identity`` nodes on 4 floats, graph optimisations off so that none is removed."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    names = ["x"] + [f"t{i}" for i in range(63)] + ["y"]
    nodes = [helper.make_node("Identity", [a], [b]) for a, b in zip(names, names[1:])]
    io = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "y")]
    model = helper.make_model(
        helper.make_graph(nodes, "floor", io[:1], io[1:]),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model.ir_version = 8
    path = os.path.join(folder, "floor.onnx")
    onnx.save(model, path)
    events = ort_profile(path, {"x": np.ones(4, np.float32)}, calls)
    return statistics.median(e["dur"] for e in events)


def ort_kernels(model_path: str, feed: dict[str, Any], calls: int, floor: float) -> Kernels:
    """Per node: the median over the calls of its kernel time, less ``floor``."""
    out = Kernels(floor)
    per_node: dict[str, list[dict[str, Any]]] = {}
    for e in ort_profile(model_path, feed, calls):
        per_node.setdefault(e["name"], []).append(e)
    for runs in per_node.values():
        e = runs[0]
        a = e["args"]
        op = a["op_name"]
        shapes = [list(d.values())[0] for d in a.get("input_type_shape", [])]
        result = [list(d.values())[0] for d in a.get("output_type_shape", [])]
        # A weight ONNX Runtime prepacked is left out of the shapes: a matrix.
        category = ort_category(op, len(shapes[1]) if len(shapes) > 1 else 2)
        mkn = None
        if category == "GEMM":
            if shapes and result:
                mkn = (math.prod(result[0][:-1]), shapes[0][-1], result[0][-1])
        out.add(category, op, statistics.median(r["dur"] for r in runs), mkn)
    return out


def torch_profile(fn: Callable[[], Any], calls: int) -> list[list[Any]]:
    """torch.profiler's events (shapes recorded) per call, over ``calls`` calls of ``fn``: the
    outermost events inside each call's range, in the order they ran."""
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True
    ) as prof:
        for _ in range(calls):
            with torch.profiler.record_function(CALL):
                fn()
    ranges = sorted((e for e in prof.events() if e.name == CALL), key=lambda e: e.time_range.start)
    return [list(r.cpu_children) for r in ranges]


def torch_floor(calls: int = 500) -> float:
    """What torch.profiler reads, median µs, on an op that does nothing (``aten::alias``)."""
    x = torch.zeros(4)
    per_call = torch_profile(lambda: torch.ops.aten.alias.default(x), calls)
    return statistics.median(e.cpu_time_total for call in per_call for e in call)


def outermost_kernels(events: list[Any]) -> list[Any]:
    """The kernels among ``events`` and, inside ranges that are not kernels (graphdispatch's,
    Dynamo's), among their children, in order."""
    out = []
    for e in events:
        if torch_category(e.name) is not None:
            out.append(e)
        else:
            out += outermost_kernels(list(e.cpu_children))
    return out


def torch_kernels(fn: Callable[[], Any], calls: int, floor: float) -> Kernels:
    """Per outermost kernel (an ATen op, an Inductor C++ kernel or extern call where compiled
    with ``cpp.enable_kernel_profile``): its CPU time, the ops it calls inside included (ATen's
    ``addmm`` expands and copies its bias), less ``floor`` for it and each of those; the median
    over the calls of the kernel at its place in the call. Ranges that are not kernels
    (graphdispatch's, Dynamo's) are time outside kernels."""
    out = Kernels(0.0)

    def inside(e: Any) -> int:
        return sum(1 + inside(c) for c in e.cpu_children)

    per_call = [outermost_kernels(call) for call in torch_profile(fn, calls)]
    if len({len(k) for k in per_call}) != 1:
        raise RuntimeError(f"calls ran different numbers of kernels: {[len(k) for k in per_call]}")
    for same in zip(*per_call):
        e = same[0]
        mkn = None
        dims = e.input_shapes
        if e.name in ("aten::mm", "aten::addmm") and dims:
            a, b = (dims[0], dims[1]) if e.name == "aten::mm" else (dims[1], dims[2])
            if len(a) == 2 and len(b) == 2:
                mkn = (a[0], a[1], b[1])
        us = statistics.median(k.cpu_time_total - floor * (1 + inside(k)) for k in same)
        out.add(torch_category(e.name), e.name, us, mkn)
    return out


PROFILED = ("ONNX Runtime", "graph_with_compile", "graph_only")


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
        times = interleaved(columns, repeats, calls)
        floors = {"ONNX Runtime": ort_floor(folder), "torch": torch_floor()}
        kernels = {
            "ONNX Runtime": ort_kernels(path, feed, calls, floors["ONNX Runtime"]),
            "graph_only": torch_kernels(columns["graph_only"], calls, floors["torch"]),
        }
        # Inductor's C++ kernels and extern calls are profiler ranges only when compiled so: a
        # compile of its own, after a reset (Dynamo would reuse the timed column's code).
        torch._dynamo.reset()
        graphdispatch.reset()
        with torch._inductor.config.patch({"cpp.enable_kernel_profile": True}):
            profiled = torch.compile(
                model, backend="graphdispatch", options={"graph_with_compile": True}
            )
            for _ in range(2):
                profiled(*args, **kwargs)
        kernels["graph_with_compile"] = torch_kernels(
            lambda: profiled(*args, **kwargs), calls, floors["torch"]
        )
        for name, k in kernels.items():
            k.call_us = times[name][1]
    return {"times": times, "diffs": diffs, "kernels": kernels, "floors": floors}


def by_category(k: dict[str, Kernels]) -> list[str]:
    """The per-category table: µs and kernels a call on each side, the best side, then the
    kernels behind each row."""
    head = f"{'category':17}" + "".join(f" {n[:18]:>18} {'n':>4}" for n in PROFILED)
    lines = [head + "  graph_with_compile / ORT"]
    rows = [(c, {n: (k[n].us[c], k[n].count[c]) for n in PROFILED}) for c in CATEGORIES]
    rows += [
        ("kernels, all", {n: (k[n].kernels_us, sum(k[n].count.values())) for n in PROFILED}),
        ("outside kernels", {n: (k[n].outside_us, 0.0) for n in PROFILED}),
        ("call (timed)", {n: (k[n].call_us, 0.0) for n in PROFILED}),
    ]
    for name, cells in rows:
        line = f"{name:17}" + "".join(f" {us:18.0f} {c:4.0f}" for us, c in cells.values())
        ort_us, ours = cells["ONNX Runtime"][0], cells["graph_with_compile"][0]
        if ort_us > 0.5 and ours > 0.5:
            line += f"  {ours / ort_us:5.2f}x"
        lines.append(line)
    lines.append("")
    for c in CATEGORIES:
        if any(k[n].by_name[c] for n in PROFILED):
            lines.append(f"{c}: " + "; ".join(f"{n}: {k[n].top(c)}" for n in PROFILED))
    # Inductor's extern GEMM calls ATen's CPU kernel, the one graph_only replays (with shapes).
    ort_gemm, aten_gemm = k["ONNX Runtime"].gemm, k["graph_only"].gemm
    shapes = sorted(set(ort_gemm) | set(aten_gemm), key=lambda s: -aten_gemm.get(s, 0.0))
    cells = [
        f"{m}x{kk}x{nn} {ort_gemm.get((m, kk, nn), 0):.0f}/{aten_gemm.get((m, kk, nn), 0):.0f}"
        for m, kk, nn in shapes[:TOP]
    ]
    if cells:
        lines.append("GEMM per shape MxKxN, µs a call ORT/ATen (graph_only): " + ", ".join(cells))
    return lines


def report(key: str, r: dict[str, Any]) -> tuple[str, list[str]]:
    walls = {name: w for name, (w, _) in r["times"].items()}
    t = {name: c for name, (_, c) in r["times"].items()}
    ort_us, eager = t["ONNX Runtime"], t["eager"]
    lines = [
        MODELS[key][1],
        "",
        f"{'column':22} {'µs wall':>9} {'µs CPU':>9} {'x eager':>8} {'x ORT':>7} "
        f"{'x ORT wall':>10}",
    ]
    for name, us in t.items():
        lines.append(
            f"{name:22} {walls[name]:9.1f} {us:9.1f} {us / eager:8.2f} {us / ort_us:7.2f} "
            f"{walls[name] / walls['ONNX Runtime']:10.2f}"
        )
    lines += [
        "",
        "max |out - eager|: " + ", ".join(f"{k} {v:.1e}" for k, v in r["diffs"].items()),
        "",
        "µs a call per category: each kernel's profiled time less the profiler's reading "
        f"on a no-op ({r['floors']['ONNX Runtime']:.2f} µs ONNX Runtime, "
        f"{r['floors']['torch']:.2f} torch); n: kernels a call; outside kernels: the timed call "
        "less its kernels",
        *by_category(r["kernels"]),
    ]
    label = MODELS[key][0]
    k = r["kernels"]
    ours, theirs = k["graph_with_compile"], k["ONNX Runtime"]
    gaps = sorted(CATEGORIES, key=lambda c: -(ours.us[c] - theirs.us[c]))
    verdicts = [
        f"{label}: ONNX Runtime {ort_us / eager:.2f}x eager; `graph_with_compile` "
        f"{t['graph_with_compile'] / ort_us:.2f}x ONNX Runtime, `graph_only` "
        f"{t['graph_only'] / ort_us:.2f}x, Inductor `default` "
        f"{t['Inductor default'] / ort_us:.2f}x",
        f"{label}: profiled, `graph_with_compile`'s kernels {ours.kernels_us:.0f} µs against "
        f"ONNX Runtime's {theirs.kernels_us:.0f}; outside kernels {ours.outside_us:.0f} against "
        f"{theirs.outside_us:.0f}; the largest differences: "
        + ", ".join(
            f"{c} {ours.us[c]:.0f} against {theirs.us[c]:.0f}"
            for c in gaps[:3]
            if ours.us[c] > theirs.us[c]
        ),
    ]
    return "\n".join(lines), verdicts


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
            f"median of {args.repeats} repeats x {args.calls} calls, µs per call of wall time and "
            "of the calling thread's CPU time (ratios: CPU time), "
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
