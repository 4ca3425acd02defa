"""Tensor-subclass inputs on ``graph_with_compile``, flattened around the runner (case C90).

The runtime takes plain tensors only (a buffer it allocates is a plain tensor: a subclass's
behaviour would be lost, fallback ``unsupported_tensor``). Inductor compiles a traceable wrapper
subclass (``TwoTensor``, a float8 or quantised weight: one with ``__tensor_flatten__``) through
aot_autograd, whose runtime wrapper unwraps it into its inner tensors before the compiled code
runs. So on this route each such input reaches the runner as its inner tensors, in
``__tensor_flatten__``'s order, and the function the runner captures rebuilds the subclass
around them (``__tensor_unflatten__``) before calling Inductor's: the runner copies the inner
tensors into its buffers (or reads a subclass parameter's inner tensors in place), and on the
cpp_wrapper graph its direct C++ call gets the very buffers aot_autograd would unwrap. Outputs
that are subclasses come back flattened the same way and are rebuilt after the runner.

What rebuilds a subclass besides its inner tensors (its type, ``ctx``, outer size and strides)
is not in a runner's key, so each such layout has a runner of its own, whose inputs are exactly
the tensors Inductor's code takes. Past ``MAX_LAYOUTS`` layouts, or for a subclass whose inner
tensors are subclasses themselves, a call runs Inductor's function alone, counted as the
fallback ``unsupported_tensor``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

MAX_LAYOUTS = 8  # subclass layouts (type, ctx, outer size and stride) per graph


def _layout(t: torch.Tensor) -> tuple | None:
    """(type, inner attribute names, ctx, outer size and stride) of a subclass whose inner
    tensors are plain tensors, else None. The outer size and stride are None where they are the
    first inner tensor's (TwoTensor's), so a new shape is not a new layout."""
    attrs, ctx = t.__tensor_flatten__()
    inner = [getattr(t, a) for a in attrs]
    if not inner or any(type(i) is not torch.Tensor for i in inner):
        return None
    outer = (tuple(t.size()), tuple(t.stride()))
    same = outer == (tuple(inner[0].size()), tuple(inner[0].stride()))
    return (type(t), tuple(attrs), ctx, None if same else outer)


def _rebuild(layout: tuple, inner: Sequence[torch.Tensor]) -> torch.Tensor:
    cls, attrs, ctx, outer = layout
    size, stride = outer or (inner[0].size(), inner[0].stride())
    return cls.__tensor_unflatten__(dict(zip(attrs, inner)), ctx, size, stride)


class SubclassInputs:
    """The subclass inputs of one graph: ``positions`` (in the graph's inputs), with what a
    runner is handed (``flatten``), what it captures (``inside``) and each input's role after
    flattening (``flat``). One runner per layout (``outside``). Thread-safe: layouts and runners
    are added under a lock."""

    def __init__(self, example_inputs: Sequence[Any]) -> None:
        self.positions = [
            i for i, v in enumerate(example_inputs) if is_traceable_wrapper_subclass(v)
        ]
        self._layouts: list[tuple] = []  # per runner: the layout of each subclass input
        self._runners: list[Any] = []
        # (id of the stored input layouts (a ctx need not hash), the flat inputs' shapes, or None
        # where no output layout has an outer size of its own, so that it does not grow with the
        # shapes) -> the output layouts
        self._outputs: dict[tuple, list] = {}
        self._lock = threading.Lock()

    def __bool__(self) -> bool:
        return bool(self.positions)

    def flatten(self, args: Sequence[Any]) -> tuple[tuple, list[Any]] | None:
        """(the layout of the subclass inputs, ``args`` with each replaced by its inner
        tensors), or None for a subclass whose inner tensors are subclasses."""
        layouts = tuple(_layout(args[i]) for i in self.positions)
        if any(layout is None for layout in layouts):
            return None
        flat: list[Any] = []
        wanted = set(self.positions)
        for i, v in enumerate(args):
            if i in wanted:
                flat.extend(getattr(v, a) for a in v.__tensor_flatten__()[0])
            else:
                flat.append(v)
        return layouts, flat

    def flat(self, per_input: Sequence[Any], example_inputs: Sequence[Any]) -> list:
        """``per_input`` (one value per graph input) repeated for each inner tensor of a
        subclass input."""
        out = []
        for i, (value, example) in enumerate(zip(per_input, example_inputs)):
            n = len(example.__tensor_flatten__()[0]) if i in self.positions else 1
            out.extend([value] * n)
        return out

    def inside(self, fn: Callable, layouts: tuple) -> Callable:
        """What the runner of ``layouts`` captures: the subclass inputs rebuilt around its (flat)
        arguments, ``fn`` called, its subclass outputs flattened into their inner tensors."""
        positions = self.positions

        def call(*flat: Any) -> tuple:
            args, k, j = [], 0, 0
            while k < len(flat):
                if j < len(positions) and len(args) == positions[j]:
                    n = len(layouts[j][1])
                    args.append(_rebuild(layouts[j], flat[k : k + n]))
                    k, j = k + n, j + 1
                else:
                    args.append(flat[k])
                    k += 1
            out_layouts, inner = [], []
            for o in fn(*args):
                layout = _layout(o) if is_traceable_wrapper_subclass(o) else None
                if is_traceable_wrapper_subclass(o) and layout is None:
                    raise TypeError(f"graphdispatch: a nested tensor subclass output ({type(o)})")
                out_layouts.append(layout)
                inner.extend([getattr(o, a) for a in layout[1]] if layout else [o])
            shaped = any(layout and layout[3] for layout in out_layouts)
            self._outputs[(id(layouts), _key(flat) if shaped else None)] = out_layouts
            return tuple(inner)

        return call

    def runner_for(
        self, layouts: tuple, make_runner: Callable[[tuple], Any]
    ) -> tuple[tuple, Any | None]:
        """(the stored layouts equal to ``layouts``, their runner, made by ``make_runner`` the
        first time, which may say None: no runner); (layouts, None) past MAX_LAYOUTS."""
        with self._lock:
            for seen, runner in zip(self._layouts, self._runners):
                if seen == layouts:
                    return seen, runner
            if len(self._layouts) >= MAX_LAYOUTS:
                return layouts, None
            self._layouts.append(layouts)
            self._runners.append(make_runner(layouts))
            return layouts, self._runners[-1]

    def outside(self, make_runner: Callable[[tuple], Any], fn: Callable) -> Callable:
        """The graph's function: the runner of the call's layout on the flattened call, its
        outputs rebuilt; ``fn`` alone (counted as unsupported_tensor) where the call cannot be
        flattened or brings one layout too many."""
        from . import _C

        def call(*args: Any) -> Any:
            flattened = self.flatten(args)
            runner = None
            if flattened is not None:
                layouts, runner = self.runner_for(flattened[0], make_runner)
            if runner is None:
                return _C.fallback(_C.FallbackReason.unsupported_tensor.name, fn, *args)
            flat = flattened[1]
            inner = runner(*flat)
            outputs, k = [], 0
            shapes = _key(flat)
            out_layouts = (
                self._outputs.get((id(layouts), shapes)) or self._outputs[(id(layouts), None)]
            )
            for layout in out_layouts:
                n = len(layout[1]) if layout else 1
                outputs.append(_rebuild(layout, inner[k : k + n]) if layout else inner[k])
                k += n
            return tuple(outputs)

        return call


def _key(flat: Sequence[Any]) -> tuple:
    """What makes the outputs' outer sizes: the inputs' shapes and numbers."""
    return tuple(
        (tuple(v.shape), v.stride(), v.dtype) if isinstance(v, torch.Tensor) else v for v in flat
    )
