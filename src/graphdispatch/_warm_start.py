"""Warm start: graphdispatch's compiled function saved by ``aot_compile`` and loaded in a new
process, where its first call records and every later one replays.

Note [Warm start]
PyTorch's precompile path (``torch.compile(fn, fullgraph=True, backend=...).aot_compile(((args),
kwargs))``, ``.save_compiled_function(path)``, ``torch.compiler.load_compiled_function(file)``)
saves Dynamo's guards and bytecode itself and asks the backend's result to serialize itself: it
must be a ``torch._dynamo.aot_compile_types.SerializableCallable``. ``aot_compile_fullgraph``
marks the graph module it hands the backend with ``_backend_id`` (a plain compile does not), so
the backend knows when to return a ``WarmStartFunction`` and pays nothing otherwise.

What travels is what the backend was given, not what it made: Dynamo's FX graph (GraphPickler;
copied before the graph passes and routes change it), a description of every graph input
(``InputSpec``: kind, shape, dtype, device, parameter or not, Dynamo's name), the options, and
what the compile decided that a load cannot cheaply redo: the graph's ``Effects`` (which inputs
it writes, whether it draws random numbers: working them out runs the graph on fake tensors,
most of a load's time on the tiny Flux) and, on ``graph_with_compile`` and ``default``,
Inductor's output (its bundled AOTAutograd entry, ``InductorOutput``: aot_compile's compile
looks nothing up in aot_autograd's cache, so the entry is made; a load deserializes it, and
Inductor's generated library comes from Inductor's on-disk cache, or is built again where that
lacks it). The fake tensors of the nodes' metadata travel only where a load reads them (a graph
refused as a whole, graph passes). aot_compile hands the backend no Dynamo sources
(``grapharg``), at save as at load: an input is static there only as a parameter or a marked
address (``_graph_analysis.is_static_input``), the same decision both times. Loading rebuilds
the graph and reruns the backend on it (``Backend.__call__``: the route, the graph passes, the
inputs' roles and the runner decided by the same code as a fresh compile) with
``lazy_capture`` on: the first call records from the real inputs and replays, each later call
replays. The recorded program itself does not travel:
recording at the first call costs about a warm-up run and a recording run of the graph
(bench/RESULTS.md, "Warm start"), and saving it would mean serializing the C++ runtime's
entries.

What the caller must do (docs/usage.md, "Warm start: compile once, load in every process"):
compile a module-level function taking the model (``call_model``; a decorated ``forward``, as
diffusers' models have, is a function Dynamo's saver cannot pickle), with a guard filter that
keeps only serializable guards (``torch.compiler.keep_tensor_guards_unsafe``), under the grad
mode of the calls (a guard).

Parameters are not baked in: Dynamo's graph takes them as inputs, read from the module the
caller passes to the loaded function, so weights changed after saving are the weights used (a
graph holding tensors as attributes, ``install_free_tensors``, is refused at save). The
examples the backend is rerun on are zero-strided views of one element (``_example``): the
right shape, dtype and device, no memory; nothing records from them, nothing compiles them.

Bad artifacts never replay: the bytes start with a header (magic, format, torch and graphdispatch
versions, length and SHA-256 of the body) checked before anything is unpickled, so another
version, a truncated or an edited body raise ``WarmStartError`` naming the mismatch (a file
truncated in Dynamo's part, after ours, fails in torch's unpickler). A device the artifact needs
that this process lacks is named at load. The first call checks every tensor input against its
``InputSpec`` (shape, dtype, device), naming the input and expected vs given; Dynamo's guards
check every call, as in a plain compile, and where the filter kept an input's guard they
refuse first, naming it.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch._dynamo.aot_compile_types import SerializableCallable

MAGIC = b"graphdispatch-warm-start\n"
FORMAT = 1


class WarmStartError(RuntimeError):
    """A saved compiled function that this process must not run: its message names why."""


def versions() -> dict[str, str]:
    """What an artifact is only valid for: the torch and graphdispatch versions."""
    import graphdispatch

    return {"torch": torch.__version__, "graphdispatch": graphdispatch.__version__}


# ---- what the backend saw of each input ------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One graph input as the backend saw it at save time.

    ``kind``: "tensor", or "value" for anything else (an int, a float: kept in ``value``).
    For tensors: ``shape``, ``dtype`` and ``device`` (as strings), ``parameter`` (an
    ``nn.Parameter``), ``requires_grad`` and ``static_type`` (Dynamo's static-address mark, or
    None): what ``_graph_analysis.input_roles`` reads off an example. ``name``: Dynamo's flat
    name of the input (``L_model_modules_up_parameters_weight_``), for error messages:
    aot_compile hands the backend no Dynamo sources, so there is no module path to give.
    """

    kind: str
    name: str
    shape: tuple[int, ...] = ()
    dtype: str = ""
    device: str = ""
    parameter: bool = False
    requires_grad: bool = False
    static_type: str | None = None
    value: Any = None


def _spec(node: torch.fx.Node, value: Any) -> InputSpec:
    name = str(node.target)
    if not isinstance(value, torch.Tensor):
        if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise WarmStartError(
                f"graphdispatch warm start: input {name!r} is symbolic ({value}); saving needs "
                "static shapes (compile without dynamic=True)"
            )
        return InputSpec("value", name, value=value)
    return InputSpec(
        "tensor",
        name,
        tuple(int(s) for s in value.shape),
        str(value.dtype).removeprefix("torch."),
        str(value.device),
        isinstance(value, torch.nn.Parameter),
        value.requires_grad,
        getattr(value, "_dynamo_static_input_type", None),
    )


def _example(spec: InputSpec) -> Any:
    """An example of ``spec`` for rerunning the backend: a zero-strided view of one element."""
    if spec.kind != "tensor":
        return spec.value
    one = torch.zeros((), dtype=getattr(torch, spec.dtype), device=spec.device)
    example = one.expand(spec.shape)
    if spec.parameter:
        example = torch.nn.Parameter(example, requires_grad=spec.requires_grad)
    elif spec.requires_grad:
        example.requires_grad_(True)
    if spec.static_type is not None:
        example._dynamo_static_input_type = spec.static_type
    return example


def check_inputs(specs: Sequence[InputSpec], args: Sequence[Any]) -> None:
    """Raises WarmStartError naming the first input whose shape, dtype or device differs
    from the artifact's, expected vs given."""
    if len(args) != len(specs):
        raise WarmStartError(
            f"graphdispatch warm start: the graph takes {len(specs)} inputs, given {len(args)}"
        )
    for spec, arg in zip(specs, args):
        if spec.kind != "tensor":
            continue
        if not isinstance(arg, torch.Tensor):
            raise WarmStartError(
                f"graphdispatch warm start: input {spec.name!r}: expected a tensor, given "
                f"{type(arg).__name__}"
            )
        for what, expected, given in (
            ("shape", spec.shape, tuple(arg.shape)),
            ("dtype", spec.dtype, str(arg.dtype).removeprefix("torch.")),
            ("device", spec.device, str(arg.device)),
        ):
            if expected != given:
                raise WarmStartError(
                    f"graphdispatch warm start: input {spec.name!r}: the artifact was saved for "
                    f"{what} {expected}, given {given}"
                )


# ---- the header -------------------------------------------------------------------------------


def _pack(payload: dict[str, Any]) -> bytes:
    try:
        body = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError) as error:
        raise WarmStartError(
            f"graphdispatch warm start: cannot save the options {sorted(payload['options'])}: "
            f"{error} (a graph pass must be a module-level function, saved by name)"
        ) from error
    header = {
        "format": FORMAT,
        **versions(),
        "length": len(body),
        "sha256": hashlib.sha256(body).hexdigest(),
    }
    return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + body


def _unpack(data: bytes) -> dict[str, Any]:
    """The payload of ``data``; WarmStartError naming what does not match."""
    prefix = "graphdispatch warm start: cannot load this artifact:"
    if not data.startswith(MAGIC):
        raise WarmStartError(f"{prefix} it is not a graphdispatch artifact (no header)")
    line, sep, body = data[len(MAGIC) :].partition(b"\n")
    try:
        header = json.loads(line) if sep else None
    except ValueError:
        header = None
    if not isinstance(header, dict):
        raise WarmStartError(f"{prefix} its header is damaged")
    if header.get("format") != FORMAT:
        raise WarmStartError(
            f"{prefix} format {header.get('format')}, this graphdispatch reads format {FORMAT}"
        )
    for key, current in versions().items():
        if header.get(key) != current:
            raise WarmStartError(
                f"{prefix} saved with {key} {header.get(key)}, this process has {key} "
                f"{current}; save it again with this version"
            )
    if len(body) != header.get("length"):
        raise WarmStartError(
            f"{prefix} truncated or extended: {len(body)} bytes of body, the header says "
            f"{header.get('length')}"
        )
    if hashlib.sha256(body).hexdigest() != header.get("sha256"):
        raise WarmStartError(f"{prefix} its contents were changed (SHA-256 differs)")
    return pickle.loads(body)


def check_device(specs: Sequence[InputSpec]) -> None:
    for spec in specs:
        if spec.kind != "tensor" or spec.device == "cpu":
            continue
        device = torch.device(spec.device)
        module = getattr(torch, device.type, None)
        available = module is not None and module.is_available()
        count = module.device_count() if available else 0
        if not available or (device.index or 0) >= count:
            raise WarmStartError(
                f"graphdispatch warm start: the artifact runs on {spec.device} (input "
                f"{spec.name!r}); this process has {count} {device.type} device(s)"
            )


# ---- Inductor's output -----------------------------------------------------------------------

# gm.meta key of the InductorOutput of a graph being saved or loaded.
INDUCTOR = "graphdispatch_warm_start_inductor"


class InductorOutput:
    """Inductor's compiled function of one graph, on its way out or in: ``saved`` is None
    while saving (``compiled`` fills it), the saved bytes while loading (``compiled`` returns
    them loaded)."""

    def __init__(self, saved: bytes | None = None) -> None:
        self.saved = saved

    def compiled(self, fresh: Callable[[], tuple[Callable, list]]) -> tuple[Callable, list]:
        """(Inductor's compiled function, its CompiledFxGraphs): ``fresh()``'s while saving,
        and its bundled AOTAutograd entry kept; the saved entry's, loaded, while loading."""
        from torch._functorch._aot_autograd.aot_autograd_result import (
            deserialize_bundled_cache_entry,
        )

        if self.saved is None:
            fn, graphs = fresh()
            if getattr(fn, "serialize", None) is None:
                raise WarmStartError(
                    "graphdispatch warm start: Inductor's output of this graph cannot be saved"
                    " (no bundled AOTAutograd entry)"
                )
            self.saved = pickle.dumps(fn.serialize(), protocol=pickle.HIGHEST_PROTOCOL)
            return fn, graphs
        entry = pickle.loads(self.saved)
        # Locating the compiled library needs the CPU's vector ISA; Inductor picks it from the
        # CPU's flags after building and loading a probe for each candidate in a child process
        # (1.6 s on the bench machine, once per process). Here the flags alone decide: the
        # library was built for that ISA where it was saved (a machine whose Inductor cache
        # lacks it builds it again, for the ISA its flags name).
        with torch._inductor.config.patch({"cpp.vec_isa_ok": True}):
            fn = deserialize_bundled_cache_entry(entry)
        return fn, [entry.compiled_fw.result]


def inductor_output(gm: torch.fx.GraphModule) -> InductorOutput | None:
    """The InductorOutput of ``gm`` when a warm start saves or loads it, else None; taken off
    ``gm`` (Inductor must not see it)."""
    return gm.meta.pop(INDUCTOR, None)


# ---- the serializable callable ---------------------------------------------------------------


class WarmStartFunction(SerializableCallable):
    """What the backend returns under ``aot_compile``: the compiled function, called as is,
    and what it takes to build it again in another process (Note [Warm start]).

    ``payload``: ``graph`` (GraphPickler bytes of Dynamo's graph as given to the backend),
    ``inputs`` (an InputSpec per graph input), ``options`` (the backend's normalized options),
    and ``inductor`` (Inductor's saved output on graph_with_compile, else None).
    """

    def __init__(self, compiled: Callable, payload: dict[str, Any], *, loaded: bool) -> None:
        self.compiled = compiled
        self.payload = payload
        self._call = self._first_call if loaded else compiled

    def _first_call(self, *args: Any) -> Any:
        check_inputs(self.payload["inputs"], args)
        self._call = self.compiled
        return self.compiled(*args)

    def __call__(self, *args: Any) -> Any:
        return self._call(*args)

    @classmethod
    def serialize_compile_artifacts(cls, fn: WarmStartFunction) -> bytes:
        return _pack(fn.payload)

    @classmethod
    def deserialize_compile_artifacts(cls, data: bytes) -> WarmStartFunction:
        from torch._subclasses import FakeTensorMode
        from torch.fx._graph_pickler import GraphPickler
        from torch.fx.experimental.symbolic_shapes import ShapeEnv

        from ._backend import Backend

        # The collector's passes over a large model's heap, set off by the many small objects
        # unpickled here, were most of a load's time (bench/warm_start.py).
        collecting = gc.isenabled()
        gc.disable()
        try:
            payload = _unpack(data)
            specs = payload["inputs"]
            check_device(specs)
            gm = GraphPickler.loads(payload["graph"], FakeTensorMode(shape_env=ShapeEnv()))
        finally:
            if collecting:
                gc.enable()
        gm.__dict__.pop("_backend_id", None)  # the payload is kept: no second snapshot
        if payload["inductor"] is not None:
            gm.meta[INDUCTOR] = InductorOutput(payload["inductor"])
        gm.recompile()
        backend = Backend(options={**payload["options"], "lazy_capture": True})
        compiled = backend(gm, [_example(s) for s in specs])
        return cls(compiled, payload, loaded=True)


class Snapshot:
    """Dynamo's graph as the backend was given it (a copy, taken before the graph passes and
    the routes change it) and its inputs; ``finish`` makes the payload once the compile has
    decided the graph's effects.

    Raises WarmStartError when ``gm`` holds tensors as attributes (they would be saved with it:
    parameters baked in) or takes symbolic inputs.
    """

    def __init__(
        self, gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any]
    ) -> None:
        held = [
            n.target
            for n in gm.graph.find_nodes(op="get_attr")
            if isinstance(getattr(gm, n.target, None), torch.Tensor)
        ]
        if held:
            raise WarmStartError(
                f"graphdispatch warm start: the graph holds tensors as attributes ({held[:3]}),"
                " which would be saved with it; turn torch._dynamo.config.install_free_tensors "
                "off"
            )
        placeholders = gm.graph.find_nodes(op="placeholder")
        self.inputs = [_spec(n, v) for n, v in zip(placeholders, example_inputs)]
        self.options = options
        self.gm = torch.fx.GraphModule(gm, _graph_copy(gm.graph))
        self.inductor = gm.meta[INDUCTOR] = InductorOutput()  # filled if Inductor compiles

    def finish(self, record: Any) -> dict[str, Any]:
        """The payload, given the compile's ``CompiledGraph``. The effects it decided travel
        with the graph; the fake tensors in the nodes' metadata only where a load needs them
        (a graph refused as a whole: the refusal is read from them again; graph passes, which
        may read them), since rebuilding them is most of a load's time."""
        from torch.fx._graph_pickler import Options

        from ._graph_analysis import SAVED_EFFECTS

        light = record.refusal is None and not self.options.get("graph_passes")
        for node in self.gm.graph.nodes:
            keep = () if light else ("example_value", "val")
            kept = {k: node.meta[k] for k in keep if k in node.meta}
            node.meta.clear()
            node.meta.update(kept)
        if record.effects is not None:
            self.gm.meta[SAVED_EFFECTS] = record.effects
        return {
            "graph": _graph_pickler().dumps(self.gm, Options(ops_filter=None)),
            "inputs": self.inputs,
            "options": self.options,
            "inductor": self.inductor.saved,
        }


def _graph_pickler() -> type:
    """GraphPickler, with the base of a fake view saved without its fake mode, as the top
    tensor's is (PyTorch 2.13 leaves the base's in, which cannot be pickled; its unpickling
    already sets both)."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.fx._graph_pickler import GraphPickler

    class Pickler(GraphPickler):
        def reducer_override(self, obj: object) -> Any:
            reduced = super().reducer_override(obj)
            if isinstance(obj, FakeTensor):
                data = reduced[1][0]
                base = data.metadata.base
                if base is not None:
                    base = dataclasses.replace(base, fake_mode=None)
                    data.metadata = dataclasses.replace(data.metadata, base=base)
            return reduced

    return Pickler


def _graph_copy(graph: torch.fx.Graph) -> torch.fx.Graph:
    """A copy of ``graph`` whose nodes' metadata dicts are their own (graph_copy shares them)."""
    copy = torch.fx.Graph()
    copy._codegen = graph._codegen
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    out = copy.graph_copy(graph, env)
    copy.output(out)
    for old, new in env.items():
        new.meta = dict(old.meta)
    return copy
