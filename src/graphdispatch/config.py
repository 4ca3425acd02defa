"""graphdispatch settings: one definition per option, environment overrides, validation.

Note [Options]
Each option is one ``Option`` record in ``OPTIONS`` (name, type, default, range or choices,
meaning, aliases); its module attribute, validation, error messages, the option tables of
docs/usage.md (scripts/option_tables.py) and the C++ runtime's share (``runtime_options``) all
derive from it. The runtime parses its share by name with one table
(csrc/runtime/runner_option_table.h) into ``RunnerOptions``, whose defaults are these;
tests/test_option_layers.py fails when the two layers disagree on a name, a default or a range.

Options reach a compiled graph from four places, later ones winning: these module defaults,
``GRAPHDISPATCH_<NAME>`` environment variables (read once, at import), ``Backend(**options)`` and
``torch.compile(..., options={...})``. Keys accept ``-`` or ``_`` (``max-entries`` is
``max_entries``), and MindIE-SD's ``aclgraph_*`` names (docs/design.md, "The anchor") are aliases,
so users of its ACLGraph backend can switch by name. An unknown key, a wrong type or a bad value
raises before any setup runs, naming the key and listing what is valid.

The module itself checks what is assigned to it, as ``torch._inductor.config`` does for
unknown names: ``graphdispatch.config.max_entriez = 4`` raises ``AttributeError`` naming
``max_entries``; ``graphdispatch.config.aclgraph_only`` reads and writes ``graph_only``; a
value is type- and range-checked on assignment exactly as the same option given to
``Backend``.

Why not ``torch.utils._config_module`` (the machinery behind ``torch._inductor.config``): its
user overrides live in ``ContextVar``s, so a value set at start-up in the main thread is not
seen by a worker thread that compiles later; it checks neither types nor ranges on
assignment; and its environment variables carry only "0"/"1" and strings. Each of those would
have to be replaced, which leaves little of it, on a private API.

This module imports nothing from torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import re
import sys
import types
from collections.abc import Iterator, Mapping
from typing import Any

_INT64_MAX = 2**63 - 1
_FLOAT_MAX = sys.float_info.max


@dataclasses.dataclass(frozen=True)
class Option:
    """One option: the single definition every layer derives from.

    ``doc``: what the option does, in Markdown; the one telling of it, rendered into
    docs/usage.md's table by scripts/option_tables.py. ``type`` is bool, int, float, str or
    tuple (a sequence of callables, given as a list or tuple; no environment variable).
    ``low``/``high``: inclusive bounds of an int or float option (every int reaches the C++
    runtime as int64_t; a float must also be finite). ``choices``: the valid values of a str
    option. ``aliases``: other names it answers to (MindIE-SD's ``aclgraph_*``). ``runtime``:
    the C++ runtime acts on it (a ``RunnerOptions`` field of the same name, set through
    ``_C.GraphRunner(**options)``, whose default must be this one; tests/test_option_layers.py
    checks both layers agree).
    """

    name: str
    type: type
    default: Any
    doc: str
    low: int | float | None = None
    high: int | float | None = None
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    runtime: bool = False


def _count(name: str, default: int, doc: str, **kwargs: Any) -> Option:
    return Option(name, int, default, doc, low=0, high=_INT64_MAX, **kwargs)


# NaN or infinite tolerances would make the check pass or fail whatever the values.
def _tolerance(name: str, default: float, doc: str) -> Option:
    return Option(name, float, default, doc, low=0.0, high=_FLOAT_MAX, runtime=True)


OPTIONS: tuple[Option, ...] = (
    Option(
        "graph_only",
        bool,
        False,
        "Capture the FX graph as is, without compiling.",
        aliases=("aclgraph_only",),
    ),
    Option(
        "graph_with_compile",
        bool,
        False,
        "Compile with Inductor (its own cudagraphs off), then capture the compiled "
        "function. Wins over `graph_only` when both are set.",
        aliases=("aclgraph_with_compile",),
    ),
    Option(
        "lazy_capture",
        bool,
        False,
        "Capture at the first call instead of at compile time. Either way the graph reads"
        " buffers the entry owns, never the caller's tensors.",
        aliases=("aclgraph_lazy_capture",),
    ),
    Option(
        "fast_path",
        bool,
        True,
        "After Dynamo has compiled a module's `forward`, call Dynamo's compiled code directly,"
        " without its frame handling: Dynamo's own guards still decide every call, and any"
        ' change they catch sends the call back through Dynamo (see "The fast path").',
    ),
    _count(
        "max_entries",
        0,
        "Cached graphs per compiled graph; `0` = unbounded. A full cache evicts (a log "
        "line says when eviction starts: it usually means dynamic shapes defeat the "
        "cache).",
        aliases=("aclgraph_max_entries",),
        runtime=True,
    ),
    Option(
        "eviction",
        str,
        "fifo",
        "Which entry a full cache evicts.",
        choices=("fifo", "lru"),
        runtime=True,
    ),
    Option(
        "safe_output_mode",
        bool,
        True,
        "Return clones of the graph's outputs (see below).",
        runtime=True,
    ),
    _count(
        "warmup_iters",
        1,
        "Eager runs before capture, on a warmup stream apart from the capture stream, so "
        'lazy library setup (cuBLAS handles) happens outside the capture (see "CUDA '
        'graphs: pools, workspaces, streams"). `0` on a device graph logs one warning.',
        runtime=True,
    ),
    Option(
        "copy_stream",
        bool,
        True,
        "Copy changed inputs on a dedicated stream ordered by events (no host synchronize).",
        runtime=True,
    ),
    Option(
        "device_graph",
        str,
        "auto",
        "Which device graph captures. `auto` tries CUDA, then NPU (torch_npu), then "
        "`torch.accelerator.Graph`; for CPU inputs it picks the CPU graph on `graph_only`"
        " and `cpp_wrapper` on `graph_with_compile` (Inductor's C++ wrapper, its generated"
        ' entry called from C++ on replay; see "The CPU graph"). It never picks '
        "`emulated`, which re-runs the work on every replay (same static-buffer semantics,"
        " no speed-up): for tests.",
        choices=("auto", "cuda", "npu", "accelerator", "cpu", "cpp_wrapper", "emulated"),
    ),
    _count(
        "max_entry_bytes",
        0,
        "Bytes the cached graphs of one compiled graph may hold; `0` = unbounded. An "
        "entry holds its input buffers plus the graph-pool memory its capture added "
        "(measured around the capture on devices with a pool; on the CPU graph its outputs "
        "and constants, and once for the graph the largest of its entries' needs from the "
        "shared workspace; on the emulated graph, its static outputs). Over the budget, "
        'entries are evicted as `eviction` says (counted in `stats()["evictions"]`, one '
        "log line when it starts); the entry just captured is never evicted, so one entry"
        " alone over the budget stays, nor is a negative entry (a cached refusal holds no"
        " bytes).",
        runtime=True,
    ),
    _count(
        "max_total_entry_bytes",
        0,
        "Bytes the cached graphs of **every** compiled graph of the process may hold "
        "together, counted as `max_entry_bytes` counts them (measured: input buffers plus"
        " graph-pool memory on devices, outputs and constants on the CPU graph with its "
        "shared workspace counted once, static outputs on the emulated graph); `0` = off. "
        "Two experts (Wan 2.2's `transformer` "
        "/ `transformer_2`), regional compilation (one graph per block kind, an entry per"
        " block instance) and recompiles then share one budget. When a capture brings the"
        " total over it, entries are evicted across all compiled graphs, the oldest "
        "captured (`fifo`) or least recently used (`lru`) first as the capturing graph's "
        '`eviction` says (counted in `stats()["evictions"]`, one log line when it '
        "starts); the entry just captured is kept, so one entry alone over the budget "
        "stays. Set it once for the process (`GRAPHDISPATCH_MAX_TOTAL_ENTRY_BYTES` or "
        "`graphdispatch.config.max_total_entry_bytes`); given per compile, each graph "
        "applies its own value when it captures (case C49).",
        runtime=True,
    ),
    _count(
        "verify_replays",
        0,
        "The first K replays of each entry also run the non-graph path (the route's "
        "callable: the FX graph on `graph_only`, Inductor's compiled function on "
        '`graph_with_compile`, never eager PyTorch; see "Numerics per route") on clones '
        "of the dynamic inputs, from the same RNG state, and compare every output. A "
        "mismatch logs one WARNING (output index, max difference, signature), replaces "
        "the entry by a negative one (fallback reason `verify_mismatch`: later calls run "
        "without a graph) and returns the non-graph result, with the non-graph values "
        "written to the inputs the graph writes. Counted in "
        '`stats()["verified_replays"]`. Costs one non-graph run and one clone of the '
        "dynamic inputs per verified replay.",
        runtime=True,
    ),
    _tolerance(
        "verify_rtol",
        1e-5,
        "Relative tolerance of that comparison on the `graph_with_compile` route: "
        "`|replay − expected| ≤ verify_atol + verify_rtol·|expected|`. On `graph_only` "
        "the comparison is exact (NaN equals NaN).",
    ),
    _tolerance("verify_atol", 1e-6, "Absolute tolerance of that comparison (see `verify_rtol`)."),
    Option(
        "graph_passes",
        tuple,
        (),
        "Your FX passes, run in order on every graph Dynamo hands the backend, before "
        "anything else sees it: before capture on `graph_only`, before Inductor on "
        "`graph_with_compile` and `default`. Each is called as `p(gm)` with the "
        '`torch.fx.GraphModule` (torch-level ops, `node.meta["example_value"]` fake '
        "tensors), rewrites `gm.graph` in place and returns how many rewrites it made (an "
        'int, counted per pass in `stats()["graph_passes"]`) or None; the backend '
        "recompiles `gm` after them. The pattern-fusion half of a graph route: "
        "`graphdispatch.patterns.fuse_rms_norm` is one, and "
        "`torch.fx.subgraph_rewriter.replace_pattern` makes others from a search and a "
        "replacement function (the torch-level counterpart of Inductor's "
        "`register_replacement`). Python callables: no environment variable sets it.",
    ),
    # PyTorch's cudagraph trees bound re-recording for the same reason
    # (triton.cudagraph_unexpected_rerecord_limit).
    _count(
        "max_recaptures",
        8,
        "Entries a compiled graph may lose, per input layout, to a tensor it reads in place "
        "being freed or replaced before a second call; past it such calls run without a "
        'graph (`static_inputs_moving`). The rule: "Lifetime, moving tensors".',
        runtime=True,
    ),
)
_BY_NAME: dict[str, Option] = {option.name: option for option in OPTIONS}
ALIASES: dict[str, str] = {alias: option.name for option in OPTIONS for alias in option.aliases}
# Each option's current value is a module attribute (graphdispatch.config.max_entries).
globals().update({option.name: option.default for option in OPTIONS})
# torch.compile modes this backend understands, and the options each one means.
MODES: dict[str | None, dict[str, Any]] = {
    None: {},
    "default": {},
    "reduce-overhead": {"graph_with_compile": True},
}
ENV_PREFIX = "GRAPHDISPATCH_"


def valid_keys() -> list[str]:
    return sorted(_BY_NAME) + sorted(ALIASES)


def _did_you_mean(name: str) -> str:
    close = difflib.get_close_matches(name, valid_keys(), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def canonical_key(key: object) -> str:
    """The option name for ``key`` (``-`` → ``_``, aliases resolved); ValueError if unknown."""
    if not isinstance(key, str):
        raise TypeError(f"graphdispatch option keys must be str, got {type(key).__name__}: {key!r}")
    name = key.replace("-", "_")
    name = ALIASES.get(name, name)
    if name not in _BY_NAME:
        raise ValueError(
            f"graphdispatch: unknown option {key!r}{_did_you_mean(name)}; valid options: "
            f"{', '.join(valid_keys())} ('-' and '_' are interchangeable)"
        )
    return name


def _describe_range(low: int, high: int) -> str:
    return f"[{low}, {'2**63 - 1' if high == _INT64_MAX else high}]"


def check_value(name: str, value: Any, given: str | None = None) -> Any:
    """``value`` if it is valid for option ``name``; TypeError/ValueError naming both otherwise.

    ``given`` is the key as the user wrote it (an alias, a ``-`` spelling), named too.
    """
    option = _BY_NAME[name]
    expected = option.type
    label = f"{name!r}" if given in (None, name) else f"{name!r} (given as {given!r})"
    # bool is an int subclass: max_entries=True is a mistake, not 1. A float option takes an
    # int (verify_atol=0) and stores it as a float.
    if expected is tuple:
        return _check_callables(label, value)
    if expected is float and _is_plain_int(value):
        value = float(value)
    if type(value) is not expected and not (expected is int and _is_plain_int(value)):
        raise TypeError(
            f"graphdispatch option {label}: expected {expected.__name__}, "
            f"got {type(value).__name__} {value!r}"
        )
    if option.choices and value not in option.choices:
        raise ValueError(
            f"graphdispatch option {label}: expected one of {', '.join(option.choices)}, "
            f"got {value!r}"
        )
    if expected is int:
        low, high = option.low, option.high
        if not low <= value <= high:
            raise ValueError(
                f"graphdispatch option {label}: expected an int in {_describe_range(low, high)} "
                f"(int64_t in the C++ runtime), got {value}"
            )
    if expected is float:
        low, high = option.low, option.high
        if not low <= value <= high:  # NaN fails both comparisons
            raise ValueError(
                f"graphdispatch option {label}: expected a finite float >= {low:g}, got {value}"
            )
    return value


def _check_callables(label: str, value: Any) -> tuple:
    if not isinstance(value, (list, tuple)):
        raise TypeError(
            f"graphdispatch option {label}: expected a list or tuple of callables, "
            f"got {type(value).__name__} {value!r}"
        )
    for i, item in enumerate(value):
        if not callable(item):
            raise TypeError(
                f"graphdispatch option {label}: expected a list or tuple of callables, "
                f"got {type(item).__name__} {item!r} at index {i}"
            )
    return tuple(value)


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
            raise ValueError(
                f"graphdispatch {source}: option {name!r} given twice with different values"
            )
        out[name] = check_value(name, value, key)
    return out


def options_for_mode(mode: Any) -> dict[str, Any]:
    if mode is not None and not isinstance(mode, str):
        raise TypeError(
            f"graphdispatch: mode must be a str or None, got {type(mode).__name__}"
            " (options go in options={...} or as keyword arguments)"
        )
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
    return resolve(
        options_for_mode(mode), normalize(options), normalize(kwargs, source="keyword arguments")
    )


def defaults() -> dict[str, Any]:
    """The current module-level value of every option."""
    return {name: globals()[name] for name in _BY_NAME}


def runtime_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of resolved ``options`` the C++ runtime acts on, by name, for
    ``_C.GraphRunner(..., **runtime_options(options))``."""
    return {option.name: options[option.name] for option in OPTIONS if option.runtime}


def resolve(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Module defaults overlaid with already-normalized ``layers``, later ones winning.

    Raises ValueError for a combination that cannot give the route it asks for (case C94),
    naming both options and the combination that would (``check_combination``).
    """
    merged = defaults()
    for layer in layers:
        merged.update(layer)
    check_combination(merged)
    return merged


# Note [Option combinations]
# Some values of two options cannot hold together whatever the inputs: the CPU graph records
# dispatcher ops, and Inductor's CPU kernels are none, so graph_with_compile on
# device_graph="cpu" would run Inductor alone, no capture, no replay, with nothing said (case
# C94); the cpp_wrapper graph calls Inductor's generated entry, which graph_only never makes.
# Naming both is an error, raised where options are resolved, before any setup: a user who
# named both asked for a graph. (A device graph missing on this machine, or for these inputs'
# device, is decided per graph, logged and counted in stats()["routes"]: the same options can
# hold elsewhere.)
_CONFLICTS: tuple[tuple[str, str, str], ...] = (
    (
        "graph_with_compile",
        "cpu",
        "the CPU graph records dispatcher ops and Inductor's CPU kernels are none; for a graph"
        " of Inductor's kernels on the CPU use device_graph='cpp_wrapper' (or 'auto'), for the"
        " CPU graph of the uncompiled FX graph graph_only=True, graph_with_compile=False",
    ),
    (
        "graph_only",
        "cpp_wrapper",
        "the cpp_wrapper graph calls the entry Inductor generates, and graph_only does not "
        "compile; use graph_with_compile=True with device_graph='cpp_wrapper', or graph_only"
        " with device_graph='cpu'",
    ),
)


def check_combination(options: Mapping[str, Any]) -> None:
    """ValueError naming both options when resolved ``options`` ask for a route their
    ``device_graph`` cannot give (Note [Option combinations])."""
    # graph_with_compile wins over graph_only (Note [Routes] in _backend.py).
    route = (
        "graph_with_compile"
        if options.get("graph_with_compile")
        else "graph_only"
        if options.get("graph_only")
        else None
    )
    for flag, kind, advice in _CONFLICTS:
        if route == flag and options.get("device_graph") == kind:
            raise ValueError(
                f"graphdispatch options {flag}=True and device_graph={kind!r} cannot go "
                f"together: {advice}"
            )


# Decimal integers as a person writes them: an optional sign and ASCII digits only. int()
# alone would also take "1_000", "٣" (Arabic-Indic three) and other Unicode digits.
_DECIMAL = re.compile(r"[+-]?[0-9]+")
# Decimal floats, ASCII only, with an optional exponent ("1e-5", "0.001", "2").
_DECIMAL_FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def _parse_env(name: str, text: str) -> Any:
    expected = _BY_NAME[name].type
    if expected is tuple:
        raise ValueError(
            "this option takes Python callables, which no environment variable can hold; "
            "give them in options= or Backend(...)"
        )
    if expected is bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"expected 0/1/true/false/yes/no/on/off, got {text!r}")
    if expected is int:
        digits = text.strip()
        if not _DECIMAL.fullmatch(digits):
            raise ValueError(f"expected an integer (ASCII decimal digits 0-9), got {text!r}")
        try:
            return int(digits)
        except ValueError:  # more digits than int() converts: far outside every range
            low, high = _BY_NAME[name].low, _BY_NAME[name].high
            raise ValueError(
                f"expected an integer in {_describe_range(low, high)}, got {len(digits)} digits"
            ) from None
    if expected is float:
        number = text.strip()
        if not _DECIMAL_FLOAT.fullmatch(number):
            raise ValueError(f"expected a decimal number (ASCII, e.g. 1e-5), got {text!r}")
        return float(number)
    return text


def _read_environment() -> None:
    """Applies ``GRAPHDISPATCH_*`` variables; all are checked before any is applied.

    An option set through two variables (its name and its alias) must get one value:
    ``GRAPHDISPATCH_GRAPH_ONLY=1`` with ``GRAPHDISPATCH_ACLGRAPH_ONLY=0`` raises rather than
    letting the environment's order decide.
    """
    found: dict[str, tuple[str, str, Any]] = {}
    for var, text in sorted(os.environ.items()):
        if not var.startswith(ENV_PREFIX):
            continue
        try:
            name = canonical_key(var[len(ENV_PREFIX) :].lower())
            value = check_value(name, _parse_env(name, text))
        except (TypeError, ValueError) as error:
            raise type(error)(f"environment variable {var}={text!r}: {error}") from None
        if name in found and found[name][2] != value:
            other, other_text, _ = found[name]
            raise ValueError(
                f"environment variables {other}={other_text!r} and {var}={text!r} both set "
                f"graphdispatch option {name!r}, to different values; unset one of them"
            )
        found[name] = (var, text, value)
    globals().update({name: value for name, (_, _, value) in found.items()})


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


class _ConfigModule(types.ModuleType):
    """This module's class: attribute writes are options, checked as ``options`` are.

    Writing an option (or an ``aclgraph_*`` alias) validates the value; writing a name the
    module does not have raises. Names the module already has (its functions, tables) stay
    assignable so tests can monkeypatch them; dunders stay free for the import system.
    """

    def __getattr__(self, name: str) -> Any:  # only for names not in the module's dict
        if name in ALIASES:
            return globals()[ALIASES[name]]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}{_did_you_mean(name)}")

    def __setattr__(self, name: str, value: Any) -> None:
        option = ALIASES.get(name, name)
        if option in _BY_NAME:
            globals()[option] = check_value(option, value, name)
        elif name in globals() or (name.startswith("__") and name.endswith("__")):
            super().__setattr__(name, value)
        else:
            raise AttributeError(
                f"{__name__}: no option {name!r}{_did_you_mean(name)}; valid options: "
                f"{', '.join(valid_keys())}"
            )

    def __delattr__(self, name: str) -> None:
        if ALIASES.get(name, name) in _BY_NAME:
            raise AttributeError(
                f"{__name__}.{name} is an option and cannot be deleted; "
                "assign a value or use config.patch()"
            )
        super().__delattr__(name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(ALIASES))


sys.modules[__name__].__class__ = _ConfigModule
_read_environment()
