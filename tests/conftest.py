"""Shared fixtures: every test starts and ends with empty Dynamo and graphdispatch caches;
``restore_config`` for modules that write graphdispatch.config. Before the first test, the first
call of every oneMKL VML function (pytest_configure)."""

import pytest
import torch

# The ops ATen computes with oneMKL's VML (IMPLEMENT_VML_MKL in ATen/cpu/vml.h).
VML_OPS = "acos asin atan cos erf erfc erfinv exp log log10 log2 sin sqrt tan tanh trunc".split()


def pytest_configure(config):
    """Each VML function's first call in the process, on one element (one thread), before any
    test: Note [First VML call] in csrc/tests/first_vml_calls.cpp."""
    for dtype in (torch.float32, torch.float64):
        half = torch.full((1,), 0.5, dtype=dtype)
        for name in VML_OPS:
            getattr(torch, name)(half)


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
