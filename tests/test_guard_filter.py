"""Serving with Dynamo's guard filter (docs/usage.md, "Serving: Dynamo's guard filter").

With ``torch.compiler.keep_tensor_guards_unsafe``, what graphdispatch's cache key still catches
(a replaced parameter, grad mode, a new input shape) and what nobody checks any more (a Python
value baked into the graph): the documented risk, pinned so that a change in either shows.
"""

from __future__ import annotations

import pytest
import torch
import torch._dynamo

import graphdispatch

FILTER = {"guard_filter_fn": torch.compiler.keep_tensor_guards_unsafe}


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.scale = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.scale


@pytest.fixture(autouse=True)
def fresh():
    torch._dynamo.reset()
    graphdispatch.reset()
    yield
    torch._dynamo.reset()
    graphdispatch.reset()


def compiled(model: torch.nn.Module, filtered: bool = True) -> torch.nn.Module:
    options = {"graph_only": True, **(FILTER if filtered else {})}
    return torch.compile(model, backend="graphdispatch", options=options)


def test_key_still_catches_a_replaced_parameter_grad_mode_and_a_new_shape():
    torch.manual_seed(0)
    model, x = Scaled().eval(), torch.randn(4, 8)
    c = compiled(model)
    with torch.no_grad():
        c(x)
        model.lin.weight = torch.nn.Parameter(torch.randn(8, 8))
        captures = graphdispatch.stats()["captures"]
        torch.testing.assert_close(c(x), model(x), rtol=0, atol=0)
        assert graphdispatch.stats()["captures"] == captures + 1  # a new key: captured again
        y = torch.randn(6, 8)
        torch.testing.assert_close(c(y), model(y), rtol=0, atol=0)  # kept tensor guard
    with torch.enable_grad():
        torch.testing.assert_close(c(x), model(x), rtol=0, atol=0)
    assert graphdispatch.stats()["fallbacks"].get("requires_grad", 0) >= 1


@pytest.mark.parametrize("filtered", [False, True])
def test_a_changed_module_attribute_is_caught_only_without_the_filter(filtered):
    torch.manual_seed(0)
    model, x = Scaled().eval(), torch.randn(4, 8)
    c = compiled(model, filtered)
    with torch.no_grad():
        c(x)
        model.scale = 3.0
        out, expected = c(x), model(x)
    if filtered:  # the documented risk: the old graph's values, silently
        assert not torch.equal(out, expected)
        torch.testing.assert_close(out, expected * 2.0 / 3.0)
    else:
        torch.testing.assert_close(out, expected, rtol=0, atol=0)


@pytest.mark.parametrize("filtered", [False, True])
def test_a_changed_python_int_argument_is_caught_only_without_the_filter(filtered):
    def f(x: torch.Tensor, k: int) -> torch.Tensor:
        return x * k

    x = torch.randn(4, 8)
    c = torch.compile(
        f, backend="graphdispatch", options={"graph_only": True, **(FILTER if filtered else {})}
    )
    with torch.no_grad():
        c(x, 2)
        out = c(x, 5)
    torch.testing.assert_close(out, x * (2 if filtered else 5), rtol=0, atol=0)
