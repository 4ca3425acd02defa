"""C21-C25 (tests/cases/README.md): the input and output kinds real diffusers
pipelines produce, each against eager, each with the counters that show a graph replayed."""

import logging

import pytest
import torch
from cases_helpers import ROUTES, assert_same_layout, compiled, fallbacks, stats

# ---- C21: expanded (zero-stride) inputs ------------------------------------------------------


@pytest.mark.parametrize("options", ROUTES)
def test_c21_expanded_inputs_capture_once_and_replay(options):
    def step(latents, timestep, guidance):  # Flux passes both as t.expand(batch)
        return latents * timestep[:, None] + guidance[:, None]

    G = compiled(step, options)
    latents = torch.randn(3, 5)
    for value in (0.9, 0.5, 0.1):
        timestep = torch.tensor(value).expand(3)
        guidance = torch.full([1], 3.5 * value).expand(3)
        assert timestep.stride() == (0,)
        torch.testing.assert_close(
            G(latents, timestep, guidance), step(latents, timestep, guidance)
        )
    assert stats()["fallbacks"] == {}
    assert stats()["captures"] == 1 and stats()["replays"] == 3
    # Only the unexpanded part is copied: one float per expanded input per call.
    assert stats()["bytes_copied"] == 3 * (3 * 5 * 4 + 4 + 4)


def test_c21_expanded_batch_of_a_real_tensor():
    def f(x, context):
        return (x + context).sum(-1)

    G = compiled(f)
    for _ in range(3):
        context = torch.randn(1, 4, 6)
        batch = context.expand(2, 4, 6)  # classifier-free guidance's shared context
        x = torch.randn(2, 4, 6)
        torch.testing.assert_close(G(x, batch), f(x, batch))
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1


def test_c21_self_overlapping_windows_are_captured():
    # Overlap beyond zero strides: the buffer has the same strides, so it overlaps the same way
    # and each of its locations receives one value.
    def f(x):
        return x * 2

    G = compiled(f)
    for _ in range(3):
        windows = torch.randn(10).as_strided((4, 3), (1, 1))  # rows share elements
        torch.testing.assert_close(G(windows), f(windows))
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1 and stats()["replays"] == 3


def test_fallbacks_warn_once_per_graph_and_reason_naming_the_input(caplog):
    def f(x, w):
        return x @ w

    G = compiled(f)
    w = torch.randn(3, 2)
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        for _ in range(3):
            x = torch.randn(4, 3, requires_grad=True)  # grad mode on: eager records autograd
            torch.testing.assert_close(G(x, w), f(x, w))
    assert stats()["fallbacks"] == {"requires_grad": 3}  # counted per call
    warnings = [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "requires_grad" in r.getMessage()
    ]
    assert len(warnings) == 1, warnings  # said once
    assert "input 0 (x): [4, 3]/float32 strides (3, 1)" in warnings[0]  # named (C48)
    assert "torch.no_grad()" in warnings[0]


# ---- C22: expanded outputs -------------------------------------------------------------------


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
@pytest.mark.parametrize("options", ROUTES)
def test_c22_expanded_outputs_keep_eager_layout(options, safe):
    def f(x):
        positions = torch.arange(6, dtype=x.dtype)[None].expand(x.shape[0], 6)
        return x + 1, positions, x.mean(0, keepdim=True).expand(4, 6)

    G = compiled(f, options, safe_output_mode=safe)
    for _ in range(3):
        x = torch.randn(4, 6)
        for got, expected in zip(G(x), f(x)):
            assert_same_layout(got, expected)
    assert stats()["fallbacks"] == {} and stats()["replays"] == 3


def test_c22_graph_break_after_expand():
    def f(x):
        y = x.mean(0, keepdim=True).expand(4, 6)
        torch._dynamo.graph_break()
        return y * 2, y

    G = compiled(f)
    for _ in range(3):
        x = torch.randn(4, 6)
        for got, expected in zip(G(x), f(x)):
            assert_same_layout(got, expected)
    assert stats()["fallbacks"] == {}
    assert stats()["captures"] == 2 and stats()["replays"] == 6  # two graphs, one signature each


# ---- C23: views of one tensor at several offsets ---------------------------------------------


def test_c23_timestep_views_at_offsets_capture_once():
    def f(x, t):
        return x * t

    G = compiled(f)
    timesteps = torch.linspace(999, 0, 8)  # `for t in scheduler.timesteps:` hands these views
    x = torch.randn(2, 3)
    for t in timesteps:
        torch.testing.assert_close(G(x, t), f(x, t))
    assert stats()["captures"] == 1 and stats()["replays"] == 8 and stats()["fallbacks"] == {}


def test_c23_static_inputs_keep_alignment_in_the_key():
    # A parameter is read where it is, so a re-created one at another alignment re-captures.
    layer = torch.nn.Linear(4, 4, bias=False)
    G = compiled(layer)
    x = torch.randn(2, 4)
    with torch.no_grad():
        G(x)
        storage = torch.empty(17)
        layer.weight = torch.nn.Parameter(
            storage[1:].view(4, 4).copy_(layer.weight), requires_grad=False
        )
        torch.testing.assert_close(G(x), x @ layer.weight.t())
    assert stats()["fallbacks"] == {}


# ---- C24: `self.n += 1` on a buffer ----------------------------------------------------------


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(()))
        self.scale = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        self.n += 1
        return x * self.scale * self.n


@pytest.mark.parametrize("options", ROUTES)
def test_c24_augmented_assignment_on_a_buffer_is_captured(options):
    model, eager = Counter(), Counter()
    buffer = model.n
    G = compiled(model, options)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(3)
            torch.testing.assert_close(G(x), eager(x))
    assert model.n is buffer  # updated in place, as eager does, once per call
    assert model.n.item() == eager.n.item() == 4
    assert stats()["fallbacks"] == {}
    assert stats()["captures"] == 1 and stats()["replays"] == 4


# ---- C25: calls under inference mode ---------------------------------------------------------


def test_c25_inference_mode_calls_use_the_compile_time_capture():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))
    G = compiled(model)
    x = torch.randn(2, 4)  # made outside inference mode, as pipelines' latents often are
    with torch.inference_mode():
        for _ in range(3):
            got = G(x)
            expected = model(x)
            torch.testing.assert_close(got, expected)
            assert got.is_inference()  # eager's outputs are inference tensors here
    assert stats()["captures"] == 1 and stats()["replays"] == 3 and stats()["fallbacks"] == {}
    with torch.no_grad():  # Dynamo compiles another graph for this mode: one capture for it
        torch.testing.assert_close(G(x), model(x))
    assert stats()["captures"] == sum(stats()["routes"].values()) == 2


# ---- C39: views of one storage that share no byte --------------------------------------------


def test_c39_disjoint_views_of_one_tensor_are_captured():
    def f(a, b, c):
        return a * 2 + b - c

    G = compiled(f)
    latents = torch.randn(3, 4, 5)
    for _ in range(3):
        latents.normal_()
        views = latents.unbind(0)  # a pipeline passing list(latents.unbind(0))
        torch.testing.assert_close(G(*views), f(*views))
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1 and stats()["replays"] == 3


def test_c39_overlapping_views_still_fall_back():
    def f(a, b):
        a.add_(1)
        return a + b

    G = compiled(f)
    base, base_eager = torch.zeros(6), torch.zeros(6)
    for _ in range(2):
        torch.testing.assert_close(G(base[:4], base[2:]), f(base_eager[:4], base_eager[2:]))
    torch.testing.assert_close(base, base_eager)
    assert stats()["fallbacks"] == {"aliased_inputs": 2}


# ---- C36: tensors marked with mark_static_address --------------------------------------------


def test_c36_marked_static_tensors_are_never_copied_and_written_once_per_call():
    def step(cache, calls, x, pos):
        cache.index_copy_(0, pos, x)  # a KV cache updated in place
        calls.add_(1)  # not idempotent: a second write per call would show
        return cache.sum(0)

    cache, calls = torch.zeros(64, 8), torch.zeros(())
    cache_eager, calls_eager = cache.clone(), calls.clone()
    torch._dynamo.mark_static_address(cache)
    torch._dynamo.mark_static_address(calls)
    G = compiled(step)
    for t in range(4):
        x, pos = torch.randn(1, 8), torch.tensor([t])
        torch.testing.assert_close(G(cache, calls, x, pos), step(cache_eager, calls_eager, x, pos))
    torch.testing.assert_close(cache, cache_eager)
    assert calls.item() == calls_eager.item() == 4
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1 and stats()["replays"] == 4
    # Only the new row and its position are copied, never the 2 KiB cache.
    assert stats()["bytes_copied"] == 4 * (8 * 4 + 8)


class CounterAndServingCache(torch.nn.Module):
    """A counter written first, then a buffer made under torch.inference_mode() (a KV cache
    allocated by serving code), which no capture can write (capture runs outside it)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(()))
        with torch.inference_mode():
            self.register_buffer("cache", torch.zeros(4))

    def forward(self, x):
        self.n.add_(1)
        self.cache.copy_(x)
        return self.cache * 2 + self.n


@pytest.mark.parametrize("warmup_iters", [0, 2])
def test_a_failed_warmup_puts_written_buffers_back(warmup_iters):
    # Warmup writes the counter for real and then fails on the cache: the counter's value is
    # put back, so the fallback call writes it once, as eager does.
    model, eager = CounterAndServingCache(), CounterAndServingCache()
    G = compiled(model, warmup_iters=warmup_iters)
    with torch.inference_mode():
        for k in range(3):
            x = torch.full((4,), float(k))
            torch.testing.assert_close(G(x), eager(x))
            torch.testing.assert_close(model.n, eager.n)
    assert fallbacks("capture_failed") == 3
