"""Python numbers that reach the graph as 0-d tensors read by ``.item()`` (case C70).

Once Dynamo makes a float dynamic (after its value changed, or from the start under
``torch.compile(..., dynamic=True)``, which treats even ``nn.LayerNorm``'s ``eps`` so), it
passes the number as a 0-d float64 CPU tensor and reads it back with ``.item()`` inside the
graph. A replay cannot reread it: the kernels were recorded with the capture's value. So the
graph routes key on the value instead (Note [Cache key] in csrc/runtime/signature.h): such an
input is handed to the runner as the Python number, one entry per value, each replaying the
number it was captured with — the same rule every graph kind can keep, since a device graph
cannot read a host number at replay either. A number that takes a new value on every call
therefore captures on every call; the runtime says so once instead of growing silently (Note
[Numbers in the key] in csrc/runtime/number_values.h). The cpp_wrapper graph is the exception
(case C89): its direct call runs Inductor's entry, which reads the 0-d tensor when it runs, so
the backend leaves such inputs tensors there: copied in as any dynamic input, one entry for
every value, and a value seen before never captures again.

An input qualifies when Dynamo made it from a Python number (its ``GraphArg`` has
``pass_arg_as_tensor``) and every use of it is ``.item()``. A real 0-d tensor stays a tensor,
even when only read by ``.item()`` (with ``capture_scalar_outputs``): it may share memory with
an input the graph writes first, so reading it before the call would be wrong (case C75). One
the graph also uses as a tensor stays a tensor too (and a CPU graph refuses the read, naming
the setting that avoids it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

_ITEM_TARGETS = (torch.ops.aten.item.default, torch.ops.aten._local_scalar_dense.default)


def _reads_item(node: torch.fx.Node) -> bool:
    if node.op == "call_method":
        return node.target == "item"
    return node.op == "call_function" and node.target in _ITEM_TARGETS


def _host_number_positions(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[int]:
    positions = []
    for i, (node, value) in enumerate(zip(gm.graph.find_nodes(op="placeholder"), example_inputs)):
        if (
            getattr(node.meta.get("grapharg"), "pass_arg_as_tensor", False)
            and isinstance(value, torch.Tensor)
            and value.dim() == 0
            and value.device.type == "cpu"
            and node.users
            and all(_reads_item(user) for user in node.users)
        ):
            positions.append(i)
    return positions


class HostNumbers:
    """The inputs of one graph that are Python numbers Dynamo passes as 0-d CPU tensors, used
    only through ``.item()``: their ``positions`` and the dtypes of their tensors. The runner
    is handed the numbers (``outside``); what it captures gets them as the graph expects:
    the FX graph rewritten to take the numbers (``take``), or a compiled function given its 0-d
    tensors back (``inside``)."""

    def __init__(
        self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, keyed: bool = True
    ) -> None:
        # keyed=False: a graph kind that reads the tensors at replay takes none as numbers.
        self.positions = _host_number_positions(gm, example_inputs) if keyed else []
        self.dtypes = {i: example_inputs[i].dtype for i in self.positions}

    def __bool__(self) -> bool:
        return bool(self.positions)

    def examples(self, example_inputs: Sequence[Any]) -> list[Any]:
        """``example_inputs`` with the numbers read out of their tensors."""
        return [v.item() if i in self.dtypes else v for i, v in enumerate(example_inputs)]

    def take(self, gm: torch.fx.GraphModule) -> None:
        """Rewrites ``gm`` so that the inputs at ``positions`` are the numbers themselves: every
        ``.item()`` of them is replaced by the input (whose metadata becomes the item's
        symbol)."""
        placeholders = gm.graph.find_nodes(op="placeholder")
        for i in self.positions:
            node = placeholders[i]
            for read in list(node.users):
                node.meta["example_value"] = read.meta.get("example_value", read.meta.get("val"))
                read.replace_all_uses_with(node)
                gm.graph.erase_node(read)
        gm.recompile()

    def outside(self, fn: Callable) -> Callable:
        """``fn`` called with the inputs at ``positions`` read as Python numbers."""
        if not self.positions:
            return fn
        wanted = frozenset(self.positions)

        def call(*args: Any) -> Any:
            return fn(*(a.item() if i in wanted else a for i, a in enumerate(args)))

        return call

    def inside(self, fn: Callable) -> Callable:
        """``fn`` (compiled for 0-d tensors at ``positions``) called with numbers there: each is
        made a 0-d tensor again, of the example's dtype, before ``fn`` runs."""
        if not self.positions:
            return fn
        dtypes = self.dtypes

        def call(*args: Any) -> Any:
            return fn(
                *(
                    torch.tensor(a, dtype=dtypes[i]) if i in dtypes else a
                    for i, a in enumerate(args)
                )
            )

        return call
