"""src/graphdispatch/_C.pyi declares what the built extension has, no more and no less.

The oracle is the module itself: its public functions and classes, each class's public
methods and properties, the fallback reasons' enum members, the functions of its test-only
submodule ``_C._testing`` (declared as a class of static functions), and each function's
parameter names as pybind11 states them in its signature line.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from graphdispatch import _C

STUB = Path(_C.__file__).resolve().parent / "_C.pyi"
if not STUB.is_file():  # an editable install builds the module apart from the sources
    STUB = Path(__file__).resolve().parent.parent / "src" / "graphdispatch" / "_C.pyi"


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def stub_functions() -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in stub_tree().body if isinstance(n, ast.FunctionDef)}


def stub_classes() -> dict[str, ast.ClassDef]:
    return {n.name: n for n in stub_tree().body if isinstance(n, ast.ClassDef)}


def public(names) -> set[str]:
    return {n for n in names if not n.startswith("_")}


def stub_testing() -> dict[str, ast.FunctionDef]:
    body = stub_classes()["_testing"].body
    return {n.name: n for n in body if isinstance(n, ast.FunctionDef)}


def test_module_level_names_match():
    built = public(dir(_C))
    declared = public(set(stub_functions()) | set(stub_classes()))
    assert declared == built, (
        f"only in the stub: {sorted(declared - built)}; only in _C: {sorted(built - declared)}"
    )


def test_testing_names_match():
    built = public(dir(_C._testing))
    declared = set(stub_testing())
    assert declared == built, (
        f"only in the stub: {sorted(declared - built)}; only in _C._testing: "
        f"{sorted(built - declared)}"
    )


def own_members(cls: type) -> set[str]:
    # Public names a class defines itself, with its call operator and its constructor (a class
    # without one keeps the slot wrapper pybind11 puts there, which only raises).
    names = {n for n in vars(cls) if not n.startswith("_") or n == "__call__"}
    init = vars(cls).get("__init__")
    if init is not None and type(init).__name__ != "wrapper_descriptor":
        names.add("__init__")
    return names


@pytest.mark.parametrize(
    "name",
    sorted(
        n for n in public(dir(_C)) if isinstance(getattr(_C, n), type) and n != "FallbackReason"
    ),
)
def test_class_members_match(name):
    declared = {n.name for n in stub_classes()[name].body if isinstance(n, ast.FunctionDef)}
    assert declared == own_members(getattr(_C, name))


def test_fallback_reasons_match():
    declared = [
        n.target.id
        for n in stub_classes()["FallbackReason"].body
        if isinstance(n, ast.AnnAssign) and n.target.id != "__members__"
    ]
    assert declared == list(_C.FallbackReason.__members__) == list(_C.fallback_reasons())


def pybind_parameters(fn) -> list[str]:
    # pybind11 puts "name(arg: type, ..., *args, **kwargs) -> ret" first in the docstring; a
    # variadic keeps only its stars, since pybind11 names every one args or kwargs.
    first = fn.__doc__.splitlines()[0]
    inner = first[first.index("(") + 1 : first.rindex(")")]
    names = []
    for part in re.split(r",\s*(?![^\[]*\])", inner):
        name = re.split(r"[:=]", part)[0].strip()
        if name.startswith("*"):
            name = name[: len(name) - len(name.lstrip("*"))]
        if name and name != "self":
            names.append(name)
    return names


def declared_and_built_callables():
    for name, node in stub_functions().items():
        yield name, node, getattr(_C, name)
    for name, node in stub_testing().items():
        yield f"_testing.{name}", node, getattr(_C._testing, name)
    for cls_name, cls_node in stub_classes().items():
        if cls_name == "_testing":
            continue
        for node in cls_node.body:
            if isinstance(node, ast.FunctionDef) and not node.decorator_list:
                built = vars(getattr(_C, cls_name)).get(node.name)
                yield f"{cls_name}.{node.name}", node, built


@pytest.mark.parametrize(
    "name, node, built",
    list(declared_and_built_callables()),
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_parameters_match(name, node, built):
    declared = [a.arg for a in node.args.args + node.args.kwonlyargs if a.arg != "self"]
    declared += [
        stars for stars, extra in (("*", node.args.vararg), ("**", node.args.kwarg)) if extra
    ]
    assert declared == pybind_parameters(built), name
