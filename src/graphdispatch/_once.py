"""Run-once setup steps and the state a forked child must recreate.

A route's setup is an ordered ``Setup`` of named ``RunOnce`` steps (the lazy-setup
discipline of the torch_npu port, Note [Lazy loading] in _registration.py):

- a step runs on first use, under a ``threading.Condition``: concurrent first users wait for
  the one running it, and the step runs once;
- a step that raises is retried by the next user; a step that succeeded is never re-applied,
  so a ``Setup`` whose third step failed re-runs only the third step (and those after it);
- once every step has succeeded, calling the setup takes no lock.

There is no Dynamo setup step: by the time Dynamo calls our backend it has loaded itself, and
we register nothing with it (its registry loads our entry point by name).

After ``fork`` the child gets fresh conditions and forgets a step that was running in a parent
thread (that thread does not exist in the child, so the step may be retried there); steps that
had succeeded stay done. The after-fork hook takes no lock and does no logging, since a parent
thread may have held either at fork. Re-importing this module (``importlib.reload``) keeps the
one ``os.register_at_fork`` hook and the registry of steps and hooks.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable


class RunOnce:
    """Calls ``fn`` until it has succeeded once; thread-safe; retried after failure.

    ``attempts`` counts calls of ``fn`` (successful or not), for tests and diagnostics.
    """

    def __init__(self, name: str, fn: Callable[[], None]):
        self.name = name
        self._fn = fn
        self._done = False
        self._running = False
        self.attempts = 0
        self._cond = threading.Condition()
        _ALL.add(self)

    def __repr__(self) -> str:
        return f"RunOnce({self.name!r}, done={self._done}, attempts={self.attempts})"

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
            self.attempts += 1
        succeeded = False
        try:
            self._fn()
            succeeded = True
        finally:
            with self._cond:
                self._running = False
                self._done = succeeded
                self._cond.notify_all()

    def reset_after_fork(self) -> None:
        self._cond = threading.Condition()
        self._running = False


class Setup:
    """Ordered ``RunOnce`` steps; calling it runs each step not yet done, stopping at a failure.

    Steps are shared between setups (the graph_with_compile route's setup holds the steps of
    both other routes), so a step done for one route is done for all.
    """

    def __init__(self, name: str, *steps: RunOnce):
        self.name = name
        self.steps = steps

    def __repr__(self) -> str:
        return f"Setup({self.name!r}, {list(self.steps)!r})"

    @property
    def done(self) -> bool:
        return all(step.done for step in self.steps)

    def succeeded(self) -> list[str]:
        """Names of the steps that have succeeded, in order."""
        return [step.name for step in self.steps if step.done]

    def __call__(self) -> None:
        for step in self.steps:
            step()  # a done step returns at once; an exception stops the sequence here


# Module state survives importlib.reload (which re-executes this file in the same namespace),
# so a reload neither loses the steps a child must reset nor registers a second fork hook.
_ALL: weakref.WeakSet[RunOnce] = globals().get("_ALL") or weakref.WeakSet()
# Other state a child must recreate (runner registry, locks), keyed by the hook's qualified
# name so that re-registering (a module reload) replaces instead of adding.
_FORK_HOOKS: dict[str, Callable[[], None]] = globals().get("_FORK_HOOKS") or {}


def at_fork_in_child(hook: Callable[[], None]) -> None:
    """Registers ``hook`` to run in a forked child, after the run-once steps are recreated.

    The hook must take no lock that a parent thread could hold and must not log.
    """
    _FORK_HOOKS[f"{hook.__module__}.{hook.__qualname__}"] = hook


def _after_fork_in_child() -> None:
    for step in list(_ALL):
        step.reset_after_fork()
    for hook in list(_FORK_HOOKS.values()):
        hook()


if not globals().get("_AT_FORK_REGISTERED"):
    # Looked up at fork time: after a reload, the new version runs.
    os.register_at_fork(after_in_child=lambda: _after_fork_in_child())
    _AT_FORK_REGISTERED = True
