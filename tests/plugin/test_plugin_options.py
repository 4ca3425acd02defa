"""C19 and options (Note [Options]): ``-``/``_`` keys, ``aclgraph_*`` aliases, modes, environment
variables; every invalid input raises a clear error listing what is valid, before any setup;
nothing is silently dropped."""

from __future__ import annotations

import pytest
import torch
from plugin_helpers import clean_env

import graphdispatch
from graphdispatch import config

CANONICAL = [
    "copy_stream",
    "device_graph",
    "eviction",
    "fast_path",
    "graph_only",
    "graph_passes",
    "graph_with_compile",
    "lazy_capture",
    "max_entries",
    "max_entry_bytes",
    "max_recaptures",
    "max_total_entry_bytes",
    "safe_output_mode",
    "verify_atol",
    "verify_replays",
    "verify_rtol",
    "warmup_iters",
]


def test_dash_and_underscore_are_one_key():
    a = graphdispatch.Backend(options={"max-entries": 4}).options
    b = graphdispatch.Backend(options={"max_entries": 4}).options
    assert a == b == {"max_entries": 4}
    assert graphdispatch.Backend(**{"safe-output-mode": False}).options == {
        "safe_output_mode": False
    }
    assert graphdispatch.check_options({"max-entries": 4}) == graphdispatch.check_options(
        {"max_entries": 4}
    )


@pytest.mark.parametrize(
    "alias, name, value",
    [
        ("aclgraph_only", "graph_only", True),
        ("aclgraph_with_compile", "graph_with_compile", True),
        ("aclgraph_lazy_capture", "lazy_capture", True),
        ("aclgraph_max_entries", "max_entries", 3),
        ("aclgraph-max-entries", "max_entries", 3),
    ],
)
def test_seed_aliases(alias, name, value):
    assert config.normalize({alias: value}) == {name: value}


def test_same_key_twice_with_different_values_raises():
    with pytest.raises(ValueError, match="'max_entries' given twice"):
        config.normalize({"max-entries": 1, "max_entries": 2})
    assert config.normalize({"max-entries": 2, "aclgraph_max_entries": 2}) == {"max_entries": 2}


def test_unknown_key_names_it_and_lists_valid_keys():
    with pytest.raises(ValueError) as info:
        graphdispatch.Backend(options={"max_entriez": 4})
    message = str(info.value)
    assert "'max_entriez'" in message and "did you mean 'max_entries'" in message
    for key in CANONICAL + list(config.ALIASES):
        assert key in message


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("max_entries", 1.5, "expected int, got float"),
        ("max_entries", True, "expected int, got bool"),  # bool is not a count
        ("graph_only", 1, "expected bool, got int"),
        ("graph_only", "yes", "expected bool, got str"),
        ("eviction", 3, "expected str, got int"),
    ],
)
def test_wrong_type_names_key_and_expected_type(key, value, expected):
    with pytest.raises(TypeError, match=f"'{key}': {expected}"):
        graphdispatch.Backend(options={key: value})


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("eviction", "lifo", "expected one of fifo, lru"),
        (
            "device_graph",
            "tpu",
            "expected one of auto, cuda, npu, accelerator, cpu, cpp_wrapper, emulated",
        ),
        ("max_entries", -1, "expected an int in \\[0, 2\\*\\*63 - 1\\]"),
        ("warmup_iters", 2**63, "expected an int in \\[0, 2\\*\\*63 - 1\\]"),  # C38: int64_t in C++
    ],
)
def test_bad_value_lists_valid_values(key, value, expected):
    with pytest.raises(ValueError, match=expected):
        graphdispatch.check_options({key: value})


@pytest.mark.parametrize("options", [[("graph_only", True)], "graph_only", 3])
def test_options_must_be_a_mapping(options):
    with pytest.raises(TypeError, match="must be a mapping"):
        graphdispatch.Backend(options=options)


def test_non_string_key_raises():
    with pytest.raises(TypeError, match="keys must be str"):
        config.normalize({1: True})


def test_modes():
    assert graphdispatch.Backend(mode="reduce-overhead").options == {"graph_with_compile": True}
    assert graphdispatch.Backend(mode="default").options == {}
    assert graphdispatch.Backend(mode=None).options == {}
    # Explicit options win over what the mode implies.
    assert (
        graphdispatch.check_options({"graph_with_compile": False}, mode="reduce-overhead")[
            "graph_with_compile"
        ]
        is False
    )
    with pytest.raises(ValueError) as info:
        graphdispatch.Backend(mode="max-autotune")
    assert "'max-autotune'" in str(info.value) and "'reduce-overhead'" in str(info.value)


def test_nothing_silently_dropped():
    # Every option given comes back resolved, with the value given.
    given = {
        "graph_only": True,
        "graph_with_compile": False,
        "lazy_capture": True,
        "fast_path": False,
        "max_entries": 7,
        "eviction": "lru",
        "safe_output_mode": False,
        "warmup_iters": 2,
        "copy_stream": False,
        "device_graph": "emulated",
        "max_entry_bytes": 1 << 20,
        "verify_replays": 2,
        "verify_rtol": 1e-3,
        "verify_atol": 1e-4,
        "max_recaptures": 3,
        "max_total_entry_bytes": 1 << 24,
        "graph_passes": (),
    }
    assert sorted(given) == CANONICAL
    assert graphdispatch.check_options(given) == given
    # An unexpected argument to the backend call is an error, not ignored.
    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    with pytest.raises(TypeError, match="unexpected arguments \\['dynamic'\\]"):
        graphdispatch.Backend()(gm, [torch.randn(2)], dynamic=True)
    with pytest.raises(ValueError, match="unknown option"):
        with config.patch(max_entriez=1):
            pass


INVALID_THROUGH_TORCH_COMPILE = """
import json, sys
import torch
import graphdispatch
from graphdispatch import _backend as backend

def attempt(**kwargs):
    torch._dynamo.reset()
    try:
        torch.compile(lambda x: x + 1, backend="graphdispatch", **kwargs)(torch.randn(2))
        return None
    except Exception as e:
        return {"type": type(e).__name__, "message": str(e)}

errors = {
    "unknown_key": attempt(options={"max_entriez": 1}),
    "wrong_type": attempt(options={"max-entries": "4"}),
    "too_large": attempt(options={"warmup_iters": 2**63}),
    "not_mapping": attempt(options=[("graph_only", True)]),
    "unknown_mode": attempt(mode="max-autotune"),
}
print(json.dumps({
    "errors": errors,
    "setup_attempts": {s.name: s.attempts
                       for s in (backend.LOAD_EXTENSION, backend.SETUP_INDUCTOR)},
    "extension_loaded": "graphdispatch._C" in sys.modules,
    "compile_fx_loaded": "torch._inductor.compile_fx" in sys.modules,
    "routes": backend.route_counts(),
}))
"""


def test_invalid_options_through_torch_compile_raise_before_setup(run_py):
    out = run_py(INVALID_THROUGH_TORCH_COMPILE)
    errors = out["errors"]
    # Dynamo wraps backend errors; ours is the message inside.
    assert all(e is not None and e["type"] == "BackendCompilerFailed" for e in errors.values()), (
        errors
    )
    assert "unknown option 'max_entriez'" in errors["unknown_key"]["message"]
    assert "valid options: copy_stream, device_graph" in errors["unknown_key"]["message"]
    assert (
        "'max_entries' (given as 'max-entries'): expected int, got str"
        in errors["wrong_type"]["message"]
    )
    # C38: used to pass here and fail in pybind11 at the first call, naming no option.
    assert "'warmup_iters': expected an int in [0, 2**63 - 1]" in errors["too_large"]["message"]
    assert "must be a mapping" in errors["not_mapping"]["message"]
    assert "unknown mode 'max-autotune'" in errors["unknown_mode"]["message"]
    assert "'reduce-overhead'" in errors["unknown_mode"]["message"]
    # No setup step ran, the extension and Inductor's compiler were never loaded.
    assert out["setup_attempts"] == {"extension": 0, "inductor": 0}
    assert out["extension_loaded"] is False and out["compile_fx_loaded"] is False
    assert out["routes"] == {}


def test_reduce_overhead_through_torch_compile_is_the_graph_route(run_py):
    # mode= arrives at the entry point at the first compile. Inductor is stubbed out (its CPU
    # compile is slow and not what this checks), so the graph_with_compile route captures gm.
    out = run_py(
        """
        import json
        import torch
        import graphdispatch
        from graphdispatch import _backend as backend, config
        backend._inductor = lambda gm, example_inputs, cudagraphs: gm.forward
        f = lambda x: torch.cos(x) + 1
        c = torch.compile(f, backend="graphdispatch", mode="reduce-overhead")
        x = torch.randn(4)
        ok = [bool(torch.allclose(c(x), f(x))) for _ in range(2)]
        print(json.dumps({"ok": ok, "stats": graphdispatch.stats(),
                          "device_graph": config.device_graph, "max_entries": config.max_entries}))
    """,
        env=clean_env(GRAPHDISPATCH_DEVICE_GRAPH="emulated", GRAPHDISPATCH_MAX_ENTRIES="3"),
    )
    assert out["ok"] == [True, True]
    assert out["stats"]["routes"] == {"graph_with_compile": 1} and out["stats"]["captures"] == 1
    assert out["device_graph"] == "emulated" and out["max_entries"] == 3


def test_invalid_environment_variable_names_it(run_py):
    out = run_py(
        """
        import json
        try:
            import graphdispatch
            error = None
        except ValueError as e:
            error = str(e)
        print(json.dumps({"error": error}))
    """,
        env=clean_env(GRAPHDISPATCH_MAX_ENTRIES="many"),
    )
    assert out["error"].startswith("environment variable GRAPHDISPATCH_MAX_ENTRIES='many'")
    assert "expected an integer" in out["error"]
