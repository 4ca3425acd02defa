"""Every field case runs on both graphs that exist on a CPU: the emulated graph (re-runs the FX
graph on replay) and the CPU graph (replays the recorded ops from C++, fixed memory, as a device
graph does). ``graph_with_compile`` stays on the emulated graph: Inductor's CPU kernels are not
dispatcher ops, so the CPU graph cannot record them."""

from __future__ import annotations

import pytest

from cases_helpers import GRAPH_ONLY, GRAPH_WITH_COMPILE

GRAPH_KINDS = ("emulated", "cpu")


@pytest.fixture(autouse=True, params=GRAPH_KINDS)
def graph_kind(request):
    """The graph kind of this run: GRAPH_ONLY (and ``runner()``) use it."""
    GRAPH_ONLY["device_graph"] = request.param
    yield request.param
    GRAPH_ONLY["device_graph"] = "emulated"


def pytest_collection_modifyitems(config, items):
    kept = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        on_compile = any(value is GRAPH_WITH_COMPILE for value in params.values())
        if params.get("graph_kind") == "cpu" and on_compile:
            config.hook.pytest_deselected(items=[item])
        else:
            kept.append(item)
    items[:] = kept
