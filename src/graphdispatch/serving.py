"""``graphdispatch.warmup``: capture every signature a service will see before it serves.

A graph is captured at the first call of each input signature, so the first request of each
resolution pays a capture (and on some devices a compile). vLLM captures every batch size it
serves at start-up; this does the same for any compiled model, given the input sets.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from typing import Any


def stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """``after - before`` of two ``graphdispatch.stats()`` results: each counter's increase;
    for the mappings (fallbacks, routes) the keys that increased, with their increase; a
    record of counters and mappings (fast_path) the same way, key by key."""
    delta: dict[str, Any] = {}
    for key, value in after.items():
        if isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()):
            delta[key] = stats_delta(before.get(key, {}), value)
        elif isinstance(value, dict):
            old = before.get(key, {})
            delta[key] = {k: v - old.get(k, 0) for k, v in value.items() if v != old.get(k, 0)}
        else:
            delta[key] = value - before.get(key, 0)
    return delta


def _tensor_bytes(input_set: Any) -> int:
    import torch
    from torch.utils import _pytree as pytree

    return sum(v.nbytes for v in pytree.tree_leaves(input_set) if isinstance(v, torch.Tensor))


def _call(compiled: Callable, input_set: Any) -> Any:
    if isinstance(input_set, dict):
        return compiled(**input_set)
    if isinstance(input_set, (tuple, list)):
        return compiled(*input_set)
    return compiled(input_set)


def warmup(
    compiled: Callable, inputs: Iterable[Any], *, progress: bool = True, grad: bool = False
) -> dict[str, Any]:
    """Calls ``compiled`` once per input set so each signature is captured before serving.

    ``inputs``: the input sets, e.g. one per resolution a service allows; a tuple or list is
    passed as positional arguments, a dict as keyword arguments, anything else (a tensor) as
    the one argument. They are called largest first (by the bytes of their tensors; ties in
    the order given), as vLLM captures its largest batch first: the first capture sizes the
    shared memory every smaller one reuses (the CPU graph's workspace, a device's graph pool).
    ``progress``: a tqdm bar on stderr when stderr is a terminal; otherwise, or with
    ``progress=False``, no bar and no tqdm import. ``grad``: False (the default) makes
    the calls under ``torch.no_grad()``, as inference services run; grad mode is part of the
    cache key, so pass True only if the service itself calls with grad mode on.

    Returns the ``graphdispatch.stats()`` delta of the warm-up (captures, replays, fallbacks
    by reason, routes, ...): ``delta["fallbacks"]`` non-empty means some signature will not
    replay. Raises whatever a call raises.
    """
    import torch

    import graphdispatch

    input_sets = sorted(inputs, key=_tensor_bytes, reverse=True)  # sorted() is stable
    before = graphdispatch.stats()
    steps: Iterable[Any] = input_sets
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        steps = tqdm(input_sets, desc="graphdispatch warm-up", unit="input set", file=sys.stderr)
    mode = contextlib.nullcontext() if grad else torch.no_grad()
    with mode:
        for input_set in steps:
            _call(compiled, input_set)
    return stats_delta(before, graphdispatch.stats())
