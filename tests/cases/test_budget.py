"""C49 (tests/cases/README.md): one byte budget for every compiled graph of the
process (``max_total_entry_bytes``), evicting across graphs in ``eviction`` order and counting
the entries' measured bytes: two experts alternating (Wan 2.2's transformer / transformer_2),
and regional compilation (one graph per block kind, one entry per block instance)."""

import pytest
import torch
from cases_helpers import compiled, stats

import graphdispatch
from graphdispatch.tiny_pipelines import tiny_flux_inputs, tiny_flux_transformer


class Expert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(16, 64)
        self.down = torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x)))


def test_max_total_entry_bytes_is_an_option_default_off():
    assert graphdispatch.check_options({})["max_total_entry_bytes"] == 0
    assert (
        graphdispatch.check_options({"max-total-entry-bytes": 4096})["max_total_entry_bytes"]
        == 4096
    )
    with pytest.raises(ValueError, match="max_total_entry_bytes"):
        graphdispatch.check_options({"max_total_entry_bytes": -1})
    with pytest.raises(TypeError, match="max_total_entry_bytes"):
        graphdispatch.check_options({"max_total_entry_bytes": 1.5})


def one_entry_bytes(x):
    """(bytes one expert's entry holds on its own, bytes of the shared workspace) for ``x``
    (measured, then everything reset)."""
    expert = Expert()
    with torch.no_grad():
        compiled(expert)(x)
    held, shared = stats()["entry_bytes"], stats()["workspace_bytes"]
    assert held > shared >= 0
    torch._dynamo.reset()
    graphdispatch.reset()
    return held - shared, shared


@pytest.mark.parametrize("eviction", ["fifo", "lru"])
def test_c49_two_experts_share_one_budget(eviction):
    x = torch.randn(4, 16)
    own, shared = one_entry_bytes(x)
    budget = (
        shared + own * 3 // 2
    )  # room for one expert's entry, not two (they share one workspace)
    high, low = Expert(), Expert()
    G_high = compiled(high, max_total_entry_bytes=budget, eviction=eviction)
    G_low = compiled(low, max_total_entry_bytes=budget, eviction=eviction)
    with torch.no_grad():
        for expert, G in [(high, G_high)] * 3 + [(low, G_low)] * 3:  # high noise, then low
            assert torch.equal(G(x), expert(x))
            assert stats()["entry_bytes"] <= budget
    s = stats()
    # The second expert's capture evicted the first's entry, in the other compiled graph.
    assert s["captures"] == 2 and s["evictions"] == 1 and s["entries"] == 1, s
    assert s["replays"] == 6 and s["fallbacks"] == {}, s


def test_c49_lru_keeps_the_entry_in_use_across_graphs():
    x = torch.randn(4, 16)
    own, shared = one_entry_bytes(x)
    budget = shared + own * 5 // 2  # two entries fit, three do not
    a, b, c = Expert(), Expert(), Expert()
    Ga, Gb, Gc = (compiled(m, max_total_entry_bytes=budget, eviction="lru") for m in (a, b, c))
    with torch.no_grad():
        for model, G in [(a, Ga), (b, Gb), (a, Ga), (c, Gc)]:  # c's capture evicts b, not a
            assert torch.equal(G(x), model(x))
        captures = stats()["captures"]
        assert torch.equal(Ga(x), a(x))  # still cached: a replay, no capture
    assert stats()["captures"] == captures == 3 and stats()["evictions"] == 1


def test_c49_regional_compilation_stays_under_one_budget():
    pytest.importorskip("diffusers")
    torch.manual_seed(0)
    model = tiny_flux_transformer(num_layers=2, num_single_layers=2).eval()
    inputs = tiny_flux_inputs()
    with torch.no_grad():
        expected = model(**inputs)[0]
        model.compile_repeated_blocks(
            backend="graphdispatch", options={"graph_only": True, "device_graph": "emulated"}
        )
        # Two warm calls: the single blocks see the second's input at another stride, so Dynamo
        # recompiles that graph with dynamic strides once (its own guard, not ours).
        for _ in range(2):
            assert torch.equal(model(**inputs)[0], expected)
        warm = stats()
        assert torch.equal(model(**inputs)[0], expected)  # pinned: bit-exact, every block replays
        unbounded = stats()
        assert unbounded["captures"] == warm["captures"], unbounded
        assert unbounded["replays"] == warm["replays"] + 4 and unbounded["fallbacks"] == {}
        # One entry per block instance and graph: the budget has room for half of the bytes.
        assert unbounded["entries"] >= 4 and unbounded["evictions"] == 0, unbounded
        budget = unbounded["entry_bytes"] // 2
        torch._dynamo.reset()
        graphdispatch.reset()
        model.compile_repeated_blocks(
            backend="graphdispatch",
            options={
                "graph_only": True,
                "device_graph": "emulated",
                "max_total_entry_bytes": budget,
            },
        )
        for _ in range(2):
            assert torch.equal(model(**inputs)[0], expected)
            assert stats()["entry_bytes"] <= budget
    s = stats()
    assert s["evictions"] > 0 and s["fallbacks"] == {}, s
