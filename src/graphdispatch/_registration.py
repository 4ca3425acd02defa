"""Target of the ``torch_dynamo_backends`` entry point ``graphdispatch``.

Note [Lazy loading]
The torch_npu port's discipline (docs/design.md, "The port review"), applied to this backend:

- ``import graphdispatch`` imports none of ``torch._dynamo``, ``torch._inductor`` and
  ``sympy``, works with the three blocked, and initializes no device (case C17);
- ``torch.compile(backend="graphdispatch")`` finds the backend through this entry point;
  loading this module imports nothing heavy and registers nothing (Dynamo's registry does the
  registering, case C18); the backend itself is imported on the first compile;
- each route's setup is an ordered list of named run-once steps (``Setup`` in _once.py), run on
  first use under a lock: ``graph_only`` loads the extension, ``graph_with_compile`` the
  extension and Inductor's ``compile_fx``, ``default`` ``compile_fx``. A failed step is retried
  by the next compile, finished steps are not re-applied, a forked child recreates the state;
- nothing is registered twice: a reload of our modules replaces the fork hook.
"""

from __future__ import annotations

from typing import Any


def graphdispatch_backend(
    gm: Any, example_inputs: Any, *, mode: Any = None, options: Any = None
) -> Any:
    """``torch.compile(model, backend="graphdispatch", mode=..., options={...})``."""
    from ._backend import Backend

    return Backend(mode=mode, options=options)(gm, example_inputs)
