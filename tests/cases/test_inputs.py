"""C3-C9: inputs that share storage, change layout, are mutated, are scalars or None, live on
another device, or are new tensors every call."""

import numpy as np
import pytest
import torch
from cases_helpers import ROUTES, compiled, fallbacks, requires_cuda, runner, stats

# ---- C3: inputs that share storage ---------------------------------------------------------------


def add_scaled(a, b):
    return a * 2 + b


def add_after_update(a, b):
    a.add_(1)
    return a + b


def _same_twice(base):
    view = base[0:100]
    return view, view


VIEWS = {
    "disjoint": lambda base: (base[0:100], base[300:400]),
    "overlapping": lambda base: (base[0:100], base[50:150]),
    "same_tensor": _same_twice,
}


@pytest.mark.parametrize("fn", [add_scaled, add_after_update], ids=["pure", "mutating"])
@pytest.mark.parametrize("views", VIEWS.values(), ids=VIEWS.keys())
def test_c3_inputs_sharing_storage_match_eager(views, fn):
    G = compiled(fn)
    base = torch.randn(1000)
    eager_base = base.clone()
    for _ in range(3):
        got = G(*views(base))
        expected = fn(*views(eager_base))
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(base, eager_base)  # the aliasing effect of a.add_(1) included
        fresh = torch.randn(1000)
        base.copy_(fresh)
        eager_base.copy_(fresh)


OVERLAPPING = {k: v for k, v in VIEWS.items() if k != "disjoint"}


@pytest.mark.parametrize("fn", [add_scaled, add_after_update], ids=["pure", "mutating"])
def test_c3_runner_captures_disjoint_views_of_one_storage(fn):
    # No byte shared: each view is copied into its own buffer and copied back (case C39).
    r = runner(lambda a, b: (fn(a, b),), [False, False])
    base = torch.randn(1000)
    eager_base = base.clone()
    for _ in range(3):
        (got,) = r(*VIEWS["disjoint"](base))
        torch.testing.assert_close(got, fn(*VIEWS["disjoint"](eager_base)))
        torch.testing.assert_close(base, eager_base)
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1 and stats()["replays"] == 3


@pytest.mark.parametrize("fn", [add_scaled, add_after_update], ids=["pure", "mutating"])
@pytest.mark.parametrize("views", OVERLAPPING.values(), ids=OVERLAPPING.keys())
def test_c3_runner_falls_back_for_overlapping_inputs_and_never_captures_them(views, fn):
    r = runner(lambda a, b: (fn(a, b),), [False, False])
    base = torch.randn(1000)
    eager_base = base.clone()
    for _ in range(3):
        (got,) = r(*views(base))
        torch.testing.assert_close(got, fn(*views(eager_base)))
        torch.testing.assert_close(base, eager_base)
    assert fallbacks("aliased_inputs") == 3
    assert stats()["captures"] == 0
    # Unrelated tensors of the same shapes still capture: the aliasing is part of the key.
    a, b = torch.randn(100), torch.randn(100)
    expected_a = a.clone()
    (got,) = r(a, b)
    torch.testing.assert_close(got, fn(expected_a, b))
    assert stats()["captures"] == 1


# ---- C4: same shape, different layout ------------------------------------------------------------


def scale_shift(x):
    return x * 2 + 1


def _layouts():
    big = torch.randn(128, 32)
    flat = torch.randn(64 * 32 + 1)
    return {
        "contiguous": torch.randn(64, 32),
        "transposed": torch.randn(32, 64).t(),
        "strided_rows": big[::2],
        "offset_one": flat[1:].view(64, 32),
    }


def test_c4_layout_change_never_replays_another_layouts_graph():
    r = runner(lambda x: (scale_shift(x),), [False])
    layouts = _layouts()
    for _ in range(2):
        for x in layouts.values():
            (got,) = r(x)
            torch.testing.assert_close(got, scale_shift(x))
            x.normal_()  # new values, same layout
    # offset_one is copied into a fresh buffer with contiguous's strides: its offset changes no
    # kernel, so it replays contiguous's graph (C23); the three stride layouts get their own.
    assert r.num_entries == len(layouts) - 1
    assert stats()["captures"] == len(layouts) - 1
    assert stats()["cache_hits"] == len(layouts) + 1


def test_c4_layouts_through_dynamo():
    G = compiled(scale_shift)
    for _ in range(2):
        for x in _layouts().values():
            torch.testing.assert_close(G(x), scale_shift(x))
    assert stats()["replays"] == 8


# ---- C5: an in-place update of an input ----------------------------------------------------------


def update_then_multiply(x, y):
    x.add_(1)
    return x * y


@pytest.mark.parametrize("lazy_capture", [False, True], ids=["capture_at_compile", "lazy"])
@pytest.mark.parametrize("options", ROUTES)
def test_c5_each_call_applies_the_update_exactly_once(options, lazy_capture):
    G = compiled(update_then_multiply, options, lazy_capture=lazy_capture)
    x0, x_eager = torch.zeros(8), torch.zeros(8)
    y = torch.arange(8.0)
    for _ in range(3):
        torch.testing.assert_close(G(x0, y), update_then_multiply(x_eager, y))
    torch.testing.assert_close(x0, torch.full((8,), 3.0))
    assert stats()["captures"] == 1


def test_c5_runner_applies_updates_once_including_the_capturing_call():
    r = runner(lambda x, y: (update_then_multiply(x, y),), [False, False], warmup_iters=3)
    x0, y = torch.zeros(8), torch.arange(8.0)
    for k in range(1, 4):
        (out,) = r(x0, y)
        torch.testing.assert_close(x0, torch.full((8,), float(k)))
        torch.testing.assert_close(out, k * y)


def test_c5_update_that_leaves_the_version_counter_alone_is_not_lost():
    # batch_norm writes its running stats without bumping their version counter.
    def norm(x, running_mean, running_var):
        return (torch.nn.functional.batch_norm(x, running_mean, running_var, training=True),)

    G = compiled(lambda x, m, v: norm(x, m, v)[0])
    mean, var = torch.zeros(4), torch.ones(4)
    eager_mean, eager_var = mean.clone(), var.clone()
    for _ in range(3):
        x = torch.randn(8, 4)
        torch.testing.assert_close(G(x, mean, var), norm(x, eager_mean, eager_var)[0])
    torch.testing.assert_close(mean, eager_mean)
    torch.testing.assert_close(var, eager_var)


# ---- C6: scalars and None as inputs --------------------------------------------------------------


def times(x, t):
    return x * t


@pytest.mark.parametrize(
    "values",
    [
        [torch.tensor(1.0), torch.tensor(2.0), torch.tensor(3.0)],
        [1.0, 2.0, 3.0],
        [np.float32(1.0), np.float32(2.0), np.float32(3.0)],
        [1, 2, 3],
    ],
    ids=["0d_tensor", "float", "numpy_float32", "int"],
)
def test_c6_each_call_uses_the_current_scalar(values):
    G = compiled(times)
    x = torch.randn(16)
    for t in values:
        torch.testing.assert_close(G(x, t), times(x, t))


def test_c6_changing_0d_tensor_in_place_is_seen():
    G = compiled(times)
    x, t = torch.randn(16), torch.tensor(1.0)
    for value in (1.0, 2.0, 3.0):
        t.fill_(value)
        torch.testing.assert_close(G(x, t), x * value)


def test_c6_none_arguments():
    def masked(x, mask=None, bias=None):
        out = x * 2
        if mask is not None:
            out = out * mask
        return out if bias is None else out + bias

    G = compiled(masked)
    x, mask = torch.randn(4, 4), torch.ones(4, 4)
    torch.testing.assert_close(G(x), masked(x))
    torch.testing.assert_close(G(x, None, None), masked(x))
    torch.testing.assert_close(G(x, mask), masked(x, mask))
    # None as a graph argument reaches the runner itself: it is part of the key.
    r = runner(lambda x, m: (masked(x, m),), [False, False])
    for m in (None, mask, None):
        torch.testing.assert_close(r(x, m)[0], masked(x, m))
    assert r.num_entries == 2


# ---- C7: a float argument baked in ---------------------------------------------------------------


def rms_norm(x, s):
    eps = s * 1e-2
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * s


@pytest.mark.parametrize("fn", [times, rms_norm], ids=["scale", "rms_norm_eps"])
def test_c7_every_float_gets_its_own_result(fn):
    G = compiled(fn)
    x = torch.randn(4, 8) * 0.1
    for s in (0.5, 1.5, 2.5, 0.5):
        torch.testing.assert_close(G(x, s), fn(x, s))


@pytest.mark.parametrize(
    "values",
    [(0.5, 1.5, 2.5, 0.5), (2, 3, 4, 2), (True, False, True, True)],
    ids=["float", "int", "bool"],
)
def test_c7_runner_keys_on_the_value(values):
    def fn(x, s):
        return (rms_norm(x, float(s)),)

    r = runner(fn, [False, False])
    x = torch.randn(4, 8) * 0.1
    for s in values:
        torch.testing.assert_close(r(x, s)[0], fn(x, s)[0])
    assert r.num_entries == len(set(values))
    assert stats()["cache_hits"] == len(values) - len(set(values))


# ---- C8: inputs on another device than the current one -------------------------------------------


@pytest.mark.device
@requires_cuda
def test_c8_device_then_cpu_inputs_of_equal_shape():
    G = compiled(scale_shift, {"graph_only": True, "device_graph": "cuda"})
    x = torch.randn(64, 32, device="cuda")
    out = G(x)
    assert out.device == x.device
    torch.testing.assert_close(out, scale_shift(x))
    x_cpu = torch.randn(64, 32)
    out_cpu = G(x_cpu)
    assert out_cpu.device.type == "cpu"
    torch.testing.assert_close(out_cpu, scale_shift(x_cpu))


@pytest.mark.device
@requires_cuda
def test_c8_mixed_devices_fall_back():
    r = runner(lambda x, y: (x + y,), [False, False], kind="cuda")
    x, y = torch.randn(8, device="cuda"), torch.randn(8)
    torch.testing.assert_close(r(x, y)[0], x + y.cuda())
    assert fallbacks("mixed_devices") == 1


@pytest.mark.device
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_c8_inputs_on_device_1_while_device_0_is_current():
    G = compiled(scale_shift, {"graph_only": True, "device_graph": "cuda"})
    torch.cuda.set_device(0)
    x = torch.randn(64, 32, device="cuda:1")
    for _ in range(3):
        out = G(x)
        assert out.device == x.device
        torch.testing.assert_close(out, scale_shift(x))
        x.normal_()
    assert stats()["captures"] == 1


# ---- C9: a new tensor every call -----------------------------------------------------------------


def test_c9_fresh_input_every_call():
    G = compiled(lambda x: x * 3)
    for _ in range(5):
        x = torch.randn(32)
        torch.testing.assert_close(G(x), 3 * x)
    assert stats()["captures"] == 1 and stats()["replays"] == 5


def test_c9_moved_parameter_is_noticed_on_every_call():
    lin = torch.nn.Linear(8, 8)
    G = compiled(lin)
    x = torch.randn(2, 8)
    with torch.no_grad():
        torch.testing.assert_close(G(x), lin(x))
        lin.weight.data = torch.randn(8, 8)  # same Parameter object, new memory
        torch.testing.assert_close(G(x), lin(x))
        torch.testing.assert_close(G(x), lin(x))


def test_c9_runner_captures_again_when_a_static_input_moves():
    r = runner(lambda x, w: (x @ w,), [False, True])
    x = torch.randn(2, 8)
    w1, w2 = torch.randn(8, 8), torch.randn(8, 8)
    torch.testing.assert_close(r(x, w1)[0], x @ w1)
    torch.testing.assert_close(r(x, w2)[0], x @ w2)
    torch.testing.assert_close(r(x, w2)[0], x @ w2)
    # The addresses are part of the key: w2 is an entry of its own, w1's is kept (case C41).
    assert stats()["captures"] == 2 and stats()["replays"] == 3 and r.num_entries == 2
    w2.mul_(2)  # in place: same memory, the graph reads the new values
    torch.testing.assert_close(r(x, w2)[0], x @ w2)
