"""Every field case runs on both graphs a CPU has (``graph_kind``). ``graph_with_compile`` stays
on the emulated graph: Inductor's CPU kernels are not dispatcher ops, so the CPU graph cannot
record them."""

from __future__ import annotations

import pytest
from cases_helpers import GRAPH_WITH_COMPILE, graph_kind  # noqa: F401  (the fixture)


@pytest.fixture(autouse=True)
def on_each_graph(graph_kind):
    return graph_kind


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
