"""C27, C28 (tests/cases/README.md): inputs whose memory overlaps where the graph
writes one of them, dynamic with static or a buffer viewing another buffer, give eager's values
and leave the model's tensors as eager leaves them. Captured or fallen back, either is allowed; a
fallback is counted (``aliased_inputs``). And no stricter: views that do not overlap, or that
nothing writes, are captured."""

import pytest
import torch
from cases_helpers import GRAPH_ONLY, GRAPH_WITH_COMPILE, compiled, stats

CALLS = 3


def assert_each_call_replayed_or_counted(calls=CALLS):
    """Every call was served by a graph (a replay) or by a counted ``aliased_inputs`` fallback."""
    s = stats()
    assert set(s["fallbacks"]) <= {"aliased_inputs"}, s["fallbacks"]
    assert s["replays"] + s["fallbacks"].get("aliased_inputs", 0) == calls, s


# ---- C27: a written input aliases a lifted buffer --------------------------------------------


class WritesInputReadsBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.arange(4.0))

    def forward(self, view):
        view.add_(1)
        return self.buf.sum()


@pytest.mark.parametrize(
    "view",
    [
        pytest.param(lambda buf: buf[0], id="element"),
        pytest.param(lambda buf: buf[1:3], id="slice"),
        pytest.param(lambda buf: buf, id="whole"),
    ],
)
def test_c27_written_input_that_views_a_buffer(view):
    model, eager = WritesInputReadsBuffer(), WritesInputReadsBuffer()
    G = compiled(model)
    for _ in range(CALLS):
        torch.testing.assert_close(G(view(model.buf)), eager(view(eager.buf)))
    torch.testing.assert_close(model.buf, eager.buf)
    assert_each_call_replayed_or_counted()


class WritesInputReturnsBuffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.arange(6.0).view(2, 3))
        self.scale = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0]))

    def forward(self, row, x):
        row.mul_(2).add_(x)
        return self.buf * self.scale


def test_c27_written_input_views_a_buffer_module_with_parameters():
    model, eager = WritesInputReturnsBuffer(), WritesInputReturnsBuffer()
    G = compiled(model)
    with torch.no_grad():
        for k in range(CALLS):
            x = torch.full((3,), float(k + 1))
            torch.testing.assert_close(G(model.buf[1], x), eager(eager.buf[1], x))
    torch.testing.assert_close(model.buf, eager.buf)
    assert_each_call_replayed_or_counted()


# ---- C28: a buffer that views another buffer -------------------------------------------------


class KVCache(torch.nn.Module):
    def __init__(self, registered):
        super().__init__()
        self.register_buffer("kv", torch.arange(8.0).view(2, 4))
        if registered:
            self.register_buffer("k", self.kv[0])
        else:
            self.k = self.kv[0]

    def forward(self, x):
        self.k.mul_(0.5).add_(x)  # writes through k
        return self.kv * 2  # reads kv, which k views


@pytest.mark.parametrize(
    "registered, options",
    [
        pytest.param(True, GRAPH_ONLY, id="buffer-graph_only"),
        pytest.param(False, GRAPH_ONLY, id="attribute-graph_only"),
        pytest.param(
            True, GRAPH_WITH_COMPILE, id="buffer-graph_with_compile", marks=pytest.mark.inductor
        ),
    ],
)
def test_c28_buffer_that_views_another_buffer(registered, options):
    model, eager = KVCache(registered), KVCache(registered)
    G = compiled(model, options)
    for k in range(CALLS):
        x = torch.full((4,), float(k + 1))
        torch.testing.assert_close(G(x), eager(x))
    torch.testing.assert_close(model.kv, eager.kv)
    torch.testing.assert_close(model.k, eager.k)
    assert model.k.data_ptr() == model.kv.data_ptr()  # the view relation itself is kept
    # Module tensors are read and written in place, so the relation lives in the graph: replays.
    assert stats()["fallbacks"] == {} and stats()["replays"] == CALLS, stats()


class Accumulator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.arange(12.0).view(3, 4))

    def forward(self, row, x):
        row.add_(x)
        return self.acc.sum()


def test_c28_written_row_of_a_buffer_then_the_buffer_read():
    model, eager = Accumulator(), Accumulator()
    G = compiled(model)
    for k in range(CALLS):
        x = torch.full((4,), float(k + 1))
        torch.testing.assert_close(G(model.acc[1], x), eager(eager.acc[1], x))
    torch.testing.assert_close(model.acc, eager.acc)
    assert_each_call_replayed_or_counted()


# ---- no stricter: no overlap, or nothing written, is captured --------------------------------


def assert_captured_once(calls=CALLS):
    s = stats()
    assert s["fallbacks"] == {} and s["captures"] == 1 and s["replays"] == calls, s


def test_disjoint_views_of_one_storage_one_written_are_captured():
    def f(a, b):
        a.add_(1)
        return a * 2 + b

    G = compiled(f)
    base, base_eager = torch.arange(6.0), torch.arange(6.0)
    for _ in range(CALLS):
        torch.testing.assert_close(G(base[:3], base[3:]), f(base_eager[:3], base_eager[3:]))
    torch.testing.assert_close(base, base_eager)
    assert_captured_once()


def test_overlapping_views_that_nothing_writes_are_captured():
    def f(a, b):
        return a * b + 1

    G = compiled(f)
    base = torch.arange(6.0)
    for k in range(CALLS):
        base.add_(k)  # changed between calls by the caller: the graph must read it anew
        torch.testing.assert_close(G(base[:4], base[2:]), f(base[:4], base[2:]))
    assert_captured_once()


class DisjointBuffers(torch.nn.Module):
    """Two buffers that are disjoint rows of one storage; forward writes one, reads both."""

    def __init__(self):
        super().__init__()
        storage = torch.arange(8.0).view(2, 4)
        self.register_buffer("a", storage[0])
        self.register_buffer("b", storage[1])

    def forward(self, x):
        self.a.add_(x)
        return self.a + self.b


def test_disjoint_buffers_of_one_storage_one_written_are_captured():
    model, eager = DisjointBuffers(), DisjointBuffers()
    assert model.a.untyped_storage().data_ptr() == model.b.untyped_storage().data_ptr()
    G = compiled(model)
    for k in range(CALLS):
        x = torch.full((4,), float(k + 1))
        torch.testing.assert_close(G(x), eager(x))
    torch.testing.assert_close(model.a, eager.a)
    torch.testing.assert_close(model.b, eager.b)
    assert_captured_once()


class ReadsBufferRow(torch.nn.Module):
    """A buffer that is one row of a storage; the caller passes the other row, forward writes it."""

    def __init__(self):
        super().__init__()
        self.storage = torch.arange(8.0).view(2, 4)  # not a buffer: not a graph input
        self.register_buffer("bias", self.storage[1])

    def forward(self, row):
        row.add_(1)
        return row * self.bias


def test_written_input_disjoint_from_a_buffer_of_the_same_storage_is_captured():
    model, eager = ReadsBufferRow(), ReadsBufferRow()
    G = compiled(model)
    for _ in range(CALLS):
        torch.testing.assert_close(G(model.storage[0]), eager(eager.storage[0]))
    torch.testing.assert_close(model.storage, eager.storage)
    assert_captured_once()


def test_input_overlapping_a_buffer_that_nothing_writes_is_captured():
    model = WritesInputReadsBuffer()
    G = compiled(lambda view: view * 2 + model.buf.sum())
    for k in range(CALLS):
        model.buf.add_(k)  # the caller changes the buffer between calls
        view = model.buf[1:3]
        torch.testing.assert_close(G(view), view * 2 + model.buf.sum())
    assert_captured_once()
