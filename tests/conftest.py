"""Shared fixtures: every test starts with empty Dynamo and graphdispatch caches."""

import pytest
import torch


def has_device_graphs() -> bool:
    return torch.cuda.is_available()


requires_device = pytest.mark.skipif(not has_device_graphs(), reason="needs a CUDA device")


@pytest.fixture(autouse=True)
def fresh_caches():
    import graphdispatch

    torch._dynamo.reset()
    graphdispatch.reset()
    yield
    torch._dynamo.reset()
    graphdispatch.reset()
