"""What the backend reads off an FX graph before capturing it: which inputs are static, which
the graph writes, whether it draws random numbers, whether its output is flat, and whether it
can be captured at all.

Every function here inspects Dynamo's graph and metadata; none runs the model on real data.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

import torch

from ._free_tensors import LIFTED

log = logging.getLogger("graphdispatch")


def is_static_input(node: torch.fx.Node, value: Any) -> bool:
    """True for parameters and buffers Dynamo lifted, and for tensors the graph held as
    attributes (_free_tensors.py) (Note [Static inputs])."""
    if not isinstance(value, torch.Tensor):
        return False
    if isinstance(value, torch.nn.Parameter) or marked_static_address(value):
        return True
    if LIFTED in node.meta:
        return True
    grapharg = node.meta.get("grapharg")
    if getattr(grapharg, "pass_arg_as_tensor", False):
        # A number Dynamo wraps in a new 0-d tensor on every call, even one a module holds
        # (a LoRA scaling): copied in where the graph reads it at replay (case C89).
        return False
    source = getattr(grapharg, "source", None)
    guard_source = getattr(source, "guard_source", None)
    if callable(guard_source):  # a method in some PyTorch versions, a property in others
        guard_source = guard_source()
    return any(
        getattr(guard_source, check, lambda: False)()
        for check in ("is_specialized_nn_module", "is_unspecialized_nn_module")
    )


# Dynamo's source of a graph input: a local (`L['hidden_states']`), then module, parameter and
# buffer accesses (group 1), attributes (2), items by key (3) or index (4).
_LOCAL = re.compile(r"L\['([^']+)'\]")
_ACCESS = re.compile(
    r"\._(?:modules|parameters|buffers)\['([^']*)'\]|\.([A-Za-z_]\w*)|\['([^']*)'\]|\[(\d+)\]"
)


def input_name(node: torch.fx.Node) -> str:
    """What the user calls the input ``node`` holds (case C48): a parameter or buffer by its
    module path (``transformer_blocks.3.attn.to_q.weight``, from Dynamo's source
    ``L['self']._modules['transformer_blocks']._modules['3']...``), a tensor argument by its
    name (``hidden_states``, also from ``L['kwargs']['hidden_states']``), anything else by
    Dynamo's own source name, a tensor the graph held as an attribute by that attribute's name;
    "" when Dynamo kept no source."""
    if LIFTED in node.meta:
        return node.meta[LIFTED]
    source = getattr(node.meta.get("grapharg"), "source", None)
    name = getattr(source, "name", None)
    if callable(name):  # a method in some PyTorch versions, a property in others
        name = name()
    if not isinstance(name, str):
        return ""
    local = _LOCAL.match(name)
    if local is None:
        return name
    parts, end, in_module = [], local.end(), False
    for access in _ACCESS.finditer(name, end):
        if access.start() != end:
            return name  # an access this reading does not know: Dynamo's name is clearer
        parts.append(next(group for group in access.groups() if group is not None))
        in_module = in_module or access.group(1) is not None
        end = access.end()
    if end != len(name):
        return name
    # A path through a module starts below the module compiled (`self`, or whatever local
    # holds it); keyword arguments are named by their key.
    root = [] if in_module or (local.group(1) == "kwargs" and parts) else [local.group(1)]
    return ".".join(root + parts)


def marked_static_address(value: Any) -> bool:
    """True for a tensor the user marked with ``torch._dynamo.mark_static_address``."""
    return isinstance(value, torch.Tensor) and bool(
        getattr(value, "_dynamo_static_input_type", None)
    )


def graph_refusal(gm: torch.fx.GraphModule) -> tuple[str, torch.fx.Node] | None:
    """(why no signature of ``gm`` can be captured, the first node that decides it), or None.

    "data_dependent": a value the host reads mid-graph (``.item()``, ``nonzero``, boolean-mask
    indexing: unbacked symbols in Dynamo's metadata) — a replay would reuse the capture's value
    or the capture would fail on the sync. "explicit_generator": a graph advances only the
    generators registered at capture, so an explicit one would repeat its numbers.
    "autograd_region": the graph enters ``torch.inference_mode()`` (its results there are
    inference tensors, case C84), or turns grad mode on (``torch.enable_grad()``) and builds
    autograd history there (case C83): a replay records neither, and the runtime's
    ``requires_grad`` check reads the grad mode of the call, which such a region overrides.
    "unsupported_tensor": a nested (jagged) tensor input, whose ragged size reaches the graph
    as a SymInt on every call (case C85). (An output that is a view of an input is no reason:
    the runtime rebuilds it on the caller's tensor.) All are names from the runtime's one list
    of fallback reasons (``_C.FallbackReason``).
    """
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
    from torch.utils import _pytree as pytree

    from . import _C

    # A graph that starts with grad mode off and turns it on: its first switch is an enable
    # (one that starts in grad mode and has a no_grad region is the runtime's requires_grad).
    switches = [n for n in gm.graph.nodes if n.op == "call_function" and n.target in _SETS_GRAD]
    enables_grad = bool(switches) and _enables(switches[0])
    for node in gm.graph.nodes:
        value = node.meta.get("example_value", node.meta.get("val"))
        if node.op == "placeholder" and isinstance(value, torch.Tensor) and value.is_nested:
            return _C.FallbackReason.unsupported_tensor.name, node
        if node.op == "call_function" and node.target in _ENTERS_INFERENCE_MODE:
            return _C.FallbackReason.autograd_region.name, node
        if (
            enables_grad
            and node.op != "placeholder"
            and any(
                isinstance(leaf, torch.Tensor) and leaf.requires_grad
                for leaf in pytree.tree_leaves(value)
            )
        ):
            return _C.FallbackReason.autograd_region.name, node
        if any(
            isinstance(leaf, (torch.Tensor, torch.SymInt, torch.SymFloat, torch.SymBool))
            and free_unbacked_symbols(leaf)
            for leaf in pytree.tree_leaves(value)
        ):
            return _C.FallbackReason.data_dependent.name, node
        # A generator appears as an argument, or as an attribute of the module (FX tracing).
        attribute = getattr(gm, node.target, None) if node.op == "get_attr" else None
        if isinstance(attribute, torch.Generator) or any(
            isinstance(leaf, torch.Generator)
            for leaf in pytree.tree_leaves((node.args, node.kwargs))
        ):
            return _C.FallbackReason.explicit_generator.name, node
    return None


# How Dynamo writes `with torch.enable_grad()`, `torch.set_grad_enabled(...)` and
# `with torch.inference_mode()` into a graph.
_SETS_GRAD = (torch._C._set_grad_enabled,)
_ENTERS_INFERENCE_MODE = (torch.autograd.grad_mode._enter_inference_mode,)


def _enables(node: torch.fx.Node) -> bool:
    """True unless ``node`` (a ``_set_grad_enabled``) turns grad mode off for certain."""
    mode = node.args[0] if node.args else node.kwargs.get("mode", True)
    return not (isinstance(mode, bool) and not mode)


def describe_node(node: torch.fx.Node) -> str:
    """``node item (call_method item)``: how a log line or ``explain`` names an op."""
    target = (
        node.target
        if isinstance(node.target, str)
        else getattr(node.target, "__name__", node.target)
    )
    return f"node {node.name} ({node.op} {target})"


_UNMARKED_RUNNING_STATS = (
    "aten::native_batch_norm",
    "aten::cudnn_batch_norm",
    "aten::miopen_batch_norm",
)


# PyTorch's own namespaces, whose random ops carry torch.Tag.nondeterministic_seeded (`prim`
# holds TorchScript's `prim::device` and the like; the c10d ones the collectives).
_TAGGED_NAMESPACES = ("aten", "prim", "prims", "_c10d_functional", "_c10d_functional_autograd")


@dataclasses.dataclass(frozen=True)
class Effects:
    """What running the graph does besides computing its outputs.

    ``written``: positions of the inputs the graph writes to, or None when that cannot be
    worked out. ``draws_random``: True when an op draws from a generator (``torch.Tag.
    nondeterministic_seeded``: randn, dropout in training, bernoulli...), when the graph calls a
    custom op (only ATen's and prims' ops carry that tag: a custom kernel may call
    ``randn_like``, case C63), or when the ops could not be worked out; the runtime saves and
    restores the generator around capture only then (cases C29, C33).
    """

    written: list[int] | None
    draws_random: bool


def _fake_mode_of(value: Any) -> Any:
    """The fake mode of ``value``, a fake tensor or a tensor subclass over fake tensors; else
    None."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch.utils._python_dispatch import is_traceable_wrapper_subclass

    if isinstance(value, FakeTensor):
        return value.fake_mode
    if is_traceable_wrapper_subclass(value):
        inner = (getattr(value, attr) for attr in value.__tensor_flatten__()[0])
        return next((m for m in map(_fake_mode_of, inner) if m is not None), None)
    return None


# gm.meta key of the Effects a warm start saved with the graph (Note [Warm start]).
SAVED_EFFECTS = "graphdispatch_saved_effects"


def graph_effects(gm: torch.fx.GraphModule) -> Effects:
    """The ``Effects`` of ``gm``, read from the ops a run on fake copies dispatches.

    Writes come from the schemas (``Tensor(a!)``), not from version counters, which some
    in-place kernels (batch_norm's running stats) never bump. A graph a warm start loaded
    carries the Effects decided when it was saved instead (it has no fake tensors to run).
    """
    from torch.utils import _pytree as pytree
    from torch.utils._python_dispatch import TorchDispatchMode

    if SAVED_EFFECTS in gm.meta:  # decided when the graph was saved (Note [Warm start])
        return gm.meta[SAVED_EFFECTS]
    fakes = [n.meta.get("example_value") for n in gm.graph.find_nodes(op="placeholder")]
    # The mode Dynamo traced with (the tracing context may already hold another one); a tensor
    # subclass's inner tensors carry it where no input is a plain fake tensor (case C90).
    mode = next((m for m in map(_fake_mode_of, fakes) if m is not None), None)
    if mode is None:
        return Effects(None, True)
    written: set[int] = set()
    draws_random = False

    class RecordEffects(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            nonlocal draws_random
            kwargs = kwargs or {}
            draws_random = (
                draws_random
                or torch.Tag.nondeterministic_seeded in func.tags
                or func.namespace not in _TAGGED_NAMESPACES
            )
            for k, arg in enumerate(func._schema.arguments):
                value = args[k] if k < len(args) else kwargs.get(arg.name)
                writes = arg.alias_info is not None and arg.alias_info.is_write
                # These schemas do not mark the running stats they update in training (arg 5).
                writes = writes or (
                    func._schema.name in _UNMARKED_RUNNING_STATS
                    and k in (3, 4)
                    and len(args) > 5
                    and bool(args[5])
                )
                if writes:
                    written.update(
                        t.untyped_storage()._cdata
                        for t in pytree.tree_leaves(value)
                        if isinstance(t, torch.Tensor)
                    )
            return func(*args, **kwargs)

    # Without autograd: no history is built on the fakes, so saved-tensor hooks around the
    # compile (torch.utils.checkpoint's) see none of them (found attacking the fast path).
    try:
        with mode, torch.no_grad():
            copies = [f.clone() if isinstance(f, torch.Tensor) else f for f in fakes]
            with RecordEffects():
                gm.forward(*copies)
    except Exception as error:  # an op fake tensors cannot run: the caller assumes the worst
        log.info("could not work out what the graph writes and draws: %s", error)
        return Effects(None, True)
    return Effects(
        [
            i
            for i, c in enumerate(copies)
            if isinstance(c, torch.Tensor) and c.untyped_storage()._cdata in written
        ],
        draws_random,
    )


def flat_output(gm: torch.fx.GraphModule) -> bool:
    """True when the graph returns a tuple/list of leaves, the runner's contract."""
    (output,) = gm.graph.find_nodes(op="output")
    result = output.args[0]
    return isinstance(result, (tuple, list)) and not any(
        isinstance(item, (tuple, list, dict)) for item in result
    )


@dataclasses.dataclass
class InputRoles:
    """The role of each input of a graph the runtime captures: ``is_static`` per position (read
    in place, Note [Static inputs]), ``written`` (positions the graph writes; every dynamic input
    counts as written when ``effects.written`` is None, unknown), and the graph's effects."""

    is_static: list[bool]
    written: list[int]
    effects: Any


def input_roles(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> InputRoles:
    """Each input's role, decided once for the runner and for ``explain``."""
    placeholders = gm.graph.find_nodes(op="placeholder")
    is_static = [is_static_input(n, v) for n, v in zip(placeholders, example_inputs)]
    effects = graph_effects(gm)
    written = effects.written or []
    if effects.written is None:  # unknown: the runtime counts every dynamic input as written
        is_static = [
            s and isinstance(v, torch.nn.Parameter) for s, v in zip(is_static, example_inputs)
        ]
    # A tensor marked as a static address stays static even when written: read and written in
    # place, its values put back after warmup and capture, so each call writes it once (case
    # C36). Dynamo marks every parameter and buffer of an inlined module so ("unguarded"):
    # running stats, counters and a buffer viewing another buffer (case C28) are written where
    # they are. A static input not so marked that the graph writes becomes a copied input.
    is_static = [
        s and (i not in written or marked_static_address(v))
        for i, (s, v) in enumerate(zip(is_static, example_inputs))
    ]
    return InputRoles(is_static, written, effects)
