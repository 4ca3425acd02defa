"""Shared fixtures: every test starts and ends with empty Dynamo and graphdispatch caches."""

import pytest
import torch


@pytest.fixture(autouse=True)
def fresh_caches():
    import graphdispatch

    torch._dynamo.reset()
    graphdispatch.reset()
    yield
    torch._dynamo.reset()
    graphdispatch.reset()
