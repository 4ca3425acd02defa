"""Target of the ``torch_dynamo_backends`` entry point ``graphdispatch``.

Dynamo loads this module when a user names the backend; loading it imports nothing heavy
and registers nothing (Dynamo's registry does the registering). The backend itself is
imported on the first compile.
"""

from __future__ import annotations

from typing import Any


def graphdispatch_backend(
    gm: Any, example_inputs: Any, *, mode: Any = None, options: Any = None
) -> Any:
    """``torch.compile(model, backend="graphdispatch", mode=..., options={...})``."""
    from ._backend import Backend

    return Backend(mode=mode, options=options)(gm, example_inputs)
