"""One definition per option: ``graphdispatch.config.OPTIONS`` is it, and every other layer
agrees with it. The C++ runtime's option table (``_C.GraphRunner(**options)``,
csrc/runtime/runner_option_table.cpp) has the same names and defaults and refuses the same
values, naming the option; the tables of docs/usage.md list each option with its default,
alias and environment variable."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

import graphdispatch
from graphdispatch import _C, config

RUNTIME = [option for option in config.OPTIONS if option.runtime]
PYTHON_ONLY = [option for option in config.OPTIONS if not option.runtime]
USAGE = Path(__file__).resolve().parent.parent / "docs" / "usage.md"


def make_runner(**options):
    return _C.GraphRunner(lambda x: (x,), [False], _C.EmulatedGraphFactory(), **options)


def invalid_values(option: config.Option) -> list:
    """Values the option's record refuses: past each bound, outside the choices, wrong types."""
    if option.type is int:
        return [option.low - 1, option.high + 1, 1.5, True, "1", None]
    if option.type is float:
        return [-1.0, math.nan, math.inf, "0", None, True]
    if option.type is str:
        return [f"not-{option.default}", 3, None]
    return [1, "yes", None]


def valid_values(option: config.Option) -> list:
    if option.type in (int, float):
        return [option.default, option.low, option.high]
    if option.type is str:
        return list(option.choices)
    return [True, False]


def test_names_agree():
    assert [option.name for option in RUNTIME] == list(_C._testing.runner_option_defaults())


def test_every_option_is_well_formed():
    assert len({option.name for option in config.OPTIONS}) == len(config.OPTIONS)
    for option in config.OPTIONS:
        assert option.doc and option.type in (bool, int, float, str, tuple), option.name
        assert (option.low is None) == (option.type not in (int, float)), option.name
        assert bool(option.choices) == (option.type is str), option.name
        assert config.check_value(option.name, option.default) == option.default


@pytest.mark.parametrize("option", RUNTIME, ids=lambda o: o.name)
def test_defaults_agree(option):
    default = _C._testing.runner_option_defaults()[option.name]
    assert type(default) is option.type and default == option.default
    assert config.defaults()[option.name] == option.default  # the module attribute, unchanged


@pytest.mark.parametrize("option", RUNTIME, ids=lambda o: o.name)
def test_valid_values_accepted_by_both_layers(option):
    for value in valid_values(option):
        assert graphdispatch.check_options({option.name: value})[option.name] == value
        make_runner(**{option.name: value})


@pytest.mark.parametrize("option", RUNTIME, ids=lambda o: o.name)
def test_invalid_values_refused_by_both_layers(option):
    for value in invalid_values(option):
        with pytest.raises((TypeError, ValueError)) as python:
            graphdispatch.check_options({option.name: value})
        with pytest.raises(python.type) as runtime:
            make_runner(**{option.name: value})
        for error in (python, runtime):
            assert str(error.value).startswith(
                f"graphdispatch option '{option.name}': expected "
            ), (value, str(error.value))


@pytest.mark.parametrize("option", PYTHON_ONLY, ids=lambda o: o.name)
def test_python_only_options_are_unknown_to_the_runtime(option):
    with pytest.raises(ValueError, match=f"unknown runner option '{option.name}'"):
        make_runner(**{option.name: option.default})


def test_usage_tables_are_the_ones_made_from_the_options():
    # Each option is described once, in its Option record; docs/usage.md's tables are made
    # from the records (scripts/option_tables.py) and must be what it makes now.
    sys.path.insert(0, str(USAGE.parent.parent / "scripts"))
    try:
        import option_tables
    finally:
        sys.path.pop(0)
    held = option_tables.regions(USAGE.read_text(encoding="utf-8"))
    assert held == option_tables.tables(), (
        "docs/usage.md's option tables are stale: run .venv/bin/python scripts/option_tables.py"
    )
