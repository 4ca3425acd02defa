"""The standing oracle of case C73: PyTorch's own OpInfo samples on the CPU graph against eager.

    .venv/bin/python tests/opinfo_sweep.py [--samples N] [--write]

Per op of ``torch.testing._internal.common_methods_invocations.op_db`` that has CPU samples in
the dtype, and per sample (at most ``--samples``, default 30): a GraphRunner on the CPU graph
over ``op(sample.input, *sample.args, **sample.kwargs)`` with every tensor a dynamic input is
captured on the samples drawn with one seed, then replayed three times on the same samples
drawn with other seeds (same shapes, new values), each replay compared with eager on those
values, byte for byte (NaN payloads and signed zeros included). Skipped, each with its reason:
random ops (eager moves the generator, or OpInfo reseeds it before every call; the generator
tests of case C13 cover them), ops whose eager result differs between two runs on the same
values, and samples that change shape between draws or are sparse. Outcome per op:
``replayed`` (every sample replayed, all equal), ``fallback``
(at least one sample's capture refused, the rest replayed equal; the values are eager's), or
``wrong`` (a replay differed from eager: the fault this sweep exists to find). ``--write``
writes the table to docs/opinfo-sweep.md; tests/test_opinfo_sweep.py runs a CI-sized subset.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

DTYPES = (torch.float32, torch.bfloat16, torch.complex64)
REPLAYS = 3


@dataclass
class Outcome:
    op: str
    dtype: torch.dtype
    result: str  # replayed, fallback, wrong, skipped
    detail: str = ""


def samples(op: Any, dtype: torch.dtype, seed: int, limit: int) -> list[Any]:
    torch.manual_seed(seed)
    out = []
    for s in op.sample_inputs("cpu", dtype, requires_grad=False):
        out.append(s)
        if len(out) == limit:
            break
    return out


def flat(sample: Any) -> tuple[list[Any], Any]:
    return tree_flatten((sample.input, sample.args, sample.kwargs))


def bytes_of(t: torch.Tensor) -> torch.Tensor:
    return t.detach().reshape(-1).clone(memory_format=torch.contiguous_format).view(torch.uint8)


def same(a: Any, b: Any) -> bool:
    """Equal structure, and every tensor equal byte for byte (NaN payloads and signed zeros
    included)."""
    fa, sa = tree_flatten(a)
    fb, sb = tree_flatten(b)
    if sa != sb or len(fa) != len(fb):
        return False
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype:
                return False
            if not torch.equal(bytes_of(x), bytes_of(y)):
                return False
        elif x != y and not (x != x and y != y):
            return False
    return True


def check_op(op: Any, dtype: torch.dtype, limit: int) -> Outcome:
    """One op in one dtype (see the module docstring)."""
    import graphdispatch
    from graphdispatch import _C
    from graphdispatch._device_graphs import make_factory

    name = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
    if "wrapper_set_seed" in getattr(getattr(op.op, "__code__", None), "co_names", ()):
        # OpInfo seeds the generator before every call of a random op: Python state, outside
        # the dispatcher, that no graph replays (random ops are case C13's tests).
        return Outcome(name, dtype, "skipped", "reseeds the generator on every call")
    draws = [samples(op, dtype, seed, limit) for seed in range(REPLAYS + 1)]
    if not draws[0]:
        return Outcome(name, dtype, "skipped", "no CPU samples")
    fell_back = 0
    for k, first in enumerate(draws[0]):
        leaves, spec = flat(first)
        positions = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
        if any(leaves[i].layout != torch.strided for i in positions):
            return Outcome(name, dtype, "skipped", "sparse samples")
        others = [draw[k] if k < len(draw) else None for draw in draws[1:]]
        if any(o is None for o in others):
            return Outcome(name, dtype, "skipped", "samples change between draws")
        other_leaves = [flat(o)[0] for o in others]
        if any(
            len(ol) != len(leaves)
            or any(
                isinstance(a, torch.Tensor)
                and (
                    not isinstance(b, torch.Tensor)
                    or a.shape != b.shape
                    or a.dtype != b.dtype
                    or a.stride() != b.stride()
                )
                for a, b in zip(leaves, ol)
            )
            for ol in other_leaves
        ):
            return Outcome(name, dtype, "skipped", "samples change shape between draws")

        def call(*tensors: torch.Tensor, leaves=leaves, positions=positions, spec=spec) -> Any:
            values = list(leaves)
            for i, t in zip(positions, tensors):
                values[i] = t
            inp, args, kwargs = tree_unflatten(values, spec)
            return op.op(inp, *args, **kwargs)

        def eager(ls: list[Any], positions=positions) -> Any:
            return call(*(ls[i].clone() for i in positions))

        state = torch.get_rng_state()
        try:
            expected0 = [eager(ol) for ol in other_leaves]
        except Exception as error:  # the sample itself raises in eager
            return Outcome(name, dtype, "skipped", f"eager raises {type(error).__name__}")
        if not torch.equal(state, torch.get_rng_state()):
            return Outcome(name, dtype, "skipped", "draws random numbers (case C13)")
        if not all(same(e, eager(ol)) for e, ol in zip(expected0, other_leaves)):
            return Outcome(name, dtype, "skipped", "nondeterministic in eager")
        graphdispatch.reset()
        results: list[Any] = []

        def fn(*tensors: torch.Tensor) -> tuple[Any, ...]:
            out = call(*tensors)
            return tuple(tree_flatten(out)[0])

        r = _C.GraphRunner(fn, [False] * len(positions), make_factory("cpu"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                r(*(leaves[i].clone() for i in positions))
            except Exception as error:
                return Outcome(name, dtype, "skipped", f"eager raises {type(error).__name__}")
            for ol in other_leaves:
                try:
                    results.append(r(*(ol[i].clone() for i in positions)))
                except Exception as error:  # eager ran these values without raising
                    return Outcome(name, dtype, "wrong", f"sample {k}: replay raised {error!r}")
        if graphdispatch.stats()["replays"] == 0:
            fell_back += 1
            continue
        for got, expected in zip(results, expected0):
            if not same(list(got), [t for t in tree_flatten(expected)[0]]):
                return Outcome(name, dtype, "wrong", f"sample {k}")
    if fell_back:
        return Outcome(name, dtype, "fallback", f"{fell_back} of {len(draws[0])} samples")
    return Outcome(name, dtype, "replayed", f"{len(draws[0])} samples")


def op_db() -> list[Any]:
    from torch.testing._internal.common_methods_invocations import op_db as db

    return list(db)


def sweep(ops: list[Any], dtypes: tuple[torch.dtype, ...], limit: int) -> list[Outcome]:
    out = []
    for dtype in dtypes:
        for op in ops:
            if dtype not in op.supported_dtypes("cpu"):
                continue
            try:
                out.append(check_op(op, dtype, limit))
            except Exception as error:  # the sweep's own comparison (a layout it cannot read)
                out.append(Outcome(op.name, dtype, "skipped", f"not compared: {error!r}"[:120]))
    return out


def table(outcomes: list[Outcome], limit: int) -> str:
    lines = [
        "# OpInfo sweep: the CPU graph against eager (case C73)",
        "",
        "Command (from the repository root): `.venv/bin/python tests/opinfo_sweep.py --write`",
        f"(at most {limit} samples an op, {REPLAYS} replays on new values each; see the",
        "docstring of tests/opinfo_sweep.py). torch " + torch.__version__ + ".",
        "",
        "| dtype | ops | replayed | fallback | wrong | skipped |",
        "|---|---|---|---|---|---|",
    ]
    for dtype in DTYPES:
        rows = [o for o in outcomes if o.dtype == dtype]
        c = Counter(o.result for o in rows)
        lines.append(
            f"| {str(dtype).removeprefix('torch.')} | {len(rows)} | {c['replayed']} | "
            f"{c['fallback']} | {c['wrong']} | {c['skipped']} |"
        )
    lines += ["", "Every op that fell back, was wrong or was skipped, with the reason:", ""]
    lines += ["| op | dtype | outcome | detail |", "|---|---|---|---|"]
    for o in outcomes:
        if o.result != "replayed":
            dtype = str(o.dtype).removeprefix("torch.")
            lines.append(f"| `{o.op}` | {dtype} | {o.result} | {o.detail} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tests/opinfo_sweep.py", description=__doc__)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    outcomes = sweep(op_db(), DTYPES, args.samples)
    text = table(outcomes, args.samples)
    print(text)
    if args.write:
        (Path(__file__).resolve().parent.parent / "docs" / "opinfo-sweep.md").write_text(text)
    return 1 if any(o.result == "wrong" for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
