"""C34, C35, C41 (tests/cases/README.md): entries do not own the model (deleting it
frees its weights and the entries' buffers, without reset()); one FX graph serving several
module instances keeps one replaying entry per set of weights; a tensor that truly keeps moving
costs a bounded number of recaptures (max_recaptures), then a counted fallback and one warning."""

import gc
import logging
import weakref

import pytest
import torch
from cases_helpers import ROUTES, compiled, fallbacks, stats

import graphdispatch


def live_entries():
    s = stats()
    assert "entries" in s and "entry_bytes" in s, f"stats() lacks entries/entry_bytes: {sorted(s)}"
    return s["entries"], s["entry_bytes"]


# ---- C34: deleting a model frees its weights and its entries ---------------------------------


def collected(weight):
    """After a garbage collection, the weight ``weight`` refers to is freed; the live entries."""
    gc.collect()
    assert weight() is None, "the captured entries keep the deleted model's weights alive"
    return live_entries()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.lin(x))


@pytest.mark.parametrize("options", ROUTES)
def test_c34_deleting_the_model_frees_its_weights_and_entries(options):
    before = stats()
    model = Block()
    G = compiled(model, options)
    with torch.no_grad():
        for batch in (2, 2, 3):  # two signatures at least: two entries
            x = torch.randn(batch, 8)
            torch.testing.assert_close(G(x), model(x))
    during = stats()
    # Batch 2 on the first graph; batch 3 on the graph Dynamo recompiles with a dynamic batch.
    assert during["captures"] == 2 and during["fallbacks"] == {}, during

    weight = weakref.ref(model.lin.weight)
    del model, G
    after = collected(weight)
    # Not vacuous: the two entries held buffers while the model lived; all of it went with it.
    assert during["entries"] == before["entries"] + 2, (before, during)
    assert during["entry_bytes"] > before["entry_bytes"], (before, during)
    assert after == (before["entries"], before["entry_bytes"])


def test_c34_deleting_one_model_keeps_the_other_replaying():
    a, b = Block(), Block()  # one class: Dynamo may hand both the same FX graph
    Ga, Gb = compiled(a), compiled(b)
    x = torch.randn(2, 8)
    with torch.no_grad():
        for round in range(2):
            torch.testing.assert_close(Ga(x), a(x))
            torch.testing.assert_close(Gb(x), b(x))
            if round == 0:
                warm = stats()
        both = stats()
        assert both["captures"] == warm["captures"]  # each model's weights keep their own entry
        weight = weakref.ref(a.lin.weight)
        del a, Ga
        left = collected(weight)
        assert left[0] < both["entries"] and left[1] < both["entry_bytes"]
        captures, replays = stats()["captures"], stats()["replays"]
        for _ in range(3):
            torch.testing.assert_close(Gb(x), b(x))
    assert stats()["captures"] == captures and stats()["replays"] == replays + 3
    assert stats()["fallbacks"] == {}
    assert live_entries() == left


# ---- C35: a state tensor reassigned every call -----------------------------------------------


class Decay(torch.nn.Module):
    def __init__(self, registered):
        super().__init__()
        if registered:
            self.register_buffer("h", torch.zeros(4))
        else:
            self.h = torch.zeros(4)

    def forward(self, x):
        self.h = self.h * 0.5 + x  # a new tensor, at a new address, every call
        return self.h * 2


def test_max_recaptures_is_an_option_with_a_small_default():
    assert graphdispatch.check_options({})["max_recaptures"] == 8
    assert graphdispatch.check_options({"max_recaptures": 2})["max_recaptures"] == 2
    with pytest.raises(ValueError, match="max_recaptures"):
        graphdispatch.check_options({"max_recaptures": -1})


@pytest.mark.parametrize("max_recaptures", [None, 2], ids=["default", "two"])
@pytest.mark.parametrize("registered", [True, False], ids=["buffer", "attribute"])
def test_c35_moving_state_recaptures_a_bounded_number_of_times(registered, max_recaptures, caplog):
    bound = 8 if max_recaptures is None else max_recaptures
    extra = {} if max_recaptures is None else {"max_recaptures": max_recaptures}
    model, eager = Decay(registered), Decay(registered)
    G = compiled(model, **extra)
    calls = 20
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        for k in range(calls):
            x = torch.full((4,), float(k))
            torch.testing.assert_close(G(x), eager(x), msg=lambda m, k=k: f"call {k}: {m}")
    torch.testing.assert_close(model.h, eager.h)
    s = stats()
    # A recapture is a capture after a state tensor was seen freed: the first capture, then one
    # per loss up to the bound. The first state tensor may also be referenced by Dynamo's
    # compile-time objects until the garbage collector runs, so its loss may be seen late:
    # after the run (one capture more, before any loss was seen), or with a later loss (a
    # recapture fewer). Which one depends on when a collection runs; these are all there are.
    outcomes = {"seen at once": (bound, 1 + bound), "after the run": (bound, 2 + bound),
                "with a later loss": (bound - 1, 1 + bound)}  # fmt: skip
    assert (s["recaptures"], s["captures"]) in outcomes.values(), (outcomes, s)
    assert set(s["fallbacks"]) == {"static_inputs_moving"}, s["fallbacks"]
    assert fallbacks("static_inputs_moving") == calls - s["captures"]
    assert s["replays"] + fallbacks("static_inputs_moving") == calls, s
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.name == "graphdispatch"
        and r.levelno == logging.WARNING
        and "static_inputs_moving" in r.getMessage()
    ]
    assert len(warnings) == 1, warnings


# ---- C41: one FX graph, several module instances ---------------------------------------------


class RoundRobin(torch.nn.Module):
    def __init__(self, n=6):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(n))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
            torch._dynamo.graph_break()  # each block's call is its own frame: one graph for all
        return x


def test_c41_instances_sharing_one_graph_each_replay():
    model = RoundRobin()
    G = compiled(model)
    with torch.no_grad():
        x = torch.randn(2, 8)
        torch.testing.assert_close(G(x), model(x))  # the warm round: captures
        warm = stats()
        assert warm["routes"] == {"graph_only": 1}  # not vacuous: one graph serves all six
        for _ in range(3):
            x = torch.randn(2, 8)
            torch.testing.assert_close(G(x), model(x))
    s = stats()
    assert s["captures"] == warm["captures"], (warm, s)
    assert s["replays"] == warm["replays"] + 3 * 6
    assert s["fallbacks"] == {}


# ---- weights that move without dying, reloads, failed captures -----------------------------


def test_weights_replaced_through_data_drop_their_entries():
    # Module.to(), .half() and CPU offload replace `param.data`: the tensor lives on, at a new
    # address. Its old entries can never replay again and are dropped, not kept forever.
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    G = compiled(model)
    x = torch.randn(2, 8)
    with torch.no_grad():
        for _ in range(6):
            model.double()
            for _ in range(3):
                torch.testing.assert_close(G(x.double()), model(x.double()))
            model.float()
            for _ in range(3):
                torch.testing.assert_close(G(x), model(x))
    # The entry of the current (float) weights; the double one went with its weights.
    assert stats()["entries"] == 1
    # Each entry served three calls: weights that move now and then are not thrash.
    assert stats()["fallbacks"] == {} and stats()["replays"] == 36


def test_reloading_a_model_many_times_keeps_replaying():
    # A service reloading weights builds a new model each time; its entries die after serving
    # many calls, which is no reason to stop capturing (max_recaptures is about thrash).
    for _ in range(12):
        model = Block()
        G = compiled(model)
        with torch.no_grad():
            for _ in range(3):
                x = torch.randn(2, 8)
                torch.testing.assert_close(G(x), model(x))
        del model, G
        gc.collect()
    assert stats()["fallbacks"] == {} and stats()["replays"] == 36


def test_a_capture_failing_after_recording_leaves_the_entry_gauges_as_they_were():
    before = live_entries()
    G = compiled(lambda x: (x.view(torch.int32) + 0, x.view(torch.int32)))
    for n in (1, 2, 3):  # an output viewing an input with another dtype: the capture fails
        x = torch.randn(n)
        got = G(x)
        assert torch.equal(got[0], x.view(torch.int32)) and got[1].data_ptr() == x.data_ptr()
    assert fallbacks("capture_failed") == 3
    assert live_entries() == before


def test_models_used_after_a_few_one_shot_losses_still_capture():
    # Two models called once and deleted are losses; models that then stay for several calls
    # are new weights, captured and replayed whatever max_recaptures is.
    G = compiled(lambda block, x: block(x), max_recaptures=2)
    x = torch.randn(2, 8)
    with torch.no_grad():
        for calls in (1, 1, 2, 2, 2, 2, 2, 2):
            model = Block()
            for _ in range(calls):
                torch.testing.assert_close(G(model, x), model(x))
            del model
            gc.collect()
    assert stats()["fallbacks"] == {} and stats()["replays"] == 14


# ---- C47: weights that stop moving get their graph back -------------------------------------


def test_c47_weights_that_settle_capture_again_and_replay():
    # LoRA rebinding (`.data =`) on every call for a while, as at start-up; then served as is.
    model, x = Block(), torch.randn(2, 8)
    G = compiled(model, max_recaptures=2)
    with torch.no_grad():
        for _ in range(20):
            model.lin.weight.data = torch.randn(8, 8)
            assert torch.equal(G(x), model(x))
        moving = stats()
        # Every call of the 20 that did not capture fell back (not vacuous: there were some).
        assert fallbacks("static_inputs_moving") == 20 - moving["captures"] > 0, moving
        for _ in range(20):
            assert torch.equal(G(x), model(x))
    s = stats()
    # The 20th call brought the settled weights; three calls in a row with them (kStableCalls
    # in csrc/runtime/recapture_policy.h) refill the budget: the 22nd captures, all later replay.
    assert s["captures"] == moving["captures"] + 1, s
    assert s["fallbacks"]["static_inputs_moving"] == moving["fallbacks"]["static_inputs_moving"] + 1
    assert s["replays"] == moving["replays"] + 19, s
