"""graphdispatch.config as a module (Note [Options], case C38): attribute writes are
checked as options are, typos raise, MindIE-SD's aclgraph_* names are attributes too, integers
fit the C++ runtime's int64_t, and the environment is parsed strictly."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch

import graphdispatch
from graphdispatch import config

INT64_MAX = 2**63 - 1
# alias -> (a value to set, a second value)
ALIAS_VALUES = {
    "aclgraph_only": (True, False),
    "aclgraph_with_compile": (True, False),
    "aclgraph_lazy_capture": (True, False),
    "aclgraph_max_entries": (5, 2),
}


pytestmark = pytest.mark.usefixtures("restore_config")


# ---- attribute writes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "typo, closest",
    [
        ("max_entriez", "max_entries"),
        ("aclgraph_onyl", "aclgraph_only"),
        ("graph_with_compiles", "graph_with_compile"),
        ("safe_output", "safe_output_mode"),
    ],
)
def test_unknown_attribute_raises_naming_closest(typo, closest):
    before = config.defaults()
    with pytest.raises(
        AttributeError, match=f"no option '{typo}' \\(did you mean '{closest}'\\?\\)"
    ):
        setattr(config, typo, 1)
    assert not hasattr(config, typo)
    assert config.defaults() == before


def test_unknown_attribute_read_raises():
    with pytest.raises(AttributeError, match="did you mean 'lazy_capture'"):
        config.lazy_captur  # noqa: B018


@pytest.mark.parametrize("alias, values", ALIAS_VALUES.items())
def test_alias_attribute_round_trips(alias, values):
    option = config.ALIASES[alias]
    first, second = values
    setattr(config, alias, first)
    assert getattr(config, option) == first and getattr(config, alias) == first
    assert config.check()[option] == first  # what a compile would use now
    # Writing the canonical name shows through the alias as well.
    setattr(config, option, second)
    assert getattr(config, alias) == second


def test_aliases_are_listed():
    assert set(config.ALIASES) <= set(dir(config))


# The oracle for every assignment check is the same option given to check_options().
@pytest.mark.parametrize(
    "name, value",
    [
        ("max_entries", 1.5),
        ("max_entries", True),
        ("max_entries", "4"),
        ("max_entries", -1),
        ("max_entries", 2**63),
        ("warmup_iters", -1),
        ("warmup_iters", 2**64),
        ("aclgraph_max_entries", -2),
        ("graph_only", 1),
        ("aclgraph_only", "yes"),
        ("eviction", "lifo"),
        ("device_graph", "tpu"),
        ("copy_stream", None),
    ],
)
def test_attribute_write_checked_as_option(name, value):
    with pytest.raises((TypeError, ValueError)) as from_options:
        graphdispatch.check_options({name: value})
    before = config.defaults()
    with pytest.raises(from_options.type) as from_attribute:
        setattr(config, name, value)
    assert str(from_attribute.value) == str(from_options.value)
    message = str(from_attribute.value)
    assert repr(config.ALIASES.get(name, name)) in message and repr(name) in message
    assert config.defaults() == before


@pytest.mark.parametrize("name", ["max_entries", "warmup_iters"])
def test_int_options_fit_int64(name):
    with pytest.raises(ValueError) as info:
        setattr(config, name, INT64_MAX + 1)
    assert f"'{name}': expected an int in [0, 2**63 - 1]" in str(info.value)
    assert str(INT64_MAX + 1) in str(info.value)
    setattr(config, name, INT64_MAX)
    assert getattr(config, name) == INT64_MAX
    assert graphdispatch.check_options({name: INT64_MAX})[name] == INT64_MAX


def test_every_int_option_has_a_range():
    ints = [option for option in config.OPTIONS if option.type is int]
    assert ints and all((option.low, option.high) == (0, INT64_MAX) for option in ints)


def test_largest_max_entries_reaches_the_runtime():
    # C38: 2**63 used to pass the checks and fail at the first call in pybind11; the largest
    # accepted value must also be one the C++ runner takes.
    fn = torch.compile(
        lambda x: x * 3 - 1,
        backend="graphdispatch",
        options={"graph_only": True, "device_graph": "emulated", "max_entries": INT64_MAX},
    )
    for _ in range(2):
        x = torch.randn(5)
        assert torch.equal(fn(x), x * 3 - 1)
    stats = graphdispatch.stats()
    assert stats["routes"] == {"graph_only": 1} and stats["captures"] == 1
    assert stats["replays"] == 2 and stats["fallbacks"] == {}


def test_options_cannot_be_deleted():
    config.graph_only = True
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del config.graph_only
    with pytest.raises(AttributeError, match="cannot be deleted"):
        del config.aclgraph_only
    assert config.graph_only is True and config.defaults()["graph_only"] is True


def test_existing_non_option_names_stay_assignable(monkeypatch):
    # Tests monkeypatch module functions; only names the module lacks are refused.
    monkeypatch.setattr(config, "valid_keys", lambda: ["x"])
    assert config.valid_keys() == ["x"]


def test_patch_restores_options_and_checks_keys():
    config.max_entries = 1
    with config.patch(aclgraph_max_entries=3):
        assert config.max_entries == 3
    assert config.max_entries == 1
    with pytest.raises(ValueError, match="unknown option 'max_entriez'"):
        with config.patch(max_entriez=1):
            pass


def test_setting_is_seen_by_other_threads():
    # torch.utils._config_module keeps overrides per thread (ContextVar); a server that sets
    # options at start-up and compiles in worker threads must see them.
    config.max_entries = 7
    seen = []
    thread = threading.Thread(target=lambda: seen.append(config.check()["max_entries"]))
    thread.start()
    thread.join()
    assert seen == [7]


def test_alias_attribute_reaches_a_compile():
    # A regression: an alias set on the module used to be ignored, and the route was "default".
    config.device_graph = "emulated"
    config.aclgraph_only = True
    fn = torch.compile(lambda x, y: torch.relu(x @ y) + 1, backend="graphdispatch")
    for _ in range(3):
        x, y = torch.randn(3, 4), torch.randn(4, 2)
        assert torch.allclose(fn(x, y), torch.relu(x @ y) + 1)
    stats = graphdispatch.stats()
    assert stats["routes"] == {"graph_only": 1}
    assert stats["captures"] == 1 and stats["replays"] == 3 and stats["fallbacks"] == {}


# ---- environment variables ------------------------------------------------------------------


@pytest.fixture
def environ(monkeypatch):
    """Sets GRAPHDISPATCH_* variables (others removed) and re-reads them as the import does."""
    for var in list(os.environ):
        if var.startswith(config.ENV_PREFIX):
            monkeypatch.delenv(var)

    def read(**variables: str) -> dict:
        for var, text in variables.items():
            monkeypatch.setenv(var, text)
        config._read_environment()
        return config.defaults()

    return read


@pytest.mark.parametrize(
    "text, value",
    [("0", 0), ("12", 12), ("+3", 3), (" 7\n", 7), ("0009", 9), (str(INT64_MAX), INT64_MAX)],
)
def test_env_integer_accepted(environ, text, value):
    assert environ(GRAPHDISPATCH_MAX_ENTRIES=text)["max_entries"] == value
    assert int(text) == value  # Python's reading agrees where both accept the text


@pytest.mark.parametrize("text", ["1_000", "\u0663", "\uff11\uff10", "1.0", "0x10", "", " ", "4 5"])
def test_env_integer_only_ascii_digits(environ, text):
    before = config.defaults()
    with pytest.raises(ValueError) as info:
        environ(GRAPHDISPATCH_WARMUP_ITERS=text)
    message = str(info.value)
    assert message.startswith(f"environment variable GRAPHDISPATCH_WARMUP_ITERS={text!r}")
    assert "expected an integer (ASCII decimal digits 0-9)" in message
    assert config.defaults() == before


@pytest.mark.parametrize(
    "text, shown",
    [(str(INT64_MAX + 1), str(INT64_MAX + 1)), ("-1", "-1"), ("9" * 5000, "5000 digits")],
)
def test_env_integer_out_of_range(environ, text, shown):
    with pytest.raises(ValueError) as info:
        environ(GRAPHDISPATCH_MAX_ENTRIES=text)
    message = str(info.value)
    assert "GRAPHDISPATCH_MAX_ENTRIES" in message and "[0, 2**63 - 1]" in message
    assert shown in message


@pytest.mark.parametrize(
    "canonical, alias",
    [
        ("GRAPHDISPATCH_GRAPH_ONLY=1", "GRAPHDISPATCH_ACLGRAPH_ONLY=0"),
        ("GRAPHDISPATCH_GRAPH_WITH_COMPILE=false", "GRAPHDISPATCH_ACLGRAPH_WITH_COMPILE=on"),
        ("GRAPHDISPATCH_MAX_ENTRIES=4", "GRAPHDISPATCH_ACLGRAPH_MAX_ENTRIES=8"),
    ],
)
def test_env_name_and_alias_disagreeing_raise(environ, canonical, alias):
    before = config.defaults()
    variables = dict(v.split("=") for v in (canonical, alias))
    with pytest.raises(ValueError) as info:
        environ(**variables)
    message = str(info.value)
    for var, text in variables.items():
        assert f"{var}={text!r}" in message
    assert "different values" in message
    assert config.defaults() == before  # nothing applied


def test_env_name_and_alias_agreeing(environ):
    options = environ(
        GRAPHDISPATCH_GRAPH_ONLY="1",
        GRAPHDISPATCH_ACLGRAPH_ONLY="true",
        GRAPHDISPATCH_ACLGRAPH_MAX_ENTRIES="2",
    )
    assert options["graph_only"] is True and options["max_entries"] == 2


def test_env_disagreement_fails_the_import():
    env = {k: v for k, v in os.environ.items() if not k.startswith(config.ENV_PREFIX)}
    env.update(GRAPHDISPATCH_GRAPH_ONLY="1", GRAPHDISPATCH_ACLGRAPH_ONLY="0")
    proc = subprocess.run(
        [sys.executable, "-c", "import graphdispatch"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode != 0
    assert (
        "ValueError: environment variables GRAPHDISPATCH_ACLGRAPH_ONLY='0' and "
        "GRAPHDISPATCH_GRAPH_ONLY='1' both set graphdispatch option 'graph_only'"
    ) in proc.stderr
