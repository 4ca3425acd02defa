"""Every field case starts and ends with a clean Dynamo and graphdispatch state."""

import pytest
import torch._dynamo

import graphdispatch


@pytest.fixture(autouse=True)
def clean_state():
    torch._dynamo.reset()
    graphdispatch.reset()
    yield
    torch._dynamo.reset()
    graphdispatch.reset()
