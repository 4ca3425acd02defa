"""Device graph kinds: which can capture on a device, which one a graph gets, and the C++
factory that makes its graphs.

Framework graphs (CUDA, NPU, torch.accelerator) are Python adapters (_framework_graphs.py);
the CPU graph (``CpuGraph``, Note [CPU graph]) and the emulated graph are pure C++; the
``cpp_wrapper`` graph calls Inductor's generated C++ entry (Note [Inductor's C++ entry],
_cpp_wrapper.py). ``auto`` picks, for CPU inputs, the CPU graph on graph_only and the cpp_wrapper
graph on graph_with_compile; the emulated graph is never chosen automatically.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from ._cuda_streams import new_cuda_stream
from ._framework_graphs import FrameworkGraphFactory, npu_module

log = logging.getLogger("graphdispatch")

GRAPH_KINDS = ("cuda", "npu", "accelerator", "cpu", "cpp_wrapper", "emulated")


def unavailable_reason(kind: str, device: torch.device) -> str | None:
    """None when graphs of ``kind`` can capture work on ``device``, else why not."""
    if kind == "emulated":
        return None
    if kind in ("cpu", "cpp_wrapper"):
        return (
            None if device.type == "cpu" else f"{kind} graphs need CPU inputs (inputs on {device})"
        )
    if device.type == "cpu":
        return f"inputs are on the CPU, where {kind} graphs do not exist"
    if kind == "cuda":
        if device.type != "cuda" or not torch.cuda.is_available():
            return f"CUDA graphs need CUDA inputs and a CUDA device (inputs on {device})"
        return None
    if kind == "npu":
        npu = npu_module()
        if device.type != "npu" or npu is None:
            return f"NPU graphs need torch_npu and NPU inputs (inputs on {device})"
        if not (hasattr(npu, "NPUGraph") and hasattr(npu, "graph") and npu.is_available()):
            return "torch.npu.NPUGraph / torch.npu.graph missing or no NPU present"
        return None
    if kind == "accelerator":
        accelerator = (
            torch.accelerator.current_accelerator() if torch.accelerator.is_available() else None
        )
        if accelerator is None or accelerator.type != device.type:
            return f"no accelerator of type {device.type}"
        try:
            torch.accelerator.Graph()
        except Exception as error:  # an accelerator that registers no graph raises here
            return f"torch.accelerator.Graph not constructible: {error}"
        return None
    raise ValueError(f"device_graph: expected one of auto, {', '.join(GRAPH_KINDS)}, got {kind!r}")


def choose_kind(
    requested: str, device: torch.device, compiled: bool = False
) -> tuple[str | None, str]:
    """(kind, reason): the graph kind for ``device``, or (None, why there is none).

    ``compiled``: the graph to capture is Inductor's output (graph_with_compile), which ``auto``
    gives the cpp_wrapper graph on the CPU. A requested kind that cannot hold such a graph is an
    error when the options are resolved (Note [Option combinations] in config.py).
    """
    if requested != "auto":
        reason = unavailable_reason(requested, device)
        return (None, reason) if reason else (requested, f"device_graph={requested!r}")
    if device.type == "cpu":
        if compiled:
            return "cpp_wrapper", "auto: Inductor's C++ wrapper, called from C++, for CPU inputs"
        return "cpu", "auto: the CPU graph for CPU inputs"
    reasons = []
    for kind in ("cuda", "npu", "accelerator"):
        reason = unavailable_reason(kind, device)
        if reason is None:
            return kind, f"auto: {kind} graphs available on {device}"
        reasons.append(reason)
    return None, "no device graph available: " + "; ".join(dict.fromkeys(reasons))


_NO_WARMUP_WARNED: set[str] = set()


def warn_without_warmup(kind: str, warmup_iters: int) -> None:
    """Warns once per kind when a device graph is captured without warmup (case G8)."""
    # The emulated and cpp_wrapper graphs run the work for real when they capture: nothing lazy
    # is baked in.
    if warmup_iters or kind in ("emulated", "cpp_wrapper") or kind in _NO_WARMUP_WARNED:
        return
    _NO_WARMUP_WARNED.add(kind)
    log.warning(
        "graphdispatch: warmup_iters=0 with %s graphs: the first capture then also creates "
        "library handles and workspaces (cuBLAS, cuDNN), which fails or records them into the "
        "graph; keep warmup_iters >= 1 unless every kernel is known to need no lazy setup",
        kind,
    )


def make_factory(kind: str) -> Any:
    """The C++ graph factory for ``kind``."""
    from . import _C

    if kind == "emulated":
        return _C.EmulatedGraphFactory()
    # One factory per compiled function (_cpp_wrapper.graph_factory), never shared.
    assert kind != "cpp_wrapper", "cpp_wrapper graphs are made per compiled function"
    if kind == "cpu":
        from . import _higher_order

        _higher_order.prepare()  # case C71: each higher-order op recorded or refused by name
        return _C.CpuGraphFactory()
    if kind == "cuda":
        _C.set_stream_maker("cuda", new_cuda_stream)
    return _C.PyGraphFactory(FrameworkGraphFactory(kind))
