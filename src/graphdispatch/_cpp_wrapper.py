"""graph_with_compile on the CPU: Inductor's C++ wrapper, its entry called from our C++.

Inductor's CPU kernels are not dispatcher ops, so the CPU graph cannot record them. With
``cpp_wrapper=True`` Inductor compiles the whole graph into one C++ function instead of a
Python wrapper calling one kernel at a time; a ``cpp_wrapper`` graph (Note [Inductor's C++
entry] in csrc/bindings/cpp_wrapper_graph.h) calls that function from C++ on replay, so a call
costs the runner's C++ work plus the compiled code: fusion and one-call replay stack.

``EntryCalls`` records the one call a capture makes to the generated function (its inputs and
outputs), which the graph checks against what the work was given and returned before it trusts
a direct call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

log = logging.getLogger("graphdispatch")


class EntryCalls:
    """The generated C++ function of one compiled graph, and the call a capture makes to it.

    ``library``: path of the shared library exporting it, or None with ``reason`` saying why
    there is none to call. ``arm()`` records the next call on this thread; ``take()`` returns
    the recorded ``(inputs, outputs)`` lists, or a str saying why a direct call is off.
    """

    def __init__(self, compiled: list[Any]):
        self.library: str | None = None
        self.reason = "Inductor compiled this graph in more than one part"
        self._armed: int | None = None
        self._seen: tuple[list, list] | None = None
        if len(compiled) != 1:  # inference compiles one forward; anything else is not ours
            return
        graph = compiled[0]
        if any(
            getattr(graph, n, None)
            for n in ("constants", "frozen_param_names", "torchbind_constants")
        ):
            # The generated wrapper appends these to the entry's arguments (cpp_wrapper_cpu.py).
            self.reason = "Inductor's C++ entry takes constants besides the graph's inputs"
            return
        inner = getattr(graph, "current_callable", None)
        entry = getattr(inner, "__globals__", {}).get("inductor_entry")
        library = getattr(getattr(entry, "__self__", None), "__file__", None)
        if library is None:
            self.reason = "Inductor's output has no C++ entry (cpp_wrapper did not apply)"
            return
        self.library, self.reason = library, ""

        def current_callable(args: list) -> Any:
            if self._armed != threading.get_ident():
                return inner(args)
            inputs = list(args)  # the generated wrapper empties its argument list
            outputs = inner(args)
            self._armed, self._seen = None, (inputs, list(outputs))
            return outputs

        graph.current_callable = current_callable

    def arm(self) -> None:
        self._armed, self._seen = threading.get_ident(), None

    def take(self) -> tuple[list, list] | str:
        seen, self._seen, self._armed = self._seen, None, None
        if self.library is None:
            return self.reason
        return "the capture did not call Inductor's C++ entry" if seen is None else seen


def compile_with_cpp_wrapper(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any]
) -> tuple[Callable, EntryCalls]:
    """(Inductor's compiled function of ``gm``, with ``cpp_wrapper=True`` and its cudagraphs
    off; the record of its C++ entry)."""
    from torch._functorch import config as functorch_config
    from torch._inductor.compile_fx import compile_fx, compile_fx_inner

    from ._warm_start import inductor_output

    warm = inductor_output(gm)

    def fresh() -> tuple[Callable, list]:
        compiled: list[Any] = []

        def inner_compile(*args: Any, **kwargs: Any) -> Any:
            out = compile_fx_inner(*args, **kwargs)
            compiled.append(out)
            return out

        # A hit in aot_autograd's cache skips inner_compile, and with it the record; Inductor's
        # own cache below it still spares the C++ compile. Saving needs that cache's bundled
        # entry, and aot_compile's compile looks nothing up (bypass_autograd_cache_key).
        with functorch_config.patch(enable_autograd_cache=warm is not None):
            fn = compile_fx(
                gm,
                list(example_inputs),
                inner_compile=inner_compile,
                config_patches={"triton.cudagraphs": False, "cpp_wrapper": True},
            )
        return fn, compiled

    fn, compiled = fresh() if warm is None else warm.compiled(fresh)
    return fn, EntryCalls(compiled)


def graph_factory(calls: EntryCalls) -> Any:
    """The factory of ``calls``' graphs. Where there is no C++ entry its graphs re-run the
    compiled function on every replay, Python included, logged once per graph and said by each
    entry's graph (``explain()``, case C92)."""
    from . import _C

    if calls.library is None:
        log.info("graphdispatch: cpp_wrapper graph re-runs the compiled function: %s", calls.reason)
    return _C.CppWrapperGraphFactory(calls.library or "", calls)
