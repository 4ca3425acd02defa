"""graphdispatch: a torch.compile backend that captures each input signature into a device
graph once and replays it with one launch per call.

    torch.compile(model, backend="graphdispatch", options={"graph_with_compile": True})
    torch.compile(model, backend=graphdispatch.Backend(graph_only=True, max_entries=8))

Importing this package loads neither torch._dynamo, torch._inductor nor sympy, and initializes
no device (Note [Lazy loading] in _registration.py): the backend and the C++ extension load on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import config

if TYPE_CHECKING:
    from ._backend import Backend

__all__ = [
    "Backend",
    "check_options",
    "config",
    "explain",
    "reset",
    "stats",
    "warm_start",
    "warmup",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name == "Backend":
        from ._backend import Backend

        return Backend
    raise AttributeError(f"module 'graphdispatch' has no attribute {name!r}")


def check_options(options: Any = None, *, mode: Any = None, **kwargs: Any) -> dict[str, Any]:
    """Validates options as a compile would and returns the resolved set; imports nothing heavy.

    ``graphdispatch.check_options({"max-entries": 4}, mode="reduce-overhead")`` raises the
    TypeError/ValueError that ``torch.compile(..., backend="graphdispatch", options=...)``
    would raise at its first call (wrapped there by Dynamo), naming the key and listing the
    valid ones.
    """
    return config.check(options, mode=mode, **kwargs)


def explain(model_or_fn: Any, *args: Any, options: Any = None, **kwargs: Any) -> Any:
    """Compiles ``model_or_fn`` with this backend, calls it once, and returns a report of the
    graphs, graph breaks, routes, inputs, entries and fallbacks (``graphdispatch._diagnose``;
    ``str()`` is readable, ``.to_dict()`` the data). See docs/diagnosing.md."""
    from ._diagnose import explain as _explain

    return _explain(model_or_fn, *args, options=options, **kwargs)


def warmup(
    compiled: Any, inputs: Any, *, progress: bool = True, grad: bool = False
) -> dict[str, Any]:
    """Calls ``compiled`` once per input set in ``inputs``, largest first, so every signature is
    captured before serving; a tqdm bar on a terminal; returns the ``stats()`` delta (details
    in ``graphdispatch.serving``)."""
    from .serving import warmup as _warmup

    return _warmup(compiled, inputs, progress=progress, grad=grad)


def warm_start(
    model: Any,
    inputs: Any,
    *,
    cache_dir: Any,
    options: Any = None,
    progress: bool = True,
    grad: bool = False,
) -> Any:
    """Loads from ``cache_dir`` a saved compiled function of ``model`` per input set in
    ``inputs`` (as ``warmup`` takes them), compiles and saves those it lacks, calls each once;
    returns a callable served like the model (``.report``: loaded or compiled per input set,
    ``.stats``: the warm-up's ``stats()`` delta). Keyed by the torch and graphdispatch
    versions, the model's code, config and tensors' shapes, the options, grad mode and the
    input signature; a file that cannot be used is compiled afresh with a warning saying why
    (docs/usage.md, "Warm start")."""
    from ._warm_cache import warm_start as _warm_start

    return _warm_start(
        model, inputs, cache_dir=cache_dir, options=options, progress=progress, grad=grad
    )


def stats() -> dict[str, Any]:
    """Counters since start or the last ``reset()``.

    Keys: captures, replays, cache_hits and cache_misses (lookups of a signature; a hit on a
    negative entry, one whose capture was refused or failed, counts as a hit and as a fallback;
    a thread that found nothing and then waited for another thread's capture of the same
    signature counts as a miss), evictions (by max_entries, max_entry_bytes or
    max_total_entry_bytes), copies_skipped, bytes_copied (bytes of dynamic inputs copied into
    entry buffers), recaptures (captures after a tensor read in place was freed or replaced,
    bounded by max_recaptures), verified_replays (replays checked against the non-graph path,
    verify_replays), held_outputs_copied (unsafe outputs still referenced when their entry
    replayed again, copied into memory of their own first), fallbacks ({reason: calls served by
    the non-graph path}, the reasons of ``_C.fallback_reasons()``, listed in docs/diagnosing.md,
    "Fallback reasons and what to do"), routes ({route: graphs compiled since the last reset}),
    graph_passes ({pass name: rewrites the ``graph_passes`` option's passes reported since the
    last reset}), fast_path ({"calls": module calls that ran Dynamo's compiled code directly,
    "through_dynamo": {reason: module calls the fast path sent through Dynamo}}, docs/usage.md,
    "The fast path"); and gauges that reset() leaves alone: entries (captured entries alive now),
    entry_bytes (bytes they hold: input buffers plus graph memory, the CPU graph's shared
    workspace counted once) and workspace_bytes (that workspace: its live blocks).
    Counters are per process; a forked child starts from zero (it keeps the workspace blocks it
    inherited).
    """
    from . import _C, _fast_path
    from ._backend import pass_counts, route_counts

    out = _C.stats()
    out["routes"] = route_counts()
    out["graph_passes"] = pass_counts()
    out["fast_path"] = _fast_path.counts()
    return out


def reset() -> None:
    """Clears every runner's cached graphs (graphs reset, buffers freed) and all counters."""
    from . import _C, _fast_path
    from ._backend import clear_caches

    clear_caches()
    _C.reset_stats()
    _fast_path.reset_counts()
