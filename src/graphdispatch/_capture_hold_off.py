"""The capture hold-off: during a capture, garbage collection and every public ``empty_cache``
of the device are held off (freeing pool memory mid-capture breaks it; case G8).

A scoped, re-entrant hold restored on every exit path, never a patch left behind by an error.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable
from typing import Any


class _CaptureHoldOff:
    """Holds off ``gc.collect`` and the devices' ``empty_cache`` while captures run.

    Re-entrant and thread-aware through a depth counter under a lock; the last exit restores
    exactly what the first entry found. Each namespace passed (``torch.cuda``,
    ``torch.cuda.memory``, ``torch.accelerator``, ...) gets the stand-in once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._gc_was_enabled = False
        self._saved: list[tuple[Any, Any]] = []

    def enter(self, namespaces: Iterable[Any]) -> None:
        with self._lock:
            if self._depth == 0:
                self._gc_was_enabled = gc.isenabled()
                gc.disable()
            for namespace in namespaces:
                if hasattr(namespace, "empty_cache") and all(
                    held is not namespace for held, _ in self._saved
                ):
                    self._saved.append((namespace, namespace.empty_cache))
                    namespace.empty_cache = _no_empty_cache
            self._depth += 1

    def exit(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                self._restore()

    def _restore(self) -> None:
        for namespace, value in reversed(self._saved):
            namespace.empty_cache = value
        self._saved.clear()
        if self._gc_was_enabled:
            gc.enable()

    def reset_after_fork(self) -> None:
        # A capture a parent thread was running at fork: its hold-off undone without the lock
        # (Note [Fork] in _once.py).
        if self._depth:
            self._restore()
        self.__init__()


def _no_empty_cache() -> None:
    """Stand-in for empty_cache during a capture: freeing pool memory mid-capture breaks it."""


HOLD_OFF = _CaptureHoldOff()
