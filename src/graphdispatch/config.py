"""graphdispatch settings: one typed default per option, environment overrides, validation.

Options reach a compiled graph from four places, later ones winning: these module defaults,
``GRAPHDISPATCH_<NAME>`` environment variables (read once, at import), ``Backend(**options)``
and ``torch.compile(..., options={...})``. Keys accept ``-`` or ``_`` (``max-entries`` is
``max_entries``), and MindIE-SD's ``aclgraph_*`` names (seed 000) are aliases, so users of its
ACLGraph backend can switch by name. An unknown key, a wrong type or a bad value raises
before any setup runs, naming the key and listing what is valid.

This module imports nothing from torch.
"""

from __future__ import annotations

import contextlib
import difflib
import os
from collections.abc import Iterator, Mapping
from typing import Any

# Capture the FX graph as is, without compiling (seed: aclgraph_only).
graph_only: bool = False
# Compile with Inductor (its own cudagraphs off), then capture; wins over graph_only
# (seed: aclgraph_with_compile).
graph_with_compile: bool = False
# Capture at the first call instead of at compile time (seed: aclgraph_lazy_capture). Either
# way the graph reads entry-owned buffers, never the caller's memory.
lazy_capture: bool = False
# Cached graphs per compiled graph; 0 = unbounded; a full cache evicts (seed:
# aclgraph_max_entries).
max_entries: int = 0
# Which entry a full cache evicts: "fifo" (seed) or "lru".
eviction: str = "fifo"
# Return clones of the graph's outputs. When False the caller gets the graph's static outputs,
# valid only until the next replay of any graph sharing the pool.
safe_output_mode: bool = True
# Eager runs on the capture stream before capture, so lazily created library workspaces
# (cuBLAS) live outside the graph pool.
warmup_iters: int = 1
# Copy changed inputs on a dedicated stream ordered by events (no host synchronize).
copy_stream: bool = True
# Which device graph captures: "auto" (CUDA, else NPU, else torch.accelerator.Graph; never
# "emulated"), "cuda", "npu", "accelerator", or "emulated" (CPU stand-in for tests).
device_graph: str = "auto"

_TYPES: dict[str, type] = {
    "graph_only": bool,
    "graph_with_compile": bool,
    "lazy_capture": bool,
    "max_entries": int,
    "eviction": str,
    "safe_output_mode": bool,
    "warmup_iters": int,
    "copy_stream": bool,
    "device_graph": str,
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "eviction": ("fifo", "lru"),
    "device_graph": ("auto", "cuda", "npu", "accelerator", "emulated"),
}
_MINIMUM: dict[str, int] = {"max_entries": 0, "warmup_iters": 0}
ALIASES: dict[str, str] = {
    "aclgraph_only": "graph_only",
    "aclgraph_with_compile": "graph_with_compile",
    "aclgraph_lazy_capture": "lazy_capture",
    "aclgraph_max_entries": "max_entries",
}
# torch.compile modes this backend understands, and the options each one means.
MODES: dict[str | None, dict[str, Any]] = {
    None: {},
    "default": {},
    "reduce-overhead": {"graph_with_compile": True},
}
ENV_PREFIX = "GRAPHDISPATCH_"


def valid_keys() -> list[str]:
    return sorted(_TYPES) + sorted(ALIASES)


def canonical_key(key: object) -> str:
    """The option name for ``key`` (``-`` → ``_``, aliases resolved); ValueError if unknown."""
    if not isinstance(key, str):
        raise TypeError(f"graphdispatch option keys must be str, got {type(key).__name__}: {key!r}")
    name = key.replace("-", "_")
    name = ALIASES.get(name, name)
    if name not in _TYPES:
        close = difflib.get_close_matches(name, valid_keys(), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"graphdispatch: unknown option {key!r}{hint}; valid options: {', '.join(valid_keys())}"
            " ('-' and '_' are interchangeable)"
        )
    return name


def check_value(name: str, value: Any) -> Any:
    """``value`` if it is valid for option ``name``; TypeError/ValueError naming both otherwise."""
    expected = _TYPES[name]
    # bool is an int subclass: max_entries=True is a mistake, not 1.
    if type(value) is not expected and not (expected is int and _is_plain_int(value)):
        raise TypeError(
            f"graphdispatch option {name!r}: expected {expected.__name__}, "
            f"got {type(value).__name__} {value!r}"
        )
    if name in _CHOICES and value not in _CHOICES[name]:
        raise ValueError(
            f"graphdispatch option {name!r}: expected one of {', '.join(_CHOICES[name])}, "
            f"got {value!r}"
        )
    if name in _MINIMUM and value < _MINIMUM[name]:
        raise ValueError(f"graphdispatch option {name!r}: expected >= {_MINIMUM[name]}, got {value}")
    return value


def _is_plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def normalize(options: Any, *, source: str = "options") -> dict[str, Any]:
    """Validated ``{canonical name: value}`` from a user mapping; raises before any setup."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            f"graphdispatch {source} must be a mapping (dict) of option names to values, "
            f"got {type(options).__name__}"
        )
    out: dict[str, Any] = {}
    for key, value in options.items():
        name = canonical_key(key)
        if name in out and out[name] != value:
            raise ValueError(f"graphdispatch {source}: option {name!r} given twice with different values")
        out[name] = check_value(name, value)
    return out


def options_for_mode(mode: Any) -> dict[str, Any]:
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"graphdispatch: mode must be a str or None, got {type(mode).__name__}"
                        " (options go in options={...} or as keyword arguments)")
    if mode not in MODES:
        valid = ", ".join(repr(m) for m in MODES)
        raise ValueError(f"graphdispatch: unknown mode {mode!r}; valid modes: {valid}")
    return dict(MODES[mode])


def check(options: Any = None, *, mode: Any = None, **kwargs: Any) -> dict[str, Any]:
    """The options a compile would use, validated now (``graphdispatch.check_options``).

    Layers as ``Backend(mode, options, **kwargs)`` does: the mode's options, then ``options``,
    then keyword arguments, over the module defaults. Raises the same TypeError/ValueError a
    compile would, without importing torch or running any setup, so a service can reject bad
    configuration at start-up rather than inside Dynamo (which wraps backend errors in
    ``BackendCompilerFailed``).
    """
    return resolve(options_for_mode(mode), normalize(options),
                   normalize(kwargs, source="keyword arguments"))


def defaults() -> dict[str, Any]:
    """The current module-level value of every option."""
    return {name: globals()[name] for name in _TYPES}


def resolve(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Module defaults overlaid with already-normalized ``layers``, later ones winning."""
    merged = defaults()
    for layer in layers:
        merged.update(layer)
    return merged


def _parse_env(name: str, text: str) -> Any:
    expected = _TYPES[name]
    if expected is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"{ENV_PREFIX}{name.upper()}: expected 0/1/true/false, got {text!r}")
    if expected is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"{ENV_PREFIX}{name.upper()}: expected an integer, got {text!r}") from None
    return text


def _read_environment() -> None:
    for var, text in os.environ.items():
        if not var.startswith(ENV_PREFIX):
            continue
        try:
            name = canonical_key(var[len(ENV_PREFIX):].lower())
            globals()[name] = check_value(name, _parse_env(name, text))
        except (TypeError, ValueError) as error:
            raise type(error)(f"environment variable {var}={text!r}: {error}") from None


@contextlib.contextmanager
def patch(**changes: Any) -> Iterator[None]:
    """Temporarily change module defaults (tests); keys as in ``options``."""
    changes = normalize(changes, source="config.patch")
    saved = defaults()
    globals().update(changes)
    try:
        yield
    finally:
        globals().update(saved)


_read_environment()
