"""Run-once setup steps and the state a forked child must recreate.

A ``RunOnce`` step runs on first use, under a ``threading.Condition``: concurrent first users
wait for the one running it; a step that raises is retried by the next user; a step that
succeeded is never re-applied (seed 002's lazy-setup discipline). After ``fork`` the child
gets fresh conditions and forgets a step that was running in a parent thread; the hook takes
no lock and does no logging, since a parent thread may have held either at fork.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Callable


class RunOnce:
    """Calls ``fn`` until it has succeeded once; thread-safe; retried after failure."""

    def __init__(self, name: str, fn: Callable[[], None]):
        self.name = name
        self._fn = fn
        self._done = False
        self._running = False
        self._cond = threading.Condition()
        _ALL.add(self)

    @property
    def done(self) -> bool:
        return self._done

    def __call__(self) -> None:
        if self._done:  # the hot path takes no lock once set up
            return
        with self._cond:
            while self._running:
                self._cond.wait()
            if self._done:
                return
            self._running = True
        succeeded = False
        try:
            self._fn()
            succeeded = True
        finally:
            with self._cond:
                self._running = False
                self._done = succeeded
                self._cond.notify_all()

    def _after_fork_in_child(self) -> None:
        self._cond = threading.Condition()
        self._running = False


_ALL: "weakref.WeakSet[RunOnce]" = weakref.WeakSet()
# Other objects with an ``_after_fork_in_child`` method (runner registry, stats locks).
_FORK_HOOKS: list[Callable[[], None]] = []


def at_fork_in_child(hook: Callable[[], None]) -> None:
    """Registers ``hook`` to run in a forked child, after the run-once steps are recreated."""
    _FORK_HOOKS.append(hook)


def _after_fork_in_child() -> None:
    for step in list(_ALL):
        step._after_fork_in_child()
    for hook in _FORK_HOOKS:
        hook()


os.register_at_fork(after_in_child=_after_fork_in_child)
