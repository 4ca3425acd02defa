"""Types of graphdispatch._C, the C++ runtime's Python module (csrc/bindings/).

Written by hand; tests/test_stub.py keeps its names equal to the built module's. Values cross
as the runtime takes them: a call's inputs and a graph's outputs are tensors, ints (within
int64, else ValueError), floats, bools, None or torch.Generator (taken so that the runner can
refuse it, fallback explicit_generator); anything else raises TypeError naming its position.
"""

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

Value = torch.Tensor | int | float | bool | None | torch.Generator

class DeviceGraphFactory:
    """Makes the device graphs of one kind; the runtime holds one per runner."""

    @property
    def name(self) -> str: ...

class EmulatedGraphFactory(DeviceGraphFactory):
    """Graphs that re-run the callable on replay, on any device; only taken when asked for
    (``device_graph="emulated"``), as the tests do."""

    def __init__(self) -> None: ...

class CpuGraphFactory(DeviceGraphFactory):
    """The CPU graph: the op sequence recorded at capture, replayed from C++ (Note [CPU graph])."""

    def __init__(self) -> None: ...

class CppWrapperGraphFactory(DeviceGraphFactory):
    """Graphs of one Inductor C++-wrapper function, its generated entry called from C++ on
    replay (Note [Inductor's C++ entry] in csrc/bindings/cpp_wrapper_graph.h). ``library``: the
    loaded module exporting it (ValueError if not); ``recorder``: a
    ``graphdispatch._cpp_wrapper.EntryCalls``."""

    def __init__(self, library: str, recorder: Any) -> None: ...

class PyGraphFactory(DeviceGraphFactory):
    """Framework graphs through a Python adapter factory (_framework_graphs.py)."""

    def __init__(self, adapters: Any) -> None: ...

class FallbackReason:
    """Why a call ran without a graph (a pybind11 enum); ``.name`` is its key in
    ``stats()["fallbacks"]``, members in the order of ``fallback_reasons()``."""

    requires_grad: ClassVar[FallbackReason]
    aliased_inputs: ClassVar[FallbackReason]
    mixed_devices: ClassVar[FallbackReason]
    unsupported_tensor: ClassVar[FallbackReason]
    explicit_generator: ClassVar[FallbackReason]
    data_dependent: ClassVar[FallbackReason]
    capture_failed: ClassVar[FallbackReason]
    static_inputs_moving: ClassVar[FallbackReason]
    verify_mismatch: ClassVar[FallbackReason]
    autograd_region: ClassVar[FallbackReason]
    number_values: ClassVar[FallbackReason]
    forward_ad: ClassVar[FallbackReason]
    __members__: ClassVar[dict[str, FallbackReason]]
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...

class GraphRunner:
    """The entry cache of one compiled graph: captures each input signature once, replays it.

    ``options`` are graphdispatch.config's runtime options by name (``max_entries=4``,
    ``eviction="lru"``, ...); an unknown name, a wrong type or an out-of-range value raises
    ValueError or TypeError naming it.
    """

    def __init__(
        self,
        fn: Callable[..., Sequence[Value]],
        is_static: Sequence[bool],
        graphs: DeviceGraphFactory,
        log: Callable[[str], None] | None = None,
        written_inputs: Sequence[int] | None = None,
        draws_random: bool = True,
        watch: Callable[[list[torch.Tensor]], None] | None = None,
        input_names: Sequence[str] = (),
        **options: bool | int | float | str,
    ) -> None: ...
    def __call__(self, *inputs: Value) -> tuple[Value, ...]: ...
    def capture(self, *inputs: Value) -> None: ...
    def input_buffers(self, *inputs: Value) -> tuple[Value, ...] | None: ...
    def entry_reason(self, *inputs: Value) -> tuple[str, str] | None: ...
    def entries(self) -> list[dict[str, Any]]: ...
    @property
    def entry_bytes(self) -> int: ...
    @property
    def num_entries(self) -> int: ...
    def clear(self) -> None: ...
    def replay_graphs(self) -> None: ...
    def drop_dead_entries(self) -> None: ...
    def reset_after_fork(self) -> None: ...

class SealedGuards:
    """The records behind a sealed guard verdict (Note [Sealed guards] in _sealed_guards.py,
    csrc/bindings/sealed_guards.h): each ``add_*`` reads the object's state now and keeps a
    reference to it; ``unchanged()`` is True while every record holds. TypeError when an
    object is not of the kind a record is for."""

    def __init__(self) -> None: ...
    @staticmethod
    def supported() -> bool: ...
    def add_dict(self, dict: dict) -> None: ...
    def add_type_of(self, obj: object) -> None: ...
    def add_type_tag(self, type: type) -> bool: ...
    def add_dict_pointer(self, obj: object) -> None: ...
    def add_function(self, function: Callable[..., Any]) -> None: ...
    def add_cell(self, cell: Any) -> None: ...
    def add_tensor(self, tensor: torch.Tensor) -> bool: ...
    def unchanged(self) -> bool: ...
    def size(self) -> int: ...

def frameless_method(
    first: Callable[..., Any], then: Callable[..., Any], declined: object
) -> Callable[..., Any]:
    """A method (binds ``self`` on a class) running ``first(self, *args, **kwargs)``, and
    ``then(...)`` with the same arguments when that returned ``declined``; it adds no Python frame,
    so ``then`` sees the caller as its own (csrc/bindings/frameless_method.h)."""

def stats() -> dict[str, Any]: ...
def reset_stats() -> None: ...
def fallback_reasons() -> dict[str, str]: ...
def fallback(reason: str, fn: Callable[..., Any], *args: Any) -> Any: ...
def reset_after_fork() -> None: ...
def set_stream_maker(device_type: str, maker: Callable[[str], int | None]) -> None: ...

class _testing:
    """graphdispatch._C._testing, a submodule (declared as a class of static functions): hooks
    only graphdispatch's own tests and benches call; not an API."""

    @staticmethod
    def runner_option_defaults() -> dict[str, bool | int | float | str]: ...
    @staticmethod
    def check_input_match(captured: torch.Tensor, given: torch.Tensor, position: int) -> None: ...
    @staticmethod
    def emulated_capturing() -> bool: ...
    @staticmethod
    def cpu_graph_capturing() -> bool: ...
    @staticmethod
    def with_out_variants_locked(on_locked: Callable[[], None], seconds: float) -> None: ...
    @staticmethod
    def pipeline_streams(device: str) -> list[int]: ...
