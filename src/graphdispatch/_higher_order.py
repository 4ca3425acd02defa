"""Higher-order ops (``torch.cond``, ``flex_attention``, ...) under the CPU graph's recorder
(case C71).

The recorder is a dispatch key in the thread's included set (Note [Recording ops] in
``csrc/runtime/cpu_graph/op_recorder.h``). PyTorch dispatches a higher-order op in Python from
that set too, finds no kernel for the key and fails ("could not find kernel for
HigherOrderOperator").
Per op, ``prepare()`` decides once what the key does:

- ops that only run their subgraphs' tensor ops (``flex_attention``, ``invoke_subgraph``,
  grad-mode and autocast wrappers, activation-checkpoint tags) fall through it: their ATen ops
  are recorded and replayed like any other;
- every other one (``cond`` and ``while_loop`` pick what runs from tensor values on the host,
  which a replay cannot; the rest are not known to be safe) refuses the capture naming the op,
  so the call falls back to eager with the reason (``capture_failed``).

The key is active only while a CPU graph captures, so nothing changes elsewhere.
"""

from __future__ import annotations

from typing import Any, NoReturn

import torch

# Higher-order ops whose eager implementation runs its subgraphs' tensor ops and nothing else.
RECORDED = frozenset(
    {
        "flex_attention",
        "invoke_subgraph",
        "wrap_with_set_grad_enabled",
        "wrap_with_autocast",
        "tag_activation_checkpoint",
    }
)

_prepared: set[str] = set()


def _refusal(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> NoReturn:
        raise RuntimeError(
            f"CPU graph capture: higher-order op torch.ops.higher_order.{name} is not "
            "recorded: it may choose what runs from tensor values on the host or run Python "
            "that a replay would skip (recorded higher-order ops: "
            f"{', '.join(sorted(RECORDED))})"
        )

    return refuse


def prepare() -> None:
    """Sets the recorder key's behaviour on every higher-order op registered so far (see the
    module docstring); cheap to call again, it handles only ops it has not seen."""
    key = torch._C._parse_dispatch_key("Fake")  # the recorder's key; Python has no name for it
    for name, op in list(torch._ops._higher_order_ops.items()):
        if name in _prepared:
            continue
        _prepared.add(name)
        if name in RECORDED:
            op.fallthrough(key)
        elif key not in op.py_kernels:
            op.py_impl(key)(_refusal(name))
