"""``python -m graphdispatch.demo --json`` on one pipeline (Flux: the cheapest Inductor
compile): every route present, within tolerance of eager, and the graph route passing the rule
(no fallbacks, one capture, replays for the model calls)."""

import json

import pytest
import torch

pytest.importorskip("transformers")

from graphdispatch import demo  # noqa: E402


@pytest.mark.inductor
def test_demo_flux_json(capsys):
    threads = torch.get_num_threads()
    try:
        status = demo.main(["--pipeline", "flux", "--steps", "2", "--json"])
    finally:
        torch.set_num_threads(threads)  # the demo sets one thread on the CPU
    report = json.loads(capsys.readouterr().out)  # stdout is exactly one JSON object

    assert status == 0, report
    assert report["ok"] is True and report["pipelines"] == ["flux"]
    by_route = {r["route"]: r for r in report["results"]}
    graph_routes = ["graph_with_compile"] + (["graph_only"] if report["device"] == "cpu" else [])
    assert set(by_route) == {"eager", "default", *graph_routes}
    for result in report["results"]:
        assert result["pipeline"] == "FluxPipeline"
        assert result["model"] == "FluxTransformer2DModel"
        assert result["max_abs_diff"] <= demo.ATOL
        assert result["median_ms"] > 0
    for name in graph_routes:
        graph = by_route[name]
        assert graph["fallbacks"] == {} and graph["captures"] == 1, graph
        assert graph["replays"] >= graph["model_calls"] - 1, graph
    if report["device"] == "cpu":  # the CPU graph replays the very FX graph: bit-exact
        assert by_route["graph_only"]["graph"] == "cpu"
        assert by_route["graph_only"]["max_abs_diff"] == 0
        assert by_route["graph_with_compile"]["graph"] == "cpp_wrapper"
    assert by_route["default"]["captures"] == 0


def test_demo_rejects_bad_arguments(capsys):
    with pytest.raises(SystemExit) as exit_info:
        demo.main(["--pipeline", "nope"])
    assert exit_info.value.code == 2
    assert "--pipeline" in capsys.readouterr().err
