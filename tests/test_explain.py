"""graphdispatch.explain (docs/diagnosing.md): graphs and breaks from Dynamo, per graph the route,
inputs, entries and every fallback with its reason, input position and advice; the example in
docs/diagnosing.md is this code's real output (regenerate it with UPDATE_DIAGNOSING_DOC=1)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch
import torch._dynamo

import graphdispatch
from graphdispatch import _C
from graphdispatch._diagnose import advice

DOC = Path(__file__).resolve().parents[1] / "docs" / "diagnosing.md"


@torch.library.custom_op("graphdispatch_test::host_sync", mutates_args=())
def host_sync(x: torch.Tensor) -> torch.Tensor:
    """Stands in for an op a device graph cannot record (a host synchronisation): it fails
    while the (emulated or CPU graph's) stream captures, as such an op fails under CUDA stream
    capture."""
    if _C._testing.emulated_capturing() or _C._testing.cpu_graph_capturing():
        raise RuntimeError("operation not permitted when stream is capturing")
    return x.clone()


@host_sync.register_fake
def _(x):
    return torch.empty_like(x)


def broken(x, w):
    y = torch.relu(x @ w)
    torch._dynamo.graph_break()
    return host_sync(y) + 1


def test_names_the_graph_break_and_the_uncapturable_op():
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    with torch.no_grad():
        report = graphdispatch.explain(broken, x, w)
    data = report.to_dict()
    assert [b["reason"] for b in data["graph_breaks"]] == ["Call to `torch._dynamo.graph_break()`"]
    assert data["graph_breaks"][0]["where"].endswith(
        f"{Path(__file__).name}:{broken.__code__.co_firstlineno + 2}"
    )
    first, second = data["graphs"]
    assert first["route"] == second["route"] == "graph_only"
    # Before the break: captured at compile time, replayed by the call.
    assert first["fallbacks"] == [] and [
        (e["captured"], e["replays"]) for e in first["entries"]
    ] == [(True, 1)]
    assert [(i["kind"], i["copy_bytes"]) for i in first["inputs"]] == [
        ("dynamic", 4 * 8 * 4),
        ("dynamic", 8 * 8 * 4),
    ]
    # After it: the capture fails on host_sync, and the call ran without a graph.
    (fallback,) = second["fallbacks"]
    assert fallback["reason"] == "capture_failed" and fallback["scope"] == "signature"
    assert "operation not permitted when stream is capturing" in fallback["detail"]
    assert fallback["advice"] == advice("capture_failed")
    assert data["stats"]["fallbacks"] == {"capture_failed": 1}
    assert data["stats"]["captures"] == 1 and data["stats"]["replays"] == 1
    text = str(report)
    assert "graph break 0: Call to `torch._dynamo.graph_break()`" in text
    assert "fallback capture_failed (signature): RuntimeError: operation not permitted" in text


def test_names_the_input_that_makes_calls_fall_back():
    model = torch.nn.Linear(8, 4)
    report = graphdispatch.explain(model, torch.randn(2, 8))  # grad mode on: weights need grad
    (graph,) = report.to_dict()["graphs"]
    (fallback,) = graph["fallbacks"]
    weight = next(i for i in graph["inputs"] if i["shape"] == [4, 8])
    assert fallback["reason"] == "requires_grad" and fallback["position"] == weight["position"]
    assert weight["kind"] == "static" and weight["name"] == "weight"  # its module path (C48)
    assert (
        fallback["detail"] == f"input {weight['position']} (weight): [4, 8]/float32 strides (8, 1)"
    )
    assert f"fallback requires_grad (input {weight['position']})" in str(report)
    assert report.stats["fallbacks"] == {"requires_grad": 1}


def test_a_graph_refused_as_a_whole_and_the_options_given():
    with torch._dynamo.config.patch(capture_scalar_outputs=True), torch.no_grad():
        report = graphdispatch.explain(
            lambda x: x * x.sum().item(), torch.randn(5), options={"lazy_capture": True}
        )
    (graph,) = report.graphs
    (fallback,) = graph["fallbacks"]
    assert fallback["reason"] == "data_dependent" and fallback["scope"] == "graph"
    assert fallback["detail"].startswith("at node item (call_method item)")
    assert graph["entries"] == [] and [i["kind"] for i in graph["inputs"]] == ["uncaptured"]
    assert report.options == {"graph_only": True, "lazy_capture": True}


# ---- the demo's pipelines -------------------------------------------------------------------


def denoiser_call(key: str):
    """(model, args, kwargs) of the denoiser's first call in one step of pipeline ``key``."""
    from graphdispatch.tiny_pipelines import build

    class Seen(Exception):
        pass

    def stop(module, args, kwargs):
        raise Seen(args, kwargs)  # the rest of the pipeline call is not needed

    tiny = build(key, torch.device("cpu"), 1)
    hook = tiny.model.register_forward_pre_hook(stop, with_kwargs=True)
    try:
        with torch.no_grad():
            tiny.pipe(**tiny.call_kwargs())
    except Seen as seen:
        args, kwargs = seen.args
    finally:
        hook.remove()
    return tiny.model, args, kwargs


DOC_BLOCK = re.compile(r"(<!-- explain sd3 -->\n```text\n)(.*?)(```\n)", re.S)


@pytest.mark.parametrize("key", ["sd", "sd3", "flux"])
def test_pipelines_replay_with_zero_fallbacks_and_the_doc_shows_real_output(key):
    pytest.importorskip("diffusers")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model, args, kwargs = denoiser_call(key)
        with torch.no_grad():
            report = graphdispatch.explain(model, *args, **kwargs)
    finally:
        torch.set_num_threads(threads)
    data = report.to_dict()
    assert data["graph_breaks"] == []
    (graph,) = data["graphs"]
    assert graph["route"] == "graph_only" and graph["fallbacks"] == []
    (entry,) = graph["entries"]
    assert entry["captured"] and entry["replays"] == 1 and entry["bytes"] > 0
    assert data["stats"]["fallbacks"] == {} and data["stats"]["replays"] == 1
    text = str(report)
    assert "route graph_only" in text and "fallbacks: none" in text
    if key != "sd3":
        return
    if os.environ.get("UPDATE_DIAGNOSING_DOC") == "1":
        DOC.write_text(
            DOC_BLOCK.sub(lambda m: m.group(1) + text + "\n" + m.group(3), DOC.read_text())
        )
    match = DOC_BLOCK.search(DOC.read_text())
    assert match is not None, "docs/diagnosing.md lost its <!-- explain sd3 --> block"
    assert match.group(2) == text + "\n", "docs/diagnosing.md differs from explain's output"


def test_aliased_inputs_name_the_later_input():
    def write_first(a, b):
        a.mul_(2)
        return a + b

    base = torch.randn(8)
    with torch.no_grad():
        report = graphdispatch.explain(write_first, base[:6], base[2:])
    (graph,) = report.graphs
    (fallback,) = graph["fallbacks"]
    assert fallback["reason"] == "aliased_inputs" and fallback["position"] == 1
    assert fallback["detail"] == (
        "input 1 (b): [6]/float32 strides (1) overlaps input 0 (a) in "
        "memory, and the graph writes one of them"
    )
    assert report.stats["fallbacks"] == {"aliased_inputs": 1}


def test_the_doc_lists_every_fallback_reason_with_the_runtimes_advice():
    # The runtime's one list of reasons (csrc/runtime/fallback_reason.cpp) is the oracle: the
    # table in docs/diagnosing.md, "Fallback reasons and what to do", has one row per reason, in
    # its order, whose last column is the runtime's advice (backticks aside, which only format it).
    section = DOC.read_text().split("## 3. Fallback reasons and what to do", 1)[1]
    section = section.split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    cells = [[cell.strip() for cell in row.strip("|").split(" | ")] for row in rows]
    documented = [(c[0].strip("`"), c[-1].replace("`", "")) for c in cells]
    assert documented == list(_C.fallback_reasons().items())


def test_python_refusals_are_names_from_the_runtimes_list():
    # graph_analysis names its reasons through _C.FallbackReason; _C.fallback counts only those.
    assert [r.name for r in _C.FallbackReason.__members__.values()] == list(_C.fallback_reasons())
    with pytest.raises(ValueError, match="expected a name in fallback_reasons"):
        _C.fallback("no_such_reason", lambda: None)
    assert advice("data_dependent") == _C.fallback_reasons()["data_dependent"] != ""
    assert advice("no_such_reason") == ""


RUNS = [0]


@torch.library.custom_op("graphdispatch_test::counted", mutates_args=())
def counted(x: torch.Tensor) -> torch.Tensor:
    """Counts each time the model's work really runs (not its fake-tensor tracing)."""
    RUNS[0] += 1
    return x + 1


@counted.register_fake
def _(x):
    return torch.empty_like(x)


@pytest.mark.parametrize("warmup_iters", [1, 2])
@pytest.mark.parametrize("device_graph", ["cpu", "emulated"])
def test_the_model_runs_as_often_as_the_docstring_says(device_graph, warmup_iters):
    # Under torch._dynamo.explain, warmup_iters warmups, the recording run (both CPU graphs
    # run the work while recording) and the call's replay.
    RUNS[0] = 0
    report = graphdispatch.explain(
        lambda x: counted(x) * 2,
        torch.randn(4),
        options={"device_graph": device_graph, "warmup_iters": warmup_iters},
    )
    assert RUNS[0] == 3 + warmup_iters
    assert report.stats["captures"] == 1 and report.stats["replays"] == 1
