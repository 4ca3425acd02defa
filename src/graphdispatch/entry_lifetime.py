"""Entries die with the tensors they read in place (case C34).

An entry holds its static inputs (parameters, buffers, state tensors) weakly, so deleting a
model frees its weights; this watch then tells the runner to drop the entries that read them,
freeing their buffers and graph memory without ``graphdispatch.reset()``. It is also how the
runner learns that a state tensor the module reassigns every call has moved (Note [Moving
static inputs] in csrc/runtime/graph_runner.h).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch


class StaticInputWatch:
    """The runner's ``watch`` callback: ``watch(tensors)`` after each capture, with the entry's
    static inputs. Holds the runner and the tensors weakly.

    No lock: weakref callbacks may run inside any allocation of this thread (a garbage
    collection), so the dictionary is touched only by single operations, atomic under the GIL.
    """

    def __init__(self) -> None:
        self._runner: weakref.ref | None = None
        self._refs: dict[int, weakref.ref] = {}  # id -> ref whose callback knows the TensorImpl

    def bind(self, runner: Any) -> None:
        self._runner = weakref.ref(runner)

    def __call__(self, tensors: list[torch.Tensor]) -> None:
        for tensor in tensors:
            key = id(tensor)
            known = self._refs.get(key)
            if known is not None and known() is tensor:
                continue
            # `_cdata` is the TensorImpl's address: the callback runs before the tensor is
            # released, so the runtime is told which tensor is dying rather than finding it freed.
            self._refs[key] = weakref.ref(tensor, functools.partial(self._freed, key, tensor._cdata))

    def _freed(self, key: int, impl: int, ref: weakref.ref) -> None:
        if self._refs.get(key) is ref:
            self._refs.pop(key, None)
        runner = self._runner() if self._runner is not None else None
        if runner is not None:
            runner.drop_dead_entries(impl)
