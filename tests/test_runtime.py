"""The runtime through graphdispatch._C and torch.compile on the emulated and the CPU graph, with
eager PyTorch as the oracle: cache key, eviction, copy skip, mismatch message, outputs,
fallback."""

import logging

import pytest
import torch
from cases.cases_helpers import compiled, graph_kind, runner  # noqa: F401

import graphdispatch
from graphdispatch import _C
from graphdispatch._device_graphs import make_factory

# Each test on both CPU graphs: the emulated one and the recorded one.
pytestmark = pytest.mark.usefixtures("graph_kind")


# ---- cache key -------------------------------------------------------------------------------


def test_strides_key_separate_entries_alignment_does_not():
    r = runner(lambda x: (x * 2 + 1,), [False])
    big = torch.randn(64, 64)
    layouts = [
        torch.randn(64, 32),
        torch.randn(32, 64).t(),
        big[::2, :32],
        big.flatten()[1:2049].view(64, 32),
    ]
    for x in layouts * 2:
        (y,) = r(x)
        assert torch.equal(y, x * 2 + 1)
        assert y.stride() == (x * 2 + 1).stride()
    # The misaligned view shares the contiguous layout's entry: a copied input's offset
    # changes no kernel (case C23).
    assert r.num_entries == 3
    assert graphdispatch.stats()["captures"] == 3


def test_scalar_values_key_separate_entries():
    r = runner(lambda x, s: (x * s,), [False, False])
    x = torch.randn(5)
    for s in (0.5, 1.5, 2.5, 0.5, 3, True, 2.5):
        (y,) = r(x, s)
        assert torch.equal(y, x * s)
    assert r.num_entries == 5  # 0.5, 1.5, 2.5, 3, True


def test_grad_mode_keys_separate_entries_inference_mode_does_not():
    r = runner(lambda x: (x + 1,), [False])
    x = torch.randn(3)
    r(x)
    with torch.no_grad():
        r(x)
    assert r.num_entries == 2
    with torch.inference_mode():  # no_grad's entry: inference mode changes no kernel (C25)
        x = torch.randn(3)
        (y,) = r(x)
        assert y.is_inference() and torch.equal(y, x + 1)
    assert r.num_entries == 2
    (y,) = r(torch.ones(3))  # the entry still serves calls outside inference mode
    assert not y.is_inference() and torch.equal(y, torch.full((3,), 2.0))


def test_forward_mode_ad_falls_back_with_eager_tangents():
    """Under a forward-mode AD level, dual inputs carry tangents that a replay would drop
    (found attacking the fast path): such calls run without a graph, counted forward_ad, and
    give eager's tangents; outside the level the entry replays as before."""
    import torch.autograd.forward_ad as fwAD

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.GELU()).eval()
    c = compiled(model)
    with torch.no_grad():
        for _ in range(2):
            x = torch.randn(3, 6)
            torch.testing.assert_close(c(x), model(x), rtol=0, atol=0)
        replays = graphdispatch.stats()["replays"]
        x, tangent = torch.randn(3, 6), torch.randn(3, 6)
        with fwAD.dual_level():
            out = fwAD.unpack_dual(c(fwAD.make_dual(x, tangent)))
            expected = fwAD.unpack_dual(model(fwAD.make_dual(x, tangent)))
        assert out.tangent is not None
        torch.testing.assert_close(out.primal, expected.primal, rtol=0, atol=0)
        torch.testing.assert_close(out.tangent, expected.tangent, rtol=0, atol=0)
        assert graphdispatch.stats()["fallbacks"].get("forward_ad") == 1
        x = torch.randn(3, 6)
        torch.testing.assert_close(c(x), model(x), rtol=0, atol=0)
    assert graphdispatch.stats()["replays"] == replays + 1


def test_checkpoint_around_the_first_call_gets_eager_gradients():
    """torch.utils.checkpoint (non-reentrant) counts the tensors autograd saves in the forward
    and again in the recomputation. The compile inside the first call runs the graph on fake
    tensors to learn its writes; with autograd on there, the checkpoint's hooks saw those too
    and raised CheckpointError (found attacking the fast path)."""
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Linear(8, 8))
    c = compiled(model)
    x = torch.randn(2, 8, requires_grad=True)
    checkpoint(c, x, use_reentrant=False).sum().backward()
    got = [x.grad.clone(), *(p.grad.clone() for p in model.parameters())]
    x.grad = None
    model.zero_grad()
    checkpoint(model, x, use_reentrant=False).sum().backward()
    expected = [x.grad, *(p.grad for p in model.parameters())]
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
    assert graphdispatch.stats()["fallbacks"].get("requires_grad", 0) >= 1


def test_autocast_keys_separate_entries():
    w = torch.randn(8, 8)
    r = runner(lambda x: (x @ w,), [False])
    x = torch.randn(4, 8)
    (plain,) = r(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        (auto,) = r(x)
        expected = x @ w
    assert plain.dtype == torch.float32 and auto.dtype == expected.dtype == torch.bfloat16
    assert torch.equal(auto, expected)
    assert r.num_entries == 2


# ---- eviction --------------------------------------------------------------------------------


@pytest.mark.parametrize("eviction, survivor", [("fifo", 2), ("lru", 1)])
def test_eviction_policies(eviction, survivor):
    r = runner(lambda x: (x.relu(),), [False], max_entries=2, eviction=eviction)
    sizes = {n: torch.randn(n) for n in (1, 2, 3)}
    for n in (1, 2, 1):  # size 1 used last: LRU keeps it, FIFO does not
        r(sizes[n])
    r(sizes[3])
    assert r.num_entries == 2
    assert graphdispatch.stats()["evictions"] == 1
    before = graphdispatch.stats()["captures"]
    assert torch.equal(r(sizes[survivor])[0], sizes[survivor].relu())
    assert graphdispatch.stats()["captures"] == before  # the survivor replays
    for x in sizes.values():
        assert torch.equal(r(x)[0], x.relu())


def test_eviction_logs_once(caplog):
    with caplog.at_level(logging.WARNING, logger="graphdispatch"):
        r = runner(
            lambda x: (x + 1,),
            [False],
            max_entries=2,
            log=logging.getLogger("graphdispatch").warning,
        )
        for n in range(1, 8):
            r(torch.randn(n))
    assert r.num_entries == 2
    assert sum("evicting" in rec.getMessage() for rec in caplog.records) == 1


# ---- copies, outputs, mismatch ---------------------------------------------------------------


def test_copy_skipped_when_caller_passes_static_buffer():
    r = runner(lambda a, b: (a * b,), [False, False])
    a, b = torch.randn(16), torch.randn(16)
    r(a, b)
    buf_a, buf_b = r.input_buffers(a, b)
    buf_a.copy_(a)
    stats = graphdispatch.stats()
    (y,) = r(buf_a, b)
    after = graphdispatch.stats()
    assert torch.equal(y, a * b)
    assert after["copies_skipped"] - stats["copies_skipped"] == 1
    assert after["bytes_copied"] - stats["bytes_copied"] == b.numel() * b.element_size()


def test_caller_memory_is_never_a_static_buffer():
    for lazy in (False, True):
        fn = compiled(lambda x: x + 1, lazy_capture=lazy)
        x1 = torch.zeros(4)
        fn(x1)
        fn(torch.ones(4))
        assert torch.equal(x1, torch.zeros(4)), f"lazy_capture={lazy}"
        torch._dynamo.reset()


def test_mismatch_message_shape():
    with pytest.raises(
        RuntimeError,
        match=r"^input mismatch at position 2: captured \[2, 3\]/float32, got \[4\]/bfloat16$",
    ):
        _C._testing.check_input_match(torch.zeros(2, 3), torch.zeros(4, dtype=torch.bfloat16), 2)


def test_safe_outputs_are_clones():
    fn = compiled(lambda x: x @ x)
    x1, x2 = torch.randn(10, 10), torch.randn(10, 10)
    y1 = fn(x1)
    view, detached = y1[0], y1.detach()
    y2 = fn(x2)
    for held in (y1, view, detached):
        assert torch.equal(held, (x1 @ x1)[: held.shape[0]] if held.dim() == 2 else (x1 @ x1)[0])
    assert y1.untyped_storage().data_ptr() != y2.untyped_storage().data_ptr()


def test_unsafe_outputs_alias_static_outputs():
    fn = compiled(lambda x: x @ x, safe_output_mode=False)
    x1, x2 = torch.randn(10, 10), torch.randn(10, 10)
    y1 = fn(x1)
    static = y1.data_ptr()
    y2 = fn(x2)
    # Documented contract: the static output; y1, still held at the replay, was copied away.
    assert y2.data_ptr() == static != y1.data_ptr()
    assert torch.allclose(y2, x2 @ x2) and torch.allclose(y1, x1 @ x1)


def test_output_structure_preserved():
    def fn(x):
        return {"a": x + 1, "pair": (x * 2, None), "n": [x.sum()]}

    out = compiled(fn)(torch.ones(3))
    assert set(out) == {"a", "pair", "n"}
    assert out["pair"][1] is None and torch.equal(out["pair"][0], torch.full((3,), 2.0))
    assert torch.equal(out["n"][0], torch.tensor(3.0))


def test_capture_failure_falls_back_with_reason():
    calls = {"n": 0}

    def flaky(x):
        calls["n"] += 1
        if calls["n"] == 2:  # the capture run (after one warmup)
            raise RuntimeError("operation not permitted when stream is capturing")
        return (x + 1,)

    r = runner(flaky, [False])
    x = torch.randn(3)
    for _ in range(3):
        assert torch.equal(r(x)[0], x + 1)
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {"capture_failed": 3}
    assert stats["captures"] == 0
    reason, detail = r.entry_reason(x)
    assert reason == "capture_failed" and "not permitted" in detail
    assert calls["n"] == 2 + 3  # warmup + failed capture, then one eager run per call


def test_user_error_reaches_user():
    r = runner(lambda x: (x @ x,), [False])
    with pytest.raises(
        RuntimeError, match="mat1 and mat2 shapes cannot be multiplied|size mismatch|must match"
    ):
        r(torch.randn(2, 3))


# ---- regressions found by review -------------------------------------------------------------


def test_clear_while_another_thread_reads_does_not_deadlock(graph_kind):
    # Destroying entries needs the GIL (their buffers have Python objects); clear() used to do
    # that under the cache lock while a GIL-holding reader waited for the lock.
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import threading, torch
        from graphdispatch import _C
        from graphdispatch._device_graphs import make_factory
        r = _C.GraphRunner(lambda x: (x + 1,), [False], make_factory(GRAPH))
        stop = threading.Event()
        def read():
            while not stop.is_set():
                r.num_entries
                r.input_buffers(torch.ones(1))
        reader = threading.Thread(target=read)
        reader.start()
        for round in range(20):
            for n in range(1, 16):
                r(torch.ones(n))
            r.clear()
        stop.set()
        reader.join()
        print("done", r.num_entries)
    """)
    script = script.replace("GRAPH", repr(graph_kind))
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["done", "0"]


def test_inference_mode_captures_and_applies_mutations_once():
    def f(x):
        x.add_(1)
        return x * 2

    fn = compiled(f)
    with torch.inference_mode():
        x0 = torch.zeros(3)
        for _ in range(3):
            y = fn(x0)
    assert torch.equal(x0, torch.full((3,), 3.0)) and torch.equal(y, torch.full((3,), 6.0))
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {}
    # Captured at compile time (outside inference mode, where Dynamo compiles); every call hits.
    assert stats["captures"] == 1 and stats["replays"] == 3 and stats["cache_misses"] == 0


def test_output_view_of_input_keeps_eager_aliasing():
    fn = compiled(lambda x: x[1:])
    x, x_eager = torch.zeros(4), torch.zeros(4)
    for _ in range(2):
        fn(x).add_(1)
        x_eager[1:].add_(1)
    assert torch.equal(x, x_eager)
    # Rebuilt on the caller's tensor, not refused (case C40).
    assert graphdispatch.stats()["fallbacks"] == {}
    assert graphdispatch.stats()["replays"] == 2


def test_zero_size_inputs_are_not_aliased():
    r = runner(lambda a, b: (a + 1, b + 1), [False, False])
    r(torch.ones(0), torch.ones(0))
    assert graphdispatch.stats()["fallbacks"] == {}
    assert graphdispatch.stats()["captures"] == 1


def test_runner_argument_errors_name_the_argument():
    with pytest.raises(TypeError, match="fn: expected a callable, got <class 'NoneType'>"):
        _C.GraphRunner(None, [False], make_factory("emulated"))
    r = runner(lambda x, n: (x * n,), [False, False])
    with pytest.raises(ValueError, match="input at position 1: expected an int within int64"):
        r(torch.ones(3), 2**70)
    with pytest.raises(TypeError, match="input at position 1: expected a tensor, int, float"):
        r(torch.ones(3), "two")
    with pytest.raises(RuntimeError, match="expected 2 inputs, got 1"):
        r(torch.ones(3))


def test_subclass_and_zero_tensor_inputs_fall_back_without_crashing():
    from torch.testing._internal.two_tensor import TwoTensor

    r = runner(lambda x: (x * 2,), [False])
    zero = torch._efficientzerotensor(4)
    assert torch.equal(r(zero)[0], zero * 2)
    pair = TwoTensor(torch.ones(4), torch.ones(4))
    out = r(pair)[0]
    assert isinstance(out, TwoTensor) and torch.equal(out.a, torch.full((4,), 2.0))
    assert graphdispatch.stats()["fallbacks"] == {"unsupported_tensor": 2}


def test_failed_capture_leaves_rng_state_as_before():
    calls = {"n": 0}

    def fn(x):
        calls["n"] += 1
        noise = torch.rand(3)  # draws during warmup and capture
        if calls["n"] == 2:
            raise RuntimeError("capture failed")
        return (x + noise,)

    r = runner(fn, [False])
    torch.manual_seed(7)
    r(torch.zeros(3))  # warmup, failed capture, then the fallback's own run
    after = torch.rand(1)
    torch.manual_seed(7)
    torch.rand(3)  # eager: the one run the user asked for
    assert torch.equal(after, torch.rand(1))
