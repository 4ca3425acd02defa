"""The test device itself (csrc/test_device/, Note [Test device]): torch.accelerator sees it, its
ops equal the CPU's, and its graph is as strict as a device's: a capture records without
running, each refusal raises and invalidates the capture, and each silent hazard happens
silently. Oracle: the same ops on the CPU."""

import pytest
import torch
from testdev import pool_reserved_bytes, testdev  # noqa: F401  (the fixture)

CAPTURING = "operation not permitted when stream is capturing"


def test_torch_accelerator_sees_the_device(testdev):
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("testdev")
    assert torch.accelerator.device_count() == 1
    side = torch.Stream(testdev)
    assert side != torch.accelerator.current_stream()
    with side:
        assert torch.accelerator.current_stream() == side
    event = torch.Event(testdev)
    event.record(side)
    torch.accelerator.current_stream().wait_event(event)
    torch.accelerator.synchronize()
    assert event.query()


def test_ops_and_copies_equal_the_cpu(testdev):
    torch.manual_seed(0)
    x, w = torch.randn(5, 7), torch.randn(3, 7)
    layer = torch.nn.Linear(7, 3)
    expected = torch.nn.functional.gelu(layer(x)).softmax(-1) @ w.T[:3, :3] + x[:, :3].T.sum()
    layer.to(testdev)
    got = (
        torch.nn.functional.gelu(layer(x.to(testdev))).softmax(-1) @ w.to(testdev).T[:3, :3]
        + x.to(testdev)[:, :3].T.sum()
    )
    assert got.device == testdev
    torch.testing.assert_close(got.cpu(), expected, rtol=0, atol=0)
    assert torch.equal(torch.arange(6, device=testdev).view(2, 3).cpu(), torch.arange(6).view(2, 3))


def captured(testdev, fn, *, pool=None):
    """(graph, output) of ``fn()`` captured on a side stream."""
    graph = torch.accelerator.Graph(pool=pool)
    with torch.Stream(testdev):
        graph.capture_begin()
        out = fn()
        graph.capture_end()
    return graph, out


def test_capture_records_without_running_and_replays_on_the_captured_addresses(testdev):
    x = torch.ones(4, device=testdev)
    graph, y = captured(testdev, lambda: x * 3 + 1)
    assert torch.isnan(y.cpu()).all()  # nothing ran: the pool's memory holds NaN
    graph.replay()
    assert torch.equal(y.cpu(), torch.full((4,), 4.0))
    x.copy_(torch.arange(4.0))  # new values at the captured address
    graph.replay()
    assert torch.equal(y.cpu(), torch.arange(4.0) * 3 + 1)
    # The capture's allocations came from its pool.
    assert pool_reserved_bytes(graph.pool()) >= y.numel() * y.element_size()


def test_capture_on_the_default_stream_is_refused(testdev):
    graph = torch.accelerator.Graph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        graph.capture_begin()


@pytest.mark.parametrize(
    "sync",
    [
        pytest.param(lambda x: x.sum().item(), id="item"),
        pytest.param(lambda x: x.cpu(), id="cpu"),
        pytest.param(lambda x: x.copy_(torch.ones(4)), id="from_host"),
        pytest.param(lambda x: torch.accelerator.synchronize(), id="synchronize"),
        pytest.param(lambda x: torch.accelerator.current_stream().synchronize(), id="stream"),
    ],
)
def test_host_synchronisation_during_capture_is_refused(testdev, sync):
    x = torch.ones(4, device=testdev)
    graph = torch.accelerator.Graph(capture_error_mode="thread_local")
    with torch.Stream(testdev):
        graph.capture_begin()
        y = x + 1
        with pytest.raises(RuntimeError, match=CAPTURING):
            sync(y)
        with pytest.raises(
            RuntimeError, match="invalidated"
        ):  # as cudaErrorStreamCaptureInvalidated
            graph.capture_end()
    torch.accelerator.synchronize()  # after the capture: allowed again


def test_allocation_outside_the_pool_during_capture_is_refused(testdev):
    graph = torch.accelerator.Graph(capture_error_mode="thread_local")
    with torch.Stream(testdev):
        graph.capture_begin()
        with torch.Stream(testdev):  # a stream the capture does not hold
            with pytest.raises(RuntimeError, match="outside the capture's pool"):
                torch.empty(8, device=testdev)
        with pytest.raises(RuntimeError, match="invalidated"):
            graph.capture_end()


def test_a_side_stream_must_be_joined(testdev):
    x = torch.ones(4, device=testdev)
    for join in (False, True):
        graph = torch.accelerator.Graph()
        origin, side = torch.Stream(testdev), torch.Stream(testdev)
        with origin:
            graph.capture_begin()
            side.wait_stream(origin)  # a fork: the side stream joins the capture
            with side:
                y = x * 5
            if join:
                origin.wait_stream(side)
                graph.capture_end()
            else:
                with pytest.raises(RuntimeError, match="not joined"):
                    graph.capture_end()
    graph.replay()  # the joined one: the side stream's work is in the graph
    assert torch.equal(y.cpu(), torch.full((4,), 5.0))


def test_freed_pool_memory_handed_out_again_is_read_silently(testdev):
    # A graph reads and writes its captured addresses: memory of its pool freed and handed to
    # a new allocation in that pool is overwritten by its replay, without an error.
    x = torch.ones(4, device=testdev)
    first, y = captured(testdev, lambda: x * 2)
    address = y.data_ptr()
    del y
    second, z = captured(testdev, lambda: x + 100, pool=first.pool())
    assert z.data_ptr() == address
    second.replay()
    assert torch.equal(z.cpu(), torch.full((4,), 101.0))
    first.replay()
    assert torch.equal(z.cpu(), torch.full((4,), 2.0))  # the first graph's value, silently


def test_a_pool_reused_after_its_graphs_were_released_asserts(testdev):
    x = torch.ones(4, device=testdev)
    graph, y = captured(testdev, lambda: x * 2)
    pool = graph.pool()
    graph.reset()  # the pool's last use ends; y still holds a block of it
    again = torch.accelerator.Graph(pool=pool)
    with torch.Stream(testdev):
        with pytest.raises(RuntimeError, match="use_count > 0"):
            again.capture_begin()
    del y
