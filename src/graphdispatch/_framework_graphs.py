"""Framework graphs for the C++ runtime: the adapter over one graph and the factory of them.

The runtime (``csrc/runtime/device_graph.h``) sees a device graph through capture_begin /
capture_end / capture_abort / replay / reset. For framework graphs (``torch.cuda.CUDAGraph``,
``torch.npu.NPUGraph``, ``torch.accelerator.Graph``) those calls land on ``FrameworkGraph``,
made by ``FrameworkGraphFactory`` through the C++ ``PyGraphFactory``, so the extension needs no
device headers and one build serves every device.

Note [Device pools]
One graph pool per device and kind, shared by every entry and held alive by the factory
for the process (an empty graph captured into it, as cudagraph trees keep theirs), so no
reset, eviction or deleted model leaves the next capture pointing at a released pool. Where the
framework refuses the empty graph, the pool lives as long as its graphs, and the capture after
its last graph's release gets a new pool. A failed capture retires the pool: the next capture
gets a new one, whatever the torch version left routed to the old one. Every capture runs
under the capture hold-off (_capture_hold_off.py).

NPU: every captured NPUGraph holds device streams, and torch_npu runs out of them at about
1,900 graphs per device; the factory warns once when a device's live graphs reach
``NPU_GRAPHS_WARNING``.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import torch

from ._capture_hold_off import HOLD_OFF
from ._once import register_reset_after_fork

log = logging.getLogger("graphdispatch")

# Live NPU graphs per device at which the factory warns: torch_npu's device streams run out at
# about 1,900 graphs.
NPU_GRAPHS_WARNING = 1800


def npu_module() -> Any:
    """``torch.npu`` (torch_npu imported), or None."""
    return getattr(torch, "npu", None)


_ALL_FACTORIES: weakref.WeakSet[FrameworkGraphFactory] = weakref.WeakSet()


def _reset_after_fork() -> None:  # Note [Fork] in _once.py
    HOLD_OFF.reset_after_fork()
    for factory in list(_ALL_FACTORIES):
        factory.reset_after_fork()


register_reset_after_fork(_reset_after_fork)


class FrameworkGraph:
    """Adapter over one framework graph object for the C++ runtime.

    Every way out of a capture ends the hold-off, and every failure tells the factory
    (``on_failed``), which retires the pool; no private allocator function is called (case G2).

    ``reserved()``, when given, is the device's reserved allocator memory in bytes: read
    around the capture, its growth is what the capture added to the graph pool (static
    outputs, and intermediates the pool keeps), which ``max_entry_bytes`` counts.
    """

    def __init__(
        self,
        graph: Any,
        capture_kwargs: dict[str, Any],
        spellings: list[Any],
        on_failed: Callable[[], None],
        reserved: Callable[[], int] | None = None,
    ):
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


@dataclasses.dataclass(eq=False)
class _Pool:
    """One device's graph pool: its id, the empty graph holding it alive (None where the
    framework refused one) and how many live graphs were captured into it."""

    id: Any
    holder: Any
    graphs: int = 0


class FrameworkGraphFactory:
    """The factory the C++ ``PyGraphFactory`` calls: makes adapters, one live pool per device.

    Captures use ``capture_error_mode="thread_local"`` (CUDA, NPU and torch.accelerator all
    take it): the runtime captures with the GIL released, and other threads' allocations
    must not invalidate the capture (nor fail because of it).

    ``_new_graph`` and ``_new_pool_handle`` are where the framework is called; tests replace
    them with fakes to check which pool each capture gets and what each failure leaves.
    """

    def __init__(self, kind: str):
        self.name = kind
        self._pools: dict[str, _Pool] = {}
        self._live: dict[str, int] = {}  # device -> live graphs (pool holders not counted)
        self._warned: set[str] = set()  # devices told of NPU_GRAPHS_WARNING
        self._refuses_empty: set[str] = set()  # devices whose framework refused a pool holder
        self._indices: dict[str, int] = {}
        # Reentrant: a graph's release (``_released``) may run wherever its last reference drops.
        self._lock = threading.RLock()
        _ALL_FACTORIES.add(self)

    def reset_after_fork(self) -> None:
        # Runners keep their factory across fork: a new lock and no pools (Note [Fork] in
        # _once.py).
        self._lock = threading.RLock()
        self._pools, self._live = {}, {}
        self._warned, self._refuses_empty = set(), set()

    def _module(self) -> Any:
        return torch.cuda if self.name == "cuda" else npu_module() if self.name == "npu" else None

    def _spellings(self) -> list[Any]:
        """Every public namespace whose ``empty_cache`` empties this kind's device cache."""
        module = self._module()
        if module is None:  # torch.accelerator: its device type's own module too
            accelerator = torch.accelerator.current_accelerator()
            module = getattr(torch, accelerator.type, None) if accelerator else None
        found = [
            module,
            getattr(module, "memory", None),
            torch.accelerator,
            getattr(torch.accelerator, "memory", None),
        ]
        return [namespace for namespace in found if namespace is not None]

    def _new_graph(self, device: str, pool: Any) -> tuple[Any, dict[str, Any]]:
        """A framework graph for ``device`` capturing into ``pool``, with its capture_begin
        kwargs."""
        if self.name == "cuda":
            with torch.cuda.device(torch.device(device)):
                return torch.cuda.CUDAGraph(), {"pool": pool, "capture_error_mode": "thread_local"}
        if self.name == "npu":
            # NPUGraph.capture_begin defaults to "global", as CUDA's does (case G6).
            return npu_module().NPUGraph(), {"pool": pool, "capture_error_mode": "thread_local"}
        # torch.accelerator.Graph takes its pool and mode at construction.
        return torch.accelerator.Graph(pool=pool, capture_error_mode="thread_local"), {}

    def _new_pool_handle(self) -> Any:
        """A new pool id; None where the framework has no handle function (torch.accelerator):
        the graph that holds the pool then makes it."""
        handle = getattr(self._module(), "graph_pool_handle", None)
        return handle() if handle else None

    def _hold(self, device: str, handle: Any) -> Any:
        """An empty graph captured into ``handle``'s pool on ``device`` (raises where the
        framework refuses empty graphs)."""
        holder, kwargs = self._new_graph(device, handle)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "The CUDA Graph is empty"
            holder.capture_begin(**kwargs)
            holder.capture_end()
        return holder

    def _pool(self, device: str) -> _Pool:
        """The device's pool, made with the graph that holds it on first use (case G3).

        A pool id alone keeps nothing alive: the allocators release a pool with its last
        graph, and a later capture into the released id fails the ``use_count > 0`` assert
        (c10/cuda/CUDACachingAllocator.cpp and ATen/core/CachingHostAllocator.h,
        ``create_or_incref``; pytorch#198794). As cudagraph trees do ("Keeps
        Memory Pool Alive", torch/_inductor/cudagraph_trees.py), an empty graph captured into
        the pool holds a use of it in both allocators for as long as the factory uses the pool.
        Where the framework refuses the empty graph, the pool is the graphs' own: ``_released``
        drops it with its last graph, and the next capture takes a new id. Called by
        ``create``, with the runtime's capture stream current and the device's capture lock
        (``capture_lock.h``) held.
        """
        with self._lock:
            pool = self._pools.get(device)
        if pool is None and device in self._refuses_empty:
            pool = _Pool(self._new_pool_handle(), None)
        elif pool is None:
            handle = self._new_pool_handle()
            HOLD_OFF.enter(self._spellings())
            try:
                holder = self._hold(device, handle)
                pool = _Pool(holder.pool(), holder)
            except Exception as error:
                # CUDA captures empty graphs (cudagraph trees rely on it); a framework that
                # refuses one still gets captures, into a pool its graphs alone keep alive:
                # a new id, as the refused capture may have taken and released the first.
                # The message, not the error, is logged: its traceback would hold this
                # frame's caller, and with it the graph whose release drops the pool.
                log.warning(
                    "graphdispatch: %s graphs on %s: an empty graph cannot hold the "
                    "pool (%s); the pool then lives only as long as its graphs",
                    self.name,
                    device,
                    str(error),
                )
                self._refuses_empty.add(device)
                pool = _Pool(self._new_pool_handle(), None)
            finally:
                HOLD_OFF.exit()
            with self._lock:
                pool = self._pools.setdefault(device, pool)
        return pool

    def _released(self, device: str, pool: _Pool) -> None:
        """One graph captured into ``pool`` on ``device`` is gone (reset and dropped)."""
        with self._lock:
            self._live[device] -= 1
            pool.graphs -= 1
            if pool.graphs == 0 and pool.holder is None and self._pools.get(device) is pool:
                del self._pools[device]  # the allocators released it with this graph

    def _retire_pool(self, device: str) -> None:
        """After a failed capture: the next capture on ``device`` gets a new pool.

        Whether the allocators still route to the old pool depends on torch: CUDAGraph's
        capture_end ends the routing before it reports a failed capture since pytorch#180395
        (torch 2.12); before, it raises first and leaves it on, and a later capture into that
        pool fails ("already recording to mempool_id"). Only private allocator functions could
        end that routing, and they are not called: the pool is left to the graphs that hold it.
        """
        with self._lock:
            pool = self._pools.pop(device, None)
        if pool is not None and pool.holder is not None:
            pool.holder.reset()  # its use of the pool; the pool goes with the last graph in it
        if self.name == "cuda" and torch.__version__ < "2.12":
            warnings.warn(
                f"graphdispatch: a CUDA graph capture failed on {device}. torch "
                f"{torch.__version__} keeps routing allocations to its pool after a failed "
                "capture (fixed in torch 2.12, pytorch#180395): torch.cuda.empty_cache() "
                "raises until the process restarts. Later captures use a new pool.",
                RuntimeWarning,
                stacklevel=2,
            )

    def create(self, device: str) -> FrameworkGraph:
        pool = self._pool(device)
        graph, kwargs = self._new_graph(device, pool.id)
        adapter = FrameworkGraph(
            graph,
            kwargs,
            self._spellings(),
            lambda: self._retire_pool(device),
            self._reserved_bytes(device),
        )
        with self._lock:
            pool.graphs += 1
            live = self._live[device] = self._live.get(device, 0) + 1
        # The runtime drops the adapter, and with it the graph, on eviction, clear or a
        # failed capture.
        weakref.finalize(adapter, self._released, device, pool)
        if self.name == "npu" and live >= NPU_GRAPHS_WARNING and device not in self._warned:
            self._warned.add(device)
            log.warning(
                "graphdispatch: %d NPU graphs are live on %s; torch_npu runs out of device "
                "streams at about 1,900: lower max_entries or max_total_entry_bytes",
                live,
                device,
            )
        return adapter

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
