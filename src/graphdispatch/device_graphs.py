"""Device graph kinds: which are available, and the adapters the C++ runtime drives.

The runtime (``csrc/runtime/device_graph.h``) sees a device graph through capture_begin /
capture_end / capture_abort / replay / reset. For framework graphs (``torch.cuda.CUDAGraph``,
``torch.npu.NPUGraph``, ``torch.accelerator.Graph``) those calls land on the small adapters
below, so the extension needs no device headers and one build serves every device. The
emulated graph is pure C++ (``EmulatedGraph``) and is never chosen automatically.

Pools: one graph pool per device, shared by every entry (seed 000's ``graph_pool_handle()``).
During a capture, garbage collection and the device's ``empty_cache`` are held off — a
scoped, re-entrant hold restored on every exit path, never a patch left behind by an error.
"""

from __future__ import annotations

import gc
import threading
import weakref
from typing import Any, Callable

import torch

from ._once import at_fork_in_child

GRAPH_KINDS = ("cuda", "npu", "accelerator", "emulated")


def _npu_module() -> Any:
    return getattr(torch, "npu", None)


def unavailable_reason(kind: str, device: torch.device) -> str | None:
    """None when graphs of ``kind`` can capture work on ``device``, else why not."""
    if kind == "emulated":
        return None
    if device.type == "cpu":
        return f"inputs are on the CPU, where {kind} graphs do not exist"
    if kind == "cuda":
        if device.type != "cuda" or not torch.cuda.is_available():
            return f"CUDA graphs need CUDA inputs and a CUDA device (inputs on {device})"
        return None
    if kind == "npu":
        npu = _npu_module()
        if device.type != "npu" or npu is None:
            return f"NPU graphs need torch_npu and NPU inputs (inputs on {device})"
        if not (hasattr(npu, "NPUGraph") and hasattr(npu, "graph") and npu.is_available()):
            return "torch.npu.NPUGraph / torch.npu.graph missing or no NPU present"
        return None
    if kind == "accelerator":
        accelerator = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
        if accelerator is None or accelerator.type != device.type:
            return f"no accelerator of type {device.type}"
        try:
            torch.accelerator.Graph()
        except Exception as error:  # an accelerator that registers no graph raises here
            return f"torch.accelerator.Graph not constructible: {error}"
        return None
    raise ValueError(f"device_graph: expected one of auto, {', '.join(GRAPH_KINDS)}, got {kind!r}")


def choose_kind(requested: str, device: torch.device) -> tuple[str | None, str]:
    """(kind, reason): the graph kind for ``device``, or (None, why there is none)."""
    if requested != "auto":
        reason = unavailable_reason(requested, device)
        return (None, reason) if reason else (requested, f"device_graph={requested!r}")
    reasons = []
    for kind in ("cuda", "npu", "accelerator"):
        reason = unavailable_reason(kind, device)
        if reason is None:
            return kind, f"auto: {kind} graphs available on {device}"
        reasons.append(reason)
    return None, "no device graph available: " + "; ".join(dict.fromkeys(reasons))


class _CaptureHoldOff:
    """Holds off ``gc.collect`` and the device's ``empty_cache`` while captures run.

    Re-entrant and thread-aware through a depth counter under a lock; the last exit restores
    exactly what the first entry found.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._gc_was_enabled = False
        self._saved: list[tuple[Any, str, Any]] = []

    def enter(self, module: Any) -> None:
        with self._lock:
            if self._depth == 0:
                self._gc_was_enabled = gc.isenabled()
                gc.disable()
                if module is not None and hasattr(module, "empty_cache"):
                    self._saved.append((module, "empty_cache", module.empty_cache))
                    module.empty_cache = _no_empty_cache
            self._depth += 1

    def exit(self) -> None:
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                for module, name, value in reversed(self._saved):
                    setattr(module, name, value)
                self._saved.clear()
                if self._gc_was_enabled:
                    gc.enable()

    def reset_after_fork(self) -> None:
        # A capture a parent thread was running at fork does not exist in the child: undo its
        # hold-off without the lock (a parent thread may have held it).
        if self._depth:
            for module, name, value in reversed(self._saved):
                setattr(module, name, value)
            if self._gc_was_enabled:
                gc.enable()
        self.__init__()


def _no_empty_cache() -> None:
    """Stand-in for empty_cache during a capture: freeing pool memory mid-capture breaks it."""


HOLD_OFF = _CaptureHoldOff()
_ALL_FACTORIES: "weakref.WeakSet[FrameworkGraphs]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    HOLD_OFF.reset_after_fork()
    for factory in list(_ALL_FACTORIES):
        factory._after_fork_in_child()


at_fork_in_child(_after_fork_in_child)


class _FrameworkGraph:
    """Adapter over one framework graph object for the C++ runtime.

    ``reserved()``, when given, is the device's reserved allocator memory in bytes: read
    around the capture, its growth is what the capture added to the graph pool (static
    outputs, and intermediates the pool keeps), which ``max_entry_bytes`` counts.
    """

    def __init__(self, graph: Any, capture_kwargs: dict[str, Any], module: Any,
                 on_captured: Callable[[Any], None], on_failed: Callable[[Any], None],
                 reserved: Callable[[], int] | None = None):
        self._graph = graph
        self._capture_kwargs = capture_kwargs
        self._module = module
        self._on_captured = on_captured
        self._on_failed = on_failed
        self._reserved = reserved
        self._reserved_before = 0
        self._pool_bytes: int | None = None
        self.replay = graph.replay  # the framework's own method: replay is the hot path

    def capture_begin(self) -> None:
        HOLD_OFF.enter(self._module)
        try:
            if self._reserved is not None:
                self._reserved_before = self._reserved()
            self._graph.capture_begin(**self._capture_kwargs)
        except BaseException:
            HOLD_OFF.exit()
            raise

    def capture_end(self) -> None:
        try:
            self._graph.capture_end()
            if self._reserved is not None:
                # A pool shared with earlier captures may serve this one from blocks it holds.
                self._pool_bytes = max(0, self._reserved() - self._reserved_before)
            self._on_captured(self._graph)
        finally:
            HOLD_OFF.exit()

    def pool_bytes(self) -> int | None:
        """Bytes the capture added to the pool, or None when not measured."""
        return self._pool_bytes

    def capture_abort(self) -> None:
        try:
            self._graph.capture_end()  # raises for an invalidated capture; the stream is freed either way
        except Exception:
            self._on_failed(self._graph)
        finally:
            HOLD_OFF.exit()

    def reset(self) -> None:
        self._graph.reset()


class FrameworkGraphs:
    """The factory the C++ ``PyGraphFactory`` calls: makes adapters, one pool per device.

    Captures use ``capture_error_mode="thread_local"`` where the framework takes it: the
    runtime captures with the GIL released, and other threads' allocations must not
    invalidate the capture (nor fail because of it).
    """

    def __init__(self, kind: str):
        self.name = kind
        self._pools: dict[str, Any] = {}
        self._indices: dict[str, int] = {}
        self._lock = threading.Lock()
        _ALL_FACTORIES.add(self)

    def _after_fork_in_child(self) -> None:
        # Runners keep their factory across fork: give it a new lock (a parent thread may
        # hold the old one) and no pools (they belong to the parent's device context).
        self._lock = threading.Lock()
        self._pools = {}

    def _module(self) -> Any:
        return torch.cuda if self.name == "cuda" else _npu_module() if self.name == "npu" else None

    def _pool(self, device: str) -> Any:
        with self._lock:
            if device not in self._pools:
                module = self._module()
                handle = getattr(module, "graph_pool_handle", None) if module else None
                self._pools[device] = handle() if handle else None
            return self._pools[device]

    def _remember_pool(self, device: str, graph: Any) -> None:
        # torch.accelerator has no pool-handle function: share the first graph's pool.
        with self._lock:
            if self._pools.get(device) is None and hasattr(graph, "pool"):
                self._pools[device] = graph.pool()

    def _forget_pool(self, device: str, graph: Any) -> None:
        """After a failed capture: hand the pool back to the allocator and start a new one.

        CUDA's capture_end raises on an invalidated capture before it stops routing this
        stream's allocations to the pool, so that is done here; the next capture on the device
        gets a fresh pool rather than one the failed graph may still hold.
        """
        if self.name == "cuda":
            try:
                torch._C._cuda_endAllocateToPool(torch.device(device).index or 0, graph.pool())
            except Exception:  # nothing was routed (the failure came before allocation)
                pass
        with self._lock:
            self._pools.pop(device, None)

    def create(self, device: str) -> _FrameworkGraph:
        pool = self._pool(device)
        if self.name == "cuda":
            with torch.cuda.device(torch.device(device)):
                graph = torch.cuda.CUDAGraph()
            kwargs = {"pool": pool, "capture_error_mode": "thread_local"}
        elif self.name == "npu":
            graph = _npu_module().NPUGraph()
            kwargs = {"pool": pool}
        else:  # torch.accelerator.Graph takes its pool and mode at construction
            graph = torch.accelerator.Graph(pool=pool, capture_error_mode="thread_local")
            kwargs = {}
        return _FrameworkGraph(graph, kwargs, self._module(),
                               lambda g: self._remember_pool(device, g),
                               lambda g: self._forget_pool(device, g),
                               self._reserved_bytes(device))

    def _reserved_bytes(self, device: str) -> Callable[[], int] | None:
        """The device's reserved allocator bytes, as a function; None if it has no query."""
        module = self._module() if self.name != "accelerator" else torch.accelerator
        query = getattr(module, "memory_reserved", None)
        if query is None:
            return None
        index = torch.device(device).index or 0
        return lambda: int(query(index))

    def is_capturing(self, device: str) -> bool:
        """Whether the current stream of ``device`` (not of the current device) is capturing."""
        if self.name == "accelerator":
            return False  # torch.accelerator has no query for it
        module = self._module()
        query = getattr(module, "is_current_stream_capturing", None)
        if query is None:
            return False
        index = self._indices.get(device)
        if index is None:
            index = self._indices.setdefault(device, torch.device(device).index or 0)
        if index == module.current_device():
            return bool(query())
        with module.device(index):
            return bool(query())


def make_factory(kind: str) -> Any:
    """The C++ graph factory for ``kind``."""
    from . import _C

    if kind == "emulated":
        return _C.EmulatedGraphFactory()
    return _C.PyGraphFactory(FrameworkGraphs(kind))
