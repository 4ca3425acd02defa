"""What one call of each pipeline's denoiser costs on each route, split into its parts.

    .venv/bin/python bench/call_cost.py [--models flux sd3 sd] [--repeats 9] [--calls 50]
                                        [--no-write]

The denoisers of bench/pipelines.py, each called with the arguments its pipeline passes it in
one step, under ``torch.no_grad()`` (``cpu_graph.denoiser_call``): the tiny Flux transformer of
bench/cpu_graph.py (1 double and 2 single blocks), the demo's tiny SD3 transformer and its tiny
SD UNet (batch 2: classifier-free guidance). Each on five routes: eager;
``torch.compile(backend="eager")`` (Dynamo, no compiler); Inductor ``default``;
graphdispatch ``graph_only`` (the CPU graph); graphdispatch ``graph_with_compile`` (on the CPU:
Inductor's C++ wrapper, its entry called from our C++ on replay).

Each compiled route's backend is wrapped (``Recorder``): the wrapper calls the route's
backend, keeps what it returns (the compiled callable Dynamo calls), the flat arguments Dynamo
passes it on the first call, and the frame's locals and code object (from Dynamo's
instruction translator, so the cache entry and its guards can be found). A call's time is
then split into:

- **guards**: the cache entry's guard manager checking the frame's locals
  (``torch._C._dynamo.eval_frame._debug_get_cache_entry_list(code)[0].guard_manager
  .check(f_locals)``), the check Dynamo makes before it runs the cached code;
- **Dynamo**: the rest of what a call costs outside the compiled callable (frame evaluation,
  the transformed bytecode's prologue and epilogue, the output's rebuilding): the call minus
  the compiled callable minus the guards; the recording wrapper's own cost (measured: the
  wrapper called against the callable it wraps) is taken out of it;
- **ours**: on graphdispatch's routes, the runner (cache key, input copies, outputs, the
  Python wrappers the backend puts around it): the compiled callable minus the replay alone
  (``GraphRunner.replay_graphs``: the recorded program, or Inductor's C++ entry, run on the
  entry's buffers with nothing around it);
- **kernels**: the route's compiled function alone: the FX graph run eagerly
  (``backend="eager"``), Inductor's compiled function (``default``), the replay (graph
  routes: the recorded program is the kernels, called from C++). Eager's whole call is its
  kernels and the modules' Python between them.

The same routes are compiled a second time with Dynamo's guard filter
``torch.compiler.keep_tensor_guards_unsafe`` (``options={"guard_filter_fn": ...}``, which
``torch.compile`` takes out of the options before the backend sees them): it keeps only the
tensor-match guards of inputs that are not parameters (dtype, device, shape, strides,
dispatch keys) and drops the rest (the module's identity and attributes, parameters' guards,
Python constants, globals). Reported: the call and the guards with the filter as ratios to
without.

Thread CPU time of the calling thread (``time.thread_time``), 1 intra-op thread, median over
``--repeats`` repeats of ``--calls`` calls, every column interleaved within each repeat,
ratios from the one run. The two differences of long calls (the call minus the compiled
callable, the callable minus the replay) are measured paired: in each repeat the one's calls
right after the other's, the difference per repeat, its median over the repeats; the parts
then add up to the call within the noise, not exactly (``parts/call`` says how closely). The
noise grows with the call: on the UNet, a few ms a call of which the parts around the kernels
are a few hundred µs, read ``call`` and ``kernels`` (each timed directly) before the split of
the rest. Every route's output is compared with
eager's; graphdispatch's counters must show a replay for every timed call and no fallback.

**The floor** of a route that runs Inductor's kernels: ``default``'s kernels alone against its
whole call. Removing every cost around the kernels (Dynamo, guards, Python wrappers, our runner)
brings a call no lower; below it only faster kernels go.

Writes the section ``## What a call costs`` of bench/RESULTS.md and the plot
``bench/plots/call_cost.png`` (stacked bars per route and model, as a share of eager's call)
unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo

# bench/ is on sys.path when run
from cpu_graph import denoiser_call, flux_call, interleaved, sample, thread_us
from results_md import save_plot, write_section

import graphdispatch

SECTION = "## What a call costs"
PARTS = ("guards", "Dynamo", "ours", "kernels")
GUARD_LOOPS = 20  # a guard check is short: each sample times this many
# Per model: its label, its words, and how to build it with its call.
MODELS: dict[str, tuple[str, str, Callable[[], tuple[torch.nn.Module, tuple, dict]]]] = {
    "flux": (
        "Flux",
        "tiny Flux transformer forward (1 double + 2 single blocks)",
        lambda: flux_call(1, 2),
    ),
    "sd3": ("SD3", "tiny SD3 transformer forward (the demo's)", lambda: denoiser_call("sd3")),
    "sd": ("SD", "tiny SD UNet forward (the demo's, batch 2)", lambda: denoiser_call("sd")),
}


class Recorder:
    """A Dynamo backend around another: keeps the compiled callable it returns, one call's flat
    arguments, the frame's code and locals, and (graphdispatch) the runner."""

    def __init__(self, inner: Callable) -> None:
        self.inner = inner
        self.fn: Callable | None = None
        self.args: tuple | None = None
        self.code: Any = None
        self.f_locals: dict[str, Any] | None = None
        self.graphs = 0

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list, **kwargs: Any) -> Callable:
        from torch._dynamo.symbolic_convert import InstructionTranslator

        tx = InstructionTranslator.current_tx()
        self.code, self.f_locals = tx.f_code, dict(tx.f_locals)
        self.graphs += 1
        self.fn = self.inner(gm, example_inputs, **kwargs)
        return self.wrap(self.fn)

    def wrap(self, fn: Callable) -> Callable:
        def call(*args: Any) -> Any:
            if self.args is None:
                self.args = args
            return fn(*args)

        return call


def inductor(gm: torch.fx.GraphModule, example_inputs: list) -> Callable:
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)  # what backend="inductor" (the default) runs


def graphdispatch_backend(options: dict[str, Any]) -> tuple[Callable, list]:
    backend = graphdispatch.Backend(options=options)
    records: list = []
    backend.on_graph = records.append
    return backend, records


ROUTES: dict[str, Callable[[], tuple[Callable, list | None]]] = {
    "backend=eager": lambda: (lambda gm, ex: gm.forward, None),
    "default (Inductor)": lambda: (inductor, None),
    "graph_only (CPU graph)": lambda: graphdispatch_backend({"graph_only": True}),
    "graph_with_compile (cpp_wrapper)": lambda: graphdispatch_backend({"graph_with_compile": True}),
}


def cache_entry(code: Any, f_locals: dict[str, Any]) -> Any:
    """The cache entry the last call ran (entries are kept most recently used first)."""
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    entry = _debug_get_cache_entry_list(code)[0]
    assert entry.guard_manager.check(f_locals), "the first cache entry's guards fail"
    return entry


def compile_route(
    name: str, model: torch.nn.Module, args: tuple, kwargs: dict, expected: torch.Tensor, filt: bool
) -> dict[str, Any]:
    inner, records = ROUTES[name]()
    recorder = Recorder(inner)
    options = {"guard_filter_fn": torch.compiler.keep_tensor_guards_unsafe} if filt else None
    compiled = torch.compile(model, backend=recorder, options=options)
    out = sample(compiled(*args, **kwargs))
    diff = (out - expected).abs().max().item()
    assert diff < 1e-3, f"{name}: max |out - eager| {diff}"
    assert recorder.graphs == 1, f"{name}: {recorder.graphs} graphs (a graph break)"
    entry = cache_entry(recorder.code, recorder.f_locals)
    run = {
        "call": lambda: compiled(*args, **kwargs),
        "callable": lambda: recorder.fn(*recorder.args),
        "guards": lambda: [
            entry.guard_manager.check(recorder.f_locals) for _ in range(GUARD_LOOPS)
        ],
        "diff": diff,
        "recorder": recorder,
    }
    if records is not None:
        (record,) = records
        assert record.runner is not None, f"{name}: no runner ({record.route}, {record.reason})"
        run["replay"] = record.runner.replay_graphs
        run["explain"] = record.runner.entries()
    return run


def measure(key: str, repeats: int, calls: int) -> dict[str, Any]:
    torch._dynamo.reset()
    model, args, kwargs = MODELS[key][2]()
    with torch.no_grad():
        expected = sample(model(*args, **kwargs))
        runs: dict[tuple[str, bool], dict[str, Any]] = {}
        for name in ROUTES:
            for filt in (False, True):
                runs[(name, filt)] = compile_route(name, model, args, kwargs, expected, filt)
        columns: dict[str, Callable[[], Any]] = {"eager|call": lambda: model(*args, **kwargs)}
        for (name, filt), run in runs.items():
            tag = f"{name}|{'filtered ' if filt else ''}"
            for part in ("call", "callable", "guards", "replay"):
                if part in run:
                    columns[tag + part] = run[part]
        # The recorder's own cost: its wrapper around a callable that does nothing, same args.
        noop = lambda *a: None  # noqa: E731
        wrapped = runs[(next(iter(ROUTES)), False)]["recorder"].wrap(noop)
        flat = runs[(next(iter(ROUTES)), False)]["recorder"].args
        columns["wrapper|noop"] = lambda: [noop(*flat) for _ in range(GUARD_LOOPS)]
        columns["wrapper|wrapped"] = lambda: [wrapped(*flat) for _ in range(GUARD_LOOPS)]
        pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
        for (name, filt), run in runs.items():
            tag = f"{name}|{'filtered ' if filt else ''}"
            pairs[tag + "outside"] = (run["call"], run["callable"])
            if "replay" in run:
                pairs[tag + "ours"] = (run["callable"], run["replay"])
        before = graphdispatch.stats()
        times = interleaved(columns, repeats, calls)
        times.update(paired(pairs, repeats, calls))
        after = graphdispatch.stats()
    for key in times:
        if key.endswith("guards") or key.startswith("wrapper|"):
            times[key] /= GUARD_LOOPS
    graph_routes = sum(1 for _, r in runs.items() if "replay" in r)
    # call and callable interleaved, then call, callable and callable again paired
    runner_calls = repeats * calls * graph_routes * 5
    return {
        "times": times,
        "diffs": {f"{n}{' filtered' if f else ''}": r["diff"] for (n, f), r in runs.items()},
        "replays": after["replays"] - before["replays"],
        "expected_replays": runner_calls,
        "captures": after["captures"] - before["captures"],
        "fallbacks": {
            k: v - before["fallbacks"].get(k, 0)
            for k, v in after["fallbacks"].items()
            if v != before["fallbacks"].get(k, 0)
        },
    }


def paired(
    pairs: dict[str, tuple[Callable[[], Any], Callable[[], Any]]], repeats: int, calls: int
) -> dict[str, float]:
    """Median over repeats of the µs per call by which ``a`` exceeds ``b``, each repeat timing
    ``calls`` calls of ``a`` and right after them ``calls`` calls of ``b``: a difference of two
    long calls, without the drift between two columns timed far apart."""
    samples: dict[str, list[float]] = {name: [] for name in pairs}
    for _ in range(repeats):
        for name, (a, b) in pairs.items():
            samples[name].append(thread_us(a, calls) - thread_us(b, calls))
    return {name: statistics.median(v) for name, v in samples.items()}


def split(times: dict[str, float], name: str, filtered: bool = False) -> dict[str, float]:
    """µs per call of each part of ``name``'s call (eager: all kernels)."""
    tag = f"{name}|{'filtered ' if filtered else ''}"
    if name == "eager":
        return {"total": times["eager|call"], "guards": 0.0, "Dynamo": 0.0, "ours": 0.0,
                "kernels": times["eager|call"]}  # fmt: skip
    total, inner, guards = times[tag + "call"], times[tag + "callable"], times[tag + "guards"]
    wrapper = times["wrapper|wrapped"] - times["wrapper|noop"]  # the recorder's, taken out
    replay = times.get(tag + "replay")
    return {
        "total": total - wrapper,
        "guards": guards,
        "Dynamo": times[tag + "outside"] - wrapper - guards,
        "ours": 0.0 if replay is None else times[tag + "ours"],
        "kernels": inner if replay is None else replay,
        "wrapper": wrapper,
    }


def report(key: str, r: dict[str, Any]) -> tuple[str, list[str], dict]:
    """One model's table, its verdicts (each naming the model) and its parts per route."""
    times = r["times"]
    names = ["eager", *ROUTES]
    parts = {name: split(times, name) for name in names}
    filtered = {name: split(times, name, True) for name in ROUTES}
    eager = parts["eager"]["total"]
    lines = [
        MODELS[key][1],
        "",
        f"{'route':34} {'call':>8} {'guards':>7} {'Dynamo':>7} {'ours':>7} {'kernels':>8} "
        f"{'x eager':>8} {'parts/call':>10}",
    ]
    for name in names:
        p = parts[name]
        lines.append(
            f"{name:34} {p['total']:8.1f} {p['guards']:7.1f} {p['Dynamo']:7.1f} "
            f"{p['ours']:7.1f} {p['kernels']:8.1f} {p['total'] / eager:8.2f} "
            f"{sum(p[q] for q in PARTS) / p['total']:10.2f}"
        )
    lines += [
        "",
        "with guard_filter_fn=torch.compiler.keep_tensor_guards_unsafe, against without",
        f"{'route':34} {'call':>8} {'x call':>7} {'guards':>7} {'x guards':>9} {'saved':>7}",
    ]
    for name in ROUTES:
        p, f = parts[name], filtered[name]
        lines.append(
            f"{name:34} {f['total']:8.1f} {f['total'] / p['total']:7.2f} {f['guards']:7.1f} "
            f"{f['guards'] / p['guards']:9.2f} {p['total'] - f['total']:7.1f}"
        )
    lines += [
        "",
        f"recording wrapper, taken out of Dynamo's part: {parts['backend=eager']['wrapper']:.2f} "
        "µs per call",
        "max |out - eager|: " + ", ".join(f"{k} {v:.1e}" for k, v in r["diffs"].items()),
        f"graphdispatch while timed: {r['replays']} replays of {r['expected_replays']} runner "
        f"calls, {r['captures']} captures, fallbacks {r['fallbacks'] or 'none'}",
    ]
    e, g = parts["backend=eager"], parts["graph_only (CPU graph)"]
    w = parts["graph_with_compile (cpp_wrapper)"]
    fg, fw = filtered["graph_only (CPU graph)"], filtered["graph_with_compile (cpp_wrapper)"]
    d = parts["default (Inductor)"]
    verdicts = [
        f"the floor: `default`'s kernels alone are {d['kernels'] / d['total']:.2f}x its call; "
        f"`graph_with_compile` {w['total'] / d['total']:.2f}x `default` (its kernels "
        f"{w['kernels'] / d['total']:.2f}x, the rest "
        f"{(w['total'] - w['kernels']) / d['total']:.2f}x)",
        f"Dynamo around the call, guards included: {e['guards'] + e['Dynamo']:.0f} µs "
        f"(`backend=eager`; guards {e['guards']:.0f} µs), {g['guards'] + g['Dynamo']:.0f} µs "
        f"(`graph_only`), {w['guards'] + w['Dynamo']:.0f} µs (`graph_with_compile`)",
        f"our runner per call: {g['ours']:.0f} µs (`graph_only`, {g['ours'] / g['total']:.0%} "
        f"of its call), {w['ours']:.0f} µs (`graph_with_compile`, {w['ours'] / w['total']:.0%})",
        f"the guard filter: the call {fg['total'] / g['total']:.2f}x (`graph_only`), "
        f"{fw['total'] / w['total']:.2f}x (`graph_with_compile`); the guard check alone "
        f"{fg['guards'] / g['guards']:.2f}x and {fw['guards'] / w['guards']:.2f}x",
    ]
    return "\n".join(lines), [f"{MODELS[key][0]}: {v}" for v in verdicts], parts


def plot(parts: dict[str, dict[str, dict[str, float]]]) -> str:
    """Stacked bars of each part per route, grouped by model, as a share of eager's call."""
    routes = ["eager", *ROUTES]

    def draw(ax: Any) -> None:
        x, labels = [], []
        for m, key in enumerate(parts):
            x += [m * (len(routes) + 1) + i for i in range(len(routes))]
            labels += [f"{MODELS[key][0]}\n{r.split(' (')[0]}" for r in routes]
        for p, part in enumerate(PARTS):
            values, bottom = [], []
            for model in parts.values():
                eager = model["eager"]["total"]
                for r in routes:
                    values.append(max(model[r][part], 0.0) / eager)
                    bottom.append(sum(max(model[r][q], 0.0) for q in PARTS[:p]) / eager)
            ax.bar(x, values, 0.8, bottom=bottom, label=part, color=f"C{p}")
        ax.set_xticks(x, labels, fontsize=6, rotation=90)
        ax.set_ylabel("share of eager's call (thread CPU time)")
        ax.set_title("One denoiser call, split by part, per route and model (1 thread)")
        ax.legend()

    return save_plot("call_cost", draw, size=(10, 5))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/call_cost.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    texts, verdicts, parts = [], [], {}
    for key in args.models:
        r = measure(key, args.repeats, args.calls)
        text, said, parts[key] = report(key, r)
        print(text + "\n" + "\n".join(said), flush=True)
        texts.append(text)
        verdicts += said
        assert not r["fallbacks"] and r["replays"] == r["expected_replays"], (
            f"{key}: not every call replayed"
        )
    text = "\n\n".join(
        [
            f"median of {args.repeats} repeats x {args.calls} calls, µs of thread CPU time per "
            "call, 1 thread",
            *texts,
            f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} "
            f"cores, load average {os.getloadavg()[0]:.1f} at the end",
        ]
    )
    if not args.no_write:
        link = plot(parts)
        body = (
            f"{SECTION}\n\nCommand (from the repository root):\n\n```\n.venv/bin/python "
            f"bench/call_cost.py --models {' '.join(args.models)} --repeats {args.repeats} "
            f"--calls {args.calls}\n```\n\n"
            "See the docstring of bench/call_cost.py for how each part is measured: `guards` "
            "is the cache entry's guard check alone, `Dynamo` the rest of the call outside "
            "the compiled callable, `ours` graphdispatch's runner around the replay, "
            "`kernels` the compiled function or the replay alone; `the floor` is what a call "
            "running Inductor's kernels costs with nothing around them.\n\n"
            f"![per-call cost by part]({link})\n\n```\n{text}\n```\n\n"
            + "\n".join(f"- {v}" for v in verdicts)
            + "\n"
        )
        write_section(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
