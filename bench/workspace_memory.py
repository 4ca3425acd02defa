"""What CPU-graph entries hold when they share one workspace, in one run.

    .venv/bin/python bench/workspace_memory.py [--no-write]

A tiny Flux transformer (``tiny_flux_transformer(1, 2)``) on the CPU graph (``graph_only``):

1. **Token counts**: compiled once (``dynamic=False``) and warmed up (``graphdispatch.warmup``,
   largest first) for latent images of 4 token counts. Against: each token count's entry
   captured alone (``stats()["entry_bytes"]``: input buffers, outputs, constants and its
   workspace), and what the 4 hold apart from a workspace (``entry_bytes - workspace_bytes``).
   Target: the 4 together at most 1.1x the largest alone plus the smaller ones' own bytes.
2. **Same size**: 4 copies of the model (4 weight sets), each compiled, called with the same
   input: the 4 entries against one. Target: at most 1.3x one. What each entry keeps of its
   own (input buffers, outputs) is the model's input and output width, what the 4 share is
   its inner width: the tiny Flux's inner width (2 heads of 8) equals its 16 latent
   channels, FLUX.1's (24 heads of 128) is 48 times its 64, so the same measurement is also
   made with 8 heads of 16 (8 times).

Every call's output is compared with eager's, and captures, replays and fallbacks counted.
Writes the section ``## Shared workspace`` of bench/RESULTS.md and the plot
``bench/plots/workspace_memory.png`` (entry bytes against the signatures captured: shared
workspace against a workspace per entry) unless ``--no-write``.
"""

from __future__ import annotations

import argparse
import copy
import platform
import sys
from typing import Any

import torch
import torch._dynamo
from results_md import save_plot, write_section  # bench/ is on sys.path when run

import graphdispatch
from graphdispatch.tiny_pipelines import tiny_flux_inputs, tiny_flux_transformer

SECTION = "## Shared workspace"
SIDES = (32, 24, 16, 8)  # latent image sides: 1024, 576, 256, 64 tokens
OPTIONS = {"graph_only": True, "device_graph": "cpu"}


def inputs(side: int) -> dict[str, Any]:
    tokens = side * side
    call = tiny_flux_inputs()
    call.update(hidden_states=torch.randn(1, tokens, 16), img_ids=torch.zeros(tokens, 3))
    return call


def fresh() -> None:
    torch._dynamo.reset()
    graphdispatch.reset()


def held(compiled: Any, model: torch.nn.Module, calls: list[dict[str, Any]]) -> dict[str, int]:
    """Calls ``compiled`` on each input set (checked against eager), then what the entries hold."""
    for call in calls:
        out, expected = compiled(**call)[0], model(**call)[0]
        assert (out - expected).abs().max().item() < 1e-4
    s = graphdispatch.stats()
    assert s["fallbacks"] == {}, s["fallbacks"]
    return {
        "entry_bytes": s["entry_bytes"],
        "workspace_bytes": s["workspace_bytes"],
        "captures": s["captures"],
        "replays": s["replays"],
    }


def wide_flux() -> torch.nn.Module:
    """The tiny Flux with 8 heads of 16: an inner width of 8 times its 16 latent channels."""
    from diffusers import FluxTransformer2DModel

    config = dict(tiny_flux_transformer(1, 2).config)
    config.update(num_attention_heads=8, attention_head_dim=16, axes_dims_rope=(4, 4, 8))
    return FluxTransformer2DModel.from_config(config).eval()


def same_size(model: torch.nn.Module) -> tuple[dict[str, int], dict[str, int]]:
    """(stats with one entry, with 4 entries of 4 copies of ``model``), one input."""
    fresh()
    copies = [copy.deepcopy(model) for _ in range(4)]
    same = inputs(SIDES[0])
    states = []
    for m in copies:
        G = torch.compile(m, backend="graphdispatch", options=OPTIONS, dynamic=False)
        states.append(held(G, m, [same]))
    fresh()
    return states[0], states[-1]


def measure() -> dict[str, Any]:
    torch.manual_seed(0)
    model = tiny_flux_transformer(1, 2).eval()
    alone = {}
    with torch.no_grad():
        for side in SIDES:
            fresh()
            G = torch.compile(model, backend="graphdispatch", options=OPTIONS, dynamic=False)
            alone[side] = held(G, model, [inputs(side)])
        fresh()
        G = torch.compile(model, backend="graphdispatch", options=OPTIONS, dynamic=False)
        sets = [inputs(side) for side in reversed(SIDES)]  # smallest first: warmup reorders
        graphdispatch.warmup(G, [dict(s) for s in sets], progress=False)
        together = held(G, model, sets)
        one, four = same_size(model)
        wide_one, wide_four = same_size(wide_flux())
    return {
        "alone": alone,
        "together": together,
        "one": one,
        "four": four,
        "wide_one": wide_one,
        "wide_four": wide_four,
    }


def report(r: dict[str, Any]) -> tuple[str, list[str]]:
    alone, together = r["alone"], r["together"]
    largest = alone[SIDES[0]]["entry_bytes"]
    own = {side: a["entry_bytes"] - a["workspace_bytes"] for side, a in alone.items()}
    bound = largest + sum(own[side] for side in SIDES[1:])
    apart = sum(a["entry_bytes"] for a in alone.values())
    ratio_tokens = together["entry_bytes"] / bound
    ratio_same = r["four"]["entry_bytes"] / r["one"]["entry_bytes"]
    ratio_wide = r["wide_four"]["entry_bytes"] / r["wide_one"]["entry_bytes"]
    lines = [
        "tokens  entry alone (bytes)  of it workspace  own (buffers, outputs, constants)",
        *(
            f"{side * side:>6}  {alone[side]['entry_bytes']:>19}  "
            f"{alone[side]['workspace_bytes']:>15}  {own[side]:>9}"
            for side in SIDES
        ),
        f"4 token counts together: {together['entry_bytes']} bytes, workspace "
        f"{together['workspace_bytes']} ({together['captures']} captures, "
        f"{together['replays']} replays, no fallback)",
        f"  vs the largest alone plus the smaller ones' own bytes ({bound}): {ratio_tokens:.2f}x",
        f"  vs the 4 entries each with a workspace of its own ({apart}): "
        f"{together['entry_bytes'] / apart:.2f}x",
        f"4 same-size entries (4 weight sets): {r['four']['entry_bytes']} bytes against one "
        f"{r['one']['entry_bytes']}: {ratio_same:.2f}x",
        f"  with 8 heads of 16: {r['wide_four']['entry_bytes']} bytes against one "
        f"{r['wide_one']['entry_bytes']}: {ratio_wide:.2f}x",
        f"torch {torch.__version__}, {platform.machine()}, Python {platform.python_version()}",
    ]
    verdicts = [
        f"4 token counts: {ratio_tokens:.2f}x the largest alone plus the smaller entries' own "
        "bytes (target <= 1.1)",
        f"4 same-size entries: {ratio_same:.2f}x one, {ratio_wide:.2f}x with an inner width of "
        "8 times the latent channels (target <= 1.3)",
    ]
    return "\n".join(lines), verdicts


def plot(r: dict[str, Any]) -> str:
    """Entry bytes after 1..4 signatures (token counts, largest first): held together with one
    shared workspace (the largest entry alone, then each smaller one's own bytes added: the
    measured total at 4) against each entry with a workspace of its own."""
    alone = r["alone"]
    shared, apart = [], []
    for n, side in enumerate(SIDES, 1):
        a = alone[side]
        apart.append((apart[-1] if apart else 0) + a["entry_bytes"])
        own = a["entry_bytes"] - a["workspace_bytes"]
        shared.append(a["entry_bytes"] if n == 1 else shared[-1] + own)

    def draw(ax: Any) -> None:
        xs = range(1, len(SIDES) + 1)
        ax.plot(xs, [b / 1024 for b in apart], "o-", label="a workspace per entry (sum alone)")
        ax.plot(
            xs,
            [b / 1024 for b in shared],
            "o-",
            label="one shared workspace (largest alone + own bytes)",
        )
        ax.plot([len(SIDES)], [r["together"]["entry_bytes"] / 1024], "k*", markersize=12,
                label="measured: 4 token counts together")  # fmt: skip
        ax.set_xticks(list(xs), [f"{n}\n(+{s * s} tokens)" for n, s in zip(xs, SIDES)])
        ax.set_xlabel("signatures captured, largest first")
        ax.set_ylabel("entry bytes (KiB)")
        ax.set_title("Tiny Flux on the CPU graph: entry bytes against signatures")
        ax.legend()

    return save_plot("workspace_memory", draw)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    r = measure()
    text, verdicts = report(r)
    print(text)
    print("\n".join(verdicts))
    if not args.no_write:
        link = plot(r)
        body = (
            f"{SECTION}\n\nCommand: `.venv/bin/python bench/workspace_memory.py` (bytes are "
            "`graphdispatch.stats()` gauges; one process).\n\n"
            f"![entry bytes against signatures]({link})\n\n```\n"
            f"{text}\n```\n\n" + "\n".join(f"- {v}" for v in verdicts) + "\n"
        )
        write_section(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
