"""``graphdispatch.warm_start``: a cache directory of saved compiled functions for a service.

Note [Warm start cache]
A service process calls ``warm_start(model, inputs, cache_dir=...)`` once at start-up. For each
input set it computes a key and loads ``<cache_dir>/<key>.gdws`` when it is there; otherwise it
compiles (``aot_compile`` of ``call_model``, Note [Warm start] in _warm_start.py) and saves what
it compiled, so the next process loads it. Then each input set is called once (the first call
records the CPU graph, as ``graphdispatch.warmup`` does), so every signature replays before the
first request.

The key is the SHA-256 of everything that decides what a compile produces: the torch and
graphdispatch versions; the model's code (the source files of every module class in it) and
config (``model.config`` where there is one, and every parameter's and buffer's name, shape,
dtype and device: not their values, which are read at every call); the options; grad mode;
and the input set's signature (its structure, each tensor's shape, dtype, device, strides and
requires_grad, each other value itself). A change to any of them is another key: compiled
afresh, never a stale artifact.

A file is the saved function's bytes after a line giving their SHA-256: a truncated or edited
file, or one another version wrote (``WarmStartError``), or any other failure to load it, logs
a warning saying why and is compiled afresh and overwritten. Files are written to a temporary
name and renamed, so a process never reads another's half-written file.

Calls go to the first loaded function whose Dynamo guards accept the arguments (as
``torch._dynamo.aot_compile.AOTCompiledModel`` does); a call no function accepts is compiled
for then, saved and kept, with one log line.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import io
import json
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

log = logging.getLogger("graphdispatch")

SUFFIX = ".gdws"


def call_model(model: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """What the cache compiles: a module-level function calling ``model`` (Dynamo saves a
    function's code; a model's own ``forward`` may be wrapped by decorators it cannot save)."""
    return model(*args, **kwargs)


def _as_call(input_set: Any) -> tuple[tuple, dict]:
    if isinstance(input_set, dict):
        return (), dict(input_set)
    if isinstance(input_set, (tuple, list)):
        return tuple(input_set), {}
    return (input_set,), {}


def _describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return [
            "tensor",
            list(value.shape),
            str(value.dtype),
            str(value.device),
            list(value.stride()),
            value.requires_grad,
        ]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def _model_source(model: torch.nn.Module) -> list[str]:
    digests = set()
    for module in model.modules():
        try:
            path = inspect.getsourcefile(type(module))
        except TypeError:  # a built-in class
            continue
        if path and os.path.exists(path):
            digests.add(hashlib.sha256(Path(path).read_bytes()).hexdigest())
    return sorted(digests)


def _option_text(value: Any) -> Any:
    """An option's value as text that is the same in every process (a callable by name)."""
    if isinstance(value, (list, tuple)):
        return [_option_text(v) for v in value]
    if callable(value):
        return f"{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}"
    return repr(value)


def model_key(model: torch.nn.Module, options: dict[str, Any], grad: bool) -> dict[str, Any]:
    """What a key holds besides the input set's signature (Note [Warm start cache])."""
    from ._warm_start import versions

    config = getattr(model, "config", None)
    return {
        **versions(),
        "code": _model_source(model),
        "config": repr(dict(config)) if config is not None else None,
        "tensors": [
            [name, list(t.shape), str(t.dtype), str(t.device)]
            for name, t in [*model.named_parameters(), *model.named_buffers()]
        ],
        "options": [[k, _option_text(v)] for k, v in sorted(options.items())],
        "grad": grad,
    }


def input_key(base: dict[str, Any], args: tuple, kwargs: dict) -> str:
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten((args, kwargs))
    signature = {"structure": str(spec), "leaves": [_describe(v) for v in leaves]}
    text = json.dumps({**base, "inputs": signature}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _read(path: Path) -> Any:
    """The saved function in ``path``; raises ValueError naming why it cannot be used."""
    data = path.read_bytes()
    line, sep, body = data.partition(b"\n")
    if not sep or hashlib.sha256(body).hexdigest().encode() != line:
        raise ValueError("its SHA-256 differs from the one written with it: truncated or edited")
    return torch.compiler.load_compiled_function(io.BytesIO(body))


def _write(path: Path, fn: Any) -> None:
    from torch._dynamo.aot_compile import AOTCompiledFunction

    body = AOTCompiledFunction.serialize(fn).serialized_data
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False, suffix=".tmp") as f:
        f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    os.replace(f.name, path)


class WarmStart:
    """A model served through cached compiled functions: call it as the model.

    ``report``: per input set, in the order given, ``"loaded"`` or ``"compiled"`` with the
    reason when a file was there and could not be used. ``stats``: the ``graphdispatch.stats()``
    delta of the start-up calls.
    """

    def __init__(
        self, model: torch.nn.Module, cache_dir: str | os.PathLike, options: dict, grad: bool
    ) -> None:
        self.model = model
        self.cache_dir = Path(cache_dir)
        self.options = options
        self.grad = grad
        self.base = model_key(model, options, grad)
        self.functions: list[Any] = []
        self.report: list[str] = []
        self.stats: dict[str, Any] = {}

    def _mode(self) -> Any:
        return contextlib.nullcontext() if self.grad else torch.no_grad()

    def prepare(self, args: tuple, kwargs: dict) -> Any:
        """The saved function of a call with ``args`` and ``kwargs``: loaded from the cache,
        or compiled and saved."""
        path = self.cache_dir / (input_key(self.base, args, kwargs) + SUFFIX)
        why = None
        if path.exists():
            try:
                fn = _read(path)
            except Exception as error:  # any failure: never run it, compile afresh
                why = f"{type(error).__name__}: {error}"
                log.warning(
                    "graphdispatch warm start: cannot use %s (%s); compiling afresh", path, why
                )
            else:
                self.functions.append(fn)
                self.report.append("loaded")
                return fn
        compiled = torch.compile(
            call_model,
            fullgraph=True,
            backend="graphdispatch",
            options={**self.options, "guard_filter_fn": torch.compiler.keep_tensor_guards_unsafe},
        )
        with self._mode():
            fn = compiled.aot_compile(((self.model, *args), kwargs))
        _write(path, fn)
        self.functions.append(fn)
        self.report.append("compiled" if why is None else f"compiled ({why})")
        return fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for fn in self.functions:
            if fn.guard_check(self.model, *args, **kwargs):
                return fn(self.model, *args, **kwargs)
        log.info("graphdispatch warm start: a call no saved function accepts; compiling it")
        return self.prepare(args, kwargs)(self.model, *args, **kwargs)


def warm_start(
    model: torch.nn.Module,
    inputs: Iterable[Any],
    *,
    cache_dir: str | os.PathLike,
    options: dict[str, Any] | None = None,
    progress: bool = True,
    grad: bool = False,
) -> WarmStart:
    """Loads or compiles a function per input set (Note [Warm start cache]), then calls each
    once, as ``graphdispatch.warmup`` does; returns the WarmStart serving them."""
    from . import config
    from .serving import warmup

    served = WarmStart(model, cache_dir, config.normalize(options), grad)
    input_sets = list(inputs)
    for input_set in input_sets:
        served.prepare(*_as_call(input_set))
    served.stats = warmup(served, input_sets, progress=progress, grad=grad)
    return served
