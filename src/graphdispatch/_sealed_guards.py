"""Dynamo's guard check split into a sealed part, checked as a flat list of records, and the
residual tree.

Note [Sealed guards]
A cache entry's guard check walks Dynamo's guard tree from the frame's locals on every call.
On the tiny Flux transformer that is 273 managers: about 40 µs warm, and 150-340 µs right
after a replay, which evicts the Python objects the walk chases pointers through (case C79,
bench/fast_path.py). Most of the tree reads what a serving loop does not change between calls:
the module (``L['self']``: its ``__dict__``, submodules, parameters, attributes) and the
function's globals (imported modules, helper functions, builtins).

So, right after the whole tree passed, ``take`` seals the subtrees whose root value is fixed for
the fast path (the module bound as ``self``, a closure cell's contents, the function's globals):
it walks them with their live values and records, in a ``_C.SealedGuards``, every piece of state
their accessors and leaf guards read: each dict's version tag (PEP 509: any insertion, deletion
or assignment changes it), each object's type (where every attribute lookup starts, even on an
object the tree holds by identity: ``__class__`` assignment changes no tag) and instance dict,
each type's attribute-cache tag (reset by any change to the type or a base), functions' code,
defaults and closure, closure cells, and tensors' metadata (what TENSOR_MATCH compares, with the
thread's dispatch key set). A later call checks those records (flat loads in C++, no dict
lookups) and the residual tree: Dynamo's tree with the sealed subtrees cut off
(``clone_manager``), which keeps the arguments, the root's guards (global state, the
torch-function mode stack, the default device, lambda guards) and whatever could not be sealed.
While every record holds, every manager of a sealed subtree reaches the object it reached when
the tree passed, and every leaf guard there gives the verdict it gave then; so records and
residual together give the whole tree's verdict. When a record changed, the whole tree runs, as
Dynamo's check would, and the seal is taken again if it passes.

The walk reads the objects when it runs, not when the tree ran: a write landing in between
(another thread serving or changing the module, a finalizer run by the walk's own allocations)
would be recorded without ever having been checked. So the tree runs once more after the walk,
and the seal is kept only if that check passes (else it counts as broken): every record is
then older than a passing check and unchanged since, so the state that check saw is the
recorded one. The records hold strong references (a pointer compared with a freed object's
could match a new one), and show them to the cycle collector: a module compiled in place holds
its fast path, hence its seal.

A subtree is sealed only when every accessor in it is one the walk interprets (a dict's item;
an attribute through the generic lookup, found in the instance dict, as a plain class
attribute or through ``nn.Module.__getattr__``; ``__class__``; a property's getter; an instance
dict; a type, its dict or MRO; a function's code, defaults, keyword defaults or closure; a
tuple's item; a dict's items by position), and every leaf guard's
verdict follows from its value's identity and the records (ID/None/True/False matches, type
match, equality or length of an immutable value, dict membership, length or version, a missing
attribute, tensor match, the dynamic-dimension markings of a tensor that has none: a marking
is a set the guard compares by content, and ``mark_dynamic`` adds to it in place). Anything
else (a property or other data descriptor, a list or set, a lambda or relational guard) stays
in the residual tree, with the path to it. A dict manager reads a dict's items by their
position in its storage, which the version tag covers; for an OrderedDict (diffusers'
FrozenDict configs) that is not the order ``move_to_end`` changes, on Dynamo's own path as
here.

A seal costs a walk (3-15 ms on the tiny transformers) and saves some 20-60 µs a call, so it
pays after a few hundred calls. A forward that changes what the records hold on every call (a
counter kept in a dict the guards read, a script's loop variables in the globals of the module
defining the model) breaks the seal every call: after ``MAX_BROKEN`` seals broken before they
served ``PAID_OFF`` calls, an entry keeps Dynamo's whole check. A seal broken after serving that
many (a LoRA adapter switched between batches of requests, for days) is taken again, uncounted.
"""

from __future__ import annotations

import ast
import gc
import re
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import torch

from graphdispatch import _C

MAX_BROKEN = 8
PAID_OFF = 512

# Leaf guards whose verdict follows from the identity of the value they check.
_IDENTITY_GUARDS = frozenset({"ID_MATCH", "NONE_MATCH", "TRUE_MATCH", "FALSE_MATCH", "NOT_NONE"})
_DICT_GUARDS = frozenset({"DICT_CONTAINS", "DICT_LENGTH", "DICT_VERSION"})
# Leaf guards reading a value's attributes (NO_HASATTR: one missing; the dynamic-dimension
# marking: a tensor's _dynamo_* attributes), whatever their names.
_ATTRIBUTE_GUARDS = frozenset({"NO_HASATTR", "DIMENSION_DYNAMIC_MARKING_GUARD"})
# The tensor attributes Dynamo's dimension-marking guard reads (torch/_dynamo/guards.py).
_MARKINGS = frozenset(
    {
        "_dynamo_dynamic_indices",
        "_dynamo_weak_dynamic_indices",
        "_dynamo_unbacked_indices",
        "_dynamo_strict_unbacked_indices",
        "_dynamo_static_indices",
        "_dynamo_shape_ids",
        "_dynamo_unbacked_bounds",
    }
)
_IMMUTABLE_TYPES = (
    int,
    float,
    complex,
    bool,
    str,
    bytes,
    type(None),
    type(Ellipsis),
    range,
    torch.dtype,
    torch.device,
)
# The accessors reading a function's assignable fields, and the fields.
_FUNCTION_ACCESSORS = {
    "CodeGuardAccessor": "__code__",
    "FuncDefaultsGuardAccessor": "__defaults__",
    "FuncKwDefaultsGuardAccessor": "__kwdefaults__",
    "ClosureGuardAccessor": "__closure__",
}
_FUNCTION_FIELDS = frozenset(_FUNCTION_ACCESSORS.values())
# Where nn.Module.__getattr__ looks, in its order.
_MODULE_STORES = ("_parameters", "_buffers", "_modules")
_OBJECT_CLASS = vars(object)["__class__"]
# The attribute lookups that are PyObject_GenericGetAttr (dict's is exposed apart from object's).
_GENERIC_GETATTRIBUTE = (object.__getattribute__, dict.__getattribute__)
_FRAME_LOCAL_KEY = re.compile(r"key='([^']*)'")


class _Refused(Exception):
    """The walk cannot tell what this accessor or guard reads."""


class Seal:
    """The records of the sealed subtrees and the residual tree's check."""

    __slots__ = ("records", "residual")

    def __init__(self, records: Any, residual: Callable[[dict], bool]) -> None:
        self.records = records
        self.residual = residual

    def check(self, frame_locals: dict[str, Any]) -> bool | None:
        """The whole tree's verdict, or None when a record changed (the whole tree must run)."""
        if not self.records.unchanged():
            return None
        return self.residual(frame_locals)


def take(root: Any, func: types.FunctionType, self_arg: tuple) -> Seal | None:
    """Seals ``root``'s subtrees whose root value the fast path fixes (Note [Sealed guards]).
    Call right after ``root.check`` passed, with nothing run in between. ``func``: the function
    whose frame Dynamo compiled; ``self_arg``: ``(module,)`` when its first argument is always
    that module, else ``()``. None when nothing could be sealed or this Python has no dict
    version tags."""
    if not _C.SealedGuards.supported():
        return None
    walk = _Walk()
    code = func.__code__
    for accessor, child in zip(root.get_accessors(), root.get_child_managers()):
        kind = type(accessor).__name__
        if kind == "GlobalsGuardAccessor":
            value = func.__globals__
        elif kind == "FrameLocalsGuardAccessor":
            match = _FRAME_LOCAL_KEY.search(accessor.repr())
            key = match.group(1) if match else None
            if self_arg and code.co_argcount and key == code.co_varnames[0]:
                value = self_arg[0]
            elif key in code.co_freevars:
                cell = func.__closure__[code.co_freevars.index(key)]
                try:
                    value = cell.cell_contents
                except ValueError:
                    continue
                walk.records.add_cell(cell)
            else:
                continue  # an argument: new every call
        else:
            continue
        if walk.manager(child, value):
            walk.sealed.append(child)
    if not walk.sealed:
        return None
    # pybind11 hands the filter the wrappers the walk holds: identity names a manager (sources
    # do not: a function's defaults manager has the function's source).
    sealed = {id(manager) for manager in walk.sealed}
    residual = root.clone_manager(lambda manager: id(manager) not in sealed)
    return Seal(walk.records.guards, residual.check)


def _immutable(value: Any) -> bool:
    if type(value) in _IMMUTABLE_TYPES:
        return True
    if type(value) in (tuple, torch.Size, frozenset):
        return all(_immutable(item) for item in value)
    return False


def _plain_dict(value: Any) -> bool:
    """A dict whose item reads, membership and length are dict's own (a plain dict, an
    OrderedDict, or a subclass not overriding them)."""
    if not isinstance(value, dict):
        return False
    cls = type(value)
    return all(
        getattr(cls, name) in (getattr(dict, name), getattr(OrderedDict, name))
        for name in ("__getitem__", "__contains__", "__len__")
    )


def _lookup(cls: type, name: str) -> tuple[bool, Any]:
    """``name`` in ``cls``'s MRO without running descriptors, as the attribute lookup finds it."""
    for klass in cls.__mro__:
        found = vars(klass)
        if name in found:
            return True, found[name]
    return False, None


def _data_descriptor(value: Any) -> bool:
    cls = type(value)
    return hasattr(cls, "__set__") or hasattr(cls, "__delete__")


def _instance_dict(value: Any) -> dict | None:
    try:
        found = object.__getattribute__(value, "__dict__")
    except AttributeError:
        return None
    return found if type(found) is dict else None


class _Records:
    """A ``_C.SealedGuards`` taking each object once per kind of record (the walk reaches a
    module's dict once per attribute read): ``records.add_dict(d)`` and the like."""

    def __init__(self) -> None:
        self.guards = _C.SealedGuards()
        self.taken: dict[tuple[str, int], Any] = {}
        self.held: list[Any] = []  # ids stay unique while the walk runs

    def __getattr__(self, kind: str) -> Callable[[Any], Any]:
        add = getattr(self.guards, kind)

        def once(obj: Any) -> Any:
            key = (kind, id(obj))
            if key not in self.taken:
                self.held.append(obj)
                self.taken[key] = add(obj)
            return self.taken[key]

        return once


class _Walk:
    """One walk over a guard tree's sealable subtrees: the records it took and the managers
    it sealed (roots of sealed subtrees)."""

    def __init__(self) -> None:
        self.records: Any = _Records()
        self.sealed: list[Any] = []

    def manager(self, manager: Any, value: Any) -> bool:
        """Records what ``manager``'s subtree reads below ``value`` (the object the manager
        checks); True when the whole subtree is sealable. Sealable children of a subtree that
        is not are added to ``sealed``."""
        kind = type(manager).__name__
        children = [
            (child, lambda accessor=accessor: self.access(accessor, value))
            for accessor, child in zip(manager.get_accessors(), manager.get_child_managers())
        ]
        if kind == "DictGuardManager":
            # It reads the items by their position in the dict's storage, which the version
            # tag covers (OrderedDict.move_to_end changes neither).
            if not _plain_dict(value):
                return False
            self.records.add_dict(value)
            items = list(dict.items(value))
            for index, pair in manager.get_key_value_managers().items():
                for child, item in zip(pair, items[index]):
                    if child is not None:
                        children.append((child, lambda item=item: item))
        elif kind != "GuardManager":
            return False
        whole = all([self.leaf(type(guard).__name__, value) for guard in manager.get_leaf_guards()])
        sealed_children = []
        for child, reach in children:
            try:
                child_value = reach()
            except _Refused:
                whole = False
                continue
            if self.manager(child, child_value):
                sealed_children.append(child)
            else:
                whole = False
        if not whole:
            self.sealed += sealed_children
        return whole

    def leaf(self, kind: str, value: Any) -> bool:
        records = self.records
        if kind in _IDENTITY_GUARDS:
            return True
        if kind == "TYPE_MATCH":
            records.add_type_of(value)
            return True
        if kind in ("EQUALS_MATCH", "LENGTH_CHECK") and _immutable(value):
            return True
        if kind in _DICT_GUARDS or kind == "LENGTH_CHECK":
            if not _plain_dict(value):
                return False
            records.add_dict(value)
            return True
        if kind == "TENSOR_MATCH":
            return isinstance(value, torch.Tensor) and records.add_tensor(value)
        if kind in _ATTRIBUTE_GUARDS:
            try:
                instance = self.attributes(value)
            except _Refused:
                return False
            # The marking guard compares the markings' contents (sets, which mark_dynamic adds
            # to in place, unseen by any record) with the ones it holds: only their absence
            # is sealed.
            return kind != "DIMENSION_DYNAMIC_MARKING_GUARD" or _MARKINGS.isdisjoint(instance or ())
        return False

    def type_tag(self, cls: type) -> None:
        if not self.records.add_type_tag(cls):
            raise _Refused

    def attributes(self, value: Any) -> dict | None:
        """Records what decides every attribute lookup on ``value`` through the generic lookup
        (its type's MRO, its instance dict, and nn.Module's ``__getattr__`` stores); returns
        the instance dict."""
        cls = type(value)
        if cls.__getattribute__ not in _GENERIC_GETATTRIBUTE:
            raise _Refused
        # The lookup starts at the type, which __class__ assignment changes (with no change to
        # either type's tag), and the tree may hold the object by identity only.
        self.records.add_type_of(value)
        self.type_tag(cls)
        self.records.add_dict_pointer(value)
        instance = _instance_dict(value)
        if instance is not None:
            self.records.add_dict(instance)
        has_hook, hook = _lookup(cls, "__getattr__")
        if has_hook:
            if hook is not torch.nn.Module.__getattr__ or instance is None:
                raise _Refused
            for store in _MODULE_STORES:
                found = instance.get(store)
                if found is not None:
                    if type(found) is not dict:
                        raise _Refused
                    self.records.add_dict(found)
        return instance

    def access(self, accessor: Any, value: Any) -> Any:
        """The value the accessor reaches from ``value``, recording what decides it."""
        kind = type(accessor).__name__
        records = self.records
        argument = accessor.repr()[len(kind) + 1 : -1]
        if kind in (
            "DictGetItemGuardAccessor",
            "GetItemGuardAccessor",
            "TupleGetItemGuardAccessor",
        ):
            try:
                key = ast.literal_eval(argument)
            except (ValueError, SyntaxError):
                raise _Refused from None
            if type(value) in (tuple, torch.Size) and type(key) is int:
                return value[key]
            if kind == "TupleGetItemGuardAccessor" or not _plain_dict(value) or key not in value:
                raise _Refused
            records.add_dict(value)
            return dict.__getitem__(value, key)
        if kind == "GetGenericDictGuardAccessor":
            instance = _instance_dict(value)
            if instance is None:
                raise _Refused
            records.add_dict_pointer(value)
            return instance
        if kind == "GetAttrGuardAccessor":
            return self.attribute(value, argument)
        if kind == "TypeGuardAccessor":
            records.add_type_of(value)
            return type(value)
        if kind in ("TypeDictGuardAccessor", "TypeMROGuardAccessor"):
            if not isinstance(value, type):
                raise _Refused
            self.type_tag(value)
            if kind == "TypeMROGuardAccessor":
                return value.__mro__
            # The type's own dict, behind the mappingproxy its __dict__ shows.
            referents = gc.get_referents(vars(value))
            if len(referents) != 1 or type(referents[0]) is not dict:
                raise _Refused
            return referents[0]
        if kind in _FUNCTION_ACCESSORS and isinstance(value, types.FunctionType):
            records.add_function(value)
            return getattr(value, _FUNCTION_ACCESSORS[kind])
        raise _Refused

    def attribute(self, value: Any, name: str) -> Any:
        """``getattr(value, name)`` as the generic lookup finds it, recording what decides it."""
        if isinstance(value, types.FunctionType) and name in _FUNCTION_FIELDS:
            self.records.add_function(value)
            return getattr(value, name)
        if type(value) is property and name in ("fget", "fset", "fdel"):
            return getattr(value, name)  # read-only once the property is made
        cls = type(value)
        if name == "__class__" and _lookup(cls, name)[1] is _OBJECT_CLASS:
            self.records.add_type_of(value)
            return cls
        if isinstance(value, type):
            # A class attribute: the metatype's data descriptors first, then the class's MRO.
            if cls.__getattribute__ is not type.__getattribute__:
                raise _Refused
            in_meta, meta = _lookup(cls, name)
            found, attr = _lookup(value, name)
            if (in_meta and _data_descriptor(meta)) or not found:
                raise _Refused
            if not (isinstance(attr, types.FunctionType) or not hasattr(type(attr), "__get__")):
                raise _Refused
            self.records.add_type_of(value)
            self.type_tag(cls)
            self.type_tag(value)
            return attr
        if isinstance(value, types.ModuleType):
            # A module's attribute is its dict's item (a module __getattr__ only serves
            # missing names, which no guard reaches).
            if cls.__getattribute__ is not types.ModuleType.__getattribute__:
                raise _Refused
            instance = _instance_dict(value)
            in_type, _ = _lookup(cls, name)
            if instance is None or name not in instance or in_type:
                raise _Refused
            self.type_tag(cls)
            self.records.add_type_of(value)
            self.records.add_dict_pointer(value)
            self.records.add_dict(instance)
            return instance[name]
        found, attr = _lookup(cls, name)
        if found and _data_descriptor(attr):
            if name != "__dict__" or type(attr).__name__ != "getset_descriptor":
                raise _Refused
            instance = _instance_dict(value)
            if instance is None or cls.__getattribute__ not in _GENERIC_GETATTRIBUTE:
                raise _Refused
            self.records.add_type_of(value)
            self.type_tag(cls)
            self.records.add_dict_pointer(value)
            return instance
        instance = self.attributes(value)
        if instance is not None and name in instance:
            return instance[name]
        if found:
            if hasattr(type(attr), "__get__"):
                raise _Refused  # a method or other descriptor: a new object per lookup
            return attr
        if instance is not None and _lookup(cls, "__getattr__")[1] is torch.nn.Module.__getattr__:
            for store in _MODULE_STORES:
                found_in = instance.get(store)
                if found_in is not None and name in found_in:
                    return found_in[name]
        raise _Refused


# SealedCheck's verdicts: truthy when the entry's guards pass.
FAILED, PASSED_ON_SEAL, PASSED_ON_WHOLE_TREE = 0, 1, 2


class SealedCheck:
    """One cache entry's guard check on the fast path: called with the frame's locals, it
    returns the verdict of Dynamo's whole tree ``root`` (``FAILED``, or ``PASSED_ON_SEAL`` when
    the seal gave it, ``PASSED_ON_WHOLE_TREE`` when the whole tree ran), from the seal while
    one is held (Note [Sealed guards]). ``func`` and ``self_arg`` as for ``take``."""

    def __init__(self, root: Any, func: types.FunctionType, self_arg: tuple) -> None:
        self.root = root
        self.func = func
        self.self_arg = self_arg
        self.seal: Seal | None = None
        self.sealing = True  # False once nothing could be sealed or the seal broke too often
        self.broken = 0  # seals broken before they served PAID_OFF calls
        self.served = 0  # calls the current seal gave the verdict of

    def __call__(self, frame_locals: dict[str, Any]) -> int:
        seal = self.seal
        if seal is not None:
            verdict = seal.check(frame_locals)
            if verdict is not None:
                self.served += 1
                return PASSED_ON_SEAL if verdict else FAILED
            self.seal = None
            self._broke(counted=self.served < PAID_OFF)
        if not self.root.check(frame_locals):
            return FAILED
        if self.sealing:
            seal = take(self.root, self.func, self.self_arg)
            self.sealing = seal is not None
            # The walk records the objects as they are now: checked again after it, the tree
            # has passed on a state no older than any record (Note [Sealed guards]). A seal
            # dropped so counts as broken.
            if seal is not None and self.root.check(frame_locals):
                self.seal, self.served = seal, 0
            elif seal is not None:
                self._broke(counted=True)
        return PASSED_ON_WHOLE_TREE

    def _broke(self, counted: bool) -> None:
        self.broken += counted
        self.sealing = self.broken < MAX_BROKEN
