"""Fifth round (C81–C94): never a wrong value, never stuck, never growing. Each kind against
eager PyTorch: values, ``requires_grad``, exceptions, and the caller's tensors after one; on both
graphs a CPU has (the ``graph_kind`` fixture: the emulated graph and the CPU graph), and on
``graph_with_compile``'s cpp_wrapper graph where the kind applies (marked ``inductor``)."""

from __future__ import annotations

import contextlib

import pytest
import torch
from cases_helpers import GRAPH_ONLY, compiled, fallbacks, runner, stats

import graphdispatch

CPP_WRAPPER = {"graph_with_compile": True, "device_graph": "cpp_wrapper"}


@contextlib.contextmanager
def deterministic(fill: bool = True):
    was, was_fill = (
        torch.are_deterministic_algorithms_enabled(),
        torch.utils.deterministic.fill_uninitialized_memory,
    )
    torch.use_deterministic_algorithms(True)
    torch.utils.deterministic.fill_uninitialized_memory = fill
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)
        torch.utils.deterministic.fill_uninitialized_memory = was_fill


def assert_eager(got, expected, exact=True):
    """Values (NaN equal to NaN; to the bit unless ``exact`` is off, for Inductor's fused
    arithmetic), dtype and the autograd flags of each output."""
    got, expected = (
        (got,) if isinstance(got, torch.Tensor) else got,
        ((expected,) if isinstance(expected, torch.Tensor) else expected),
    )
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        tolerance = {"rtol": 0, "atol": 0} if exact else {}
        torch.testing.assert_close(g, e, equal_nan=True, **tolerance)
        assert g.requires_grad == e.requires_grad
        assert (g.grad_fn is None) == (e.grad_fn is None)
        assert g.is_inference() == e.is_inference()


# ---- C82: deterministic mode's fill --------------------------------------------------------


def tail_left_unwritten(x):
    # `empty` under deterministic mode holds NaN (an integer type: its largest value); the graph
    # writes the head only, and later ops reuse the workspace the buffer lived in.
    buf = x.new_empty(x.shape[0] + 3)
    buf[: x.shape[0]] = x
    y = buf * 2
    return (y + 1) * 3, buf.sum()


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_c82_deterministic_fill_replays_eagers_values(dtype):
    """Every replay under torch.use_deterministic_algorithms(True) holds eager's fill where the
    graph writes nothing, whatever other entries left in the shared workspace; the entry of
    another mode is never used (case C82)."""
    r = runner(lambda x: tail_left_unwritten(x), [False])
    G = compiled(tail_left_unwritten)
    for _ in range(3):
        for n in (4, 9):  # two entries sharing the workspace, alternating
            x = torch.arange(n, dtype=dtype)
            with deterministic():
                expected = tail_left_unwritten(x)
                assert_eager(r(x), expected)
                assert_eager(G(x), expected)
            # Off: eager leaves the tail as it finds it; only the head is compared.
            head = r(x)[0][:n]
            assert torch.equal(head, tail_left_unwritten(x)[0][:n])
    assert stats()["replays"] > 0
    assert sum(stats()["fallbacks"].values()) == 0


def test_c82_fill_off_is_another_entry():
    """With fill_uninitialized_memory off, deterministic mode leaves `empty` as it is; the two
    settings never share an entry (case C82)."""
    r = runner(lambda x: tail_left_unwritten(x), [False])
    x = torch.randn(5)
    with deterministic(fill=True):
        assert torch.isnan(r(x)[0][5:]).all()
    with deterministic(fill=False):
        r(x)
    with deterministic(fill=True):
        assert torch.isnan(r(x)[0][5:]).all()
    assert r.num_entries == 2


# ---- C83: autograd inside a no-grad call -------------------------------------------------------

WEIGHT = torch.nn.Parameter(torch.randn(4))


def grad_region(x):
    y = x * 2
    with torch.enable_grad():
        z = y * WEIGHT
    return z + 1, z


def guidance(x):
    # Gradient guidance: differentiate inside the forward (Dynamo breaks the graph at grad()).
    with torch.enable_grad():
        x = x.detach().requires_grad_(True)
        energy = (x * x * WEIGHT).sum()
        (g,) = torch.autograd.grad(energy, x)
    return x.detach() - 0.1 * g


def no_region_under_no_grad(x):
    with torch.enable_grad():
        y = x * 2  # nothing requires grad: no history to build, the graph may replay
    return y + 1


@pytest.mark.parametrize("fn", [grad_region, guidance], ids=["outputs", "autograd_grad"])
def test_c83_enable_grad_region_under_no_grad_gives_eagers_autograd(fn):
    """A graph that turns grad mode on and builds autograd history, called under no_grad,
    returns eager's outputs with eager's requires_grad and grad_fn, and torch.autograd.grad
    inside the region works: the graph falls back, counted (case C83)."""
    G = compiled(fn)
    for _ in range(3):
        x = torch.randn(4)
        with torch.no_grad():
            expected = fn(x)
            got = G(x)
        assert_eager(got, expected)
    if fn is grad_region:
        (w_grad,) = torch.autograd.grad(got[1].sum(), WEIGHT)
        torch.testing.assert_close(w_grad, 2 * x)
    assert fallbacks("autograd_region") == 3


def test_c83_enable_grad_region_without_history_still_replays():
    G = compiled(no_region_under_no_grad)
    for _ in range(3):
        x = torch.randn(4)
        with torch.no_grad():
            assert_eager(G(x), no_region_under_no_grad(x))
    assert sum(stats()["fallbacks"].values()) == 0
    assert stats()["replays"] == 3


# ---- C84: inference mode inside the graph ------------------------------------------------------


def inference_region(x):
    with torch.inference_mode():
        y = x * 2
    return y + 1, x.sin()


@pytest.mark.parametrize("outer", ["no_grad", "grad"])
def test_c84_inference_mode_region_gives_eagers_tensors(outer):
    """A graph that enters torch.inference_mode() returns eager's values and inference tensors
    on every call, never "Inplace update to inference tensor outside InferenceMode" (case
    C84)."""
    G = compiled(inference_region)
    mode = torch.no_grad if outer == "no_grad" else contextlib.nullcontext
    for _ in range(3):
        x = torch.randn(4)
        with mode():
            expected = inference_region(x)
            got = G(x)
        assert_eager(got, expected)
    assert fallbacks("autograd_region") == 3


# ---- C81: a replay that raises -----------------------------------------------------------------


def add_then_index(x, idx):
    x.add_(1)
    return (torch.index_select(x, 0, idx) * 2,)


def add_then_inverse(a, m):
    a.mul_(3)
    return (torch.linalg.inv(m) + a.sum(),)


@pytest.mark.parametrize("via", ["runner", "dynamo"])
def test_c81_a_replay_that_raises_leaves_the_callers_tensors_as_eager(via):
    """After a replay raises for this call's values (an index out of range, a singular
    matrix), the caller's tensors hold what eager's in-place writes before the raising op left
    (case C81)."""
    fns = [add_then_index, add_then_inverse]
    calls = (
        [runner(f, [False, False]) for f in fns] if via == "runner" else list(map(compiled, fns))
    )
    good = [
        lambda: (torch.randn(5), torch.tensor([0, 4])),
        lambda: (torch.randn(3), torch.randn(4, 4) + 4 * torch.eye(4)),
    ]
    bad = [
        lambda: (torch.randn(5), torch.tensor([0, 7])),
        lambda: (torch.randn(3), torch.ones(4, 4)),
    ]
    for fn, call, make_good, make_bad in zip(fns, calls, good, bad):
        for _ in range(2):  # capture and replay with good values
            args = make_good()
            mine = [a.clone() for a in args]
            torch.testing.assert_close(call(*mine)[0], fn(*args)[0])
            torch.testing.assert_close(mine[0], args[0])
        args = make_bad()
        mine = [a.clone() for a in args]
        with pytest.raises(Exception) as eager_error:
            fn(*args)
        with pytest.raises(type(eager_error.value)):
            call(*mine)
        torch.testing.assert_close(mine[0], args[0], rtol=0, atol=0)
        # And the graph goes on: a good call replays.
        args = make_good()
        mine = [a.clone() for a in args]
        replays = stats()["replays"]
        torch.testing.assert_close(call(*mine)[0], fn(*args)[0])
        torch.testing.assert_close(mine[0], args[0])
        assert stats()["replays"] == replays + 1


# ---- C86: one bad request must not disable a shape ---------------------------------------------


def gather_rows(table, ids):
    return (torch.nn.functional.embedding(ids, table) * 2,)


def test_c86_a_bad_first_request_costs_one_call_not_the_shape():
    """The call that captures raises for its values (a token id out of range): it raises as
    eager does, nothing is cached, and the next valid call of that shape captures and replays
    (case C86)."""
    table = torch.randn(10, 3)
    r = runner(gather_rows, [False, False])
    bad = torch.tensor([1, 12])
    with pytest.raises(IndexError):
        gather_rows(table, bad)
    with pytest.raises(IndexError):
        r(table, bad)
    assert r.entry_reason(table, bad) is None  # not the signature's verdict
    for _ in range(3):
        ids = torch.randint(0, 10, (2,))
        torch.testing.assert_close(r(table, ids)[0], gather_rows(table, ids)[0])
    assert stats()["captures"] == 1
    assert stats()["replays"] == 3
    assert fallbacks("capture_failed") == 1  # the bad call, which raised as eager


def test_c86_through_dynamo_the_compile_time_capture_is_settled_by_the_call():
    table = torch.randn(10, 3)
    G = compiled(gather_rows)
    with pytest.raises(IndexError):
        G(table, torch.tensor([1, 12]))  # captured at compile time, failed, raised
    for _ in range(3):
        ids = torch.randint(0, 10, (2,))
        torch.testing.assert_close(G(table, ids)[0], gather_rows(table, ids)[0])
    assert stats()["replays"] == 3


def test_c86_failing_calls_are_bounded_then_said_once(caplog):
    """A signature whose every call raises tries to capture on at most 3 calls, then falls back
    for good, said once (case C86)."""
    table = torch.randn(10, 3)
    r = runner(gather_rows, [False, False], log=lambda m: caplog_lines.append(m))
    caplog_lines: list[str] = []
    bad = torch.tensor([1, 12])
    for _ in range(5):
        with pytest.raises(IndexError):
            r(table, bad)
    assert r.entry_reason(table, bad)[0] == "capture_failed"
    assert fallbacks("capture_failed") == 5
    said = [m for m in caplog_lines if "capture failed on 3 calls" in m]
    assert len(said) == 1
    # The signature's valid calls are served without a graph now, right.
    ids = torch.tensor([0, 9])
    torch.testing.assert_close(r(table, ids)[0], gather_rows(table, ids)[0])
    assert stats()["captures"] == 0


def test_c86_a_failure_of_the_signature_is_still_cached_at_once():
    """A capture that fails while eager succeeds (an op the CPU graph refuses) is the
    signature's: cached at once, never retried (case C11 holds)."""
    from graphdispatch import _C

    attempts = []

    def refuses(x):
        if _C._testing.emulated_capturing() or _C._testing.cpu_graph_capturing():
            attempts.append(1)
            raise RuntimeError("not while capturing")
        return x + 1

    r = runner(lambda x: (refuses(x),), [False])
    for _ in range(4):
        x = torch.randn(3)
        torch.testing.assert_close(r(x)[0], x + 1)
    assert len(attempts) == 1
    assert fallbacks("capture_failed") == 4


# ---- C85: nested tensors -----------------------------------------------------------------------


def test_c85_nested_jagged_tensors_fall_back_with_a_named_reason():
    """A jagged nested tensor argument runs without a graph, counted as unsupported_tensor,
    with eager's values, never a TypeError (case C85)."""

    def fn(nt):
        return nt.sin() * 2 + 1

    G = compiled(fn)
    for lengths in ((2, 3), (2, 3), (4, 1)):
        nt = torch.nested.nested_tensor([torch.randn(n, 4) for n in lengths], layout=torch.jagged)
        got, expected = G(nt), fn(nt)
        for g, e in zip(got.unbind(), expected.unbind()):
            torch.testing.assert_close(g, e)
    assert fallbacks("unsupported_tensor") >= 3
    assert stats()["replays"] == 0


# ---- the cpp_wrapper graph (graph_with_compile) ------------------------------------------------


@pytest.mark.inductor
def test_c82_to_c84_on_graph_with_compile():
    """The kinds above that apply to Inductor's graph: the deterministic fill (Inductor's own
    code runs on every direct call), an enable_grad region under no_grad and an inference_mode
    region give Inductor-alone's values and eager's autograd flags (cases C82-C84)."""
    G = compiled(tail_left_unwritten, CPP_WRAPPER)
    for n in (4, 9, 4):
        x = torch.randn(n)
        with deterministic():
            assert_eager(G(x), tail_left_unwritten(x), exact=False)
    G = compiled(grad_region, CPP_WRAPPER)
    x = torch.randn(4)
    with torch.no_grad():
        expected, got = grad_region(x), G(x)
    torch.testing.assert_close(got, expected)
    assert [t.requires_grad for t in got] == [t.requires_grad for t in expected]
    G = compiled(inference_region, CPP_WRAPPER)
    for _ in range(2):
        x = torch.randn(4)
        assert_eager(G(x), inference_region(x), exact=False)


# ---- C87: the shared workspace holds the largest need --------------------------------------

W1, W2 = torch.randn(32, 128), torch.randn(128, 32)


def mlp(x, w1, w2):
    h = (x @ w1).relu()
    return ((h @ w2).sin() * 2 + x,)


@pytest.mark.parametrize("order", ["smallest_first", "largest_first", "shuffled"])
def test_c87_workspace_holds_the_largest_need_whatever_the_capture_order(graph_kind, order):
    """Entries captured in any order leave the CPU graphs' shared workspace at the largest need
    of the programs alive (within 10 %), not the sum; every entry still replays eager's values,
    and after the largest entry goes the workspace shrinks to the new largest (case C87)."""
    if graph_kind != "cpu":
        pytest.skip("the shared workspace is the CPU graph's")
    import gc

    graphdispatch.reset()
    gc.collect()
    sizes = [16, 64, 256, 1024, 8, 32, 128, 512]
    sizes = {
        "smallest_first": sorted(sizes),
        "largest_first": sorted(sizes, reverse=True),
        "shuffled": sizes,
    }[order]
    r = runner(mlp, [False, True, True])
    for n in sizes:
        x = torch.randn(n, 32)
        assert torch.equal(r(x, W1, W2)[0], mlp(x, W1, W2)[0])
    needs = [e["shared_bytes"] for e in r.entries()]
    assert len(needs) == len(sizes) and min(needs) > 0
    assert max(needs) <= stats()["workspace_bytes"] <= 1.1 * max(needs)
    for n in sizes:  # every entry replays, in another order than it was captured
        x = torch.randn(n, 32)
        assert torch.equal(r(x, W1, W2)[0], mlp(x, W1, W2)[0])
    assert stats()["workspace_bytes"] <= 1.1 * max(needs)
    assert stats()["replays"] == 2 * len(sizes)
    r2 = runner(mlp, [False, True, True])
    x = torch.randn(4, 32)
    assert torch.equal(r2(x, W1, W2)[0], mlp(x, W1, W2)[0])
    r.clear()
    (small,) = [e["shared_bytes"] for e in r2.entries()]
    assert small <= stats()["workspace_bytes"] <= 1.1 * small
    assert torch.equal(r2(x, W1, W2)[0], mlp(x, W1, W2)[0])


# ---- C88: a view attribute at a moving offset --------------------------------------------------


class RingWindow(torch.nn.Module):
    """A window attribute taken of a live buffer at a new offset every call (a KV-cache
    window), read and written by the forward."""

    def __init__(self, write: bool):
        super().__init__()
        self.write = write
        self.register_buffer("cache", torch.arange(64 * 8, dtype=torch.float32).view(64, 8))
        self.window = self.cache[0:1]

    def forward(self, x):
        if self.write:
            self.window.mul_(2)
        return (x * self.window + 1).sum(-1)


@pytest.mark.parametrize("write", [False, True], ids=["read", "written"])
def test_c88_a_view_at_a_moving_offset_makes_a_bounded_number_of_entries(write):
    """A static input that moves within a live buffer every call captures at most
    max_recaptures + 1 times, then is copied as an argument: entries stay bounded and every call
    gives eager's values and eager's writes to the buffer (case C88)."""
    mine, eager = RingWindow(write), RingWindow(write)
    G = compiled(mine, max_recaptures=3)
    for t in range(30):
        mine.window, eager.window = mine.cache[t : t + 1], eager.cache[t : t + 1]
        x = torch.randn(4, 8)
        with torch.no_grad():
            got, expected = G(x), eager(x)
        torch.testing.assert_close(got, expected)
        assert torch.equal(mine.cache, eager.cache)
    assert stats()["captures"] <= 3 + 2
    assert stats()["entries"] <= 2
    assert stats()["replays"] >= 30 - 5 - fallbacks("aliased_inputs")


# ---- C89: numbers that change every call -------------------------------------------------------


def guided(x, scale: float):
    return (x * scale + (x * (1 - scale)).sin(),)


@pytest.mark.inductor
def test_c89_cpp_wrapper_reads_a_changing_number_at_replay():
    """Under dynamic=True a guidance scale that changes every call reaches Inductor's entry as
    a tensor it reads when it runs: one capture for every value, each call replaying with its
    own value, and a value seen before never captures again (case C89)."""
    G = torch.compile(guided, backend="graphdispatch", options=CPP_WRAPPER, dynamic=True)
    x = torch.randn(16)
    for scale in (1.0, 0.5, 1.0, 7.25, 3.5, 0.5, 1.0, 2.0, 9.0, 1.5):
        torch.testing.assert_close(G(x, scale)[0], guided(x, scale)[0])
    runners = stats()
    assert runners["fallbacks"] == {}
    assert runners["captures"] <= 2  # the first value (specialised) and the dynamic graph
    assert runners["entries"] <= 2


def cfg(uncond, text, scale: float):
    # Classifier-free guidance, and the same scale through float arithmetic and on either side.
    shift = (1 - scale) * 0.5
    return (uncond + scale * (text - uncond), text * shift - scale, shift - uncond, text / scale)


def numbers_warned(caplog):
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "graphdispatch" and "each value is captured as its own entry" in r.getMessage()
    ]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.complex64])
def test_c89_the_cpu_graph_reads_a_changing_number_at_replay(graph_kind, dtype, caplog):
    """A guidance scale that changes on every call, under dynamic=True: the CPU graph reads it
    at replay, one entry for every value, eager's bytes each call (the scale unrounded beside
    float16, as eager's kernels read it); the emulated graph, standing for a device graph that
    cannot, keys each value, bounded at 64 entries with one warning naming the input, later
    values running without a graph (case C89)."""
    G = torch.compile(cfg, backend="graphdispatch", options=GRAPH_ONLY, dynamic=True)
    calls = 72 if graph_kind == "emulated" else 40
    for k in range(calls):
        uncond, text = torch.randn(2, 8, dtype=dtype), torch.randn(2, 8, dtype=dtype)
        scale = 1.0 + k / 7
        assert_eager(G(uncond, text, scale), cfg(uncond, text, scale))
    again = torch.randn(2, 8, dtype=dtype), torch.randn(2, 8, dtype=dtype)
    before = stats()
    assert_eager(G(*again, 1.0), cfg(*again, 1.0))  # a value seen before
    after = stats()
    assert after["captures"] == before["captures"]
    if graph_kind == "cpu":
        assert after["fallbacks"] == {}
        assert after["entries"] == 1 and after["captures"] == 1
        assert numbers_warned(caplog) == []
    else:
        assert after["entries"] == 64
        assert fallbacks("number_values") == calls - 64
        (warning,) = numbers_warned(caplog)
        assert "scale" in warning


def two_scales(x, guidance: float, rescale: float):
    return (x * (guidance * rescale) + rescale, (guidance - rescale) * x)


def test_c89_numbers_computed_with_one_another_are_read_at_replay(graph_kind):
    """Two dynamic floats multiplied together before they scale a tensor: the CPU graph reads
    both at replay (one entry), eager's bytes on new inputs every call (case C89)."""
    G = torch.compile(two_scales, backend="graphdispatch", options=GRAPH_ONLY, dynamic=True)
    for k in range(12):
        x = torch.randn(6)
        assert_eager(G(x, 1.0 + k / 3, 0.7 - k / 11), two_scales(x, 1.0 + k / 3, 0.7 - k / 11))
    assert stats()["entries"] == (1 if graph_kind == "cpu" else 12)


def controlnet_scale(x, scale: float):
    return (x * scale,)


def test_c89_a_value_seen_before_never_captures_again_on_the_cpu_graph(graph_kind):
    """ControlNet's conditioning scale 1.0, then 0.5, then 1.0: Dynamo serves the third call
    with the graph it made dynamic at the second, which never saw 1.0; the CPU graph reads the
    value, so nothing captures (case C89). The emulated graph keys it: one more capture."""
    G = compiled(controlnet_scale)
    for scale in (1.0, 0.5, 1.0, 0.5, 1.0):
        x = torch.randn(5)
        before = stats()["captures"]
        assert_eager(G(x, scale), controlnet_scale(x, scale))
    assert stats()["captures"] == (2 if graph_kind == "cpu" else 3)
    assert stats()["captures"] == before


def outside_arithmetic(x, scale: float):
    # Uses a replay cannot read: a fill value, a reciprocal and an integer tensor's promotion.
    return (torch.full_like(x, scale) + x, scale / x, torch.arange(4) * scale)


def test_c89_a_number_the_graph_cannot_read_is_keyed_and_bounded(graph_kind, caplog):
    """A dynamic float the CPU graph cannot take as a tensor (a fill value, ``n / x``, an
    integer tensor times it) stays keyed on both graphs, bounded at 64 entries, one warning
    naming it; every value is eager's (case C89)."""
    G = torch.compile(outside_arithmetic, backend="graphdispatch", options=GRAPH_ONLY, dynamic=True)
    for k in range(70):
        x = torch.randn(4) + 3
        scale = 0.25 + k / 16
        assert_eager(G(x, scale), outside_arithmetic(x, scale))
    assert stats()["entries"] == 64
    assert fallbacks("number_values") == 70 - 64
    (warning,) = numbers_warned(caplog)
    assert "scale" in warning


# ---- C90: tensor subclasses on graph_with_compile ---------------------------------------------


class TwoTensorLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        from torch.testing._internal.two_tensor import TwoTensor

        weight = TwoTensor(torch.randn(4, 4), torch.randn(4, 4))
        self.weight = torch.nn.Parameter(weight, requires_grad=False)

    def forward(self, x, bias):
        return ((x @ self.weight).relu() + bias, bias * 2)


def assert_two_tensors(got, expected):
    assert type(got) is type(expected)
    for attr in ("a", "b"):
        torch.testing.assert_close(getattr(got, attr), getattr(expected, attr))


@pytest.mark.inductor
def test_c90_tensor_subclasses_go_through_the_runner_to_inductor():
    """A TwoTensor weight and a TwoTensor argument on graph_with_compile: each reaches the runner
    as its inner tensors (the weight's read in place), Inductor's C++ entry is called directly
    (for the static-shape graph), and each call gives eager's TwoTensors on new inputs, shapes
    that change included, with no fallback (case C90)."""
    from torch.testing._internal.two_tensor import TwoTensor

    from graphdispatch._backend import _RUNNERS

    model = TwoTensorLinear()
    G = torch.compile(model, backend="graphdispatch", options=CPP_WRAPPER)
    with torch.no_grad():
        for rows in (2, 2, 3, 2, 3):
            x = torch.randn(rows, 4)
            bias = TwoTensor(torch.randn(4), torch.randn(4))
            got, expected = G(x, bias), model(x, bias)
            for g, e in zip(got, expected):
                assert_two_tensors(g, e)
    assert stats()["fallbacks"] == {}
    graphs = [e["graph"] for r in _RUNNERS for e in r.entries()]
    assert stats()["replays"] == 5 and len(graphs) == stats()["captures"] <= 3, graphs
    # The static-shape graph calls the entry directly; the one Dynamo recompiles with dynamic
    # sizes returns them too, and says so (case C92).
    assert any(g.startswith("calls Inductor's C++ entry directly") for g in graphs), graphs


def doubled_in_place(x):
    x.mul_(2)
    return (x + 1,)


@pytest.mark.inductor
def test_c90_a_subclass_argument_written_in_place_is_written_back():
    """A TwoTensor argument the graph writes: the caller's inner tensors hold eager's values after
    every call, as the output does (found attacking C90: the graph's writes were not worked out
    through a subclass, so nothing was copied back)."""
    from torch.testing._internal.two_tensor import TwoTensor

    G = torch.compile(doubled_in_place, backend="graphdispatch", options=CPP_WRAPPER)
    with torch.no_grad():
        for _ in range(4):
            a, b = torch.randn(4), torch.randn(4)
            x, x_eager = TwoTensor(a.clone(), b.clone()), TwoTensor(a.clone(), b.clone())
            assert_two_tensors(G(x)[0], doubled_in_place(x_eager)[0])
            assert_two_tensors(x, x_eager)
    assert stats()["fallbacks"] == {} and stats()["replays"] == 4


# ---- C92: graph_with_compile's direct C++ call -------------------------------------------------


def shaped(x, y):
    return ((x @ y).relu() * x.shape[0],)


@pytest.mark.inductor
def test_c92_symint_inputs_keep_the_direct_cpp_call():
    """Under dynamic=True the sizes reach Inductor's entry as SymInts, which its wrapper passes as
    0-d tensors: the direct C++ call makes the same tensor of the keyed value, so each shape's
    entry calls the entry from C++, with eager's values on new inputs every call (case C92)."""
    from graphdispatch._backend import _RUNNERS

    G = torch.compile(shaped, backend="graphdispatch", options=CPP_WRAPPER, dynamic=True)
    for rows in (3, 5, 3, 5, 7):
        x, y = torch.randn(rows, 4), torch.randn(4, 6)
        assert_eager(G(x, y), shaped(x, y), exact=False)
    graphs = [e["graph"] for r in _RUNNERS for e in r.entries()]
    assert stats()["fallbacks"] == {} and stats()["captures"] == len(graphs) == 3
    assert all(g.startswith("calls Inductor's C++ entry directly") for g in graphs), graphs


# ---- C93: a Python custom op's result, a view of a literal, returned --------------------------


@torch.library.custom_op("graphdispatch_round5::doubled", mutates_args=())
def doubled(x: torch.Tensor) -> torch.Tensor:
    return x * 2  # made in Python: its wrapper holds it while C++ does


@doubled.register_fake
def _(x):
    return torch.empty_like(x)


def custom_result_out(x):
    return (torch.ops.graphdispatch_round5.doubled(x + 1),)


def literal_views(x):
    table = torch.tensor([0.5, 1.5, 2.5, 3.5])
    return (x * table, table[1:], table.view(2, 2))


GLOBAL_TABLE = torch.arange(4.0)


def global_view(x):
    return (x + 1, GLOBAL_TABLE[1:])


@pytest.mark.parametrize("safe", [True, False], ids=["safe", "unsafe"])
@pytest.mark.parametrize("fn", [custom_result_out, literal_views], ids=["custom_op", "literal"])
def test_c93_a_python_custom_ops_result_and_a_literals_view_returned_replay(fn, safe):
    """A Python custom op's result returned as the output (its Python wrapper is no other holder)
    and views of a literal made inside the graph (their base, held only by the views): both
    replay on every graph kind, eager's values on new inputs every call, also when the caller
    writes the unsafe outputs it was handed (case C93)."""
    G = compiled(fn, safe_output_mode=safe)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(4)
            got = G(x)
            assert_eager(got, fn(x))
            for out in got:
                out.fill_(-7.0)  # the caller's to write; the next call must not see it
    assert stats()["fallbacks"] == {}
    assert stats()["captures"] == 1 and stats()["replays"] == 4


def test_c93_a_view_of_a_tensor_held_elsewhere_is_still_refused_on_the_cpu_graph(graph_kind):
    """A view of a global returned, the global not an input (a runner without Dynamo, which would
    pass it as one): the base is held by the global too, which may change between calls, so the
    CPU graph still refuses the capture, and every value is eager's."""
    r = runner(global_view, [False])
    with torch.no_grad():
        for k in range(4):
            GLOBAL_TABLE.add_(k)
            x = torch.randn(4)
            assert_eager(r(x), global_view(x))
    GLOBAL_TABLE.copy_(torch.arange(4.0))
    if graph_kind == "cpu":
        assert fallbacks("capture_failed") == 4


class ViewsOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(4, 4), requires_grad=False)

    def forward(self, x):
        return (x.t(), (x @ self.weight).relu(), self.weight[1:])


@pytest.mark.inductor
def test_c92_outputs_viewing_inputs_and_weights_keep_the_direct_cpp_call():
    """Outputs that view an argument and a weight: aot_autograd rebuilds them from the entry's
    returns, which are the same views of fixed memory, so the direct C++ call stands and leaves
    them as they are; each call gives eager's values, the argument's view on the caller's
    tensor as eager's is (case C92)."""
    from graphdispatch._backend import _RUNNERS

    model = ViewsOut()
    G = torch.compile(model, backend="graphdispatch", options=CPP_WRAPPER)
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(3, 4)
            got, expected = G(x), model(x)
            assert_eager(got, expected, exact=False)
            assert got[0].data_ptr() == x.data_ptr()
    assert stats()["fallbacks"] == {} and stats()["captures"] == 1
    graphs = [e["graph"] for r in _RUNNERS for e in r.entries()]
    assert graphs == ["calls Inductor's C++ entry directly (2 inputs, 3 outputs)"], graphs


class HalvedView(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.randn(5, 4))
        self.register_buffer("rows", self.table[1:])  # a buffer viewing another

    def forward(self, x):
        self.rows.mul_(0.5)
        return (x @ self.rows.t() + self.table.sum(),)


@pytest.mark.inductor
def test_c92_explain_says_per_graph_why_the_direct_call_is_off():
    """Where graph_with_compile re-runs Inductor's Python wrapper (a written buffer viewing
    another, which aot_autograd merges into one base; Inductor's constants under freezing,
    which its Python side appends to the entry's arguments), explain() says so per graph, with
    the reason, and the values are eager's (case C92)."""
    model, eager = HalvedView(), HalvedView()
    eager.table.copy_(model.table)
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(3, 4)
            torch.testing.assert_close(compiled(model, CPP_WRAPPER)(x), eager(x))
            torch.testing.assert_close(model.table, eager.table)
        torch._dynamo.reset()
        report = graphdispatch.explain(model, x, options={"graph_with_compile": True})
    (graph,) = report.graphs
    (entry,) = graph["entries"]
    assert "aot_autograd merged inputs that share memory" in entry["graph"]
    model = torch.nn.Linear(4, 4).eval()
    with torch.no_grad(), torch._inductor.config.patch(freezing=True):
        report = graphdispatch.explain(model, x, options={"graph_with_compile": True})
    (graph,) = report.graphs
    (entry,) = graph["entries"]
    assert entry["graph"] == (
        "re-runs Inductor's compiled function through Python: Inductor's C++ entry takes "
        "constants besides the graph's inputs"
    )


# ---- C91: an op's own refusal during the out= trial --------------------------------------------


def quantized_round_trip(x):
    q = torch.quantize_per_tensor(x, 0.05, 3, torch.quint8)
    return (q.dequantize() * 2,)


def test_c91_a_quantized_op_replays_or_names_itself():
    """The out= trial allocating a quantized result (empty_strided refuses quantized layouts)
    is that overload's refusal: the op replays another way with eager's values, or a refused
    capture names the op, never "empty_strided" (case C91)."""
    r = runner(quantized_round_trip, [False])
    for _ in range(3):
        x = torch.randn(6)
        assert torch.equal(r(x)[0], quantized_round_trip(x)[0])
    reason = r.entry_reason(torch.randn(6))
    if reason is not None:
        assert "quantize_per_tensor" in reason[1] and "empty_strided" not in reason[1]


def no_grad_region(x):
    y = x * WEIGHT
    with torch.no_grad():
        z = y * 2
    return y + z


def test_c83_a_no_grad_region_in_a_grad_mode_call_is_still_requires_grad():
    """A graph that starts in grad mode and switches it off inside is the runtime's
    requires_grad fallback, with its advice, as before (case C83's rule starts from no_grad)."""
    G = compiled(no_grad_region)
    x = torch.randn(4)
    assert_eager(G(x), no_grad_region(x))
    assert fallbacks("requires_grad") == 1 and fallbacks("autograd_region") == 0


def test_c82_results_filled_outside_the_dispatcher_stay_refused_under_deterministic_mode():
    """The replayed fill is no write for the capture audit: a result a kernel fills in its own
    loop (max_pool1d, case C57) is still refused, not replayed as the fill (found by the OpInfo
    sweep under deterministic mode)."""
    r = runner(lambda x: (torch.nn.functional.max_pool1d(x, 2),), [False])
    with deterministic():
        for _ in range(3):
            x = torch.randn(2, 3, 8)
            assert_eager(r(x), torch.nn.functional.max_pool1d(x, 2))
