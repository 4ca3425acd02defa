"""C17 and C20(c): ``import graphdispatch`` loads no compile stack and initializes no device."""

from __future__ import annotations

import functools

from plugin_helpers import HEAVY, run_script

IMPORT_SCRIPT = """
import json, sys
import torch
before = set(sys.modules)
import graphdispatch
added = sorted(set(sys.modules) - before)
heavy = sorted(m for m in added
               if m.split(".")[0] == "sympy" or m.startswith(("torch._dynamo", "torch._inductor")))
devices = {"cuda": torch.cuda.is_initialized()}
for name in ("xpu", "npu", "mtia"):
    module = getattr(torch, name, None)
    if module is not None and hasattr(module, "is_initialized"):
        devices[name] = bool(module.is_initialized())
print(json.dumps({"added": added, "heavy": heavy, "devices": devices,
                  "version": graphdispatch.__version__}))
"""


@functools.cache
def import_in_fresh_process() -> dict:
    return run_script(IMPORT_SCRIPT)


def test_import_loads_no_compile_stack():
    out = import_in_fresh_process()
    assert out["heavy"] == [], out["added"]
    for name in HEAVY:
        assert name not in out["added"]
    # Only our own package (and at most a few stdlib modules) is new.
    assert any(m == "graphdispatch" for m in out["added"])
    assert "graphdispatch._backend" not in out["added"]
    assert "graphdispatch._C" not in out["added"]


def test_import_succeeds_with_heavy_modules_blocked(run_py):
    # With the three set to None, importing any of them raises ImportError: an import that
    # needed them (even one that swallowed the error) shows up as a missing name below.
    out = run_py("""
        import json, sys
        import torch
        for name in ("torch._dynamo", "torch._inductor", "sympy"):
            sys.modules[name] = None
        import graphdispatch
        from graphdispatch import config
        print(json.dumps({
            "still_none": [n for n in ("torch._dynamo", "torch._inductor", "sympy")
                           if sys.modules[n] is None],
            "has_api": all(hasattr(graphdispatch, n)
                           for n in ("check_options", "stats", "reset", "config")),
            "check": graphdispatch.check_options({"max-entries": 2})["max_entries"],
        }))
    """)
    assert out["still_none"] == ["torch._dynamo", "torch._inductor", "sympy"]
    assert out["has_api"] is True
    assert out["check"] == 2


def test_import_initializes_no_device():  # C20(c)
    out = import_in_fresh_process()
    assert not any(out["devices"].values()), out["devices"]


def test_stats_loads_extension_but_no_compile_stack(run_py):
    out = run_py("""
        import json, sys
        import torch, graphdispatch
        before = set(sys.modules)
        graphdispatch.stats(); graphdispatch.reset()
        added = set(sys.modules) - before
        print(json.dumps({"heavy": sorted(m for m in added if m.split(".")[0] == "sympy"
                                          or m.startswith(("torch._dynamo", "torch._inductor"))),
                          "cuda_initialized": torch.cuda.is_initialized()}))
    """)
    assert out["heavy"] == []
    assert out["cuda_initialized"] is False
