"""C18 and registration: the backend is found by name through the ``torch_dynamo_backends``
entry point without importing us; loading the target registers and imports nothing heavy;
a misspelt name gets PyTorch's own error; registering again (a reload) does not fail."""

from __future__ import annotations


def test_entry_point_resolves_in_fresh_process(run_py):
    out = run_py("""
        import json, sys
        from importlib.metadata import entry_points
        import torch
        (ep,) = [e for e in entry_points(group="torch_dynamo_backends")
                 if e.name == "graphdispatch"]
        before = set(sys.modules)
        ops_before = set(torch._C._dispatch_get_all_op_names())
        target = ep.load()
        added = sorted(set(sys.modules) - before)
        print(json.dumps({
            "value": ep.value, "target": f"{target.__module__}.{target.__qualname__}",
            "added": added,
            "new_ops": sorted(set(torch._C._dispatch_get_all_op_names()) - ops_before),
        }))
    """)
    assert out["value"] == "graphdispatch._registration:graphdispatch_backend"
    assert out["target"] == "graphdispatch._registration.graphdispatch_backend"
    # Loading the target imports our package's light modules only: no torch module, no
    # sympy, not the backend or the extension; and it registers no operator.
    assert all(m.startswith("graphdispatch") for m in out["added"]), out["added"]
    assert "graphdispatch._backend" not in out["added"] and "graphdispatch._C" not in out["added"]
    assert out["new_ops"] == []


def test_compile_by_name_without_import(run_py):
    out = run_py("""
        import json, sys
        import torch
        import torch._dynamo
        assert "graphdispatch" not in sys.modules
        from torch._dynamo.backends.registry import _COMPILER_FNS
        names = torch._dynamo.list_backends()
        before = set(sys.modules)
        fn = torch._dynamo.lookup_backend("graphdispatch")
        resolved_added = sorted(set(sys.modules) - before)
        def f(x):
            return torch.sin(x) * 2 + 1
        compiled = torch.compile(f, backend="graphdispatch",
                                 options={"graph_only": True, "device_graph": "emulated"})
        x = torch.randn(8)
        ok = [bool(torch.allclose(compiled(x), f(x))) for _ in range(3)]
        import graphdispatch
        print(json.dumps({
            "listed": "graphdispatch" in names, "registered": "graphdispatch" in _COMPILER_FNS,
            "resolved_added": resolved_added, "ok": ok, "stats": graphdispatch.stats(),
            "inductor_compile_fx": "torch._inductor.compile_fx" in sys.modules,
        }))
    """)
    assert out["listed"] and out["registered"]
    # Resolving the name loads the light entry-point module only, not the backend.
    assert all(m.startswith("graphdispatch") for m in out["resolved_added"]), out["resolved_added"]
    assert "graphdispatch._backend" not in out["resolved_added"]
    assert out["ok"] == [True, True, True]
    assert out["stats"]["captures"] == 1 and out["stats"]["routes"] == {"graph_only": 1}
    assert out["inductor_compile_fx"] is False


def test_misspelt_backend_gets_pytorchs_error(run_py):
    out = run_py("""
        import json
        import torch
        try:
            torch.compile(lambda x: x + 1, backend="graphdispach")(torch.randn(2))
            error = None
        except Exception as e:
            error = {"type": f"{type(e).__module__}.{type(e).__name__}", "message": str(e)}
        print(json.dumps({"error": error}))
    """)
    assert out["error"]["type"] == "torch._dynamo.exc.InvalidBackend"
    assert "graphdispach" in out["error"]["message"]


def test_registration_survives_reload(run_py):
    # A backend reload re-executes our modules; nothing we register may fail the second time,
    # and the fork hook must be replaced, not added.
    out = run_py("""
        import importlib, json, sys
        import torch
        import graphdispatch
        from graphdispatch import _once, _registration, _backend as backend, config
        def compile_and_run():
            torch._dynamo.reset()
            f = lambda x: x * 3
            c = torch.compile(f, backend="graphdispatch",
                              options={"graph_only": True, "device_graph": "emulated"})
            x = torch.randn(4)
            return bool(torch.allclose(c(x), f(x)))
        first = compile_and_run()
        hooks_before = len(_once._FORK_HOOKS)
        for module in (config, _once, backend, _registration):
            importlib.reload(module)
        lookup = torch._dynamo.lookup_backend
        lookup_twice = lookup("graphdispatch") is lookup("graphdispatch")
        second = compile_and_run()
        print(json.dumps({"first": first, "second": second, "lookup_twice": lookup_twice,
                          "hooks_before": hooks_before, "hooks_after": len(_once._FORK_HOOKS),
                          "at_fork_registered": _once._AT_FORK_REGISTERED}))
    """)
    assert out["first"] and out["second"] and out["lookup_twice"]
    assert out["hooks_after"] == out["hooks_before"] == 2  # backend's and framework_graphs' hooks
