"""C45 (tests/cases/README.md): parameters a graph reads in place stay swappable.
``torch.utils.swap_tensors``, ``module.to(dtype)`` and ``load_state_dict(assign=True)`` under
``torch.__future__.set_swap_module_params_on_conversion(True)`` work after compiled calls as
they do with ``backend="eager"``; the next call equals eager with the new weights (a new
capture, never the old entry), and the old entry dies with the old weights (C34)."""

import gc

import pytest
import torch
from cases_helpers import compiled, stats
from test_lifetime import Block


@pytest.fixture
def swap_on_conversion():
    before = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    yield
    torch.__future__.set_swap_module_params_on_conversion(before)


def warm(model, x):
    """A compiled model that has captured and replayed once for ``x``."""
    G = compiled(model)
    with torch.no_grad():
        for _ in range(2):
            assert torch.equal(G(x), model(x))
    assert stats()["captures"] == 1 and stats()["replays"] == 2
    return G


def serves_new_weights(G, model, x):
    """The next calls equal eager on the swapped weights: one new capture, then replays."""
    captures, replays = stats()["captures"], stats()["replays"]
    with torch.no_grad():
        for _ in range(2):
            assert torch.equal(G(x), model(x))
    s = stats()
    assert s["captures"] == captures + 1 and s["replays"] == replays + 2, s
    assert s["fallbacks"] == {}, s


def test_c45_swap_tensors_on_a_parameter_read_in_place():
    model, x = Block(), torch.randn(2, 8)
    G = warm(model, x)
    replacement = torch.nn.Parameter(torch.randn(8, 8))
    torch.utils.swap_tensors(model.lin.weight, replacement)  # raised "has weakref" before
    # `replacement` now holds the old weight; the entry that read it dies with it (C34).
    del replacement
    gc.collect()
    assert stats()["entries"] == 0
    serves_new_weights(G, model, x)


def test_c45_module_to_dtype_swaps_parameters(swap_on_conversion):
    model, x = Block(), torch.randn(2, 8)
    G = warm(model, x)
    model.to(torch.float64)
    assert model.lin.weight.dtype == torch.float64
    serves_new_weights(G, model, x.double())


def test_c45_load_state_dict_assign_swaps_parameters(swap_on_conversion):
    model, x = Block(), torch.randn(2, 8)
    G = warm(model, x)
    state = {k: torch.randn_like(v) for k, v in model.state_dict().items()}
    model.load_state_dict(state, assign=True)
    assert torch.equal(model.lin.weight, state["lin.weight"])
    serves_new_weights(G, model, x)
