"""Sealed guards (Note [Sealed guards] in _sealed_guards.py): on the fast path, the module's and
the globals' part of Dynamo's guard tree is checked as records taken when the tree last
passed. Every change a sealed guard reads must still give eager's values: each test takes the
seal, changes one thing, and compares the next calls with eager on fresh inputs."""

from __future__ import annotations

import enum
import gc
import weakref
from collections import OrderedDict

import pytest
import torch

import graphdispatch
from graphdispatch import _C, _sealed_guards
from graphdispatch._fast_path import fast_path_of

SCALE = 2.0  # a global the forward reads


def helper(y, k=1.0):
    return y * k


def other_helper(y, k=1.0):
    return y - k


def make_classes():
    """Fresh classes per test: some tests change class attributes."""

    class Inner(torch.nn.Module):
        factor = 1.5  # a class attribute the trace reads

        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)
            self.cfg = {"shift": 0.5}
            self.gain = 1.0

        def forward(self, x):
            return helper(self.lin(x) * self.gain * self.factor + self.cfg["shift"])

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = torch.nn.ModuleList([Inner(), Inner()])
            self.register_buffer("b", torch.randn(8))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x * SCALE + self.b

    return Inner, Outer


def seal_of(compiled):
    fast = fast_path_of(compiled)
    return fast._current().fast[0][0]


def whole_checks() -> int:
    return graphdispatch.stats()["fast_path"]["whole_checks"]


def calls_match(compiled, model, n: int = 3) -> None:
    for _ in range(n):
        x = torch.randn(4, 8)
        torch.testing.assert_close(compiled(x), model(x), rtol=0, atol=0)


def sealed_model():
    torch.manual_seed(0)
    inner, outer = make_classes()
    model = outer().eval()
    compiled = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
    with torch.no_grad():
        calls_match(compiled, model, 3)  # compiles, arms the fast path, takes the seal
    assert seal_of(compiled).seal is not None
    return inner, model, compiled


def test_the_seal_holds_between_calls_that_change_nothing():
    _, model, compiled = sealed_model()
    before, calls = whole_checks(), graphdispatch.stats()["fast_path"]["calls"]
    with torch.no_grad():
        calls_match(compiled, model, 10)
    assert whole_checks() == before
    assert graphdispatch.stats()["fast_path"]["calls"] == calls + 10


def _restore_global(value):
    globals()["SCALE"] = value


# Not here: a property added to a class, shadowing an instance attribute the trace read.
# Dynamo's guards read the attribute from the instance dict and miss it, on its own path too
# (backend="eager" returns the old value); the seal gives Dynamo's verdict, no other.
CHANGES = {
    "a submodule's attribute": lambda inner, m: setattr(m.blocks[1], "gain", 3.0),
    "a class attribute": lambda inner, m: setattr(inner, "factor", 2.5),
    "a dict item an attribute holds": lambda inner, m: m.blocks[0].cfg.__setitem__("shift", 1.0),
    "a global": lambda inner, m: _restore_global(4.0),
    "a called function's defaults": lambda inner, m: setattr(helper, "__defaults__", (2.0,)),
    "a called function's code": lambda inner, m: setattr(helper, "__code__", other_helper.__code__),
    "a submodule replaced in a ModuleList": lambda inner, m: m.blocks.__setitem__(0, inner()),
    "a ModuleList grown": lambda inner, m: m.blocks.append(inner()),
    "a parameter's requires_grad": lambda inner, m: m.blocks[0].lin.weight.requires_grad_(False),
    "a parameter's data": lambda inner, m: setattr(
        m.blocks[0].lin.weight, "data", torch.ones(8, 8)
    ),
    "a submodule's class": lambda inner, m: setattr(
        m.blocks[0], "__class__", type("Sub", (inner,), {"forward": lambda s, x: x * 7})
    ),
    "a submodule's child replaced by another kind": lambda inner, m: setattr(
        m.blocks[1], "lin", torch.nn.Identity()
    ),
    "train mode": lambda inner, m: m.blocks[0].train(),
    "a buffer replaced": lambda inner, m: setattr(m, "b", torch.full((8,), 3.0)),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_the_sealed_guards_read_gives_eager_values(change):
    inner, model, compiled = sealed_model()
    code, defaults = helper.__code__, helper.__defaults__
    try:
        CHANGES[change](inner, model)
        with torch.no_grad():
            calls_match(compiled, model, 3)
    finally:
        helper.__code__, helper.__defaults__ = code, defaults
        _restore_global(2.0)


def test_a_closure_variable_changed_gives_eager_values():
    k = 2.0

    class Closure(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            return self.lin(x) * k

    def set_k(value):
        nonlocal k
        k = value

    model = Closure().eval()
    compiled = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
    with torch.no_grad():
        calls_match(compiled, model, 3)
        set_k(5.0)
        calls_match(compiled, model, 3)


class Ordered(torch.nn.Module):
    """Reads an OrderedDict's items and keys in order (a dict manager by position)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.steps = OrderedDict(a=1.0, b=2.0)

    def forward(self, x):
        y = self.lin(x)
        for name, step in self.steps.items():
            y = (y + step) * (2.0 if name == "a" else 3.0)
        return y


def test_an_ordered_dict_reordered_gives_what_dynamo_gives():
    # move_to_end changes the order and neither the storage Dynamo's dict manager reads nor the
    # version tag: Dynamo's own path keeps the old order's code (not eager's values), and the
    # fast path must give exactly that, no other.
    x = torch.randn(4, 8)
    outs = []
    for backend, options in (("eager", None), ("graphdispatch", {"graph_only": True})):
        torch._dynamo.reset()
        torch.manual_seed(0)
        model = Ordered().eval()
        compiled = torch.compile(model, backend=backend, options=options)
        with torch.no_grad():
            for _ in range(3):
                compiled(x)
            model.steps.move_to_end("a")
            outs.append(compiled(x))
    assert seal_of(compiled).seal is not None
    torch.testing.assert_close(outs[1], outs[0], rtol=0, atol=0)


class Recording(torch.nn.Module):
    """Stores its last output in a dict the trace reads: every call changes what the seal
    records."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.last = {"out": None}

    def forward(self, x):
        y = self.lin(x)
        self.last["out"] = y
        return y * 2


def test_a_forward_that_breaks_the_seal_every_call_stops_sealing_and_stays_right():
    torch.manual_seed(0)
    model = Recording().eval()
    compiled = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
    with torch.no_grad():
        for _ in range(20):
            x = torch.randn(4, 8)
            out = compiled(x)
            torch.testing.assert_close(model.last["out"] * 2, out, rtol=0, atol=0)
            torch.testing.assert_close(out, model(x), rtol=0, atol=0)
    check = seal_of(compiled)
    assert check.seal is None and not check.sealing


def test_a_module_compiled_in_place_is_freed_once_dropped():
    """module.compile() puts the fast path on the module itself, so the module holds its seal
    and the seal's records hold the module: the collector must see those references, or the
    cycle keeps every such model alive for the process's life."""
    torch.manual_seed(0)
    _, outer = make_classes()
    model = outer().eval()
    model.compile(backend="graphdispatch", options={"graph_only": True})
    with torch.no_grad():
        calls_match(model, model.forward, 3)  # forward: eager, without the compiled call
    assert seal_of(model).seal is not None
    dropped = weakref.ref(model)
    del model
    gc.collect()
    assert dropped() is None


# Writes from another thread landing between the tree's check and the seal's walk.
RACING_WRITES = {
    "an attribute's value": lambda m: setattr(m.blocks[1], "gain", 3.0),
    "a dict item's value": lambda m: m.blocks[1].cfg.__setitem__("shift", 2.0),
}


@pytest.mark.parametrize("write", list(RACING_WRITES))
def test_a_write_landing_between_the_tree_s_check_and_the_walk_is_not_sealed(write, monkeypatch):
    """The seal is taken from the objects as they are right after the whole tree passed; a write
    landing in between (another thread serving the module, a finalizer run by the walk's
    allocations; simulated here at the walk's start) was never checked, so later calls must
    not take it for checked."""
    _, model, compiled = sealed_model()
    take = _sealed_guards.take

    def write_then_take(*args):
        monkeypatch.setattr(_sealed_guards, "take", take)
        RACING_WRITES[write](model)
        return take(*args)

    monkeypatch.setattr(_sealed_guards, "take", write_then_take)
    # An equal value in a new object: the seal breaks, the whole tree passes and seals again.
    model.blocks[0].gain = float("1.0")
    with torch.no_grad():
        compiled(torch.randn(4, 8))  # checked before the write: runs as Dynamo's call would
        assert _sealed_guards.take is take
        calls_match(compiled, model, 3)


class Marked(torch.nn.Module):
    """A parameter marked dynamic before the compile (Dynamo guards its markings)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.p = torch.nn.Parameter(torch.randn(6, 8))
        torch._dynamo.mark_dynamic(self.p, 0)

    def forward(self, x):
        return self.lin(x) * self.p.sum()


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_dimension_marking_added_in_place_recompiles_as_dynamo_does(fast_path):
    """Dynamo's marking guard compares a tensor's ``_dynamo_dynamic_indices`` set with the one it
    compiled with, and ``mark_dynamic`` adds to that set in place, where no record sees it:
    after a parameter marked like the old one replaced it, marking another dimension
    recompiles (here, where the dimension can be dynamic) on Dynamo's own path and the fast
    path alike."""
    from torch._dynamo.utils import counters

    torch.manual_seed(0)
    model = Marked().eval()
    compiled = torch.compile(
        model, backend="graphdispatch", options={"graph_only": True, "fast_path": fast_path}
    )
    counters.clear()
    with torch.no_grad():
        calls_match(compiled, model, 3)
        replacement = torch.nn.Parameter(torch.randn(6, 8))
        torch._dynamo.mark_dynamic(replacement, 0)  # its own set, equal to the compiled one
        model.p = replacement
        calls_match(compiled, model, 2)  # the guards pass: sealed again, on the new parameter
        torch._dynamo.mark_dynamic(replacement, 1)
        calls_match(compiled, model, 2)
    assert counters["stats"]["unique_graphs"] == 2


class Kind(enum.Enum):
    A = 1.5


class OtherKind(enum.Enum):
    """An enum of the same layout whose ``_value_`` is a property: an object's attribute lookup
    starts at its type, which ``__class__`` assignment changes."""


type.__setattr__(OtherKind, "_value_", property(lambda self: 4.0))


class Kinded(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.kind = Kind.A  # Dynamo guards it by identity (no type match) and reads _value_

    def forward(self, x):
        return self.lin(x) * self.kind._value_


def test_an_object_guarded_by_identity_whose_class_changes_gives_eager_values():
    torch.manual_seed(0)
    model = Kinded().eval()
    compiled = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
    try:
        with torch.no_grad():
            calls_match(compiled, model, 3)
            Kind.A.__class__ = OtherKind
            calls_match(compiled, model, 3)
    finally:
        Kind.A.__class__ = Kind


def test_a_record_sees_an_object_replaced_by_one_at_the_freed_one_s_address():
    """A record compares which object a function's field or a cell holds (as it does an
    instance's type and dict); the replaced object, freed, leaves its address to the next one
    of its size (the free lists hand it out at once), so the records keep what they compare
    alive."""

    def function(y, k=1.0):
        return y * k

    def cell_of():
        value = None

        def read():
            return value

        def write(new):
            nonlocal value
            value = new

        return read.__closure__[0], write

    cell, write = cell_of()
    for i in range(20):
        function.__defaults__ = (float(i) + 0.5,)
        write([i])
        records = _C.SealedGuards()
        records.add_function(function)
        records.add_cell(cell)
        function.__defaults__ = None  # the old tuple freed, then a new one of its size
        function.__defaults__ = (float(i) + 100.5,)
        write(None)
        write([i + 100])
        assert not records.unchanged()


def test_a_seal_that_served_long_is_taken_again_whenever_it_breaks():
    # Changes far apart (an adapter switched between batches) never use up the broken-seal
    # budget: only seals broken before they paid off count.
    _, model, compiled = sealed_model()
    check = seal_of(compiled)
    with torch.no_grad():
        for switch in range(_sealed_guards.MAX_BROKEN + 2):
            check.served = _sealed_guards.PAID_OFF  # as if it had served a batch of requests
            model.blocks[1].note = switch  # in a recorded dict; no guard reads it
            calls_match(compiled, model, 2)
    assert check.sealing and check.seal is not None and check.broken == 0
    assert graphdispatch.stats()["fast_path"]["through_dynamo"] == {}
