"""C10-C13: dynamic batch sizes and eviction, captures that fail, ops no graph can hold, and
random numbers."""

import logging

import pytest
import torch
import torch._dynamo
from cases_helpers import GRAPH_ONLY, capturing, compiled, fallbacks, requires_cuda, runner, stats

import graphdispatch
from graphdispatch._backend import _RUNNERS

# ---- C10: dynamic batch sizes -----------------------------------------------------------------


class ReluMatmul(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(64, 64) / 8)

    def forward(self, x):
        return torch.relu(x @ self.W)


def _batch_sizes():
    return list(range(1, 201)) + list(range(1, 6))


def test_c10_dynamic_batches_stay_bounded_and_correct(caplog):
    model = ReluMatmul()
    G = compiled(model, GRAPH_ONLY, max_entries=8)
    with torch.no_grad(), caplog.at_level(logging.WARNING, logger="graphdispatch"):
        for n in _batch_sizes():
            x = torch.randn(n, 64)
            torch.testing.assert_close(G(x), model(x))
            assert all(r.num_entries <= 8 for r in _RUNNERS)
    s = stats()
    assert s["evictions"] > 0
    assert s["captures"] - s["evictions"] <= 8 * len(_RUNNERS)  # live graphs: bounded memory
    evicting = [r for r in caplog.records if "evicting" in r.message]
    assert 1 <= len(evicting) <= len(_RUNNERS)  # once per runner, when eviction starts


@pytest.mark.device
@requires_cuda
def test_c10_reserved_memory_plateaus_on_device():
    model = ReluMatmul().cuda()
    G = compiled(model, {"graph_only": True, "device_graph": "cuda"}, max_entries=8)
    reserved = []
    with torch.no_grad():
        for n in _batch_sizes():
            x = torch.randn(n, 64, device="cuda")
            torch.testing.assert_close(G(x), model(x))
            reserved.append(torch.cuda.memory_reserved())
    assert reserved[-1] <= reserved[100] * 1.5 + (64 << 20)


# ---- C11: one capture fails -------------------------------------------------------------------

ATTEMPTS = {"failed_captures": 0}


@torch.library.custom_op("graphdispatch_cases::host_sync", mutates_args=())
def host_sync(x: torch.Tensor) -> torch.Tensor:
    # What a device does with a host sync inside a capture: refuse it.
    if capturing():
        ATTEMPTS["failed_captures"] += 1
        raise RuntimeError("operation not permitted when stream is capturing")
    return x * x.sum().item()


@host_sync.register_fake
def _(x):
    return torch.empty_like(x)


def sync_on_three(x):
    if x.shape[0] == 3:
        return torch.ops.graphdispatch_cases.host_sync(x) + 1
    return x + 1


def _check_failed_capture_is_contained(call):
    ATTEMPTS["failed_captures"] = 0
    for n in (1, 2, 3, 4, 1, 2, 3):
        x = torch.randn(n, 4)
        expected = x * x.sum().item() + 1 if n == 3 else x + 1
        torch.testing.assert_close(call(x), expected)
    assert ATTEMPTS["failed_captures"] == 1  # never retried
    assert fallbacks("capture_failed") == 2
    assert not capturing()  # the stream is not left capturing
    # Unrelated work and an unrelated capture afterwards are fine.
    captures = stats()["captures"]
    y = torch.randn(5) * 2
    G = compiled(lambda y: y - 1)
    torch.testing.assert_close(G(y), y - 1)
    assert stats()["captures"] == captures + 1


def test_c11_failed_capture_through_dynamo():
    _check_failed_capture_is_contained(compiled(sync_on_three))


def test_c11_failed_capture_in_the_runner():
    r = runner(lambda x: (sync_on_three(x),), [False])
    _check_failed_capture_is_contained(lambda x: r(x)[0])
    assert r.entry_reason(torch.randn(3, 4))[0] == "capture_failed"


@pytest.mark.device
@requires_cuda
def test_c11_real_capture_failure_on_device():
    def fn(x):
        return (x * x.sum().item() + 1 if x.shape[0] == 3 else x + 1,)

    r = runner(fn, [False], kind="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for n in (1, 2, 3, 4, 1, 2, 3):
        x = torch.randn(n, 4, device="cuda")
        torch.testing.assert_close(r(x)[0], fn(x)[0])
    assert fallbacks("capture_failed") == 2
    assert not torch.cuda.is_current_stream_capturing()
    r.clear()
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() <= before + (1 << 20)
    torch.testing.assert_close(runner(lambda y: (y - 1,), [False], kind="cuda")(x)[0], x - 1)


# ---- C12: ops that cannot be captured ------------------------------------------------------------


def mask_sum(x):
    return x[x > 0].sum()


def nonzero(x):
    return torch.nonzero(x)


def times_item(x):
    return x * x.sum().item()


@pytest.mark.parametrize("in_graph", [False, True], ids=["graph_break", "kept_in_graph"])
@pytest.mark.parametrize("fn", [mask_sum, nonzero, times_item])
def test_c12_uncapturable_ops_give_eager_results(fn, in_graph):
    G = compiled(fn)
    with torch._dynamo.config.patch(
        capture_scalar_outputs=in_graph, capture_dynamic_output_shape_ops=in_graph
    ):
        for _ in range(3):
            x = torch.randn(16)
            torch.testing.assert_close(G(x), fn(x))
    if in_graph:
        assert fallbacks("data_dependent") == 3
        assert stats()["captures"] == 0


# ---- C13: random numbers ------------------------------------------------------------------------


def dropout(x):
    return torch.nn.functional.dropout(x, 0.5, training=True)


def add_noise(x):
    return x + torch.rand_like(x)


def _check_random(G, fn, compare_with_eager):
    x = torch.ones(256)
    a, b, c = G(x), G(x), G(x)
    assert not torch.equal(a, b) and not torch.equal(b, c) and not torch.equal(a, c)
    runs = []
    for _ in range(2):
        torch.manual_seed(123)
        runs.append((G(x), G(x)))
    torch.testing.assert_close(runs[0], runs[1])
    if compare_with_eager:  # the FX graph draws exactly what eager draws
        torch.manual_seed(123)
        torch.testing.assert_close(runs[0], (fn(x), fn(x)))


@pytest.mark.parametrize("fn", [dropout, add_noise])
def test_c13_random_numbers_graph_only(fn):
    _check_random(compiled(fn), fn, compare_with_eager=True)


@pytest.mark.inductor
def test_c13_random_numbers_with_compile():
    from cases_helpers import GRAPH_WITH_COMPILE

    _check_random(compiled(add_noise, GRAPH_WITH_COMPILE), add_noise, compare_with_eager=False)


def test_c13_explicit_generator_through_dynamo():
    gen = torch.Generator().manual_seed(7)

    def fn(x):
        return x + torch.rand(x.shape, generator=gen)

    G = compiled(fn)
    x = torch.zeros(64)
    first = [G(x) for _ in range(3)]
    assert not torch.equal(first[0], first[1]) and not torch.equal(first[1], first[2])
    gen.manual_seed(7)
    torch.testing.assert_close(first, [fn(x) for _ in range(3)])


def test_c13_graph_holding_a_generator_falls_back():
    gen = torch.Generator().manual_seed(7)
    gm = torch.fx.symbolic_trace(lambda x: x + torch.rand(x.shape, generator=gen))
    x = torch.zeros(64)
    fn = graphdispatch.Backend(**GRAPH_ONLY)(gm, [x])
    outs = [fn(x) for _ in range(3)]
    assert not torch.equal(outs[0], outs[1]) and not torch.equal(outs[1], outs[2])
    assert fallbacks("explicit_generator") == 3 and stats()["captures"] == 0


def test_c13_generator_input_falls_back_in_the_runner():
    r = runner(lambda x, g: (x + torch.rand(x.shape, generator=g),), [False, False])
    gen, x = torch.Generator().manual_seed(7), torch.zeros(64)
    outs = [r(x, gen)[0] for _ in range(3)]
    gen.manual_seed(7)
    torch.testing.assert_close(outs, [x + torch.rand(x.shape, generator=gen) for _ in range(3)])
    assert fallbacks("explicit_generator") == 3 and stats()["captures"] == 0
