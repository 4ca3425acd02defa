"""C30, C31, C37 (tests/cases/README.md): outputs as eager hands them out. Safe
mode keeps eager's aliasing between outputs and eager's strides; unsafe mode hands out fresh
tensor objects each call (the caller's metadata changes do not persist) and never lets the
copy-back of a mutated input overwrite an output of the same call."""

import pytest
import torch
from cases_helpers import GRAPH_ONLY, GRAPH_WITH_COMPILE, assert_same_layout, compiled, stats

SAFE_MODES = [pytest.param(True, id="safe"), pytest.param(False, id="unsafe")]


def _span(t):
    """The bytes a tensor's elements cover: [first, last)."""
    if t.numel() == 0:
        return (t.data_ptr(), t.data_ptr())
    last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    return (t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size())


def _same_storage(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def assert_same_sharing(got, expected, same_storage_objects=True):
    """Outputs lie in memory relative to one another as eager's do: where eager's share a storage,
    ours are the same distance apart (and, with ``same_storage_objects``, share one storage as
    well); where eager's do not, ours do not overlap."""
    for i in range(len(got)):
        for j in range(i + 1, len(got)):
            if _same_storage(expected[i], expected[j]):
                distance = got[j].data_ptr() - got[i].data_ptr()
                eager_distance = expected[j].data_ptr() - expected[i].data_ptr()
                assert distance == eager_distance, (
                    f"outputs {i} and {j}: {distance} bytes apart, eager {eager_distance}"
                )
                if same_storage_objects:
                    assert _same_storage(got[i], got[j]), (
                        f"outputs {i} and {j}: one storage in eager"
                    )
            else:
                (a0, a1), (b0, b1) = _span(got[i]), _span(got[j])
                assert a1 <= b0 or b1 <= a0, f"outputs {i} and {j} overlap; eager's are independent"


# ---- C30: an output fed back into a forward that mutates its input ---------------------------


def add_one_then_double(x):
    x.add_(1)
    return x * 2


@pytest.mark.parametrize("safe", SAFE_MODES)
def test_c30_output_fed_back_into_a_mutating_forward(safe):
    G = compiled(add_one_then_double, safe_output_mode=safe)
    y = G(torch.zeros(3))
    torch.testing.assert_close(y, torch.full((3,), 2.0))
    z = G(y)  # eager: y becomes [3, 3, 3], z is [6, 6, 6]
    torch.testing.assert_close(z, torch.full((3,), 6.0))
    # y is the caller's own tensor (unsafe: held, so copied away first): the write is eager's.
    torch.testing.assert_close(y, torch.full((3,), 3.0))
    w = G(torch.zeros(3))  # and the graph still serves ordinary inputs
    torch.testing.assert_close(w, torch.full((3,), 2.0))
    s = stats()
    assert s["replays"] + sum(s["fallbacks"].values()) == 3, s


def rnn_step(h, u):
    h.mul_(0.9).add_(u)  # the state is updated in place, and a new one returned
    return torch.tanh(h) * 1.5 + h * 0.25


@pytest.mark.parametrize("safe", SAFE_MODES)
def test_c30_recurrent_state_fed_back_each_step(safe):
    G = compiled(rnn_step, safe_output_mode=safe)
    torch.manual_seed(0)
    inputs = [torch.randn(5) for _ in range(4)]
    h, h_eager = torch.zeros(5), torch.zeros(5)
    for step, u in enumerate(inputs):
        h, h_eager = G(h, u), rnn_step(h_eager, u)
        torch.testing.assert_close(h, h_eager, msg=lambda m, step=step: f"step {step}: {m}")


# ---- C31: unsafe outputs are fresh tensor objects each call ----------------------------------


def square(x):
    return x @ x


def test_c31_unsafe_output_unsqueeze_does_not_change_the_next_output():
    G = compiled(square, safe_output_mode=False)
    x = torch.randn(4, 4)
    y = G(x)
    y.unsqueeze_(0)
    assert y.shape == (1, 4, 4)
    y2 = G(x)
    assert y2 is not y
    assert y2.shape == (4, 4) and y2.stride() == (4, 1)
    torch.testing.assert_close(y2, square(x))
    assert stats()["captures"] == 1 and stats()["replays"] == 2 and stats()["fallbacks"] == {}


@pytest.mark.parametrize(
    "size, grows", [((2, 3), False), ((16, 16), True)], ids=["smaller", "larger"]
)
def test_c31_unsafe_output_resize_then_next_call_works(size, grows):
    G = compiled(square, safe_output_mode=False)
    x = torch.randn(4, 4)
    y = G(x)
    if grows:
        # Growing would move the memory the graph writes: its storage is not resizable
        # (docs/usage.md, safe_output_mode=False).
        with pytest.raises(RuntimeError, match="not resizable"):
            y.resize_(size)
    else:  # shrinking stays within the storage: only the caller's object changes
        y.resize_(size)
        assert y.shape == size
    for _ in range(2):
        x = torch.randn(4, 4)
        y2 = G(x)
        assert y2.shape == (4, 4) and y2.stride() == (4, 1)
        torch.testing.assert_close(y2, square(x))


def test_c31_unsafe_output_requires_grad_does_not_leak():
    G = compiled(square, safe_output_mode=False)
    x = torch.randn(4, 4)
    y = G(x)
    assert not y.requires_grad
    y.requires_grad_()
    y2 = G(x)
    assert y2 is not y
    assert not y2.requires_grad and y2.grad_fn is None
    torch.testing.assert_close(y2, square(x))


def test_c31_unsafe_outputs_are_new_objects_over_the_static_storage():
    G = compiled(square, safe_output_mode=False)
    x1, x2 = torch.randn(4, 4), torch.randn(4, 4)
    y1 = G(x1)
    static = y1.data_ptr()
    del y1  # dropped before the next replay: nothing to copy away (C46)
    y2 = G(x2)
    assert y2.data_ptr() == static  # the documented unsafe contract: one static output
    y3 = G(x1)
    assert y3 is not y2 and y3.data_ptr() == static
    torch.testing.assert_close(y3, square(x1))
    torch.testing.assert_close(y2, square(x2))  # y2 was held: copied away, not overwritten


# ---- C37: outputs that view one another keep eager's aliasing and strides --------------------


def write_first_and_compare(G, fn, x, safe):
    """G(x) against fn(x): layouts and sharing as eager's; then a write to the first output
    reaches the others as in eager. Returns eager's outputs."""
    got, expected = G(x), fn(x)
    for g, e in zip(got, expected):
        assert_same_layout(g, e)
    assert_same_sharing(got, expected, same_storage_objects=safe)
    got[0].add_(100)
    expected[0].add_(100)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e)
    return expected


def tensor_and_views(x):
    y = x * 2 + 1  # computed, not an input
    return y, y[0], y.t()


@pytest.mark.parametrize("safe", SAFE_MODES)
def test_c37_outputs_viewing_one_tensor_see_each_others_writes(safe):
    G = compiled(tensor_and_views, safe_output_mode=safe)
    for _ in range(3):
        write_first_and_compare(G, tensor_and_views, torch.randn(3, 4), safe)
    assert stats()["fallbacks"] == {} and stats()["replays"] == 3


def test_c37_safe_outputs_held_across_calls_keep_their_aliasing():
    G = compiled(tensor_and_views)
    x1 = torch.randn(3, 4)
    first = G(x1)
    G(torch.randn(3, 4))  # a later replay never changes held safe outputs
    expected = tensor_and_views(x1)
    for g, e in zip(first, expected):
        assert_same_layout(g, e)
    assert_same_sharing(first, expected)
    first[2].mul_(-1)  # a write through the transposed view reaches the other two
    expected[2].mul_(-1)
    for g, e in zip(first, expected):
        torch.testing.assert_close(g, e)


def strided_views(x):
    y = x + 1  # (n, 12)
    return y[:, ::2], y[:, 1::2], y[1]


@pytest.mark.parametrize("safe", SAFE_MODES)
def test_c37_strided_view_outputs_keep_eager_strides(safe):
    G = compiled(strided_views, safe_output_mode=safe)
    for _ in range(3):
        # A write to the even columns: eager's row view sees half of it.
        expected = write_first_and_compare(G, strided_views, torch.randn(3, 12), safe)
        assert expected[0].stride() == (12, 2)
    assert stats()["fallbacks"] == {} and stats()["replays"] == 3


def independent(x):
    return x + 1, x * 2, (x @ x.t()).t()


@pytest.mark.parametrize(
    "options",
    [
        pytest.param(GRAPH_ONLY, id="graph_only"),
        pytest.param(GRAPH_WITH_COMPILE, id="graph_with_compile", marks=pytest.mark.inductor),
    ],
)
def test_c37_outputs_that_do_not_alias_stay_independent(options):
    G = compiled(independent, options)
    for _ in range(3):
        x = torch.randn(3, 3)
        got, expected = G(x), independent(x)
        for g, e in zip(got, expected):
            assert_same_layout(g, e)
        assert_same_sharing(got, expected)  # three storages, as eager
        got[0].add_(100)
        torch.testing.assert_close(got[1], expected[1])
        torch.testing.assert_close(got[2], expected[2])
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1 and stats()["replays"] == 3
