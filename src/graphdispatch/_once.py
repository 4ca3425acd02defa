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

This module also holds the one fork hook (Note [Fork] below). Re-importing it
(``importlib.reload``) keeps that hook and the registry of steps and hooks.
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


# Note [Fork]
# A forked child has one thread, the one that forked, but a copy of all the parent's memory:
# a lock another parent thread held stays held forever, a condition keeps waiters that do not
# exist, a setup step or a capture that thread was running stays half done, and the parent's
# device graphs, pools and streams belong to the parent's device context. So the child,
# before anything else runs (os.register_at_fork below, the only registration), resets:
# - every RunOnce step (reset_after_fork): a new condition; a step a parent thread was running
#   is forgotten and may run again, steps that succeeded stay done;
# - the hooks registered with register_reset_after_fork, each module's _reset_after_fork:
#   the backend's locks, route and pass counts and its factories; every runner
#   (GraphRunner::reset_after_fork: the parent's entries forgotten, new locks); the framework
#   graph factories (new locks, no pools) and the capture hold-off;
# - the extension's state (_C.reset_after_fork): stats() from zero (the workspace gauge kept:
#   the child keeps the blocks it inherited), the copy pipelines, the capture locks, the CPU
#   graph's `out=` overload cache and the workspace's mutex, the process budget's mutex.
# What the parent owns is replaced and leaked, never destroyed, reset or unlocked: destroying
# a device graph or a pool would act on the parent's device context, and unlocking or
# destroying a held mutex is undefined. For the same reason the hooks take no lock, log
# nothing (logging takes a lock) and import nothing (the import lock). The parent is
# unaffected, and the child's first call captures anew (docs/usage.md "Fork"; case C20).

# Module state survives importlib.reload (which re-executes this file in the same namespace),
# so a reload neither loses the steps a child must reset nor registers a second fork hook.
_ALL: weakref.WeakSet[RunOnce] = globals().get("_ALL") or weakref.WeakSet()
# Other state a child must recreate (runner registry, locks), keyed by the hook's qualified
# name so that re-registering (a module reload) replaces instead of adding.
_FORK_HOOKS: dict[str, Callable[[], None]] = globals().get("_FORK_HOOKS") or {}


def register_reset_after_fork(hook: Callable[[], None]) -> None:
    """Registers ``hook`` to run in a forked child, after the run-once steps are recreated
    (Note [Fork]: it takes no lock, logs nothing, imports nothing)."""
    _FORK_HOOKS[f"{hook.__module__}.{hook.__qualname__}"] = hook


def _reset_after_fork() -> None:
    for step in list(_ALL):
        step.reset_after_fork()
    for hook in list(_FORK_HOOKS.values()):
        hook()


if not globals().get("_AT_FORK_REGISTERED"):
    # Looked up at fork time: after a reload, the new version runs.
    os.register_at_fork(after_in_child=lambda: _reset_after_fork())
    _AT_FORK_REGISTERED = True
