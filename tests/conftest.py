"""Shared fixtures: every test starts and ends with empty Dynamo and graphdispatch caches;
``restore_config`` for modules that write graphdispatch.config."""

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


@pytest.fixture
def restore_config():
    """Every graphdispatch.config option as it was before the test (``config.patch()``)."""
    from graphdispatch import config

    with config.patch():
        yield
