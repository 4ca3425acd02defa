"""Tensors a graph holds as attributes become its last inputs, static and read in place
(on ``graph_only``: Inductor reads attributes itself, Note [Routes]).

With ``torch._dynamo.config.install_free_tensors = True`` (the first step of PyTorch 2.14's
"Reducing Guard Overhead" recipe) Dynamo installs parameters and buffers on the graph module and
reads them with ``get_attr`` nodes instead of passing them as inputs (case C78: the tiny Flux's
inputs drop from 82 to 6). The CPU graph can only vouch for tensors the call hands it (Note [CPU
graph]): a tensor read from anywhere else is refused. Lifting each ``get_attr`` tensor into a
placeholder makes it an input like a parameter Dynamo passes: static (Note [Static inputs]),
read in place, so a weight changed in place is the weight the replay reads, and keyed by
address, so storage swapped under it (``param.data = ...``) is captured anew. The graph module
keeps the very objects the model holds; replacing a parameter object is Dynamo's guards'
to catch, as without the recipe (its ``skip_guard_on_all_nn_modules_unsafe`` step drops those
guards, the recipe's documented risk).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# node.meta key marking a placeholder made from a get_attr tensor: static by construction.
LIFTED = "graphdispatch_lifted_attribute"


def lift_free_tensors(
    gm: torch.fx.GraphModule,
) -> tuple[torch.fx.GraphModule, list[torch.Tensor]]:
    """``gm`` and no tensors when it reads no tensor attribute; else a copy of ``gm`` in which
    every ``get_attr`` tensor is a placeholder after the graph's own, in graph order, and those
    tensors, in the order of the new placeholders (the call appends them to its arguments).
    A copy: Dynamo reads its own graph's placeholders after the backend returns."""
    if not any(
        isinstance(getattr(gm, n.target, None), torch.Tensor)
        for n in gm.graph.find_nodes(op="get_attr")
    ):
        return gm, []
    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen
    copies: dict[torch.fx.Node, torch.fx.Node] = {}
    graph.output(graph.graph_copy(gm.graph, copies))
    last = graph.find_nodes(op="placeholder")[-1:]
    tensors = []
    for node in graph.find_nodes(op="get_attr"):
        value = getattr(gm, node.target, None)
        if not isinstance(value, torch.Tensor):
            continue
        where = graph.inserting_after(last[0]) if last else graph.inserting_before(None)
        with where:
            lifted = graph.placeholder(node.name)
        last = [lifted]
        lifted.meta.update(node.meta)
        lifted.meta[LIFTED] = node.target
        node.replace_all_uses_with(lifted)
        graph.erase_node(node)
        tensors.append(value)
    graph.lint()
    return torch.fx.GraphModule(gm, graph), tensors


def with_free_tensors(fn: Callable, tensors: list[torch.Tensor]) -> Callable:
    """``fn`` called with ``tensors`` after the call's own arguments."""
    if not tensors:
        return fn
    extra = tuple(tensors)

    def call(*args: Any) -> Any:
        return fn(*args, *extra)

    return call
