"""``python -m graphdispatch.demo --json`` on the DiT (the cheaper Inductor compile): every
route present, within the demo's tolerance of eager, and the graph route replaying."""

import json

import pytest
import torch

from graphdispatch import demo


@pytest.mark.inductor
def test_demo_dit_json(capsys):
    threads = torch.get_num_threads()
    try:
        status = demo.main(["--model", "dit", "--steps", "3", "--json"])
    finally:
        torch.set_num_threads(threads)  # the demo sets one thread on the CPU
    report = json.loads(capsys.readouterr().out)  # stdout is exactly one JSON object

    assert status == 0, report
    assert report["ok"] is True
    assert report["model"] == "dit"
    assert isinstance(report["device"], str)
    by_route = {r["route"]: r for r in report["results"]}
    graph_route = "graph_only" if report["device"] == "cpu" else "graph_with_compile"
    assert set(by_route) == {"eager", "default", graph_route}
    for result in report["results"]:
        assert result["max_abs_diff"] <= demo.ATOL
        assert result["median_ms"] > 0
    assert by_route["eager"]["graph"] == by_route["default"]["graph"] == "none"
    if report["device"] == "cpu":
        assert by_route[graph_route]["graph"] == "emulated"
    assert by_route[graph_route]["captures"] >= 1
    assert by_route[graph_route]["replays"] >= 3  # one per step
