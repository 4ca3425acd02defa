"""Device graph kinds: which are available, and the adapters the C++ runtime drives.

The runtime (``csrc/runtime/device_graph.h``) sees a device graph through capture_begin /
capture_end / capture_abort / replay / reset. For framework graphs (``torch.cuda.CUDAGraph``,
``torch.npu.NPUGraph``, ``torch.accelerator.Graph``) those calls land on the small adapters
below, so the extension needs no device headers and one build serves every device. The CPU
graph (``CpuGraph``, Note [CPU graph]) and the emulated graph are pure C++; ``auto`` picks the
CPU graph for CPU inputs on graph_only, the emulated graph is never chosen automatically.

Pools: one graph pool per device and kind, shared by every entry and held alive by the factory
for the process (an empty graph captured into it, as cudagraph trees keep theirs), so no
reset, eviction or deleted model leaves the next capture pointing at a released pool. A failed
capture retires the pool: the next capture gets a new one, whatever the torch version left
routed to the old one. During a capture, garbage collection and every public ``empty_cache``
of the device are held off — a scoped, re-entrant hold restored on every exit path, never a
patch left behind by an error.

Streams: on CUDA the runtime's copy, warmup and capture streams are made here, outside c10's
stream pool, so no user's ``torch.cuda.Stream()`` is ever one of them (case G8).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import threading
import warnings
import weakref
from typing import Any, Callable, Iterable

import torch

from ._once import at_fork_in_child

log = logging.getLogger("graphdispatch")

GRAPH_KINDS = ("cuda", "npu", "accelerator", "cpu", "emulated")


def _npu_module() -> Any:
    return getattr(torch, "npu", None)


def unavailable_reason(kind: str, device: torch.device) -> str | None:
    """None when graphs of ``kind`` can capture work on ``device``, else why not."""
    if kind == "emulated":
        return None
    if kind == "cpu":
        return None if device.type == "cpu" else f"CPU graphs need CPU inputs (inputs on {device})"
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


# Inductor's CPU code calls its generated C++ kernels directly, not through the dispatcher, so a
# CPU graph would record the extern kernels around them and miss the rest.
INDUCTOR_ON_CPU = ("Inductor's CPU kernels are not dispatcher ops, which a CPU graph records; "
                   "Inductor's code runs without a graph (use graph_only for a CPU graph)")


def choose_kind(requested: str, device: torch.device,
                compiled: bool = False) -> tuple[str | None, str]:
    """(kind, reason): the graph kind for ``device``, or (None, why there is none).

    ``compiled``: the graph to capture is Inductor's output (graph_with_compile), which the CPU
    graph cannot record.
    """
    if requested == "cpu" and compiled:
        return None, INDUCTOR_ON_CPU
    if requested != "auto":
        reason = unavailable_reason(requested, device)
        return (None, reason) if reason else (requested, f"device_graph={requested!r}")
    if device.type == "cpu":
        return (None, INDUCTOR_ON_CPU) if compiled else ("cpu", "auto: the CPU graph for CPU inputs")
    reasons = []
    for kind in ("cuda", "npu", "accelerator"):
        reason = unavailable_reason(kind, device)
        if reason is None:
            return kind, f"auto: {kind} graphs available on {device}"
        reasons.append(reason)
    return None, "no device graph available: " + "; ".join(dict.fromkeys(reasons))


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
                        held is not namespace for held, _ in self._saved):
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
        # A capture a parent thread was running at fork does not exist in the child: undo its
        # hold-off without the lock (a parent thread may have held it).
        if self._depth:
            self._restore()
        self.__init__()


def _no_empty_cache() -> None:
    """Stand-in for empty_cache during a capture: freeing pool memory mid-capture breaks it."""


HOLD_OFF = _CaptureHoldOff()
_ALL_FACTORIES: "weakref.WeakSet[FrameworkGraphs]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    HOLD_OFF.reset_after_fork()
    for factory in list(_ALL_FACTORIES):
        factory.reset_after_fork()


at_fork_in_child(_after_fork_in_child)


class _FrameworkGraph:
    """Adapter over one framework graph object for the C++ runtime.

    Every way out of a capture ends the hold-off, and every failure tells the factory
    (``on_failed``), which retires the pool; no private allocator function is called (case G2).

    ``reserved()``, when given, is the device's reserved allocator memory in bytes: read
    around the capture, its growth is what the capture added to the graph pool (static
    outputs, and intermediates the pool keeps), which ``max_entry_bytes`` counts.
    """

    def __init__(self, graph: Any, capture_kwargs: dict[str, Any], spellings: list[Any],
                 on_failed: Callable[[], None], reserved: Callable[[], int] | None = None):
        self._graph = graph
        self._capture_kwargs = capture_kwargs
        self._spellings = spellings
        self._on_failed = on_failed
        self._reserved = reserved
        self._reserved_before = 0
        self._pool_bytes: int | None = None
        self.replay = graph.replay  # the framework's own method: replay is the hot path

    def capture_begin(self) -> None:
        HOLD_OFF.enter(self._spellings)
        try:
            if self._reserved is not None:
                self._reserved_before = self._reserved()
            # CUDAGraph.capture_begin routes the allocator to the pool before it starts the
            # stream capture (aten/src/ATen/cuda/CUDAGraph.cpp), so a failure here may leave
            # routing on as well.
            self._graph.capture_begin(**self._capture_kwargs)
        except BaseException:
            try:
                self._on_failed()
            finally:
                HOLD_OFF.exit()
            raise

    def capture_end(self) -> None:
        try:
            self._graph.capture_end()
            if self._reserved is not None:
                # A pool shared with earlier captures may serve this one from blocks it holds.
                self._pool_bytes = max(0, self._reserved() - self._reserved_before)
        except BaseException:
            self._on_failed()
            raise
        finally:
            HOLD_OFF.exit()

    def pool_bytes(self) -> int | None:
        """Bytes the capture added to the pool, or None when not measured."""
        return self._pool_bytes

    def capture_abort(self) -> None:
        try:
            # Ends the stream's capture. It raises for an invalidated capture (after ending
            # it); a capture the model's own exception interrupted ends cleanly, routing
            # included, and this graph object is then dropped.
            self._graph.capture_end()
        except Exception:
            self._on_failed()
        finally:
            HOLD_OFF.exit()

    def reset(self) -> None:
        self._graph.reset()


_NO_WARMUP_WARNED: set[str] = set()


def warn_without_warmup(kind: str, warmup_iters: int) -> None:
    """Warns once per kind when a device graph is captured without warmup (case G8)."""
    if warmup_iters or kind == "emulated" or kind in _NO_WARMUP_WARNED:
        return
    _NO_WARMUP_WARNED.add(kind)
    log.warning(
        "graphdispatch: warmup_iters=0 with %s graphs: the first capture then also creates "
        "library handles and workspaces (cuBLAS, cuDNN), which fails or records them into the "
        "graph; keep warmup_iters >= 1 unless every kernel is known to need no lazy setup", kind)


_CUDART: list[Any] = []


def _cudart() -> Any:
    """The CUDA runtime library torch loaded (found in /proc/self/maps), or None."""
    if not _CUDART:
        path = None
        try:
            with open("/proc/self/maps") as maps:
                for line in maps:
                    if "/libcudart.so" in line:
                        path = line.split()[-1]
                        break
        except OSError:
            pass
        _CUDART.append(ctypes.CDLL(path) if path else None)
    return _CUDART[0]


def new_cuda_stream(device: str) -> int | None:
    """The stream id of a new CUDA stream on ``device``, for the runtime's pipeline (case G8).

    c10's stream pool hands its 32 streams per priority round-robin to every caller
    (``getStreamFromPool``, c10/cuda/CUDAStream.cpp; ``torch.cuda.Stream()`` takes one), so a
    pool stream is eventually also a user's. This one comes from the CUDA runtime itself,
    non-blocking as the pool's are, wrapped as ``torch.cuda.ExternalStream``; it lives for the
    process. None (c10's pool then serves, with a log line) when torch's CUDA runtime is not a
    loaded shared library.
    """
    cudart = _cudart()
    if cudart is None:
        log.info("graphdispatch: libcudart not found among loaded libraries; %s uses c10's "
                 "stream pool, which user streams share", device)
        return None
    index = torch.device(device).index or 0
    stream = ctypes.c_void_p()
    with torch.cuda.device(index):
        error = cudart.cudaStreamCreateWithFlags(ctypes.byref(stream), 1)  # cudaStreamNonBlocking
    if error != 0:
        log.info("graphdispatch: cudaStreamCreateWithFlags failed (error %d) on %s; c10's "
                 "stream pool serves", error, device)
        return None
    return torch.cuda.ExternalStream(stream.value, device=index).stream_id


class FrameworkGraphs:
    """The factory the C++ ``PyGraphFactory`` calls: makes adapters, one live pool per device.

    Captures use ``capture_error_mode="thread_local"`` (CUDA, NPU and torch.accelerator all
    take it): the runtime captures with the GIL released, and other threads' allocations
    must not invalidate the capture (nor fail because of it).

    ``_new_graph`` and ``_new_pool_handle`` are where the framework is called; tests replace
    them with fakes to check which pool each capture gets and what each failure leaves.
    """

    def __init__(self, kind: str):
        self.name = kind
        self._pools: dict[str, tuple[Any, Any]] = {}  # device -> (pool id, the graph holding it)
        self._indices: dict[str, int] = {}
        self._lock = threading.Lock()
        _ALL_FACTORIES.add(self)

    def reset_after_fork(self) -> None:
        # Runners keep their factory across fork: give it a new lock (a parent thread may
        # hold the old one) and no pools (they belong to the parent's device context).
        self._lock = threading.Lock()
        self._pools = {}

    def _module(self) -> Any:
        return torch.cuda if self.name == "cuda" else _npu_module() if self.name == "npu" else None

    def _spellings(self) -> list[Any]:
        """Every public namespace whose ``empty_cache`` empties this kind's device cache."""
        module = self._module()
        if module is None:  # torch.accelerator: its device type's own module too
            accelerator = torch.accelerator.current_accelerator()
            module = getattr(torch, accelerator.type, None) if accelerator else None
        found = [module, getattr(module, "memory", None), torch.accelerator,
                 getattr(torch.accelerator, "memory", None)]
        return [namespace for namespace in found if namespace is not None]

    def _new_graph(self, device: str, pool: Any) -> tuple[Any, dict[str, Any]]:
        """A framework graph for ``device`` capturing into ``pool``, and its capture_begin kwargs."""
        if self.name == "cuda":
            with torch.cuda.device(torch.device(device)):
                return torch.cuda.CUDAGraph(), {"pool": pool, "capture_error_mode": "thread_local"}
        if self.name == "npu":
            # NPUGraph.capture_begin defaults to "global", as CUDA's does (case G6).
            return _npu_module().NPUGraph(), {"pool": pool, "capture_error_mode": "thread_local"}
        # torch.accelerator.Graph takes its pool and mode at construction.
        return torch.accelerator.Graph(pool=pool, capture_error_mode="thread_local"), {}

    def _new_pool_handle(self) -> Any:
        """A new pool id; None where the framework has no handle function (torch.accelerator):
        the graph that holds the pool then makes it."""
        handle = getattr(self._module(), "graph_pool_handle", None)
        return handle() if handle else None

    def _pool(self, device: str) -> Any:
        """The device's pool id, made with the graph that holds it on first use (case G3).

        A pool id alone keeps nothing alive: the allocators release a pool with its last
        graph, and a later capture into the released id fails the ``use_count > 0`` assert
        (c10/cuda/CUDACachingAllocator.cpp and ATen/core/CachingHostAllocator.h,
        ``create_or_incref``; pytorch#198794). As cudagraph trees do ("Keeps Memory Pool
        Alive", torch/_inductor/cudagraph_trees.py), an empty graph captured into the pool
        holds a use of it in both allocators for as long as the factory uses the pool.
        Called by ``create``, with the runtime's capture stream current and its capture
        mutex held.
        """
        with self._lock:
            held = self._pools.get(device)
        if held is None:
            handle = self._new_pool_handle()
            holder, kwargs = self._new_graph(device, handle)
            HOLD_OFF.enter(self._spellings())
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "The CUDA Graph is empty"
                    holder.capture_begin(**kwargs)
                    holder.capture_end()
                held = (holder.pool(), holder)
            except Exception as error:
                # CUDA captures empty graphs (cudagraph trees rely on it); a framework that
                # refuses one still gets captures, into a pool its graphs alone keep alive.
                log.warning("graphdispatch: %s graphs on %s: an empty graph cannot hold the "
                            "pool (%s); the pool then lives only as long as its graphs",
                            self.name, device, error)
                held = (handle, None)
            finally:
                HOLD_OFF.exit()
            with self._lock:
                held = self._pools.setdefault(device, held)
        return held[0]

    def _retire_pool(self, device: str) -> None:
        """After a failed capture: the next capture on ``device`` gets a new pool.

        Whether the allocators still route to the old pool depends on torch: CUDAGraph's
        capture_end ends the routing before it reports a failed capture since pytorch#180395
        (torch 2.12); before, it raises first and leaves it on, and a later capture into that
        pool fails ("already recording to mempool_id"). Only private allocator functions could
        end that routing, and they are not called: the pool is left to the graphs that hold it.
        """
        with self._lock:
            held = self._pools.pop(device, None)
        if held is not None and held[1] is not None:
            held[1].reset()  # its use of the pool; the pool goes with the last graph in it
        if self.name == "cuda" and torch.__version__ < "2.12":
            warnings.warn(
                f"graphdispatch: a CUDA graph capture failed on {device}. torch "
                f"{torch.__version__} keeps routing allocations to its pool after a failed "
                "capture (fixed in torch 2.12, pytorch#180395): torch.cuda.empty_cache() "
                "raises until the process restarts. Later captures use a new pool.",
                RuntimeWarning, stacklevel=2)

    def create(self, device: str) -> _FrameworkGraph:
        graph, kwargs = self._new_graph(device, self._pool(device))
        return _FrameworkGraph(graph, kwargs, self._spellings(),
                               lambda: self._retire_pool(device), self._reserved_bytes(device))

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
        # torch.accelerator has no query; its device type's module may (torch.xpu has one).
        module = self._module() or getattr(torch, torch.device(device).type, None)
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
    if kind == "cpu":
        return _C.CpuGraphFactory()
    if kind == "cuda":
        _C.set_stream_maker("cuda", new_cuda_stream)
    return _C.PyGraphFactory(FrameworkGraphs(kind))
