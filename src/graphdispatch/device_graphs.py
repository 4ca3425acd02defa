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
from typing import Any, Callable

import torch

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


class _FrameworkGraph:
    """Adapter over one framework graph object for the C++ runtime."""

    def __init__(self, graph: Any, pool: Any, module: Any, on_captured: Callable[[Any], None]):
        self._graph = graph
        self._pool = pool
        self._module = module
        self._on_captured = on_captured
        self.replay = graph.replay  # the framework's own method: replay is the hot path

    def capture_begin(self) -> None:
        HOLD_OFF.enter(self._module)
        try:
            if self._pool is None:
                self._graph.capture_begin()
            else:
                self._graph.capture_begin(pool=self._pool)
        except BaseException:
            HOLD_OFF.exit()
            raise

    def capture_end(self) -> None:
        try:
            self._graph.capture_end()
            self._on_captured(self._graph)
        finally:
            HOLD_OFF.exit()

    def capture_abort(self) -> None:
        try:
            self._graph.capture_end()  # raises for an invalidated capture; the stream is freed either way
        except Exception:
            pass
        finally:
            HOLD_OFF.exit()

    def reset(self) -> None:
        self._graph.reset()


class FrameworkGraphs:
    """The factory the C++ ``PyGraphFactory`` calls: makes adapters, one pool per device."""

    def __init__(self, kind: str):
        self.name = kind
        self._pools: dict[str, Any] = {}
        self._lock = threading.Lock()

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

    def create(self, device: str) -> _FrameworkGraph:
        pool = self._pool(device)
        if self.name == "cuda":
            with torch.cuda.device(torch.device(device)):
                graph = torch.cuda.CUDAGraph()
        elif self.name == "npu":
            graph = _npu_module().NPUGraph()
        else:
            graph = torch.accelerator.Graph(pool=pool) if pool is not None else torch.accelerator.Graph()
            pool = None  # torch.accelerator.Graph takes its pool at construction
        return _FrameworkGraph(graph, pool, self._module(),
                               lambda g: self._remember_pool(device, g))

    def is_capturing(self, device: str) -> bool:
        if self.name == "cuda":
            return torch.cuda.is_current_stream_capturing()
        if self.name == "npu":
            return bool(getattr(_npu_module(), "is_current_stream_capturing", lambda: False)())
        return False


def make_factory(kind: str) -> Any:
    """The C++ graph factory for ``kind``."""
    from . import _C

    if kind == "emulated":
        return _C.EmulatedGraphFactory()
    return _C.PyGraphFactory(FrameworkGraphs(kind))
