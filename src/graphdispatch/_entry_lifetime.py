"""Entries die with the tensors they read in place (case C34), and leave them swappable (C45).

An entry holds its static inputs (parameters, buffers, state tensors) weakly, so deleting a
model frees its weights; this watch then tells the runner to drop the entries that read them,
freeing their buffers and graph memory without ``graphdispatch.reset()``. It is also how the
runner learns that a state tensor the module reassigns every call has moved (Note [Moving
static inputs] in csrc/runtime/recapture_policy.h).

Why the storage and not the tensor. ``torch.utils.swap_tensors`` (what ``module.to()`` and
``load_state_dict(assign=True)`` use under ``torch.__future__.set_swap_module_params_on_
conversion(True)``, and PEFT's LoRA hot-swap) refuses a tensor that has any Python weakref.
A storage has a Python object of its own, kept for as long as the storage lives, which
``swap_tensors`` never looks at (the entry itself holds the storage weakly too: a C++ weak
reference to the tensor blocks a swap as well). It dies when the tensor does (the tensor holds
the only reference to a parameter's storage) and when ``param.data = ...`` or a swap replaces
it; by the time its callback runs, the entry's weak reference to it no longer resolves, so the
runner sees the entry lost. A storage shared with a tensor the entry does not read (a view
kept elsewhere) lives on, and so does the entry, until that view goes: its address stays valid
for a call that passes it, and another address is another key.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch


class StaticInputWatch:
    """The runner's ``watch`` callback: ``watch(tensors)`` after each capture, with the entry's
    static inputs. Holds the runner and the tensors' storages weakly, the tensors not at all.

    No lock: weakref callbacks may run inside any allocation of this thread (a garbage
    collection), so the dictionary is touched only by single operations, atomic under the GIL.
    """

    def __init__(self) -> None:
        self._runner: weakref.ref | None = None
        self._refs: dict[int, weakref.ref] = {}  # id(storage) -> ref to that storage

    def bind(self, runner: Any) -> None:
        self._runner = weakref.ref(runner)

    def __call__(self, tensors: list[torch.Tensor]) -> None:
        for tensor in tensors:
            storage = tensor.untyped_storage()
            key = id(storage)
            known = self._refs.get(key)
            if known is not None and known() is storage:
                continue
            self._refs[key] = weakref.ref(storage, functools.partial(self._freed, key))

    def _freed(self, key: int, ref: weakref.ref) -> None:
        if self._refs.get(key) is ref:
            self._refs.pop(key, None)
        runner = self._runner() if self._runner is not None else None
        if runner is not None:
            runner.drop_dead_entries()
