"""Pattern passes for the ``graph_passes`` option: FX rewrites of the graph Dynamo traced.

``fuse_rms_norm`` is the example shipped with the option. Diffusers' ``RMSNorm`` (the query and
key norms of Flux, SD3 and most DiTs) writes the norm out by hand::

    variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    y = x * torch.rsqrt(variance + eps) * weight

and Dynamo traces it as six ops. The pass replaces each such chain by one
``torch.rms_norm(x, (d,), weight, eps)``: on a device one fused kernel, on the CPU the same ops
in the same order (values bit-equal), one Python call on the eager path.
"""

from __future__ import annotations

import operator

import torch
from torch.fx import GraphModule, Node


def _call(node: object, targets: tuple, method: str | None = None) -> bool:
    if not isinstance(node, Node):
        return False
    if node.op == "call_function" and node.target in targets:
        return True
    return method is not None and node.op == "call_method" and node.target == method


def _float32(node: object) -> bool:
    value = node.meta.get("example_value") if isinstance(node, Node) else None
    return isinstance(value, torch.Tensor) and value.dtype == torch.float32


def _other(node: Node, known: Node) -> object:
    """The operand of binary ``node`` that is not ``known`` (either order), else None."""
    a, b = node.args[:2]
    return b if a is known else a if b is known else None


def _match(out: Node) -> tuple[Node, Node, float, list[Node]] | None:
    """(x, weight, eps, the chain's inner nodes, last first) when ``out`` is
    ``x * rsqrt(mean(x.to(float32) ** 2, -1) + eps) * w`` over float32 ``x`` and ``w`` with
    ``w`` of shape (x.shape[-1],); else None."""
    if not _call(out, (operator.mul, torch.mul), "mul") or len(out.args) != 2 or out.kwargs:
        return None
    for scaled, weight in (out.args, out.args[::-1]):
        if not _call(scaled, (operator.mul, torch.mul), "mul") or len(scaled.args) != 2:
            continue
        for x, rsqrt in (scaled.args, scaled.args[::-1]):
            if not _call(rsqrt, (torch.rsqrt,), "rsqrt") or len(rsqrt.args) != 1:
                continue
            add = rsqrt.args[0]
            if not _call(add, (operator.add, torch.add), "add") or len(add.args) != 2:
                continue
            mean = next((a for a in add.args if _call(a, (torch.mean,), "mean")), None)
            eps = _other(add, mean) if mean is not None else None
            if not isinstance(eps, float) or not _last_dim_mean(mean):
                continue
            square = mean.args[0]
            if not _call(square, (torch.pow, operator.pow), "pow") or square.args[1:] != (2,):
                continue
            chain, base = [scaled, rsqrt, add, mean, square], square.args[0]
            if _call(base, (), "to") and base.args[1:] == (torch.float32,) and not base.kwargs:
                chain.append(base)
                base = base.args[0]
            if base is x and _float32(x) and _float32(weight) and _fits(weight, x):
                return x, weight, eps, chain
    return None


def _last_dim_mean(mean: Node) -> bool:
    dims = mean.args[1:] or (mean.kwargs.get("dim"),)
    return dims[0] in (-1, [-1], (-1,)) and mean.kwargs.get("keepdim") is True


def _fits(weight: Node, x: Node) -> bool:
    w, v = weight.meta["example_value"], x.meta["example_value"]
    return v.dim() >= 1 and tuple(w.shape) == (v.shape[-1],)


def fuse_rms_norm(gm: GraphModule) -> int:
    """Replaces every hand-written float32 RMSNorm chain in ``gm`` by ``torch.rms_norm``.

    A ``graph_passes`` pass: rewrites ``gm.graph`` in place and returns the number of chains
    replaced. Matches ``x * torch.rsqrt(x[.to(torch.float32)].pow(2).mean(-1, keepdim=True) +
    eps) * w`` (operands in either order) where ``x`` and ``w`` are float32 and ``w`` has shape
    ``(x.shape[-1],)``; other dtypes are left alone, since their upcast and casts back change
    the result. Nodes of the chain used elsewhere stay.
    """
    replaced = 0
    for node in list(gm.graph.nodes):
        found = _match(node)
        if found is None:
            continue
        x, weight, eps, chain = found
        size = x.meta["example_value"].shape[-1]
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(torch.rms_norm, (x, (size,), weight, eps))
        fused.meta = dict(node.meta)
        node.replace_all_uses_with(fused)
        gm.graph.erase_node(node)
        for inner in chain:  # last first: each one's users are gone before it
            if not inner.users:
                gm.graph.erase_node(inner)
        replaced += 1
    return replaced
