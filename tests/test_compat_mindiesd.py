"""graphdispatch.compat.mindiesd (docs/design.md, "The anchor"): MindIE-SD's scenarios A and B run
with only the import line changed, with eager PyTorch as the oracle; its switches are
graphdispatch.config's options; importing it loads no compile stack; docs/migrating.md's examples
run."""

from __future__ import annotations

import pathlib
import re
import textwrap
import types

import pytest
import torch
from plugin.plugin_helpers import run_script

import graphdispatch
from graphdispatch import _backend as backend
from graphdispatch import _device_graphs as device_graphs
from graphdispatch import config
from graphdispatch.compat import mindiesd
from graphdispatch.compat.mindiesd import (
    CompilationConfig,
    MindieSDBackend,
    create_aclgraph_backend,
)

MIGRATING = pathlib.Path(__file__).resolve().parents[1] / "docs" / "migrating.md"
MINDIESD_DEFAULTS = {
    "aclgraph_only": False,
    "aclgraph_with_compile": False,
    "aclgraph_lazy_capture": False,
    "aclgraph_max_entries": 0,
    "safe_output_mode": True,
}


# CompilationConfig writes graphdispatch.config; restore it after each test.
pytestmark = pytest.mark.usefixtures("restore_config")


def tiny_model() -> torch.nn.Module:
    return torch.nn.Sequential(
        torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 8)
    ).eval()


def run_and_compare(compiled, model, calls: int = 3) -> None:
    with torch.no_grad():
        for _ in range(calls):
            x = torch.randn(4, 8)
            torch.testing.assert_close(compiled(x), model(x))


def assert_replayed(route: str, captures: int = 1, calls: int = 3) -> None:
    """One graph on ``route``, captured at compile time; each of run_and_compare's calls a
    replay, none a fallback."""
    stats = graphdispatch.stats()
    assert stats["routes"] == {route: 1}
    assert stats["captures"] == captures and stats["replays"] == calls, stats
    assert stats["fallbacks"] == {}


# ---- import -----------------------------------------------------------------------------------


def test_import_loads_no_compile_stack_and_mindiesd_defaults():
    out = run_script(
        textwrap.dedent("""
        import json, sys
        import torch
        before = set(sys.modules)
        from graphdispatch.compat.mindiesd import CompilationConfig, MindieSDBackend
        added = set(sys.modules) - before
        print(json.dumps({
            "heavy": sorted(m for m in added if m.split(".")[0] == "sympy"
                            or m.startswith(("torch._dynamo", "torch._inductor"))),
            "backend_loaded": "graphdispatch._backend" in added,
            "extension_loaded": "graphdispatch._C" in added,
            "defaults": {name: getattr(CompilationConfig, name) for name in NAMES},
        }))
    """).replace("NAMES", repr(list(MINDIESD_DEFAULTS)))
    )
    assert out["heavy"] == []
    assert out["backend_loaded"] is False and out["extension_loaded"] is False
    assert out["defaults"] == MINDIESD_DEFAULTS


def test_import_with_heavy_modules_blocked():
    # Set to None, each of the three raises ImportError on import: an import that needed one
    # (even one that swallowed the error) leaves it missing from still_none.
    out = run_script(
        textwrap.dedent("""
        import json, sys
        import torch
        for name in ("torch._dynamo", "torch._inductor", "sympy"):
            sys.modules[name] = None
        from graphdispatch.compat.mindiesd import CompilationConfig
        CompilationConfig.aclgraph_max_entries = 2
        import graphdispatch
        print(json.dumps({"still_none": [n for n in ("torch._dynamo", "torch._inductor", "sympy")
                                         if sys.modules[n] is None],
                          "max_entries": graphdispatch.config.max_entries}))
    """)
    )
    assert out["still_none"] == ["torch._dynamo", "torch._inductor", "sympy"]
    assert out["max_entries"] == 2


# ---- CompilationConfig --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "switch, option, value",
    [
        ("aclgraph_only", "graph_only", True),
        ("aclgraph_with_compile", "graph_with_compile", True),
        ("aclgraph_lazy_capture", "lazy_capture", True),
        ("aclgraph_max_entries", "max_entries", 6),
        ("safe_output_mode", "safe_output_mode", False),
    ],
)
def test_switches_are_config_options(switch, option, value):
    setattr(CompilationConfig, switch, value)
    assert getattr(config, option) == value and getattr(CompilationConfig, switch) == value
    assert getattr(CompilationConfig(), switch) == value
    default = MINDIESD_DEFAULTS[switch]
    setattr(config, option, default)  # and the other way round
    assert getattr(CompilationConfig, switch) == default
    setattr(CompilationConfig(), switch, value)  # an instance writes the same switch
    assert getattr(config, option) == value


@pytest.mark.parametrize(
    "switch, value, error, message",
    [
        (
            "aclgraph_only",
            1,
            TypeError,
            "'graph_only' (given as 'aclgraph_only'): expected bool, got int",
        ),
        (
            "aclgraph_max_entries",
            -1,
            ValueError,
            "'max_entries' (given as 'aclgraph_max_entries'): expected an int in [0, 2**63 - 1]",
        ),
        (
            "aclgraph_max_entries",
            2**63,
            ValueError,
            "'max_entries' (given as 'aclgraph_max_entries'): expected an int in [0, 2**63 - 1]",
        ),
        ("safe_output_mode", "no", TypeError, "'safe_output_mode': expected bool, got str"),
    ],
)
def test_switch_values_checked_when_set(switch, value, error, message):
    before = config.defaults()
    with pytest.raises(error) as info:
        setattr(CompilationConfig, switch, value)
    assert message in str(info.value)
    assert config.defaults() == before


@pytest.mark.parametrize(
    "target", [CompilationConfig, CompilationConfig()], ids=["class", "instance"]
)
def test_unknown_switch_raises(target):
    with pytest.raises(
        AttributeError, match="no switch 'aclgraph_onyl' \\(did you mean 'aclgraph_only'\\?\\)"
    ):
        target.aclgraph_onyl = True
    with pytest.raises(AttributeError, match="no switch 'aclgraph_max_entry'"):
        target.aclgraph_max_entry  # noqa: B018
    # graphdispatch options that are not MindIE-SD switches are set on graphdispatch.config.
    with pytest.raises(AttributeError, match="no switch 'device_graph'"):
        target.device_graph = "emulated"
    assert config.device_graph == config.check()["device_graph"]


# ---- MindIE-SD's scenarios (only the import line changed) ---------------------------------------


def test_scenario_a_graph_only():
    # The emulated graph: the scenario's route is what is checked (the CPU graph: the examples).
    graphdispatch.config.device_graph = "emulated"
    model = tiny_model()
    CompilationConfig.aclgraph_only = True
    compiled = torch.compile(model, backend=MindieSDBackend())
    run_and_compare(compiled, model)
    assert_replayed("graph_only")


@pytest.mark.inductor
def test_scenario_b_graph_with_compile():
    graphdispatch.config.device_graph = "emulated"
    model = tiny_model()
    CompilationConfig.aclgraph_with_compile = True
    compiled = torch.compile(model, backend=MindieSDBackend())
    run_and_compare(compiled, model)
    assert_replayed("graph_with_compile")


@pytest.fixture
def stub_inductor(monkeypatch):
    """Inductor replaced by the FX graph itself: routing is checked here, not Inductor's code.
    Records each compile: ``False`` for Inductor with its cudagraphs off, ``"cpp_wrapper"`` for
    the CPU's C++-wrapper compile."""
    from graphdispatch import _cpp_wrapper as cpp_wrapper

    calls = []

    def compile_fx(gm, example_inputs, cudagraphs):
        calls.append(cudagraphs)
        return gm.forward

    def compile_with_cpp_wrapper(gm, example_inputs):
        calls.append("cpp_wrapper")
        return gm.forward, cpp_wrapper.EntryCalls([])

    monkeypatch.setattr(backend, "_inductor", compile_fx)
    monkeypatch.setattr(cpp_wrapper, "compile_with_cpp_wrapper", compile_with_cpp_wrapper)
    return calls


@pytest.mark.parametrize(
    "only, with_compile, device_graph, route",
    [
        (False, False, "emulated", "default"),
        (True, False, "emulated", "graph_only"),
        (False, True, "emulated", "graph_with_compile"),
        (True, True, "emulated", "graph_with_compile"),  # with_compile first (MindIE-SD)
        (True, False, "auto", "graph_only"),  # the CPU graph for CPU inputs
        (False, True, "auto", "graph_with_compile"),  # Inductor's C++ wrapper on the CPU
    ],
)
def test_seed_routing_rule(stub_inductor, caplog, only, with_compile, device_graph, route):
    graphdispatch.config.device_graph = device_graph
    CompilationConfig.aclgraph_only = only
    CompilationConfig.aclgraph_with_compile = with_compile
    model = tiny_model()
    with caplog.at_level("INFO", logger="graphdispatch"):
        run_and_compare(torch.compile(model, backend=MindieSDBackend()), model)
    stats = graphdispatch.stats()
    assert stats["routes"] == {route: 1}
    assert stats["captures"] == (0 if route == "default" else 1)
    # Inductor runs on the two routes that compile, with its own cudagraphs off; on CPU inputs
    # graph_with_compile compiles with the C++ wrapper.
    compiles = {"graph_only": [], "graph_with_compile": [False], "default": [False]}[route]
    if route == "graph_with_compile" and device_graph == "auto":
        compiles = ["cpp_wrapper"]
    assert stub_inductor == compiles
    assert any(f"route {route}" in r.getMessage() for r in caplog.records)


def test_switches_reach_the_runner(monkeypatch):
    built = []
    build_runner = backend.build_runner
    monkeypatch.setattr(
        backend, "build_runner", lambda *args: built.append(args[-1]) or build_runner(*args)
    )
    graphdispatch.config.device_graph = "emulated"
    CompilationConfig.aclgraph_only = True
    CompilationConfig.aclgraph_lazy_capture = True
    CompilationConfig.aclgraph_max_entries = 1
    CompilationConfig.safe_output_mode = False
    # dynamic=True: one graph whose runner sees every size, so max_entries=1 must evict.
    fn = torch.compile(lambda x: x * 2 + 1, backend=MindieSDBackend(), dynamic=True)
    x3 = torch.randn(3)
    first = fn(x3)
    kept, static = first.clone(), first.data_ptr()
    second = fn(x3)
    assert torch.equal(second, x3 * 2 + 1) and torch.equal(first, kept)
    # Unsafe mode hands out the static output; `first`, still held, was copied away.
    assert second.data_ptr() == static != first.data_ptr()
    for n in (4, 3):  # FIFO with one slot (MindIE-SD): each new size evicts the previous one
        x = torch.randn(n)
        assert torch.equal(fn(x), x * 2 + 1)
    assert len(built) == 1
    assert {k: built[0][k] for k in ("lazy_capture", "max_entries", "safe_output_mode")} == {
        "lazy_capture": True,
        "max_entries": 1,
        "safe_output_mode": False,
    }
    stats = graphdispatch.stats()
    assert stats["captures"] == 3 and stats["evictions"] == 2 and stats["fallbacks"] == {}


def test_safe_output_mode_default_returns_clones():
    graphdispatch.config.device_graph = "emulated"
    CompilationConfig.aclgraph_only = True
    fn = torch.compile(lambda x: x + 1, backend=MindieSDBackend())
    x = torch.randn(6)
    first, second = fn(x), fn(x)
    assert first.data_ptr() != second.data_ptr()
    assert torch.equal(first, x + 1) and torch.equal(second, x + 1)


def test_create_aclgraph_backend_captures_without_compiling(stub_inductor):
    graphdispatch.config.device_graph = "emulated"
    CompilationConfig.aclgraph_with_compile = True  # the capture backend alone ignores it
    model = tiny_model()
    run_and_compare(torch.compile(model, backend=create_aclgraph_backend()), model)
    assert_replayed("graph_only")
    assert stub_inductor == []


# ---- NPU graph availability (MindIE-SD: both the graph class and the capture context) ---------


@pytest.mark.parametrize(
    "has_graph_class, has_context, present",
    [
        (True, True, True),
        (True, False, True),
        (False, True, True),
        (False, False, True),
        (True, True, False),
    ],
)
def test_npu_graph_available(monkeypatch, has_graph_class, has_context, present):
    fake = types.SimpleNamespace(is_available=lambda: present)
    if has_graph_class:
        fake.NPUGraph = object
    if has_context:
        fake.graph = object
    monkeypatch.setattr(torch, "npu", fake, raising=False)
    expected = has_graph_class and has_context and present
    assert mindiesd.npu_graph_available() is expected
    # The router applies the same rule to NPU inputs.
    reason = device_graphs.unavailable_reason("npu", types.SimpleNamespace(type="npu"))
    assert (reason is None) is expected


def test_npu_graph_unavailable_without_torch_npu(monkeypatch):
    monkeypatch.delattr(torch, "npu", raising=False)
    assert mindiesd.npu_graph_available() is False


# ---- docs/migrating.md -------------------------------------------------------------------------


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", MIGRATING.read_text(), flags=re.S)


def test_migrating_has_both_scenarios_and_reduce_overhead():
    blocks = python_blocks()
    assert len(blocks) == 3
    assert "aclgraph_only = True" in blocks[0] and "aclgraph_with_compile = True" in blocks[1]
    assert 'mode="reduce-overhead"' in blocks[2]
    for block in blocks[:2]:
        assert (
            "from graphdispatch.compat.mindiesd import MindieSDBackend, CompilationConfig" in block
        )


@pytest.mark.inductor
@pytest.mark.parametrize(
    "index, route, calls",
    [(0, "graph_only", 3), (1, "graph_with_compile", 3), (2, "graph_with_compile", 2)],
)
def test_migrating_examples_run(index, route, calls):
    # As docs/migrating.md says: each example as it is; on the CPU, device_graph="auto" picks
    # the CPU graph (graph_only) and Inductor's C++ wrapper (graph_with_compile).
    code = (
        "import graphdispatch\n"
        + python_blocks()[index]
        + "\nimport json\nprint(json.dumps(graphdispatch.stats()))\n"
    )
    stats = run_script(code, timeout=600)  # Inductor compiles in the child
    assert stats["routes"] == {route: 1}
    # One capture (at compile time); every call of the compiled model replays.
    assert stats["captures"] == 1 and stats["replays"] == calls and stats["fallbacks"] == {}
