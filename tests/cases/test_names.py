"""C48 (tests/cases/README.md): fallback warnings, the recapture warning and
``explain()`` name a parameter or buffer by its module path (from Dynamo's sources) and a user
input by its argument name, not by its position alone."""

import logging

import torch
from cases_helpers import compiled, fallbacks

import graphdispatch


class Decay(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("h", torch.zeros(4))

    def forward(self, x):
        self.h = self.h * 0.5 + x  # a new tensor every call: the recapture bound is reached
        return self.h * 2


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.nn.Identity(), Decay()])

    def forward(self, hidden_states):
        return self.blocks[1](self.blocks[0](hidden_states))


def warnings_of(caplog, reason):
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "graphdispatch" and r.levelno == logging.WARNING and reason in r.getMessage()
    ]


def test_c48_recapture_warning_names_the_buffer_by_module_path(caplog):
    G = compiled(Outer(), max_recaptures=1)
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        for k in range(6):
            G(torch.full((4,), float(k)))
    assert fallbacks("static_inputs_moving") > 0
    (warning,) = warnings_of(caplog, "static_inputs_moving")
    assert "(blocks.1.h): [4]/float32" in warning, warning


def test_c48_fallback_warning_and_explain_name_the_argument(caplog):
    def attend(hidden_states, encoder_hidden_states):
        return hidden_states @ encoder_hidden_states.T

    G = compiled(attend)
    x, states = torch.randn(2, 8), torch.randn(2, 8, requires_grad=True)  # autograd: falls back
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        assert torch.equal(G(x, states), attend(x, states))
    assert fallbacks("requires_grad") == 1
    (warning,) = warnings_of(caplog, "requires_grad")
    assert "(encoder_hidden_states): [2, 8]/float32" in warning, warning

    report = graphdispatch.explain(attend, torch.randn(2, 8), states)
    (graph,) = report.graphs
    names = {i["name"]: i["position"] for i in graph["inputs"]}
    assert set(names) == {"hidden_states", "encoder_hidden_states"}
    position = names["encoder_hidden_states"]
    (fallback,) = graph["fallbacks"]
    assert fallback["position"] == position
    assert fallback["detail"].startswith(
        f"input {position} (encoder_hidden_states): [2, 8]/float32"
    )
    assert f"{position} encoder_hidden_states: dynamic" in str(report)
