"""The PrivateUse1 test device for tests (csrc/test_device/, Note [Test device] in
csrc/test_device/test_device.h): a stream-capturing accelerator of host memory, with its graph
behind ``torch.accelerator.Graph``. Built with the tests (``GRAPHDISPATCH_BUILD_TESTS=ON``, as
scripts/test.sh builds) into build/python; ``GRAPHDISPATCH_TEST_DEVICE`` names another build.

``load()`` loads it once per process, renames PrivateUse1 ``testdev`` and registers
``torch.testdev``; from then on it is the process's ``torch.accelerator``. ``load("npu")``
names it ``npu`` instead, with the few names of torch_npu's ``torch.npu`` the ``npu`` graph
kind calls (``NPUGraph`` over the device's graph): a process of its own does that
(test_testdev_routes.py). The ``testdev`` fixture skips when the library was not built.
"""

from __future__ import annotations

import contextlib
import os
import types
from pathlib import Path

import pytest
import torch

NAME = "testdev"
LIBRARY = "libgraphdispatch_test_device.so"
_ROOT = Path(__file__).resolve().parents[1]


def library_path() -> str | None:
    """The built library, or None."""
    named = os.environ.get("GRAPHDISPATCH_TEST_DEVICE")
    if named:
        return named
    found = sorted((_ROOT / "build").glob(f"**/{LIBRARY}"))
    return str(found[0]) if found else None


class NPUGraph:
    """torch_npu's ``NPUGraph`` capture protocol (pool and mode given to capture_begin) over
    the device's ``torch.accelerator.Graph``."""

    def __init__(self) -> None:
        self._graph: torch.accelerator.Graph | None = None

    def capture_begin(self, pool=None, capture_error_mode="global") -> None:
        self._graph = torch.accelerator.Graph(pool=pool, capture_error_mode=capture_error_mode)
        self._graph.capture_begin()

    def capture_end(self) -> None:
        self._graph.capture_end()

    def replay(self) -> None:
        self._graph.replay()

    def reset(self) -> None:
        if self._graph is not None:
            self._graph.reset()

    def pool(self) -> tuple[int, int]:
        return self._graph.pool()


def _module(name: str) -> types.ModuleType:
    """``torch.<name>``: what torch and graphdispatch look up on a device type's module."""
    ops = torch.ops.testdev
    module = types.ModuleType(f"torch.{name}")
    module.is_available = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    module.synchronize = lambda device=None: torch.accelerator.synchronize()
    module.is_current_stream_capturing = lambda: bool(ops.is_current_stream_capturing())
    module.graph_pool_handle = lambda: tuple(ops.graph_pool_handle())
    module.empty_cache = lambda: torch.accelerator.empty_cache()
    module.memory_reserved = lambda device=None: torch.accelerator.memory_reserved()
    module.memory_allocated = lambda device=None: torch.accelerator.memory_allocated()
    # torch.manual_seed seeds a custom device through these; its ops draw from the CPU
    # generator, which torch.manual_seed seeds already.
    module._is_in_bad_fork = lambda: False
    module.manual_seed_all = lambda seed: None
    if name == "npu":
        module.NPUGraph = NPUGraph
        module.graph = None  # present, as the npu kind checks; the shim has no context manager
        module.device = lambda index: contextlib.nullcontext()
    return module


def load(name: str = NAME) -> torch.device:
    """Loads the test device (once per process) as ``name`` and returns ``<name>:0``; raises
    FileNotFoundError when it was not built."""
    if torch._C._get_privateuse1_backend_name() != name:
        path = library_path()
        if path is None:
            raise FileNotFoundError(
                f"{LIBRARY} not built: configure with -DGRAPHDISPATCH_BUILD_TESTS=ON "
                "(scripts/test.sh does)"
            )
        torch.ops.load_library(path)
        torch.utils.rename_privateuse1_backend(name)
        torch._register_device_module(name, _module(name))
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
    return torch.device(name, 0)


def pool_reserved_bytes(pool: tuple[int, int]) -> int:
    """Bytes the test device's allocator holds in ``pool`` (cached and in use); for (0, 0),
    in every private (graph) pool."""
    return int(torch.ops.testdev.pool_reserved_bytes(*pool))


@contextlib.contextmanager
def slow_launches(microseconds: int):
    """Every launch the test device runs waits ``microseconds`` first, so launches from several
    threads interleave on every call."""
    torch.ops.testdev.set_launch_delay_us(microseconds)
    try:
        yield
    finally:
        torch.ops.testdev.set_launch_delay_us(0)


@pytest.fixture
def testdev() -> torch.device:
    """``testdev:0``."""
    try:
        device = load()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return device
