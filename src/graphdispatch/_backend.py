"""The graphdispatch torch.compile backend: choose a route, then capture and replay.

What it is. For every FX graph Dynamo hands us, a ``GraphRunner`` (C++) captures the graph's
kernel sequence into a device graph once per input signature and replays it with one launch
per call.

Note [Routes]
Three routes, by the rule of MindIE-SD's ACLGraph backend (docs/design.md, "The anchor"):

- ``graph_with_compile`` set and a device graph for the inputs' device: Inductor compiles the
  graph (its own cudagraphs off), then we capture the compiled function — fusion and launch
  savings add up. It wins when both flags are set; ``mode="reduce-overhead"`` sets it;
- otherwise ``graph_only`` set and a device graph: we capture the FX graph as is;
- otherwise ``default``: aot_autograd + Inductor, no capture. The route and its reason are
  logged (logger ``graphdispatch``, INFO) and counted in ``stats()["routes"]``; no fallback is
  silent.

The graph kind comes from ``device_graph`` (_device_graphs.py): ``auto`` tries CUDA, then NPU,
then a constructible ``torch.accelerator.Graph``; for CPU inputs the CPU graph (Note [CPU
graph]) on ``graph_only`` and the ``cpp_wrapper`` graph on ``graph_with_compile``: Inductor's
CPU kernels are not dispatcher ops the CPU graph could record, so Inductor compiles with its
C++ wrapper and a replay calls the generated entry from C++ (Note [Inductor's C++ entry]).
``auto`` never picks ``emulated``.

Why not a Python wrapper. The per-call steps (cache key, lookup, pointer checks, copies,
replay, outputs) are the launch overhead we exist to remove; doing them in Python costs about
as much as the launches saved for small graphs (bench/overhead.py measures both).

Hardest invariant. A replay must compute exactly what eager PyTorch would for these inputs,
or not happen: the cache key holds everything that changes the kernels (Note [Cache key] in
csrc/runtime/signature.h), parameters are checked for movement on every call, dynamic inputs
live in entry-owned buffers (Note [Static inputs] in csrc/runtime/entry.h), and a signature
that cannot be captured is served by the non-graph path and counted by reason.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import torch

from . import config
from ._device_graphs import choose_kind, make_factory, warn_without_warmup
from ._entry_lifetime import StaticInputWatch
from ._free_tensors import lift_free_tensors, with_free_tensors
from ._graph_analysis import describe_node, flat_output, graph_refusal, input_name, input_roles
from ._host_numbers import HostNumbers
from ._once import RunOnce, Setup, register_reset_after_fork
from ._subclass_inputs import SubclassInputs

log = logging.getLogger("graphdispatch")

ROUTE_GRAPH_WITH_COMPILE = "graph_with_compile"
ROUTE_GRAPH_ONLY = "graph_only"
ROUTE_DEFAULT = "default"


# ---- the route ------------------------------------------------------------------------------


def inputs_device(example_inputs: Sequence[Any]) -> torch.device:
    """The device the graph runs on: the first non-CPU tensor's, else the CPU."""
    for value in example_inputs:
        if isinstance(value, torch.Tensor) and value.device.type != "cpu":
            return value.device
    return torch.device("cpu")


def choose_route(
    options: dict[str, Any], example_inputs: Sequence[Any]
) -> tuple[str, str | None, str]:
    """(route, graph kind or None, reason) for resolved ``options`` (Note [Routes])."""
    if options["graph_with_compile"]:
        wanted = ROUTE_GRAPH_WITH_COMPILE
    elif options["graph_only"]:
        wanted = ROUTE_GRAPH_ONLY
    else:
        return ROUTE_DEFAULT, None, "graph_only and graph_with_compile are off"
    kind, reason = choose_kind(
        options["device_graph"],
        inputs_device(example_inputs),
        compiled=wanted == ROUTE_GRAPH_WITH_COMPILE,
    )
    if kind is None:
        return ROUTE_DEFAULT, None, f"{wanted} requested but {reason}"
    return wanted, kind, reason


# ---- setup, done once and lazily -------------------------------------------------------------


def _setup_inductor() -> None:
    import torch._inductor.compile_fx  # noqa: F401  (the import is the setup: it is slow)


def _load_extension() -> None:
    from . import _C  # noqa: F401  (the C++ runtime; only the graph routes need it)


SETUP_INDUCTOR = RunOnce("inductor", _setup_inductor)
LOAD_EXTENSION = RunOnce("extension", _load_extension)
_FACTORIES: dict[str, Any] = {}
_FACTORIES_LOCK = threading.Lock()


def graph_factory(kind: str) -> Any:
    """One C++ graph factory per kind, shared by every runner (and so one pool per device)."""
    if kind == "cpu":
        from . import _higher_order

        _higher_order.prepare()  # higher-order ops registered since the last graph (case C71)
    with _FACTORIES_LOCK:
        if kind not in _FACTORIES:
            _FACTORIES[kind] = make_factory(kind)
        return _FACTORIES[kind]


# ---- bookkeeping: live runners, route counts -------------------------------------------------

_RUNNERS: weakref.WeakSet[Any] = weakref.WeakSet()
_ROUTES: dict[str, int] = {}
_PASSES: dict[str, int] = {}  # graph_passes: rewrites reported per pass, under _ROUTES_LOCK
_ROUTES_LOCK = threading.Lock()


def _count_route(route: str) -> None:
    with _ROUTES_LOCK:
        _ROUTES[route] = _ROUTES.get(route, 0) + 1


def route_counts() -> dict[str, int]:
    with _ROUTES_LOCK:
        return dict(_ROUTES)


def pass_counts() -> dict[str, int]:
    with _ROUTES_LOCK:
        return dict(_PASSES)


def _pass_name(graph_pass: Callable) -> str:
    return getattr(graph_pass, "__qualname__", None) or type(graph_pass).__qualname__


def run_graph_passes(gm: torch.fx.GraphModule, passes: Sequence[Callable]) -> None:
    """Runs the ``graph_passes`` option's passes on ``gm`` in order, counts the rewrites each
    reports, and recompiles ``gm``. A pass returning neither an int nor None raises TypeError
    naming it."""
    if not passes:
        return
    for graph_pass in passes:
        rewrites = graph_pass(gm)
        name = _pass_name(graph_pass)
        if rewrites is not None and (not isinstance(rewrites, int) or isinstance(rewrites, bool)):
            raise TypeError(
                f"graphdispatch option 'graph_passes': pass {name} must return an int (rewrites"
                f" made) or None, got {type(rewrites).__name__} {rewrites!r}"
            )
        with _ROUTES_LOCK:
            _PASSES[name] = _PASSES.get(name, 0) + (rewrites or 0)
    gm.graph.lint()
    gm.recompile()


def clear_caches() -> None:
    """Drops every runner's entries (graphs reset, buffers freed) and the route counts."""
    for runner in list(_RUNNERS):
        runner.clear()
    with _ROUTES_LOCK:
        _ROUTES.clear()
        _PASSES.clear()


def _reset_after_fork() -> None:
    # Note [Fork] in _once.py: no lock taken, no import.
    global _FACTORIES_LOCK, _ROUTES_LOCK
    _FACTORIES_LOCK = threading.Lock()
    _ROUTES_LOCK = threading.Lock()
    _ROUTES.clear()  # counted with stats(), which the child starts from zero
    _PASSES.clear()
    _FACTORIES.clear()  # the parent's pools and streams are not ours to use
    for runner in list(_RUNNERS):
        runner.reset_after_fork()
    # Not loaded: it has no state to reset.
    _C = sys.modules.get(f"{__package__}._C")
    if _C is not None:
        _C.reset_after_fork()


register_reset_after_fork(_reset_after_fork)


# ---- composition -----------------------------------------------------------------------------


def _inductor(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, cudagraphs: bool
) -> Callable:
    SETUP_INDUCTOR()
    from torch._inductor.compile_fx import compile_fx

    from ._warm_start import inductor_output

    warm = inductor_output(gm)  # saved or loaded by a warm start (Note [Warm start])

    def fresh() -> tuple[Callable, list]:
        patches = {"triton.cudagraphs": cudagraphs}
        return compile_fx(gm, list(example_inputs), config_patches=patches), []

    return (fresh() if warm is None else warm.compiled(fresh))[0]


def _refused(fn: Callable, reason: str) -> Callable:
    """``fn`` for a graph refused as a whole: every call runs it and is counted as a fallback."""
    from . import _C

    def call(*args: Any) -> Any:
        return _C.fallback(reason, fn, *args)

    return call


def _with_flat_output(fn: Callable, gm: torch.fx.GraphModule) -> tuple[Callable, Callable | None]:
    """(callable returning a flat tuple, function restoring the graph's structure or None)."""
    if flat_output(gm):
        return fn, None
    from torch.utils import _pytree as pytree

    spec: list[Any] = []

    def flat(*args: Any) -> tuple:
        leaves, tree = pytree.tree_flatten(fn(*args))
        spec[:] = [tree]
        return tuple(leaves)

    return flat, lambda leaves: pytree.tree_unflatten(list(leaves), spec[0])


@dataclasses.dataclass
class CompiledGraph:
    """What the backend made of one FX graph (``explain`` reads it).

    ``runner`` is the C++ GraphRunner (None on the default route and for a graph refused as a
    whole, whose reason is ``refusal``, decided at ``refusal_node``); ``is_static``/``written``
    are per input position; ``names`` per input what the user calls it, or "" (read while
    Dynamo's sources are on the placeholders: it drops them after the compile).
    """

    gm: torch.fx.GraphModule
    example_inputs: list[Any]
    route: str
    reason: str
    names: list[str] = dataclasses.field(default_factory=list)
    runner: Any = None
    refusal: str | None = None
    refusal_node: torch.fx.Node | None = None
    is_static: list[bool] = dataclasses.field(default_factory=list)
    written: list[int] = dataclasses.field(default_factory=list)
    effects: Any = None


def _capture_fx(
    gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str, numbers: HostNumbers
) -> tuple[Callable, Any]:
    """graph_only: the runner captures the FX graph itself, rewritten to take the numbers."""
    numbers.take(gm)
    return gm.forward, None


def _compile_then_capture(
    gm: torch.fx.GraphModule, example_inputs: list[Any], kind: str, numbers: HostNumbers
) -> tuple[Callable, Any]:
    """graph_with_compile: the runner captures Inductor's function (its cudagraphs off), given
    its 0-d tensors back (Inductor specialises a plain number); on the CPU Inductor's C++
    entry, which its own graph factory calls from C++ (Note [Inductor's C++ entry])."""
    SETUP_INDUCTOR()
    if kind == "cpp_wrapper":
        from . import _cpp_wrapper

        compiled, calls = _cpp_wrapper.compile_with_cpp_wrapper(gm, example_inputs)
        return numbers.inside(compiled), _cpp_wrapper.graph_factory(calls)
    # compile_fx's result is called as fn(*args), as Dynamo calls it; the `_boxed_call` it
    # carries is copied from the inner function and does not describe it.
    return numbers.inside(_inductor(gm, example_inputs, cudagraphs=False)), None


@dataclasses.dataclass(frozen=True)
class Route:
    """One route of Note [Routes]: what it sets up once before its first graph (Note [Lazy
    loading] in _registration.py), what the runner captures (None: no runner, Inductor alone),
    whether tensors the graph holds as attributes become static inputs (the FX graph replayed
    as is can only vouch for inputs; Inductor reads attributes itself, and with ``freezing``
    folds them into constants), and whether ``verify_replays`` compares exactly (graph_only
    replays the very FX graph the check runs, so any difference is a bug)."""

    setup: Setup
    captured: Callable[..., tuple[Callable, Any]] | None
    lifts_attributes: bool = False
    exact_verify: bool = False


ROUTES: dict[str, Route] = {
    ROUTE_GRAPH_WITH_COMPILE: Route(
        Setup(ROUTE_GRAPH_WITH_COMPILE, LOAD_EXTENSION, SETUP_INDUCTOR), _compile_then_capture
    ),
    ROUTE_GRAPH_ONLY: Route(
        Setup(ROUTE_GRAPH_ONLY, LOAD_EXTENSION),
        _capture_fx,
        lifts_attributes=True,
        exact_verify=True,
    ),
    ROUTE_DEFAULT: Route(Setup(ROUTE_DEFAULT, SETUP_INDUCTOR), None),
}


def _refuse(record: CompiledGraph, fn: Callable, numbers: HostNumbers) -> Callable | None:
    """``fn`` counted as a fallback on every call when the graph is refused as a whole (the
    reason kept on ``record``), else None."""
    refusal = graph_refusal(record.gm)
    if refusal is None:
        return None
    reason, node = refusal
    log.warning(
        "graphdispatch: graph not captured (%s, at %s); every call runs without a graph",
        reason,
        describe_node(node),
    )
    record.refusal, record.refusal_node = reason, node
    return numbers.outside(_refused(fn, reason))


def _capture_at_compile(runner: Any, example_inputs: list[Any]) -> None:
    # Dynamo compiles with inference mode off even when the call runs in it; the cache key
    # leaves inference mode out, so this capture serves calls under torch.inference_mode() too.
    try:
        runner.capture(*example_inputs)
    except TypeError as error:  # an input the key cannot hold (e.g. a SymInt): capture lazily
        log.info("compile-time capture skipped, capturing at the first call: %s", error)


def build_runner(record: CompiledGraph, kind: str, options: dict[str, Any]) -> Callable:
    """The compiled function of ``record``'s graph on its (graph) route: a C++ GraphRunner over
    the FX graph or Inductor's output. Fills ``record`` with the runner (or the refusal) and the
    inputs' roles.
    """
    from . import _C

    route = ROUTES[record.route]
    # Numbers Dynamo passes as 0-d tensors reach the runner as numbers, keyed on their value
    # (case C70); the cpp_wrapper graph's entry reads the 0-d tensor at replay instead, and so
    # does the CPU graph's where the number's uses allow: one entry for all values (case C89,
    # Note [Numbers read at replay]).
    numbers = HostNumbers(
        record.gm, record.example_inputs, keyed=kind != "cpp_wrapper", read_at_replay=kind == "cpu"
    )
    fn, factory = route.captured(record.gm, record.example_inputs, kind, numbers)
    refused = _refuse(record, fn, numbers)
    if refused is not None:
        return refused
    fn, unflatten = _with_flat_output(fn, record.gm)
    example_inputs = numbers.examples(record.example_inputs)
    roles = input_roles(record.gm, example_inputs)
    runtime_options = config.runtime_options(options)
    if route.exact_verify:
        runtime_options.update(verify_rtol=0.0, verify_atol=0.0)
    is_static, names, written = roles.is_static, record.names, roles.effects.written
    # Tensor subclasses reach Inductor's function through a runner as their inner tensors
    # (case C90); the FX graph replayed as is cannot take them (unsupported_tensor).
    subclasses = SubclassInputs(example_inputs if record.route == ROUTE_GRAPH_WITH_COMPILE else [])
    if subclasses:
        is_static = subclasses.flat(is_static, example_inputs)
        names = subclasses.flat(names, example_inputs)
        flags = subclasses.flat(
            [i in (written or []) for i in range(len(example_inputs))], example_inputs
        )
        written = None if written is None else [i for i, w in enumerate(flags) if w]

    def make_runner(captured: Callable) -> Any:
        watch = StaticInputWatch()
        runner = _C.GraphRunner(
            captured,
            is_static,
            factory or graph_factory(kind),
            log=log.warning,
            written_inputs=written,
            draws_random=roles.effects.draws_random,
            watch=watch,
            input_names=names,
            **runtime_options,
        )
        watch.bind(runner)
        _RUNNERS.add(runner)
        return runner

    warn_without_warmup(kind, options["warmup_iters"])
    if subclasses:

        def runner_of(layouts: tuple) -> Any:
            # Writes Inductor's kernels make to inner tensors bump no version counter: where the
            # graph's writes are unknown the runner could not tell which to copy back, so
            # Inductor runs alone (unsupported_tensor).
            return None if written is None else make_runner(subclasses.inside(fn, layouts))

        flattened = subclasses.flatten(example_inputs)
        call = subclasses.outside(runner_of, fn)
        runner = None if flattened is None else subclasses.runner_for(flattened[0], runner_of)[1]
    else:
        runner = make_runner(fn)
        flattened = ((), example_inputs)
        call = runner
    if runner is not None and not options["lazy_capture"]:
        _capture_at_compile(runner, flattened[1])
    call = numbers.outside(call)
    record.runner, record.is_static, record.written = runner, roles.is_static, roles.written
    record.effects = roles.effects
    if unflatten is None:
        return call
    return lambda *args: unflatten(call(*args))


class Backend:
    """``torch.compile(model, backend=graphdispatch.Backend(**options))``.

    Options (Note [Options] in config.py): every ``graphdispatch.config.OPTIONS`` entry, which gives
    each one's type, default and meaning; ``-`` or ``_`` in keys; MindIE-SD's ``aclgraph_*`` names
    as aliases. ``mode`` is None, "default" or "reduce-overhead" (the graph_with_compile route).
    Raises TypeError/ValueError naming the key for an invalid option, before any work.
    """

    compiler_name = "graphdispatch"

    def __init__(self, mode: str | None = None, options: Any = None, **kwargs: Any):
        self.options = {
            **config.options_for_mode(mode),
            **config.normalize(options),
            **config.normalize(kwargs, source="Backend() keyword arguments"),
        }
        # Called with each CompiledGraph (graphdispatch.explain collects them); not an option.
        self.on_graph: Callable[[CompiledGraph], None] | None = None

    def __call__(
        self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], **kwargs: Any
    ) -> Callable:
        if kwargs:  # torch.compile(..., mode=..., options=...) on an instance
            unexpected = sorted(set(kwargs) - {"mode", "options"})
            if unexpected:
                raise TypeError(
                    f"graphdispatch backend: unexpected arguments {unexpected}; "
                    "valid: mode, options"
                )
            return Backend(
                kwargs.get("mode"), {**self.options, **config.normalize(kwargs.get("options"))}
            )(gm, example_inputs)
        options = config.resolve(self.options)
        saved = None
        if getattr(gm, "_backend_id", None) is not None:  # aot_compile's (Note [Warm start])
            from . import _warm_start

            saved = _warm_start.Snapshot(gm, example_inputs, self.options)
        run_graph_passes(gm, options["graph_passes"])
        route, kind, reason = choose_route(options, example_inputs)
        ROUTES[route].setup()
        log.info(
            "graphdispatch route %s (%s) for a graph of %d nodes",
            route,
            reason,
            len(gm.graph.nodes),
        )
        _count_route(route)
        captures = ROUTES[route].captured is not None
        # Tensors the graph holds as attributes (install_free_tensors) become static inputs
        # where the captured graph reads only its inputs.
        lifted, free = lift_free_tensors(gm) if ROUTES[route].lifts_attributes else (gm, [])
        record = CompiledGraph(
            lifted,
            [*example_inputs, *free],
            route,
            reason,
            [input_name(n) for n in lifted.graph.find_nodes(op="placeholder")],
        )
        if captures:
            compiled = with_free_tensors(build_runner(record, kind, options), free)
        else:
            compiled = _inductor(gm, example_inputs, cudagraphs=False)
        if options["fast_path"]:
            from ._fast_path import install_for_caller

            install_for_caller()
        if self.on_graph is not None:
            self.on_graph(record)
        if saved is not None:
            compiled = _warm_start.WarmStartFunction(compiled, saved.finish(record), loaded=False)
        return compiled

    def reset(self) -> None:
        clear_caches()
