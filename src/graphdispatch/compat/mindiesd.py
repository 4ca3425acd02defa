"""MindIE-SD's ACLGraph entry points, served by graphdispatch: switch by changing one import.

MindIE-SD turns graph dispatch on like this (docs/design.md, "The anchor"); only the import line
changes::

    from graphdispatch.compat.mindiesd import MindieSDBackend, CompilationConfig
    CompilationConfig.aclgraph_only = True            # scenario A: capture the graph as is
    # CompilationConfig.aclgraph_with_compile = True  # scenario B: compile, then capture
    compiled = torch.compile(model, backend=MindieSDBackend())

From MindIE-SD: the five switches of ``CompilationConfig`` with their defaults, the routing rule
of ``mindie_sd_backend.py`` (with_compile and graphs available → compile, then capture; only
and graphs available → capture; otherwise the default route, aot_autograd + Inductor), and
``npu_graph_available`` (``torch.npu.NPUGraph`` and ``torch.npu.graph`` must both exist).

Ours: the switches are ``graphdispatch.config``'s options under MindIE-SD's names (setting one
sets the other, values are checked, an unknown name raises); "compile" is Inductor, since
MindIE-SD's pattern fusion is not part of graphdispatch; graphs are available per device (CUDA,
NPU as in MindIE-SD, ``torch.accelerator``; on the CPU the CPU graph, and on graph_with_compile
Inductor's C++ wrapper); a fallback to the default route is logged and counted in
``graphdispatch.stats()["routes"]``. docs/migrating.md lists where graphdispatch is stricter.

Importing this module loads only ``graphdispatch.config``: the backend loads at the first
compile (Note [Lazy loading] in _registration.py).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from typing import Any

from .. import config

__all__ = ["CompilationConfig", "MindieSDBackend", "create_aclgraph_backend", "npu_graph_available"]

# MindIE-SD's switches (its compiliation_config.py). Each is a graphdispatch.config attribute: an
# alias of graph_only, graph_with_compile, lazy_capture, max_entries, or safe_output_mode itself.
SWITCHES = (
    "aclgraph_only",
    "aclgraph_with_compile",
    "aclgraph_lazy_capture",
    "aclgraph_max_entries",
    "safe_output_mode",
)


def _switch(name: str) -> str:
    if name in SWITCHES:
        return name
    close = difflib.get_close_matches(name, SWITCHES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise AttributeError(
        f"CompilationConfig has no switch {name!r}{hint}; switches: {', '.join(SWITCHES)}"
    )


class _Switches(type):
    """Class-attribute access of ``CompilationConfig``, forwarded to ``graphdispatch.config``."""

    def __getattr__(cls, name: str) -> Any:  # only for names the class does not have
        return getattr(config, _switch(name))

    def __setattr__(cls, name: str, value: Any) -> None:
        setattr(config, _switch(name), value)

    def __delattr__(cls, name: str) -> None:
        raise AttributeError(f"CompilationConfig.{name} cannot be deleted; assign its default")

    def __dir__(cls) -> list[str]:
        return sorted(set(super().__dir__()) | set(SWITCHES))


class CompilationConfig(metaclass=_Switches):
    """MindIE-SD's switches (docs/design.md, "The anchor"), one process-wide set as its class
    attributes are.

    ``aclgraph_only`` (False), ``aclgraph_with_compile`` (False), ``aclgraph_lazy_capture``
    (False), ``aclgraph_max_entries`` (0 = unbounded, FIFO eviction) and ``safe_output_mode``
    (True) read and write ``graphdispatch.config``'s ``graph_only``, ``graph_with_compile``,
    ``lazy_capture``, ``max_entries`` and ``safe_output_mode``, so a value is checked when it is
    set (``aclgraph_max_entries = -1`` raises ValueError, ``aclgraph_only = 1`` TypeError) and an
    unknown switch raises AttributeError. The same holds on an instance.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(type(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(type(self), name, value)


class MindieSDBackend:
    """``torch.compile(model, backend=MindieSDBackend())``, routed by ``CompilationConfig``.

    MindIE-SD's rule, applied to each graph Dynamo hands over: ``aclgraph_with_compile`` and a
    device graph for the inputs' device → Inductor, then capture; ``aclgraph_only`` and a device
    graph → capture the graph as is; otherwise the default route. The switches are read at each
    compile, as MindIE-SD reads its config.
    """

    compiler_name = "graphdispatch"

    def __call__(self, gm: Any, example_inputs: Sequence[Any], **kwargs: Any) -> Callable:
        from .._backend import Backend

        # No options of its own: an empty Backend resolves every option from graphdispatch.config.
        return Backend()(gm, example_inputs, **kwargs)

    def reset(self) -> None:
        from .._backend import clear_caches

        clear_caches()


def create_aclgraph_backend() -> Callable:
    """The ACLGraph capture backend alone (MindIE-SD's ``create_aclgraph_backend()``).

    It captures the FX graph it is given as is, whatever ``aclgraph_only`` and
    ``aclgraph_with_compile`` say; lazy capture, max entries and safe output mode come from
    ``CompilationConfig`` at each compile. Without a device graph for the inputs' device it
    takes the default route, logged, as MindIE-SD's backend does when ``npu_graph_available`` is
    False.
    """
    from .._backend import Backend

    return Backend(graph_only=True, graph_with_compile=False)


def npu_graph_available() -> bool:
    """MindIE-SD's detection: ``torch.npu.NPUGraph`` and ``torch.npu.graph`` both exist.

    Also requires an NPU to be present, as the router does (``_device_graphs.unavailable_reason``).
    ``torch.npu`` exists once torch_npu is imported; this function does not import it.
    """
    import torch

    npu = getattr(torch, "npu", None)
    return bool(
        npu is not None
        and hasattr(npu, "NPUGraph")
        and hasattr(npu, "graph")
        and npu.is_available()
    )
