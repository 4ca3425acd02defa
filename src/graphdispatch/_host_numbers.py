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

Note [Numbers read at replay]
The CPU graph replays by calling each recorded kernel again, so a kernel given the 0-d tensor
itself reads whatever the entry's input buffer holds when it runs (case C89). ``read_at_replay``
rewrites a number's uses so that they take the tensor instead of the Python float, where the
result is eager's to the bit; such an input stays a dynamic tensor input (copied into its
buffer, 8 bytes) and one entry serves every value. A use qualifies when it is
- float arithmetic (``+``, ``-``, ``*``, unary ``-``, ``/`` by a non-zero constant) with
  constants or other such numbers: the same IEEE double operations on 0-d float64 tensors;
- a binary tensor op (``+``, ``-``, ``*``, ``/``, ``torch.add``/``sub``/``mul``/``div`` and
  the same methods) on a floating or complex tensor that is not 0-d (or is float64/complex128):
  the result type is the tensor's either way, since a 0-d operand does not promote one of its
  category. The op is rewritten to the very aten call eager makes (``n * x`` is
  ``torch.mul(x, n)``, ``n - x`` is ``torch.rsub(x, n)``), so the number sits at the operand
  position whose reduced-precision kernels read it unrounded. ``n / x`` (eager computes
  ``x.reciprocal() * n``) and every other use (``torch.full``, ``clamp``, an ``alpha=``, a
  number output) leave the input keyed on its value, bounded per graph (Note [Numbers in the
  key] in csrc/runtime/number_values.h); so do the other graph kinds, whose kernels hold the
  value as recorded.
"""

from __future__ import annotations

import operator
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


# Note [Numbers read at replay]: float arithmetic on numbers, exact on 0-d float64 tensors.
_ARITHMETIC = (operator.add, operator.sub, operator.mul, operator.neg, operator.truediv)
# Binary tensor ops: target -> (the aten call eager makes, tensor first, when the number is the
# second operand; when it is the first, or None where none gives eager's bytes).
_TENSOR_OPS = {
    operator.add: (torch.add, torch.add),
    operator.mul: (torch.mul, torch.mul),
    operator.sub: (torch.sub, torch.rsub),
    operator.truediv: (torch.div, None),  # n / x is x.reciprocal() * n in eager
    torch.add: (torch.add, None),
    torch.mul: (torch.mul, None),
    torch.sub: (torch.sub, None),
    torch.div: (torch.div, None),
}
_TENSOR_METHODS = {"add": torch.add, "mul": torch.mul, "sub": torch.sub, "div": torch.div}
_EXACT_INTS = 2**53  # ints a double holds exactly


def _value(node: Any) -> Any:
    return (
        node.meta.get("example_value", node.meta.get("val"))
        if isinstance(node, torch.fx.Node)
        else node
    )


def _constant(arg: Any) -> bool:
    if isinstance(arg, bool):
        return False
    return isinstance(arg, float) or (isinstance(arg, int) and abs(arg) < _EXACT_INTS)


def _keeps_type(tensor: Any) -> bool:
    """True when a 0-d float64 operand leaves ``tensor``'s result type as a Python float does."""
    if not isinstance(tensor, torch.Tensor) or tensor.device.type != "cpu":
        return False
    if tensor.dtype in (torch.float64, torch.complex128):
        return True
    return (tensor.dtype.is_floating_point or tensor.dtype.is_complex) and tensor.dim() >= 1


def _tensor_rewrite(node: torch.fx.Node, number: torch.fx.Node) -> Callable | None:
    """The aten call (tensor, number) that replaces ``node``, a binary tensor op with ``number``
    as one operand, or None where none gives eager's bytes."""
    if node.kwargs or len(node.args) != 2 or node.args.count(number) != 1:
        return None
    first = node.args[0] is number
    other = node.args[1 if first else 0]
    if not isinstance(other, torch.fx.Node) or not _keeps_type(_value(other)):
        return None
    if node.op == "call_method":
        return None if first else _TENSOR_METHODS.get(node.target)
    if node.op != "call_function" or node.target not in _TENSOR_OPS:
        return None
    return _TENSOR_OPS[node.target][1 if first else 0]


_Rewrites = dict[torch.fx.Node, tuple[Callable, torch.fx.Node]]


def _readable(items: list[torch.fx.Node]) -> _Rewrites:
    """The rewrites that make every use of ``items`` (numbers read from inputs) and of the
    numbers computed from them take 0-d tensors instead (Note [Numbers read at replay]): per
    tensor op, the aten call it becomes and its number operand. Raises LookupError where a use
    cannot."""
    numbers = set(items)
    for node in items[0].graph.nodes:  # in topological order: operands before their users
        if (
            node not in numbers
            and node.op == "call_function"
            and node.target in _ARITHMETIC
            and not node.kwargs
            and isinstance(_value(node), torch.SymFloat)
            and any(a in numbers for a in node.args)
            and all(a in numbers or _constant(a) for a in node.args)
            and (node.target is not operator.truediv or _constant(node.args[1]) and node.args[1])
        ):
            numbers.add(node)
    rewrites: _Rewrites = {}
    for number in numbers:
        for user in number.users:
            if user in numbers:
                continue
            rewrite = _tensor_rewrite(user, number)
            if rewrite is None:
                raise LookupError(user)
            rewrites[user] = (rewrite, number)
    return rewrites


class HostNumbers:
    """The inputs of one graph that are Python numbers Dynamo passes as 0-d CPU tensors, used
    only through ``.item()``: their ``positions`` and the dtypes of their tensors. The runner
    is handed the numbers (``outside``); what it captures gets them as the graph expects:
    the FX graph rewritten to take the numbers (``take``), or a compiled function given its 0-d
    tensors back (``inside``)."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        example_inputs: Sequence[Any],
        *,
        keyed: bool = True,
        read_at_replay: bool = False,
    ) -> None:
        # keyed=False: a graph kind that reads the tensors at replay takes none as numbers.
        positions = _host_number_positions(gm, example_inputs) if keyed else []
        # read_at_replay (the CPU graph): the inputs it can leave tensors, and the rewrites of
        # their uses (Note [Numbers read at replay]): all of them together where they are
        # computed with one another, else each that can on its own.
        self.read: list[int] = []
        self._rewrites: _Rewrites = {}
        placeholders = gm.graph.find_nodes(op="placeholder")
        candidates = [
            i for i in positions if read_at_replay and example_inputs[i].dtype == torch.float64
        ]
        for group in [candidates, *([i] for i in candidates)] if candidates else []:
            try:
                self._rewrites.update(_readable([r for i in group for r in placeholders[i].users]))
            except LookupError:
                continue
            self.read.extend(group)
            if group is candidates:
                break
        self.positions = [i for i in positions if i not in self.read]
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
        # Note [Numbers read at replay]: the tensor ops first, named by the number they use.
        for node, (target, number) in self._rewrites.items():
            tensor = node.args[1] if node.args[0] is number else node.args[0]
            node.op, node.target, node.args = "call_function", target, (tensor, number)
        for i in self.read:
            node = placeholders[i]
            for read in list(node.users):
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
