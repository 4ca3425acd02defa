"""The CPU graph against eager, Dynamo-eager and Inductor on a tiny Flux transformer, in one run.

    .venv/bin/python bench/cpu_graph.py [--repeats 7] [--calls 50] [--no-write]

Three measurements, each side by side in one process, one intra-op thread, thread CPU time of
the calling thread (``time.thread_time``: other jobs on the machine do not inflate it), median
over ``--repeats`` runs of ``--calls`` calls, the columns interleaved within every repeat:

1. **Forward**: ``FluxTransformer2DModel`` (1 double and 2 single blocks, the demo's tiny config)
   called with the arguments ``FluxPipeline`` passes it in one denoising step, under
   ``torch.no_grad()``: eager; ``torch.compile(backend="eager")`` (Dynamo, no compiler);
   ``default`` (Inductor, its compile time reported); Inductor with its C++ wrapper
   (``options={"cpp_wrapper": True}``); graphdispatch ``graph_with_compile`` (Inductor's C++
   wrapper, its entry called from our C++ on replay: the ``cpp_wrapper`` graph); graphdispatch
   ``graph_only`` on the emulated graph and on the CPU graph. Every compiled column's output is
   compared with eager's and graphdispatch's captures, replays and fallbacks are counted.
2. **Memory**: the peak bytes one eager forward allocates (the profiler's memory events, summed
   in time order) against the CPU graph entry's bytes (``stats()["entry_bytes"]``: input
   buffers, arena, constants). Target: at most 1.5x.
3. **Regional compilation** (case C50): a tiny Flux with 4 double and 8 single blocks compiled
   with ``compile_repeated_blocks`` (diffusers' recommended compile), time per transformer call
   for regional ``backend="eager"`` and regional graphdispatch on the emulated and the CPU graph.
   Beside them, the runner's own overhead per block call: a GraphRunner on the CPU graph with
   the inputs of one double block as Dynamo passes them (its parameters, read in place, and the
   tensors the block is called with, copied), over a callable of one op; its call time minus
   the same recorded program replayed with nothing around it (``GraphRunner.replay_graphs``:
   no key, copies or outputs). The rest of a regional call's time outside the recorded programs
   is Dynamo's (frame evaluation and guards per block) and the model's eager code between
   blocks.

4. **Per replayed op**: a chain of 256 additions on 64 float32 (host-bound, as launch overhead
   is): the CPU graph's recorded program alone (``replay_graphs``) per op, against the floor, a
   plain C++ loop calling the same kernel (``at::cpu::add_out``, no dispatcher) into two
   alternating outputs (built with ``torch.utils.cpp_extension.load_inline``), and eager's
   Python loop.

Writes the section ``## CPU graph`` of bench/RESULTS.md (other sections kept) unless
``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo
from results_md import write_section  # bench/ is on sys.path when run

import graphdispatch
from graphdispatch.tiny_pipelines import build

SECTION = "## CPU graph"


def denoiser_call(key: str, **config: Any) -> tuple[torch.nn.Module, tuple, dict]:
    """The denoiser of the tiny pipeline ``key`` (``tiny_pipelines.PIPELINES``) and the arguments
    the pipeline gives it in its first denoising step. With ``config``, a fresh model (seed 0) of
    the denoiser's config with those entries replaced, called with the same arguments."""
    tiny = build(key, torch.device("cpu"), 2)
    model = tiny.model
    if config:
        torch.manual_seed(0)
        model = type(model).from_config({**model.config, **config}).eval()
    seen: dict[str, Any] = {}

    def keep(module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        seen.setdefault("call", (args, kwargs))

    hook = tiny.model.register_forward_pre_hook(keep, with_kwargs=True)
    with torch.no_grad():
        tiny.pipe(**tiny.call_kwargs())
    hook.remove()
    args, kwargs = seen["call"]
    return model, args, kwargs


def flux_call(num_layers: int, num_single_layers: int) -> tuple[torch.nn.Module, tuple, dict]:
    """A tiny Flux transformer of that many double and single blocks, and its call."""
    return denoiser_call("flux", num_layers=num_layers, num_single_layers=num_single_layers)


def thread_us(fn: Callable[[], Any], calls: int) -> float:
    start = time.thread_time()
    for _ in range(calls):
        fn()
    return (time.thread_time() - start) / calls * 1e6


def interleaved(
    columns: dict[str, Callable[[], Any]], repeats: int, calls: int
) -> dict[str, float]:
    """Median µs per call of each column, the columns interleaved within every repeat."""
    samples: dict[str, list[float]] = {name: [] for name in columns}
    for _ in range(repeats):
        for name, fn in columns.items():
            samples[name].append(thread_us(fn, calls))
    return {name: statistics.median(values) for name, values in samples.items()}


def sample(out: Any) -> torch.Tensor:
    return (out[0] if isinstance(out, tuple) else out.sample).detach()


def eager_peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak of the bytes allocated during one call, from the profiler's memory events."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]"
    )
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def forward(repeats: int, calls: int) -> dict[str, Any]:
    model, args, kwargs = flux_call(1, 2)
    call = lambda m: lambda: m(*args, **kwargs)  # noqa: E731
    with torch.no_grad():
        expected = sample(model(*args, **kwargs))
        columns: dict[str, Callable[[], Any]] = {"eager": call(model)}
        compile_s: dict[str, float] = {}
        counted: dict[str, dict[str, int]] = {}
        for name, compile_it in (
            ("backend=eager", lambda: torch.compile(model, backend="eager")),
            ("default (Inductor)", lambda: torch.compile(model)),
            ("Inductor cpp_wrapper", lambda: torch.compile(model, options={"cpp_wrapper": True})),
            (
                "graph_with_compile",
                lambda: torch.compile(
                    model, backend="graphdispatch", options={"graph_with_compile": True}
                ),
            ),
            (
                "graph_only emulated",
                lambda: torch.compile(
                    model,
                    backend="graphdispatch",
                    options={"graph_only": True, "device_graph": "emulated"},
                ),
            ),
            (
                "graph_only CPU graph",
                lambda: torch.compile(model, backend="graphdispatch", options={"graph_only": True}),
            ),
        ):
            before = graphdispatch.stats()
            start = time.perf_counter()
            compiled = compile_it()
            out = sample(compiled(*args, **kwargs))
            compile_s[name] = time.perf_counter() - start
            diff = (out - expected).abs().max().item()
            assert diff < 1e-3, f"{name}: max |out - eager| {diff}"
            columns[name] = call(compiled)
            counted[name] = before
            if name == "graph_only CPU graph":  # its entry alone
                entry_bytes = graphdispatch.stats()["entry_bytes"] - before["entry_bytes"]
        times = interleaved(columns, repeats, calls)
        peak = eager_peak_bytes(call(model))
    after = graphdispatch.stats()
    return {
        "times": times,
        "compile_s": compile_s,
        "peak": peak,
        "entry_bytes": entry_bytes,
        "stats": {k: after[k] for k in ("captures", "replays", "fallbacks")},
    }


def compiled_regionally(
    model: torch.nn.Module, options: dict[str, Any] | None
) -> tuple[torch.nn.Module, Callable[[], list[Any]]]:
    """A copy of ``model`` with its repeated blocks compiled in place (``backend="eager"`` for
    ``options`` None, else graphdispatch with them), and a function returning the runners its
    compile made (Dynamo compiles at the first call)."""
    import copy

    from graphdispatch._backend import _RUNNERS

    m = copy.deepcopy(model)
    if options is None:
        m.compile_repeated_blocks(backend="eager")
    else:
        m.compile_repeated_blocks(backend="graphdispatch", options=options)
    before = set(_RUNNERS)

    def runners() -> list[Any]:
        return list(set(_RUNNERS) - before)

    return m, runners


def regional(repeats: int, calls: int) -> dict[str, Any]:
    model, args, kwargs = flux_call(4, 8)
    blocks = len(model.transformer_blocks) + len(model.single_transformer_blocks)
    with torch.no_grad():
        expected = sample(model(*args, **kwargs))
        columns: dict[str, Callable[[], Any]] = {}
        runners: list[Any] = []
        for name, options in (
            ("regional backend=eager", None),
            ("regional graph_only emulated", {"graph_only": True, "device_graph": "emulated"}),
            ("regional graph_only CPU graph", {"graph_only": True}),
        ):
            m, made = compiled_regionally(model, options)
            out = sample(m(*args, **kwargs))
            assert (out - expected).abs().max().item() < 1e-3, name
            columns[name] = lambda m=m: m(*args, **kwargs)
            if options is not None and "device_graph" not in options:
                runners = made()
        before = graphdispatch.stats()
        times = interleaved(columns, repeats, calls)
        after = graphdispatch.stats()
        graphs_only = statistics.median(
            thread_us(lambda: [r.replay_graphs() for r in runners], calls) for _ in range(repeats)
        )
        overhead, n_inputs = runner_overhead(model, args, kwargs, repeats)
    return {
        "times": times,
        "blocks": blocks,
        "graphs_us": graphs_only,
        "overhead_per_block_us": overhead,
        "block_inputs": n_inputs,
        "fallbacks": sum(after["fallbacks"].values()) - sum(before["fallbacks"].values()),
        "captures": after["captures"] - before["captures"],
    }


def runner_overhead(
    model: torch.nn.Module, args: tuple, kwargs: dict, repeats: int
) -> tuple[float, int]:
    """(µs per call the runner adds around a recorded program, inputs per call) for the inputs
    of the first double block."""
    from graphdispatch import _C
    from graphdispatch._device_graphs import make_factory

    block = model.transformer_blocks[0]
    seen: list[torch.Tensor] = []

    def keep(module: torch.nn.Module, block_args: tuple, block_kwargs: dict) -> None:
        if not seen:
            flat = [*block_args, *block_kwargs.values()]
            seen.extend(
                t
                for v in flat
                for t in (v if isinstance(v, tuple) else (v,))
                if isinstance(t, torch.Tensor)
            )

    hook = block.register_forward_pre_hook(keep, with_kwargs=True)
    model(*args, **kwargs)
    hook.remove()
    params = list(block.parameters())
    inputs = [*seen, *params]
    runner = _C.GraphRunner(
        lambda x, *rest: (x * 2,), [False] * len(seen) + [True] * len(params), make_factory("cpu")
    )
    runner(*inputs)
    call = statistics.median(thread_us(lambda: runner(*inputs), 2000) for _ in range(repeats))
    graph = statistics.median(thread_us(runner.replay_graphs, 2000) for _ in range(repeats))
    return call - graph, len(inputs)


FLOOR_SOURCE = """
#include <ATen/CPUFunctions.h>
#include <torch/extension.h>
void add_chain(at::Tensor h, const at::Tensor& b, at::Tensor out0, at::Tensor out1, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    at::Tensor& out = (i % 2) ? out1 : out0;
    at::cpu::add_out(out, h, b);
    h = out;
  }
}
"""


def per_op(repeats: int, ops: int = 256) -> dict[str, float]:
    from torch.utils.cpp_extension import load_inline

    from graphdispatch import _C
    from graphdispatch._device_graphs import make_factory

    floor_ext = load_inline(
        "graphdispatch_bench_floor",
        cpp_sources=FLOOR_SOURCE,
        functions=["add_chain"],
        extra_cflags=["-O2"],
    )

    def chain(h: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor]:
        for _ in range(ops):
            h = h + b
        return (h,)

    h, b = torch.randn(64), torch.randn(64)
    runner = _C.GraphRunner(chain, [False, True], make_factory("cpu"))
    runner(h, b)
    out0, out1 = torch.empty(64), torch.empty(64)
    columns = {
        "eager (Python loop)": lambda: chain(h, b),
        "CPU graph program": runner.replay_graphs,
        "floor (C++ loop, at::cpu::add_out)": lambda: floor_ext.add_chain(h, b, out0, out1, ops),
    }
    times = interleaved(columns, repeats, 200)
    return {name: us / ops for name, us in times.items()}


def report(
    fwd: dict[str, Any], reg: dict[str, Any], ops: dict[str, float], repeats: int, calls: int
) -> tuple[str, list[str]]:
    t = fwd["times"]
    eager, dynamo, cpu = t["eager"], t["backend=eager"], t["graph_only CPU graph"]
    lines = [
        f"median of {repeats} repeats x {calls} calls, µs of thread CPU time per call, 1 thread",
        "",
        "tiny Flux transformer forward (1 double + 2 single blocks)",
        f"{'column':26} {'µs/call':>9} {'x eager':>8} {'x backend=eager':>16} {'first call s':>13}",
    ]
    for name, us in t.items():
        first = fwd["compile_s"].get(name)
        lines.append(
            f"{name:26} {us:9.1f} {us / eager:8.2f} {us / dynamo:16.2f} "
            f"{'' if first is None else f'{first:13.2f}'}"
        )
    lines += [
        "",
        f"graphdispatch counters: {fwd['stats']}",
        f"memory: eager forward peak {fwd['peak']} bytes; CPU graph entry {fwd['entry_bytes']} "
        f"bytes ({fwd['entry_bytes'] / fwd['peak']:.2f}x)",
        "",
        f"regional compilation, 4 double + 8 single blocks ({reg['blocks']} block calls a forward)",
    ]
    r = reg["times"]
    base = r["regional backend=eager"]
    for name, us in r.items():
        lines.append(f"{name:32} {us:9.1f} µs/call {us / base:6.2f}x regional backend=eager")
    lines += [
        f"the CPU graph's recorded programs alone: {reg['graphs_us']:.1f} µs/call; "
        f"fallbacks {reg['fallbacks']}, captures while timed {reg['captures']}",
        f"runner overhead per block call ({reg['block_inputs']} inputs): "
        f"{reg['overhead_per_block_us']:.2f} µs",
        "",
        "per op of a chain of 256 additions on 64 float32",
    ]
    floor = ops["floor (C++ loop, at::cpu::add_out)"]
    for name, us in ops.items():
        lines.append(f"{name:36} {us:7.3f} µs/op {us / floor:6.2f}x floor")
    lines += [
        f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f} at the end"
    ]
    verdicts = [
        f"forward: CPU graph {cpu / eager:.2f}x eager (target <= 0.5), {cpu / dynamo:.2f}x "
        f"backend=eager (target <= 0.7), {cpu / t['default (Inductor)']:.2f}x Inductor",
        f"forward: graph_with_compile {t['graph_with_compile'] / t['default (Inductor)']:.2f}x "
        f"Inductor default (target <= 0.8), "
        f"{t['graph_with_compile'] / t['Inductor cpp_wrapper']:.2f}x Inductor cpp_wrapper "
        "(target <= 1.0)",
        f"memory: {fwd['entry_bytes'] / fwd['peak']:.2f}x the eager peak (target <= 1.5)",
        f"regional: {r['regional graph_only CPU graph'] / base:.2f}x regional backend=eager "
        f"(target <= 0.7), {reg['overhead_per_block_us']:.2f} µs runner overhead per block call "
        "(target <= 8)",
        f"per op: the CPU graph's replay {ops['CPU graph program']:.3f} µs against the floor's "
        f"{floor:.3f} µs ({ops['CPU graph program'] / floor:.1f}x), eager's "
        f"{ops['eager (Python loop)']:.3f} µs",
    ]
    return "\n".join(lines), verdicts


def write(text: str, verdicts: list[str]) -> None:
    body = (
        f"{SECTION}\n\nCommand (from the repository root):\n\n"
        "```\n.venv/bin/python bench/cpu_graph.py\n```\n\n"
        "See the docstring of bench/cpu_graph.py for what each column runs. `first call s` "
        "is compile, capture and the first call, with Inductor's on-disk cache as earlier "
        "runs left it (warm here); `graph_with_compile` bypasses aot_autograd's cache to "
        "record its C++ entry, so it pays aot_autograd's tracing again.\n\n"
        f"```\n{text}\n```\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n"
    )
    write_section(body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/cpu_graph.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    fwd = forward(args.repeats, args.calls)
    reg = regional(args.repeats, args.calls)
    ops = per_op(args.repeats)
    text, verdicts = report(fwd, reg, ops, args.repeats, args.calls)
    print(text)
    print("\n".join(verdicts))
    if not args.no_write:
        write(text, verdicts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
