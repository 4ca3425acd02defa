"""``graphdispatch.explain``: why a model does (or does not) replay, in one call.

Dynamo's own ``torch._dynamo.explain`` gives the graphs and the graph breaks; a compile with
this backend, run once, gives per graph the route and why, the role of every input, the
entries the runtime holds and every fallback with its reason and the input that caused it
(the runtime keeps those on its negative entries). Nothing here re-derives what Dynamo or the
runtime already decided: it reads their answers.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

import torch

from ._graph_analysis import describe_node

# A graph break is not a fallback (each side is captured and replayed), but costs a launch.
GRAPH_BREAK_ADVICE = (
    "each break splits the model into graphs, each a capture and a launch: "
    "remove the construct Dynamo names, or torch._dynamo.disable the part "
    "around it"
)


def advice(reason: str) -> str:
    """One line of advice for a fallback reason, from the runtime's one list of them
    (``_C.fallback_reasons()``); "" for a name not in it."""
    from . import _C

    return _C.fallback_reasons().get(reason, "")


_INPUT_POSITION = re.compile(r"^input (\d+)\b")


@dataclasses.dataclass
class Explanation:
    """What ``explain`` found; ``str()`` is a readable report, ``to_dict()`` the data."""

    options: dict[str, Any]
    graph_breaks: list[dict[str, Any]]
    graphs: list[dict[str, Any]]
    stats: dict[str, Any]
    # Whether the next call skips Dynamo's frame handling (Note [Fast path]), and why not.
    fast_path_armed: bool = False
    fast_path: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        fallbacks = sum(len(g["fallbacks"]) for g in self.graphs)
        lines = [
            f"graphdispatch.explain: {len(self.graphs)} graph(s), "
            f"{len(self.graph_breaks)} graph break(s), {fallbacks} fallback reason(s)",
            "options: " + ", ".join(f"{k}={v!r}" for k, v in self.options.items()),
            "the call: " + _counters(self.stats),
            "fast path: "
            + (
                "armed (later calls run Dynamo's compiled code without its frame handling)"
                if self.fast_path_armed
                else f"off ({self.fast_path})"
            ),
        ]
        for k, brk in enumerate(self.graph_breaks):
            lines.append(f"graph break {k}: {brk['reason']} at {brk['where']}")
            lines.append(f"  advice: {GRAPH_BREAK_ADVICE}")
        for g in self.graphs:
            lines.append("")
            lines.append(
                f"graph {g['index']}: route {g['route']} ({g['route_reason']}), {g['ops']} ops"
            )
            lines.extend("  " + line for line in _inputs_table(g["inputs"]))
            lines.append(f"  entries ({len(g['entries'])}):")
            for e in g["entries"]:
                state = "captured" if e["captured"] else f"refused ({e['reason']})"
                lines.append(
                    f"    {state}, {e['bytes']} bytes, {e['replays']} replay(s): "
                    f"{_dynamic_part(e['signature'])}"
                )
                if e["graph"]:
                    lines.append(f"      graph: {e['graph']}")
            if not g["fallbacks"]:
                lines.append("  fallbacks: none")
            for f in g["fallbacks"]:
                where = f["scope"] if f["position"] is None else f"input {f['position']}"
                lines.append(f"  fallback {f['reason']} ({where}): {f['detail']}")
                lines.append(f"    advice: {f['advice']}")
        return "\n".join(lines)


def _counters(stats: dict[str, Any]) -> str:
    names = ("captures", "replays", "cache_hits", "cache_misses", "copies_skipped", "bytes_copied")
    text = ", ".join(f"{name} {stats[name]}" for name in names)
    return text + f", fallbacks {stats['fallbacks'] or 'none'}"


def _dynamic_part(signature: str) -> str:
    """The signature without its static inputs (a model's parameters would fill a screen)."""
    parts = signature.split("; ")
    kept = [p for p in parts if " static" not in p]
    static = len(parts) - len(kept)
    return "; ".join(kept) + (f" (+ {static} static)" if static else "")


def _inputs_table(inputs: list[dict[str, Any]]) -> list[str]:
    counts: dict[str, int] = {}
    for i in inputs:
        counts[i["kind"]] = counts.get(i["kind"], 0) + 1
    lines = ["inputs: " + ", ".join(f"{n} {kind}" for kind, n in counts.items())]
    for i in inputs:
        if i["kind"] == "static":
            continue  # parameters and buffers: counted above, listed in to_dict()
        written = ", written" if i.get("written") else ""
        copied = f", copies {i['copy_bytes']} bytes a call" if i["kind"] == "dynamic" else ""
        name = f" {i['name']}" if i["name"] else ""
        lines.append(f"  {i['position']}{name}: {i['kind']}{written} {i['description']}{copied}")
    return lines


def _describe_input(position: int, value: Any, record: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, torch.Tensor):
        return {"position": position, "name": name, "kind": "constant", "description": repr(value)}
    if record.runner is None:
        kind = "uncaptured"  # the default route, or a graph refused as a whole: never copied
    else:
        kind = "static" if record.is_static[position] else "dynamic"
    dtype = str(value.dtype).removeprefix("torch.")
    return {
        "position": position,
        # A parameter's or buffer's module path, an argument's name, or "" (case C48).
        "name": name,
        # static: read in place, never copied; dynamic: copied into the entry's buffer (the copy
        # is skipped when the caller passes that buffer); constant: its value is in the key.
        "kind": kind,
        "written": position in record.written,
        # What a replay copies in unless the caller passes the entry's buffer: an expanded
        # input only its unexpanded part (Note [Expanded tensors]).
        "copy_bytes": value.element_size()
        * math.prod(
            1 if stride == 0 else size for size, stride in zip(value.shape, value.stride())
        ),
        "shape": list(value.shape),
        "dtype": dtype,
        "strides": list(value.stride()),
        "description": f"{list(value.shape)}/{dtype} strides {tuple(value.stride())}",
    }


def _fallbacks(record: Any, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per reason a call ran without a graph: ``scope`` "graph" (refused as a whole) or
    "signature" (one entry), the input ``position`` that decided it where one did, the
    runtime's ``detail`` (first line: a failed capture's error, without its traceback)."""
    found = []
    if record.refusal is not None:
        node = record.refusal_node
        # The source line Dynamo traced the op from, when it kept one.
        source = (node.meta.get("stack_trace") or "").strip().splitlines()[-1:]
        where = f" ({source[0].strip()})" if source else ""
        found.append(
            {
                "reason": record.refusal,
                "scope": "graph",
                "position": None,
                "detail": f"at {describe_node(node)}{where}: every call of this graph "
                "runs without a graph",
                "advice": advice(record.refusal),
            }
        )
    for e in entries:
        if e["captured"]:
            continue
        match = _INPUT_POSITION.match(e["detail"])
        detail = e["detail"].strip().splitlines()[0] if e["detail"].strip() else ""
        found.append(
            {
                "reason": e["reason"],
                "scope": "signature",
                "position": int(match.group(1)) if match else None,
                "detail": detail[:300],
                "advice": advice(e["reason"]),
            }
        )
    return found


def _graph_report(index: int, record: Any) -> dict[str, Any]:
    entries = record.runner.entries() if record.runner is not None else []
    return {
        "index": index,
        "route": record.route,
        "route_reason": record.reason,
        "ops": sum(1 for n in record.gm.graph.nodes if n.op.startswith("call_")),
        "inputs": [
            _describe_input(i, v, record, name)
            for i, (v, name) in enumerate(zip(record.example_inputs, record.names))
        ],
        "entries": entries,
        "fallbacks": _fallbacks(record, entries),
    }


def explain(
    model_or_fn: Callable, *args: Any, options: dict[str, Any] | None = None, **kwargs: Any
) -> Explanation:
    """Compiles ``model_or_fn`` with graphdispatch, calls it once with ``args``/``kwargs`` and
    reports what happened (see ``Explanation``).

    ``options``: backend options (as for ``torch.compile(..., options=...)``); by default the
    graph route for the inputs' device (``graph_only``; on the CPU with the CPU graph).
    The model runs under ``torch._dynamo.explain`` (graphs, breaks); on a graph route then
    ``warmup_iters`` times (default 1) and once more while the capture records (a CUDA, NPU or
    accelerator graph records its kernels without running them; the CPU and emulated graphs
    run them); then the call itself runs, a replay on a graph route. With the defaults that is
    three runs on a device graph, four on the CPU or emulated graph, two on the ``default``
    route (tests/test_explain.py counts them). Make the call as you would (e.g. under
    ``torch.no_grad()``), since grad mode decides fallbacks. Resets Dynamo's caches before and
    after, as ``torch._dynamo.explain`` does. Raises what the model raises, and
    TypeError/ValueError for invalid options.
    """
    import torch._dynamo

    import graphdispatch

    from . import config
    from ._backend import Backend
    from .serving import stats_delta

    chosen = {"graph_only": True}  # on the CPU, device_graph "auto" is the CPU graph
    chosen.update(config.normalize(options))
    backend = Backend(options=chosen)

    dynamo = torch._dynamo.explain(model_or_fn)(*args, **kwargs)
    breaks = []
    for reason in dynamo.break_reasons:
        frame = reason.user_stack[-1] if reason.user_stack else None
        breaks.append(
            {
                "reason": str(reason.reason).strip().splitlines()[0],
                "where": f"{frame.filename}:{frame.lineno}" if frame else "unknown",
            }
        )

    records: list[Any] = []
    backend.on_graph = records.append
    before = graphdispatch.stats()
    try:
        compiled = torch.compile(model_or_fn, backend=backend)
        compiled(*args, **kwargs)
        delta = stats_delta(before, graphdispatch.stats())
        graphs = [_graph_report(k, r) for k, r in enumerate(records)]
        why_not = _fast_path_state(compiled, config.resolve(backend.options))
    finally:
        torch._dynamo.reset()
    return Explanation(
        options=chosen,
        graph_breaks=breaks,
        graphs=graphs,
        stats=delta,
        fast_path_armed=not why_not,
        fast_path=why_not,
    )


def _fast_path_state(compiled: Any, options: dict[str, Any]) -> str:
    """ "" when the next call of ``compiled`` takes the fast path, else why it does not."""
    from ._fast_path import fast_path_of

    if not options["fast_path"]:
        return "the fast_path option is off"
    fast = fast_path_of(compiled)
    if fast is None:
        return "not a module compiled by torch.compile or module.compile(): Dynamo stays"
    return fast.state()
