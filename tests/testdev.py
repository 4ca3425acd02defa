"""The PrivateUse1 test device for tests (csrc/test_device/, Note [Test device] in
csrc/test_device/test_device.h): a stream-capturing accelerator of host memory, with its graph
behind ``torch.accelerator.Graph``. Built with the tests (``GRAPHDISPATCH_BUILD_TESTS=ON``, as
scripts/test.sh builds) into build/python; ``GRAPHDISPATCH_TEST_DEVICE`` names another build.

``load()`` loads it once per process, renames PrivateUse1 ``testdev`` and registers
``torch.testdev``; from then on it is the process's ``torch.accelerator``. The ``testdev``
fixture skips when the library was not built.
"""

from __future__ import annotations

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


def _module() -> types.ModuleType:
    """``torch.testdev``: what torch and graphdispatch look up on a device type's module."""
    ops = torch.ops.testdev
    module = types.ModuleType(f"torch.{NAME}")
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
    return module


def load() -> torch.device:
    """Loads the test device (once per process) and returns ``testdev:0``; raises
    FileNotFoundError when it was not built."""
    if getattr(torch, NAME, None) is None:
        path = library_path()
        if path is None:
            raise FileNotFoundError(
                f"{LIBRARY} not built: configure with -DGRAPHDISPATCH_BUILD_TESTS=ON "
                "(scripts/test.sh does)"
            )
        torch.ops.load_library(path)
        torch.utils.rename_privateuse1_backend(NAME)
        torch._register_device_module(NAME, _module())
        torch.utils.generate_methods_for_privateuse1_backend(for_storage=True)
    return torch.device(NAME, 0)


def pool_reserved_bytes(pool: tuple[int, int]) -> int:
    """Bytes the test device's allocator holds in ``pool`` (cached and in use)."""
    return int(torch.ops.testdev.pool_reserved_bytes(*pool))


@pytest.fixture
def testdev() -> torch.device:
    """``testdev:0``."""
    try:
        device = load()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    return device
