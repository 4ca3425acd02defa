"""Routing matrix (Note [Routes]): both flags × device-graph availability, seen through
choose_route and through a real torch.compile, with the route counted in stats()."""

import logging

import pytest
import torch

import graphdispatch
from graphdispatch import config
from graphdispatch._backend import choose_route

CPU_INPUTS = [torch.randn(2, 2)]


def resolved(**options):
    return config.resolve(config.normalize(options))


@pytest.mark.parametrize(
    "with_compile, only, device_graph, expected",
    [
        (False, False, "emulated", "default"),
        (False, True, "emulated", "graph_only"),
        (True, False, "emulated", "graph_with_compile"),
        (True, True, "emulated", "graph_with_compile"),  # with_compile wins (MindIE-SD's rule)
        (False, False, "auto", "default"),
        (False, True, "auto", "graph_only"),  # the CPU graph for CPU inputs
        (True, False, "auto", "graph_with_compile"),  # Inductor's C++ entry, called from C++
        (True, False, "cpp_wrapper", "graph_with_compile"),
        (True, True, "cuda", "default"),
        (False, True, "cpu", "graph_only"),
    ],
)
def test_route_matrix(with_compile, only, device_graph, expected):
    route, kind, reason = choose_route(
        resolved(graph_with_compile=with_compile, graph_only=only, device_graph=device_graph),
        CPU_INPUTS,
    )
    assert route == expected
    assert (kind is not None) == (route != "default")
    assert reason  # never a silent choice


def test_auto_picks_the_cpu_graph_never_emulated():
    route, kind, reason = choose_route(resolved(graph_only=True), CPU_INPUTS)
    assert (route, kind) == ("graph_only", "cpu")
    route, kind, reason = choose_route(resolved(graph_with_compile=True), CPU_INPUTS)
    assert (route, kind) == ("graph_with_compile", "cpp_wrapper")
    assert "Inductor's C++ wrapper" in reason


@pytest.mark.parametrize(
    "options, advice",
    [
        ({"graph_with_compile": True, "device_graph": "cpu"}, "device_graph='cpp_wrapper'"),
        ({"graph_with_compile": True, "graph_only": True, "device_graph": "cpu"}, "graph_only"),
        ({"mode": "reduce-overhead", "device_graph": "cpu"}, "device_graph='cpp_wrapper'"),
        ({"graph_only": True, "device_graph": "cpp_wrapper"}, "graph_with_compile=True"),
    ],
)
def test_c94_a_combination_that_cannot_give_its_route_is_an_error(options, advice):
    """The CPU graph cannot record Inductor's kernels, nor the cpp_wrapper graph run an FX graph:
    naming both is an error naming both options and what would work, raised by check_options
    and by a compile (Dynamo wraps it), never a silent change to the default route (case C94)."""
    options = dict(options)
    mode = options.pop("mode", None)
    flag = "graph_with_compile" if mode or options.get("graph_with_compile") else "graph_only"
    with pytest.raises(ValueError) as error:
        graphdispatch.check_options(options, mode=mode)
    message = str(error.value)
    assert f"{flag}=True" in message and f"device_graph={options['device_graph']!r}" in message
    assert advice in message
    graphdispatch.reset()
    fn = torch.compile(lambda x: x + 1, backend=graphdispatch.Backend(mode, options))
    with pytest.raises(Exception, match="cannot go together"):
        fn(torch.randn(3))
    assert graphdispatch.stats()["routes"] == {}


def test_route_is_logged_and_counted(caplog):
    fn = torch.compile(
        lambda x: x.sin() + 1,
        backend="graphdispatch",
        options={"graph_only": True, "device_graph": "emulated"},
    )
    with caplog.at_level(logging.INFO, logger="graphdispatch"):
        x = torch.randn(4)
        assert torch.equal(fn(x), x.sin() + 1)
    assert graphdispatch.stats()["routes"] == {"graph_only": 1}
    assert any("route graph_only" in r.getMessage() for r in caplog.records)


def test_fallback_route_reason_is_logged(caplog):
    fn = torch.compile(
        lambda x: x * 2,
        backend="graphdispatch",
        options={"graph_only": True, "device_graph": "cuda"},
    )
    with caplog.at_level(logging.INFO, logger="graphdispatch"):
        x = torch.randn(4)
        assert torch.equal(fn(x), x * 2)
    assert graphdispatch.stats()["routes"] == {"default": 1}
    assert any("graph_only requested but" in r.getMessage() for r in caplog.records)


def test_backend_instance_and_entry_point_agree():
    x = torch.randn(3, 3)
    by_name = torch.compile(
        lambda t: t @ t,
        backend="graphdispatch",
        options={"graph-only": True, "device-graph": "emulated"},
    )
    by_instance = torch.compile(
        lambda t: t @ t, backend=graphdispatch.Backend(graph_only=True, device_graph="emulated")
    )
    assert torch.allclose(by_name(x), x @ x)
    assert torch.allclose(by_instance(x), x @ x)
    assert graphdispatch.stats()["routes"] == {"graph_only": 2}
    assert graphdispatch.stats()["captures"] == 2


def test_invalid_option_raises_naming_key_and_valid_keys():
    with pytest.raises(
        ValueError, match=r"unknown option 'max_entires'.*valid options: .*max_entries"
    ):
        graphdispatch.Backend(max_entires=3)
    with pytest.raises(TypeError, match=r"'max_entries': expected int, got bool"):
        graphdispatch.Backend(max_entries=True)
    with pytest.raises(ValueError, match=r"'eviction': expected one of fifo, lru, got 'random'"):
        graphdispatch.Backend(eviction="random")
    with pytest.raises(ValueError, match=r"'device_graph'"):
        graphdispatch.Backend(device_graph="tpu")
    with pytest.raises(TypeError, match=r"mode must be a str or None, got dict"):
        graphdispatch.Backend({"graph_only": True})


def test_seed_aliases():
    assert graphdispatch.Backend(
        options={"aclgraph_only": True, "aclgraph_max_entries": 2}
    ).options == {"graph_only": True, "max_entries": 2}
