"""What a call of a compiled denoiser costs on the fast path, beside Dynamo's path and the floor.

    .venv/bin/python bench/fast_path.py [--models flux sd3 sd] [--repeats 9] [--calls 30]
                                        [--regional] [--graph-break] [--no-write]

The denoisers of bench/call_cost.py (``MODELS``), each called with the arguments its pipeline
passes in one step, under ``torch.no_grad()``. Per graph route (``graph_only``: the CPU graph;
``graph_with_compile``: Inductor's C++ entry called from C++) four columns:

- **fast path**: ``torch.compile(model, backend="graphdispatch")`` after warm-up, the default:
  the module's call runs Dynamo's guard check and its compiled code without Dynamo's frame
  handling (Note [Fast path] in src/graphdispatch/_fast_path.py);
- **whole tree**: the fast path with its guard check kept on Dynamo's whole guard tree (the
  seal of Note [Sealed guards] in src/graphdispatch/_sealed_guards.py turned off for this
  compile's entries): what the seal saves;
- **Dynamo**: the same with ``options={"fast_path": False}``: every call through Dynamo;
- **recipe**: PyTorch's "Reducing Guard Overhead" recipe (2.14 docs) through Dynamo:
  ``install_free_tensors=True``, ``guard_filter_fn=skip_guard_on_all_nn_modules_unsafe`` and,
  after warm-up, ``set_stance(skip_guard_eval_unsafe=True)``; its unsafety is the recipe's;
- **floor**: the callable graphdispatch handed to Dynamo called directly with the flat
  arguments Dynamo passed it (our runner and the replay, nothing else).

Regional compilation (``--regional``, a section of its own): the tiny Flux transformer of 4
double and 8 single blocks with ``compile_repeated_blocks`` (12 block calls a forward, the rest
of the forward eager), ``graph_only`` with the fast path and through Dynamo, beside
``backend="eager"`` and eager; ``programs`` is every block's recorded program replayed alone
(the floor of the blocks). Then the first double and the first single block called alone with
the arguments the forward gave them, per variant, beside ``program``: that block class's
recorded programs replayed alone, per block (the issue's target: a block call on the fast path
at most 1.2x its program).

Where Dynamo stays (``--graph-break``, a section of its own): the tiny Flux transformer (1
double + 2 single blocks) with a forward hook on its first block that breaks the graph
(``torch._dynamo.graph_break()``): inside the forward's loop over its blocks, where Dynamo
cannot resume, so it compiles no code for the forward's frame, runs it itself and compiles
the frames below (``explain()`` says so). ``graph_only`` through Dynamo beside ``floors``: every
graph Dynamo made, its callable called directly with its first call's arguments; what remains
is the call minus the floors (Dynamo's frames, the Python between graphs). Beside it the same
model without the hook on the fast path, and its floor.

Beside them eager and Inductor (``torch.compile(model)``, Dynamo's path). Thread CPU time of
the calling thread, one intra-op thread, median over ``--repeats`` repeats of ``--calls`` calls,
every column interleaved within each repeat; ratios from the one run. Every graphdispatch
column must replay on every call with no fallback, and its output equal eager's (bit for bit
on ``graph_only``). Writes the sections ``## The fast path`` and ``## The fast path under
regional compilation`` of bench/RESULTS.md unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo

# bench/ is on sys.path when run
from call_cost import MODELS
from cpu_graph import interleaved, sample
from results_md import write_section

import graphdispatch
from graphdispatch._fast_path import fast_path_of

SECTION = "## The fast path"
REGIONAL_SECTION = "## The fast path under regional compilation"
BREAK_SECTION = "## Where Dynamo stays: a graph break"
ROUTES = ("graph_only", "graph_with_compile")


class Kept:
    """graphdispatch's backend, keeping every graph's callable with its first call's arguments:
    ``floors()`` calls them directly, what a call costs with Dynamo's part taken away."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.backend = graphdispatch.Backend(options=options)
        self.graphs: list[list[Any]] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list, **_: Any) -> Callable:
        fn = self.backend(gm, example_inputs)
        kept = [fn, None]
        self.graphs.append(kept)

        def call(*args: Any) -> Any:
            if kept[1] is None:
                kept[1] = args
            return fn(*args)

        return call

    def floors(self) -> None:
        for fn, args in self.graphs:
            fn(*args)


def compiled(
    model: torch.nn.Module, route: str, guard_filter_fn: Any = None, **options: Any
) -> tuple[Any, Kept]:
    kept = Kept({route: True, **options})
    # torch.compile takes guard_filter_fn out of its options before the backend sees them.
    extra = {"options": {"guard_filter_fn": guard_filter_fn}} if guard_filter_fn else {}
    return torch.compile(model, backend=kept, **extra), kept


def measure(key: str, repeats: int, calls: int) -> dict[str, Any]:
    # Nine compiles of one forward: Inductor's and four per route.
    torch._dynamo.config.recompile_limit = 16
    torch._dynamo.reset()
    graphdispatch.reset()
    model, args, kwargs = MODELS[key][2]()
    columns: dict[str, Callable[[], Any]] = {}
    diffs: dict[str, float] = {}
    wholes = []
    with torch.no_grad():
        expected = sample(model(*args, **kwargs))
        columns["eager"] = lambda: model(*args, **kwargs)
        inductor = torch.compile(model)
        columns["Inductor default"] = lambda: inductor(*args, **kwargs)
        for route in ROUTES:
            fast, kept = compiled(model, route)
            slow, _ = compiled(model, route, fast_path=False)
            whole, _ = compiled(model, route)
            for name, c in (("fast path", fast), ("whole tree", whole), ("Dynamo", slow)):
                for _ in range(2):  # compile, then the first fast call
                    out = c(*args, **kwargs)
                diffs[f"{route} {name}"] = (sample(out) - expected).abs().max().item()
                columns[f"{route} {name}"] = lambda c=c: c(*args, **kwargs)
            columns[f"{route} floor"] = kept.floors
            with torch._dynamo.config.patch(install_free_tensors=True):
                recipe, _ = compiled(
                    model,
                    route,
                    fast_path=False,
                    guard_filter_fn=torch.compiler.skip_guard_on_all_nn_modules_unsafe,
                )
                out = recipe(*args, **kwargs)
            diffs[f"{route} recipe"] = (sample(out) - expected).abs().max().item()

            def run_recipe(c: Any = recipe) -> Any:
                with torch.compiler.set_stance(skip_guard_eval_unsafe=True):
                    return c(*args, **kwargs)

            columns[f"{route} recipe"] = run_recipe
            wholes.append(whole)
        for _ in range(2):
            inductor(*args, **kwargs)
        # After every compile: a new cache entry for forward re-arms every fast path on it.
        for whole in wholes:
            for check, _ in fast_path_of(whole)._current().fast:
                check.seal, check.sealing = None, False
        before = graphdispatch.stats()
        times = interleaved(columns, repeats, calls)
        after = graphdispatch.stats()
    graph_columns = sum(1 for name in columns if name.split(" ")[0] in ROUTES)
    return {
        "times": times,
        "diffs": diffs,
        "replays": after["replays"] - before["replays"],
        "expected_replays": repeats * calls * graph_columns,
        "captures": after["captures"] - before["captures"],
        "fallbacks": stats_delta_fallbacks(before, after),
        "fast_calls": after["fast_path"]["calls"] - before["fast_path"]["calls"],
        "whole_checks": after["fast_path"]["whole_checks"] - before["fast_path"]["whole_checks"],
    }


def block_arguments(model: torch.nn.Module) -> tuple[dict[str, tuple[tuple, dict]], list]:
    """Hooks keeping the arguments the first double and the first single block get in the next
    forward, and their handles."""
    seen: dict[str, tuple[tuple, dict]] = {}
    handles = [
        blocks[0].register_forward_pre_hook(
            lambda _m, a, kw, kind=kind: seen.setdefault(kind, (a, kw)), with_kwargs=True
        )
        for kind, blocks in (
            ("double", model.transformer_blocks),
            ("single", model.single_transformer_blocks),
        )
    ]
    return seen, handles


def regional(repeats: int, calls: int) -> tuple[str, list[str]]:
    from cpu_graph import compiled_regionally, flux_call, thread_us

    torch._dynamo.reset()
    graphdispatch.reset()
    model, args, kwargs = flux_call(4, 8)
    counts = {
        "double": len(model.transformer_blocks),
        "single": len(model.single_transformer_blocks),
    }
    columns: dict[str, Callable[[], Any]] = {}
    block_columns: dict[str, Callable[[], Any]] = {}
    runners: list[Any] = []
    with torch.no_grad():
        seen, handles = block_arguments(model)
        expected = sample(model(*args, **kwargs))
        for handle in handles:
            handle.remove()
        for name, options in (
            ("backend=eager", None),
            ("graph_only fast path", {"graph_only": True}),
            ("graph_only Dynamo", {"graph_only": True, "fast_path": False}),
        ):
            m, made = compiled_regionally(model, options)
            for _ in range(2):
                out = sample(m(*args, **kwargs))
            assert torch.equal(out, expected) or options is None, name
            columns[name] = lambda m=m: m(*args, **kwargs)
            for kind, (a, kw) in seen.items():
                blocks = m.transformer_blocks if kind == "double" else m.single_transformer_blocks
                block_columns[f"{kind} block {name}"] = lambda b=blocks[0], a=a, kw=kw: b(*a, **kw)
            if name == "graph_only fast path":
                runners = made()
        columns["eager"] = lambda: model(*args, **kwargs)
        before = graphdispatch.stats()
        times = interleaved(columns, repeats, calls)
        block_times = interleaved(block_columns, repeats, calls)
        after = graphdispatch.stats()
        times["programs"] = min(
            thread_us(lambda: [r.replay_graphs() for r in runners], calls) for _ in range(repeats)
        )
        # A block class's runner holds one entry per block (each its own weights): its
        # recorded programs replayed alone, per block.
        for kind, n in counts.items():
            runner = next(r for r in runners if r.num_entries == n)
            block_times[f"{kind} block program"] = min(
                thread_us(runner.replay_graphs, calls) / n for _ in range(repeats)
            )
    fast = after["fast_path"]["calls"] - before["fast_path"]["calls"]
    whole = after["fast_path"]["whole_checks"] - before["fast_path"]["whole_checks"]
    # Every block call of the fast-path forward, and the fast-path block columns.
    expected_fast = repeats * calls * (sum(counts.values()) + len(counts))
    lines = [
        f"regional: tiny Flux, {counts['double']} double + {counts['single']} single blocks"
        " compiled in place",
        "",
    ]
    lines += [f"{name:38} {us:9.1f} µs/forward" for name, us in times.items()]
    lines += ["", "one block called alone, its first call's arguments:", ""]
    lines += [f"{name:38} {us:9.1f} µs/call" for name, us in block_times.items()]
    lines.append(
        f"fast-path calls while timed: {fast} of {expected_fast} block calls ({whole} on the"
        f" whole guard tree), fallbacks {stats_delta_fallbacks(before, after) or 'none'}"
    )
    saved = times["graph_only Dynamo"] - times["graph_only fast path"]
    verdicts = [
        f"regional: the fast path {times['graph_only fast path'] / times['graph_only Dynamo']:.2f}x"
        f" Dynamo's path per forward, {saved / sum(counts.values()):.0f} µs saved per block call"
    ]
    for kind in counts:
        fast_us, dynamo_us, program_us = (
            block_times[f"{kind} block {c}"]
            for c in ("graph_only fast path", "graph_only Dynamo", "program")
        )
        verdicts.append(
            f"regional, one {kind} block: the fast path {fast_us / program_us:.2f}x its recorded"
            f" program (Dynamo's path {dynamo_us / program_us:.2f}x, backend=eager"
            f" {block_times[f'{kind} block backend=eager'] / program_us:.2f}x)"
        )
    return "\n".join(lines), verdicts


def graph_break(repeats: int, calls: int) -> tuple[str, list[str]]:
    from cpu_graph import flux_call

    from graphdispatch._fast_path import fast_path_of

    torch._dynamo.reset()
    graphdispatch.reset()
    model, args, kwargs = flux_call(1, 2)
    with torch.no_grad():
        expected = sample(model(*args, **kwargs))
        plain, plain_kept = compiled(model, "graph_only")
        for _ in range(2):
            assert torch.equal(sample(plain(*args, **kwargs)), expected)
        broken_model = copy.deepcopy(model)
        broken_model.transformer_blocks[0].register_forward_hook(
            lambda _m, _a, _out: torch._dynamo.graph_break()
        )
        kept = Kept({"graph_only": True})
        broken = torch.compile(broken_model, backend=kept)
        for _ in range(2):
            assert torch.equal(sample(broken(*args, **kwargs)), expected)
        why = fast_path_of(broken).state()
        columns = {
            "eager": lambda: model(*args, **kwargs),
            "graph break: graph_only, Dynamo": lambda: broken(*args, **kwargs),
            "graph break: floors": kept.floors,
            "no break: graph_only fast path": lambda: plain(*args, **kwargs),
            "no break: floor": plain_kept.floors,
        }
        before = graphdispatch.stats()
        times = interleaved(columns, repeats, calls)
        after = graphdispatch.stats()
    lines = [
        "tiny Flux transformer (1 double + 2 single blocks), a graph break in its first block's"
        " forward hook",
        "",
    ]
    lines += [f"{name:38} {us:9.1f} µs/call" for name, us in times.items()]
    lines += [
        "",
        f"graphs Dynamo made with the break: {len(kept.graphs)}; fast path: {why}",
        f"fallbacks while timed: {stats_delta_fallbacks(before, after) or 'none'}",
    ]
    call, floors = times["graph break: graph_only, Dynamo"], times["graph break: floors"]
    plain_call, plain_floor = times["no break: graph_only fast path"], times["no break: floor"]
    verdicts = [
        f"a graph break in the loop: the call {call / floors:.2f}x its {len(kept.graphs)} graphs'"
        f" floors, {call - floors:.0f} µs a call outside the graphs (without the break: the fast"
        f" path {plain_call / plain_floor:.2f}x its floor, {plain_call - plain_floor:.0f} µs);"
        f" {call / times['eager']:.2f}x eager"
    ]
    return "\n".join(lines), verdicts


def stats_delta_fallbacks(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    return {
        k: v - before["fallbacks"].get(k, 0)
        for k, v in after["fallbacks"].items()
        if v != before["fallbacks"].get(k, 0)
    }


def report(key: str, r: dict[str, Any]) -> tuple[str, list[str]]:
    t = r["times"]
    eager = t["eager"]
    lines = [MODELS[key][1], "", f"{'column':34} {'µs/call':>9} {'x eager':>8} {'x floor':>8}"]
    for name, us in t.items():
        route = name.split(" ")[0]
        floor = t.get(f"{route} floor")
        ratio = f"{us / floor:8.2f}" if floor else f"{'':8}"
        lines.append(f"{name:34} {us:9.1f} {us / eager:8.2f} {ratio}")
    lines += [
        "",
        "max |out - eager|: " + ", ".join(f"{k} {v:.1e}" for k, v in r["diffs"].items()),
        f"graphdispatch while timed: {r['replays']} replays of {r['expected_replays']} calls, "
        f"{r['captures']} captures, fallbacks {r['fallbacks'] or 'none'}, "
        f"{r['fast_calls']} fast-path calls, {r['whole_checks']} of them on the whole guard tree",
    ]
    label = MODELS[key][0]
    verdicts = []
    for route in ROUTES:
        fast, whole, slow, floor = (
            t[f"{route} {c}"] for c in ("fast path", "whole tree", "Dynamo", "floor")
        )
        verdicts.append(
            f"{label} `{route}`: fast path {fast / floor:.2f}x its floor (on the whole guard"
            f" tree {whole / floor:.2f}x, Dynamo's path {slow / floor:.2f}x, the recipe"
            f" {t[f'{route} recipe'] / floor:.2f}x); {fast / slow:.2f}x Dynamo's path"
        )
    verdicts.append(
        f"{label}: `graph_with_compile` on the fast path "
        f"{t['graph_with_compile fast path'] / t['Inductor default']:.2f}x Inductor `default`"
    )
    return "\n".join(lines), verdicts


def write(section: str, command: str, text: str, verdicts: list[str]) -> None:
    write_section(
        f"{section}\n\nCommand (from the repository root):\n\n```\n.venv/bin/python "
        f"bench/fast_path.py {command}\n```\n\nSee the docstring of bench/fast_path.py for "
        "what each column runs; `floor` is the callable graphdispatch handed to Dynamo, called "
        f"directly.\n\n```\n{text}\n```\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/fast_path.py", description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="*", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument(
        "--regional", action="store_true", help="regional compilation too (its own section)"
    )
    parser.add_argument(
        "--graph-break", action="store_true", help="where Dynamo stays too (its own section)"
    )
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    header = (
        f"median of {args.repeats} repeats x {args.calls} calls, µs of thread CPU time per "
        "call, 1 thread"
    )
    runs = []
    if args.models:
        texts, verdicts = [], []
        for key in args.models:
            r = measure(key, args.repeats, args.calls)
            text, said = report(key, r)
            print(text + "\n" + "\n".join(said), flush=True)
            texts.append(text)
            verdicts += said
            assert not r["fallbacks"] and r["replays"] == r["expected_replays"], (
                f"{key}: not every call replayed"
            )
        command = f"--models {' '.join(args.models)}"
        runs.append((SECTION, command, texts, verdicts))
    if args.regional:
        text, said = regional(args.repeats, args.calls)
        print(text + "\n" + "\n".join(said), flush=True)
        runs.append((REGIONAL_SECTION, "--models --regional", [text], said))
    if args.graph_break:
        text, said = graph_break(args.repeats, args.calls)
        print(text + "\n" + "\n".join(said), flush=True)
        runs.append((BREAK_SECTION, "--models --graph-break", [text], said))
    machine = (
        f"torch {torch.__version__}, Python {platform.python_version()}, {os.cpu_count()} "
        f"cores, load average {os.getloadavg()[0]:.1f} at the end"
    )
    if not args.no_write:
        for section, command, texts, verdicts in runs:
            command += f" --repeats {args.repeats} --calls {args.calls}"
            write(section, command, "\n\n".join([header, *texts, machine]), verdicts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
