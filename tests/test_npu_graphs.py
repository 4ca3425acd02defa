"""NPU graphs (torch_npu): the graph route against eager, captured in thread-local error mode
into the held pool (case G6). Marked `device`; skipped without torch_npu and an NPU."""

import threading

import pytest
import torch

import graphdispatch

npu = getattr(torch, "npu", None)
pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(npu is None or not npu.is_available(), reason="needs an NPU"),
]


def test_capture_is_not_invalidated_by_another_threads_allocations():
    # In "global" mode another thread's allocation during the capture invalidates it.
    stop = threading.Event()

    def allocate():
        while not stop.is_set():
            torch.empty(1 << 20, device="npu")

    thread = threading.Thread(target=allocate)
    thread.start()
    try:
        compiled = torch.compile(
            lambda x: torch.relu(x) * 2, backend="graphdispatch", options={"graph_only": True}
        )
        for n in (8, 16, 24):
            x = torch.randn(n, device="npu")
            torch.testing.assert_close(compiled(x), torch.relu(x) * 2)
    finally:
        stop.set()
        thread.join()
    assert graphdispatch.stats()["fallbacks"] == {}
    # 8 on the first graph, 16 and 24 on the one Dynamo recompiles with a dynamic size.
    assert graphdispatch.stats()["captures"] == 3
