"""The fast path (Note [Fast path] in _fast_path.py, cases C78 and C79): after warm-up a compiled
module's call runs Dynamo's compiled code without Dynamo's frame handling, and every change
Dynamo's guards catch sends the call back through Dynamo. Every check compares with eager on
fresh inputs and counts where the call went (stats()["fast_path"]) and that it replayed."""

from __future__ import annotations

import inspect

import pytest
import torch
import torch._dynamo

import graphdispatch


class Model(torch.nn.Module):
    """Reads a submodule, a parameter through it, a buffer, a float attribute and the training
    flag, and takes the kinds of non-tensor argument a denoiser takes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)
        self.register_buffer("shift", torch.randn(8))
        self.scale = 2.0

    def forward(self, x, k: int = 1, f: float = 1.0, flag: bool = False, extra=None,
                return_dict: bool = True, attention_kwargs=None):  # fmt: skip
        y = self.lin(x) * self.scale * k * f + self.shift
        if flag:
            y = y.relu()
        if extra is not None:
            y = y + extra
        if self.training:
            y = y * 3
        if attention_kwargs is not None:
            y = y * attention_kwargs.get("scale", 1.0)
        return {"sample": y} if return_dict else (y,)


def on_graph_only(model):
    return torch.compile(model, backend="graphdispatch", options={"graph_only": True})


def fast_calls() -> int:
    return graphdispatch.stats()["fast_path"]["calls"]


def through_dynamo() -> dict[str, int]:
    return graphdispatch.stats()["fast_path"]["through_dynamo"]


def check(compiled, model, *args, **kwargs) -> None:
    """One call on fresh inputs against eager, bit for bit (graph_only replays the FX graph)."""
    out, expected = compiled(*args, **kwargs), model(*args, **kwargs)
    torch.testing.assert_close(out, expected, rtol=0, atol=0)


def warm(options=None):
    torch.manual_seed(0)
    model = Model().eval()
    compiled = torch.compile(
        model, backend="graphdispatch", options=options or {"graph_only": True}
    )
    x = torch.randn(4, 8)
    with torch.no_grad():
        check(compiled, model, x)  # compiles, captures, installs the fast path
    return model, compiled, x


@pytest.mark.parametrize("route", ["graph_only", "graph_with_compile"])
def test_calls_after_warm_up_take_the_fast_path_and_replay(route):
    model, compiled, _ = warm({route: True})
    replays = graphdispatch.stats()["replays"]
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(4, 8)
            torch.testing.assert_close(compiled(x)["sample"], model(x)["sample"])
    assert fast_calls() == 3 and through_dynamo() == {}
    assert graphdispatch.stats()["replays"] == replays + 3
    assert graphdispatch.stats()["fallbacks"] == {}


def test_weights_changed_in_place_are_read_on_the_fast_path():
    model, compiled, x = warm()
    with torch.no_grad():
        model.lin.weight.mul_(-0.5)
        model.shift.add_(1.0)
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 1 and through_dynamo() == {}


def _replace_parameter(model):
    model.lin.weight = torch.nn.Parameter(torch.randn(8, 8))


def _replace_buffer(model):
    model.shift = torch.randn(8)


def _replace_submodule(model):
    model.lin = torch.nn.Linear(8, 8)


@pytest.mark.parametrize("change", [_replace_parameter, _replace_buffer, _replace_submodule])
def test_a_replaced_tensor_is_captured_anew_on_the_fast_path(change):
    """Dynamo passes parameters and buffers as inputs, so its guards let a replaced one
    through; the runner's cache key (their addresses) captures it anew."""
    model, compiled, x = warm()
    with torch.no_grad():
        check(compiled, model, x)
        change(model)
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 3 and through_dynamo() == {}
    assert graphdispatch.stats()["captures"] == 2


def _change_attribute(model):
    model.scale = 3.0


def _train(model):
    model.train()


def _to_float64(model):
    model.to(torch.float64)


CHANGES = {
    "attribute the trace read": _change_attribute,
    "train/eval": _train,
    ".to(dtype)": _to_float64,
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_change_the_guards_catch_goes_back_through_dynamo(change):
    model, compiled, x = warm()
    with torch.no_grad():
        check(compiled, model, x)
        assert fast_calls() == 1
        CHANGES[change](model)
        dtype = model.lin.weight.dtype
        for _ in range(2):  # the first call recompiles, the second runs the new entry
            check(compiled, model, torch.randn(4, 8, dtype=dtype))
    assert through_dynamo() == {"guards": 1}
    assert fast_calls() == 2


ARGUMENTS = {
    "int": {"k": 3},
    "float": {"f": 0.25},
    "bool": {"flag": True},
    "None to a tensor": {"extra": torch.ones(8)},
    "return_dict": {"return_dict": False},
    "attention_kwargs": {"attention_kwargs": {"scale": 0.5}},
}


@pytest.mark.parametrize("argument", ARGUMENTS)
def test_another_non_tensor_argument_goes_back_through_dynamo(argument):
    model, compiled, x = warm()
    kwargs = ARGUMENTS[argument]
    with torch.no_grad():
        check(compiled, model, x)
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8), **kwargs)
        check(compiled, model, torch.randn(4, 8))  # and back: the first entry's guards pass
    assert through_dynamo() == {"guards": 1}
    assert fast_calls() == 3


def test_a_changed_dict_value_inside_an_argument_goes_back_through_dynamo():
    model, compiled, x = warm()
    with torch.no_grad():
        check(compiled, model, x, attention_kwargs={"scale": 0.5})
        check(compiled, model, x, attention_kwargs={"scale": 0.5})
        check(compiled, model, x, attention_kwargs={"scale": 0.75})
    assert fast_calls() >= 1 and through_dynamo().get("guards", 0) >= 2


@pytest.mark.parametrize(
    "mode",
    ["enable_grad", "inference_mode", "autocast", "deterministic"],
)
def test_a_global_mode_goes_back_through_dynamo_or_replays_eager_values(mode):
    model, compiled, x = warm()
    with torch.no_grad():
        check(compiled, model, x)
    contexts = {
        "enable_grad": torch.enable_grad,
        "inference_mode": torch.inference_mode,
        "autocast": lambda: torch.autocast("cpu", dtype=torch.bfloat16),
        "deterministic": lambda: _deterministic(),
    }
    with contexts[mode]():
        for _ in range(2):
            y = torch.randn(4, 8)
            out, expected = compiled(y)["sample"], model(y)["sample"]
            torch.testing.assert_close(out, expected, rtol=0, atol=0)
            assert out.requires_grad == expected.requires_grad
            assert out.dtype == expected.dtype


class _deterministic:
    def __enter__(self):
        self.before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)

    def __exit__(self, *exc):
        torch.use_deterministic_algorithms(self.before)


def test_hooks_added_and_removed():
    model, compiled, x = warm()
    with torch.no_grad():
        handle = model.register_forward_hook(lambda m, a, out: {"sample": out["sample"] + 1})
        check(compiled, model, torch.randn(4, 8))
        assert through_dynamo() == {"hooks": 1}
        handle.remove()
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 1


def test_the_wrapper_s_own_call_goes_to_the_fast_path_and_keeps_its_hooks():
    """torch.compile's wrapper goes to the fast path from its own call; hooks on the wrapper
    still run around it, a global hook sends the call through OptimizedModule's own call and
    Dynamo (it must run on the inner module)."""
    from torch._dynamo.eval_frame import OptimizedModule

    model, compiled, x = warm()
    assert type(compiled) is OptimizedModule  # Dynamo inlines exactly this type (below)
    replays = graphdispatch.stats()["replays"]
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
        handle = compiled.register_forward_hook(lambda m, a, out: {"sample": out["sample"] * 3})
        x = torch.randn(4, 8)
        torch.testing.assert_close(compiled(x)["sample"], model(x)["sample"] * 3, rtol=0, atol=0)
        handle.remove()
        assert fast_calls() == 2 and through_dynamo() == {}
        seen = []
        handle = torch.nn.modules.module.register_module_forward_hook(
            lambda m, a, out: seen.append(type(m).__name__)
        )
        with pytest.warns(UserWarning, match="global hooks") as warned:
            check(compiled, model, torch.randn(4, 8))
        handle.remove()
        # torch's warning names the caller's line: no frame of ours stands in between.
        assert [w.filename for w in warned] == [__file__], [w.filename for w in warned]
        # The wrapper's call once; the inner module's twice: Dynamo's call and eager's.
        assert seen.count("OptimizedModule") == 1 and seen.count("Model") == 2, seen
        assert through_dynamo() == {"hooks": 1}
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 3
    assert graphdispatch.stats()["replays"] == replays + 4


def test_a_warm_wrapper_called_inside_a_fullgraph_compile_is_inlined():
    """Dynamo inlines a compiled module met inside another compile only when its type is
    exactly OptimizedModule: the fast path must leave the wrapper's class alone."""
    model, compiled, x = warm()
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
        outer = torch.compile(lambda t: compiled(t)["sample"] + 1, backend="eager", fullgraph=True)
        x = torch.randn(4, 8)
        torch.testing.assert_close(outer(x), model(x)["sample"] + 1, rtol=0, atol=0)


def test_someone_else_s_compiled_call_impl_on_the_module_goes_back_through_dynamo():
    """nn.Module's call runs a module's _compiled_call_impl instead of its forward."""
    model, compiled, x = warm()
    with torch.no_grad():
        model._compiled_call_impl = lambda *a, **k: {
            "sample": model._call_impl(*a, **k)["sample"] * 0
        }
        check(compiled, model, torch.randn(4, 8))
        assert not model(x)["sample"].any()  # the replacement ran, in eager as here
    assert through_dynamo() == {"forward_replaced": 1}


def test_a_call_path_set_on_the_wrapper_runs():
    """nn.Module's call reads _call_impl from the wrapper (instance, then class): one set there
    stands between the call and the fast path, as in eager."""
    from torch._dynamo.eval_frame import OptimizedModule

    model, compiled, x = warm()

    def doubled(*args, **kwargs):
        return {"sample": OptimizedModule._call_impl(compiled, *args, **kwargs)["sample"] * 2}

    with torch.no_grad():
        compiled._call_impl = doubled
        x = torch.randn(4, 8)
        torch.testing.assert_close(compiled(x)["sample"], model(x)["sample"] * 2, rtol=0, atol=0)
        del compiled._call_impl
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 2  # both reach the wrapper's forward, the fast path


def test_someone_else_s_wrapper_call_installed_first_keeps_running():
    """A library that wrapped OptimizedModule.__call__ before graphdispatch's first fast path
    in the process keeps seeing every call (a fresh process: the wrapper is put once)."""
    script = """
import torch
from torch._dynamo.eval_frame import OptimizedModule
import graphdispatch

seen = []
original = OptimizedModule.__call__
def counting(self, *args, **kwargs):
    seen.append(1)
    return original(self, *args, **kwargs)
OptimizedModule.__call__ = counting
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
compiled = torch.compile(model, backend="graphdispatch", options={"graph_only": True})
with torch.no_grad():
    for _ in range(4):
        x = torch.randn(4, 8)
        assert torch.equal(compiled(x), model(x))
fast = graphdispatch.stats()["fast_path"]["calls"]
assert len(seen) == 4 and fast == 3, (len(seen), fast)
"""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_pickled_wrapper_matches_eager_and_the_original_keeps_its_fast_path():
    import pickle

    model, compiled, x = warm()
    loaded = pickle.loads(pickle.dumps(compiled))
    with torch.no_grad():
        check(loaded, loaded._orig_mod, torch.randn(4, 8))
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 1


def test_dynamo_reset_goes_back_through_dynamo():
    model, compiled, x = warm()
    with torch.no_grad():
        check(compiled, model, x)
        torch._dynamo.reset()
        check(compiled, model, torch.randn(4, 8))
        check(compiled, model, torch.randn(4, 8))
    assert through_dynamo() == {"not_armed": 1}
    assert fast_calls() == 2


def test_forward_replaced_goes_back_through_dynamo():
    model, compiled, x = warm()
    with torch.no_grad():
        model.forward = lambda x: {"sample": x * 7}
        check(compiled, model, torch.randn(4, 8))
    assert through_dynamo() == {"forward_replaced": 1}


def test_forward_defaults_replaced_go_back_through_dynamo():
    model, compiled, x = warm()
    defaults = Model.forward.__defaults__
    try:
        Model.forward.__defaults__ = (4, *defaults[1:])  # k=4 from now on
        with torch.no_grad():
            check(compiled, model, torch.randn(4, 8))
    finally:
        Model.forward.__defaults__ = defaults
    assert through_dynamo() == {"forward_replaced": 1}


def test_a_stance_other_than_the_default_goes_back_through_dynamo():
    model, compiled, x = warm()
    with torch.no_grad(), torch.compiler.set_stance("force_eager"):
        check(compiled, model, torch.randn(4, 8))
    assert through_dynamo() == {"stance": 1}


@pytest.mark.parametrize("outer_backend", ["eager", "graphdispatch"])
def test_a_call_under_another_compile_s_frame_handling_goes_back_through_dynamo(outer_backend):
    """A compiled function whose frame Dynamo skipped (its first call held no tensor) runs as
    Python with its Dynamo callback set, so that callback sees every frame it calls. It must
    not compile the fast path's own frame with its backend (that traced the module, and its
    guards skip hooks): the call goes through the module's own Dynamo wrapper, as without
    the fast path, which replays the module's graph and runs a hook eagerly."""
    model, compiled = compiled_lin()

    def outer(x):
        return None if x is None else compiled(x) + 1

    outer_compiled = torch.compile(outer, backend=outer_backend)
    with torch.no_grad():
        outer_compiled(None)  # no tensor: Dynamo marks outer's code skipped
        replays = graphdispatch.stats()["replays"]
        for _ in range(2):
            x = torch.randn(4, 8)
            torch.testing.assert_close(outer_compiled(x), model(x) + 1, rtol=0, atol=0)
        assert graphdispatch.stats()["replays"] == replays + 2
        handle = model.register_forward_hook(lambda module, args, out: out * 5)
        x = torch.randn(4, 8)
        torch.testing.assert_close(outer_compiled(x), model(x) + 1, rtol=0, atol=0)
        handle.remove()
    assert through_dynamo() == {"under_dynamo": 3}


def test_off_by_option():
    model, compiled, x = warm({"graph_only": True, "fast_path": False})
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
    counts = graphdispatch.stats()["fast_path"]
    assert counts == {"calls": 0, "whole_checks": 0, "through_dynamo": {}}


class Broken(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.a(x)
        torch._dynamo.graph_break()
        return self.b(y)


def test_a_graph_break_keeps_dynamo_and_explain_says_so():
    torch.manual_seed(0)
    model = Broken().eval()
    compiled = on_graph_only(model)
    with torch.no_grad():
        for _ in range(3):
            check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 0 and through_dynamo() == {"not_armed": 2}
    report = graphdispatch.explain(model, torch.randn(4, 8))
    assert "graph break" in report.fast_path and not report.fast_path_armed
    assert "fast path: off (a graph break" in str(report)


class Looped(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x * 2


def test_a_graph_break_below_forward_keeps_dynamo_and_explain_says_so():
    """A graph break inside a call in a loop (here a block's hook), where Dynamo cannot resume:
    it compiles no code for forward's own frame, runs it itself and compiles the frames below;
    the reason says so."""
    torch.manual_seed(0)
    model = Looped().eval()
    model.blocks[0].register_forward_hook(lambda m, a, out: torch._dynamo.graph_break())
    compiled = on_graph_only(model)
    with torch.no_grad():
        for _ in range(3):
            check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 0 and through_dynamo() == {"not_armed": 2}
    with torch.no_grad():
        report = graphdispatch.explain(model, torch.randn(4, 8))
    assert not report.fast_path_armed and "a graph break in a call below it" in report.fast_path


def test_explain_says_the_fast_path_is_armed():
    model = Model().eval()
    with torch.no_grad():
        report = graphdispatch.explain(model, torch.randn(4, 8))
    assert report.fast_path_armed and "fast path: armed" in str(report)


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.nn.functional.gelu(self.lin(x))


def test_regional_compilation_blocks_take_the_fast_path():
    """Each block compiled in place, as ``compile_repeated_blocks`` does: Dynamo compiles
    Block.forward once; every block then calls its compiled code directly."""
    torch.manual_seed(0)
    blocks = torch.nn.Sequential(*[Block() for _ in range(3)]).eval()
    reference = torch.nn.Sequential(*[Block() for _ in range(3)]).eval()
    reference.load_state_dict(blocks.state_dict())
    for block in blocks:
        block.compile(backend="graphdispatch", options={"graph_only": True})
    with torch.no_grad():
        check(blocks, reference, torch.randn(4, 8))  # compiles; each block captures
        for _ in range(3):
            check(blocks, reference, torch.randn(4, 8))
    assert fast_calls() == 9 + 2  # blocks 2 and 3 took it from their first call
    assert through_dynamo() == {}
    # Every block call replays, each block capturing at its first call.
    assert graphdispatch.stats()["replays"] == 12 and graphdispatch.stats()["captures"] == 3


@pytest.mark.parametrize("route", ["graph_only", "graph_with_compile"])
def test_pytorch_guard_recipe_replays(route):
    """Case C78: install_free_tensors (parameters and buffers as graph attributes) with the
    recipe's guard filter: every call replays; weights changed in place are read."""
    torch.manual_seed(0)
    model = Model().eval()
    skip = torch.compiler.skip_guard_on_all_nn_modules_unsafe
    with torch._dynamo.config.patch(install_free_tensors=True):
        compiled = torch.compile(
            model, backend="graphdispatch", options={route: True, "guard_filter_fn": skip}
        )
        with torch.no_grad():
            for _ in range(3):
                x = torch.randn(4, 8)
                torch.testing.assert_close(compiled(x), model(x))
            model.lin.weight.mul_(2.0)
            x = torch.randn(4, 8)
            torch.testing.assert_close(compiled(x), model(x))
    stats = graphdispatch.stats()
    assert stats["fallbacks"] == {} and stats["captures"] == 1 and stats["replays"] == 4


def test_only_its_own_compile_s_entries_run():
    """Two torch.compile calls of one class share the code object's cache entries; a fast
    path runs only the entries its own backend compiled, as Dynamo does."""
    model, compiled, x = warm()
    other = torch.compile(model, backend="eager")
    with torch.no_grad():
        check(other, model, x)  # another entry, most recent first, whose guards pass too
        replays = graphdispatch.stats()["replays"]
        check(compiled, model, torch.randn(4, 8))
    assert graphdispatch.stats()["replays"] == replays + 1
    assert fast_calls() == 1


class _HalvedAttention:
    """An attention processor wrapping another, its output halved: set_attn_processor's kind."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __call__(self, attn, *args, **kwargs):
        out = self.inner(attn, *args, **kwargs)
        return tuple(o * 0.5 for o in out) if isinstance(out, tuple) else out * 0.5


def test_diffusers_adapters_fusing_and_attention_processors_against_eager():
    """LoRA adapters switched and weighted (set_adapters), fused and unfused, and attention
    processors replaced on a tiny Flux transformer: every call eager's values; a change the
    guards catch goes through Dynamo once, then the fast path serves the new state."""
    pytest.importorskip("diffusers")
    peft = pytest.importorskip("peft")
    from graphdispatch.tiny_pipelines import tiny_flux_inputs, tiny_flux_transformer

    torch.manual_seed(0)
    model = tiny_flux_transformer().eval()
    for name in ("a", "b"):
        config = peft.LoraConfig(
            r=4, lora_alpha=4, target_modules=["to_q", "to_k", "to_v"], init_lora_weights=False
        )
        model.add_adapter(config, adapter_name=name)
    model.set_adapters(["a"], weights=[1.0])
    compiled = on_graph_only(model)

    def check_twice() -> None:
        for _ in range(2):
            kwargs = tiny_flux_inputs()
            with torch.no_grad():
                out, expected = compiled(**kwargs)[0], model(**kwargs)[0]
            torch.testing.assert_close(out, expected, rtol=0, atol=0)

    check_twice()
    changes = [
        lambda: model.set_adapters(["b"], weights=[1.0]),
        lambda: model.set_adapters(["a", "b"], weights=[0.5, 0.7]),
        lambda: model.fuse_lora(lora_scale=0.8),
        lambda: model.unfuse_lora(),
        lambda: model.set_attn_processor(
            {k: _HalvedAttention(v) for k, v in model.attn_processors.items()}
        ),
    ]
    for change in changes:
        before = fast_calls()
        change()
        check_twice()
        assert fast_calls() >= before + 1  # the second call at least: the new state is served
    assert set(through_dynamo()) == {"guards"}
    assert graphdispatch.stats()["fallbacks"] == {}


# ---- found attacking the fast path: what stands between the call and forward ------------------


class Lin(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x)


def compiled_lin(model=None):
    torch.manual_seed(0)
    model = model if model is not None else Lin().eval()
    compiled = on_graph_only(model)
    with torch.no_grad():
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))
    return model, compiled


def test_a_call_override_between_the_call_and_forward_keeps_dynamo():
    class Doubled(Lin):
        @torch.compiler.disable(recursive=False)
        def __call__(self, x):
            return super().__call__(x * 2)

    model, compiled = compiled_lin(Doubled().eval())
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 0


def test_module_call_impl_patched_after_compile_goes_back_through_dynamo():
    model, compiled = compiled_lin()
    original = torch.nn.Module._call_impl

    def scaled(self, *args, **kwargs):  # an instrumentation library's kind of patch
        out = original(self, *args, **kwargs)
        return out * 10 if type(self) is Lin else out

    torch.nn.Module._call_impl = scaled
    try:
        with torch.no_grad():
            check(compiled, model, torch.randn(4, 8))
    finally:
        torch.nn.Module._call_impl = original
    assert through_dynamo() == {"forward_replaced": 1}


def test_a_module_s_own_call_impl_set_after_compile_goes_back_through_dynamo():
    """nn.Module's ``_wrapped_call_impl`` reads ``self._call_impl``, so one set on the instance
    stands between the call and ``forward``; Dynamo runs it (OptimizedModule calls the module's
    ``__call__``), so must the fast path."""
    model, compiled = compiled_lin()

    def scaled(*args, **kwargs):
        return type(model)._call_impl(model, *args, **kwargs) * 10

    model._call_impl = scaled
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
    assert through_dynamo() == {"forward_replaced": 1}
    del model._call_impl
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
    assert fast_calls() == 2


def test_cached_code_dynamo_stops_using_after_an_empty_trace_keeps_eager_values():
    """A call whose trace is empty (an early return of its input) makes Dynamo mark forward's
    code skipped: Dynamo then runs every call eagerly. Its cached entries stay valid, and the
    fast path keeps serving the calls they pass (usage.md, "The fast path")."""

    class EarlyReturn(Lin):
        def forward(self, x, skip=False):
            if skip:
                return x
            return self.lin(x)

    model, compiled = compiled_lin(EarlyReturn().eval())
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8), skip=True)
        assert through_dynamo() == {"guards": 1}
        replays = graphdispatch.stats()["replays"]
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))
            check(compiled, model, torch.randn(4, 8), skip=True)
    assert graphdispatch.stats()["replays"] == replays + 2
    assert through_dynamo() == {"guards": 3}


def test_an_identity_compiled_whole_leaves_the_other_torch_nn_modules_on_their_entries():
    """Every torch.nn module compiled whole shares the code object of Dynamo's wrapper: an
    nn.Identity's empty trace marks it skipped for all of them (usage.md, "The fast path")."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    compiled = on_graph_only(model)
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
        x = torch.randn(4, 8)
        torch.testing.assert_close(on_graph_only(torch.nn.Identity())(x), x, rtol=0, atol=0)
        replays = graphdispatch.stats()["replays"]
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))
    assert graphdispatch.stats()["replays"] == replays + 2
    assert fast_calls() == 2 and through_dynamo() == {}


def test_forward_code_swapped_in_place_goes_back_through_dynamo():
    """What IPython's autoreload does to an edited method."""

    class Swapped(Lin):
        def forward(self, x):
            return self.lin(x)

    def edited(self, x):
        return self.lin(x) * 3

    model, compiled = compiled_lin(Swapped().eval())
    original = Swapped.forward.__code__
    Swapped.forward.__code__ = edited.__code__
    try:
        with torch.no_grad():
            check(compiled, model, torch.randn(4, 8))
    finally:
        Swapped.forward.__code__ = original
    assert through_dynamo() == {"forward_replaced": 1}


class PositionalOnly(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x, /, *, scale=1.0, **extra):
        return self.lin(x) * scale * extra.get("x", 1)


def _wrapped_forward():
    import functools

    def inner(self, x, k):
        return self.lin(x) * k

    @functools.wraps(inner)
    def forward(self, *args, **kwargs):
        return inner(self, *args, **kwargs)

    forward.__signature__ = inspect.signature(inner)  # what the call binds is not this
    return forward


class Signed(torch.nn.Module):
    forward = _wrapped_forward()

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)


@pytest.mark.parametrize(
    "model_kind, kwargs",
    [
        (PositionalOnly, {"x": 2}),  # a keyword named like a positional-only parameter
        (PositionalOnly, {"scale": 0.5}),
        (Signed, {"k": 2}),  # a forward carrying a __signature__ of another function
    ],
)
def test_the_arguments_bind_as_the_frame_binds_them(model_kind, kwargs):
    torch.manual_seed(0)
    model = model_kind().eval()
    compiled = on_graph_only(model)
    with torch.no_grad():
        for _ in range(3):
            check(compiled, model, torch.randn(4, 8), **kwargs)
    assert fast_calls() == 2


@pytest.mark.parametrize(
    "args, kwargs",
    [((), {}), ((1, 2), {}), ((1,), {"x": 1}), ((1,), {"scale": 2.0, "x": 1}), ((1,), {"y": 1})],
)
def test_a_call_that_does_not_bind_raises_eager_s_error(args, kwargs):
    """The binder raises the frame's TypeError, naming forward as Dynamo and eager do."""
    model, compiled = compiled_lin()
    with pytest.raises(TypeError) as expected:
        model(*args, **kwargs)
    with pytest.raises(TypeError) as raised:
        compiled(*args, **kwargs)
    assert str(raised.value) == str(expected.value)


def test_closure_cells_named_like_anything_and_emptied():
    def make():
        _gd_cells = 2.0  # a closure variable named like the binder's own names

        def forward(self, x):
            return self.lin(x) * _gd_cells

        def empty():
            nonlocal _gd_cells
            del _gd_cells

        return forward, empty

    forward, empty = make()
    cls = type("Closed", (Lin,), {"forward": forward})
    torch.manual_seed(0)
    model = cls().eval()
    compiled = on_graph_only(model)
    with torch.no_grad():
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))
        empty()
        with pytest.raises(NameError):
            model(torch.randn(4, 8))
        with pytest.raises(NameError):
            compiled(torch.randn(4, 8))
    assert fast_calls() == 1


def test_regional_blocks_compiled_with_other_options_keep_theirs():
    torch.manual_seed(0)
    blocks = torch.nn.Sequential(*[Block() for _ in range(3)]).eval()
    blocks[0].compile(backend="graphdispatch", options={"graph_only": True})
    blocks[1].compile(backend="graphdispatch", options={"graph_only": True, "fast_path": False})
    blocks[2].compile(backend="eager")
    with torch.no_grad():
        blocks(torch.randn(4, 8))
    from graphdispatch._fast_path import fast_path_of

    assert fast_path_of(blocks[0]) is not None
    assert fast_path_of(blocks[1]) is None and fast_path_of(blocks[2]) is None


def test_an_entry_dynamo_invalidated_is_not_run():
    """A class the guards matched by identity dies: Dynamo invalidates the entry (its code
    None); a new class at the same address must not pass the old check."""
    import gc

    class Neg:
        pass

    class Configured(Lin):
        def __init__(self) -> None:
            super().__init__()
            self.cfg = None

        def forward(self, x):
            y = self.lin(x)
            return -y if isinstance(self.cfg, Neg) else y

    model, compiled = compiled_lin(Configured().eval())
    with torch.no_grad():
        plain = type("A", (), {})
        model.cfg = plain()
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))
        dead = id(plain)
        model.cfg = None
        del plain
        gc.collect()
        for _ in range(5000):  # a new class at the dead one's address, where the heap allows
            reborn = type("A", (Neg,), {})
            if id(reborn) == dead:
                break
        model.cfg = reborn()
        for _ in range(2):
            check(compiled, model, torch.randn(4, 8))


def test_a_torch_nn_module_compiled_whole_takes_the_fast_path():
    """Dynamo's trace rules skip a torch.nn module's ``forward`` (nn.Sequential, nn.Linear), so
    OptimizedModule compiles a wrapper of its ``__call__`` instead: that frame is the one armed,
    and every change below it (weights written, a layer replaced, train/eval) gives eager's
    values."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(8, 8), torch.nn.Dropout(0.5), torch.nn.GELU(), torch.nn.Linear(8, 4)
    ).eval()
    compiled = on_graph_only(model)
    with torch.no_grad():
        check(compiled, model, torch.randn(4, 8))
        replays = graphdispatch.stats()["replays"]
        for _ in range(3):
            check(compiled, model, torch.randn(4, 8))
        assert fast_calls() == 3 and through_dynamo() == {}
        assert graphdispatch.stats()["replays"] == replays + 3
        model[0].weight.mul_(-1)  # read in place
        check(compiled, model, torch.randn(4, 8))
        model[3] = torch.nn.Linear(8, 4)  # a layer replaced
        check(compiled, model, torch.randn(4, 8))
        # Hooks go back through Dynamo, whose values are its own: its guards skip a torch.nn
        # module's hooks (torch._dynamo.config.skip_nnmodule_hook_guards), with any backend.
        handle = model.register_forward_hook(lambda m, a, out: out * 2)
        compiled(torch.randn(4, 8))
        assert through_dynamo().get("hooks") == 1
        handle.remove()
        check(compiled, model, torch.randn(4, 8))
    # train mode: dropout draws a new mask per call, so compare its zeros' pattern only
    model.train()
    with torch.no_grad():
        torch.manual_seed(1)
        out = compiled(torch.ones(4, 8))
        torch.manual_seed(1)
        torch.testing.assert_close(out, model(torch.ones(4, 8)), rtol=0, atol=0)
    assert fast_calls() >= 5
    with torch.no_grad():
        assert graphdispatch.explain(model.eval(), torch.randn(4, 8)).fast_path_armed


def test_diffusers_lora_hotswap_stays_on_the_fast_path_with_eager_values():
    """diffusers' LoRA hot-swap (``enable_lora_hotswap``, then ``load_lora_adapter(...,
    hotswap=True)``) writes the new adapter's weights and scaling into the tensors the graph
    reads in place: no guard changes, every call on the fast path, no new capture, eager's
    values for the new adapter."""
    pytest.importorskip("diffusers")
    peft = pytest.importorskip("peft")
    from peft.utils import get_peft_model_state_dict

    from graphdispatch.tiny_pipelines import tiny_flux_inputs, tiny_flux_transformer

    def adapter(alpha: int) -> dict:
        donor = tiny_flux_transformer()
        config = peft.LoraConfig(
            r=4, lora_alpha=alpha, target_modules=["to_q", "to_k", "to_v"], init_lora_weights=False
        )
        donor.add_adapter(config, adapter_name="x")
        return get_peft_model_state_dict(donor, adapter_name="x")

    torch.manual_seed(0)
    model = tiny_flux_transformer().eval()
    first, second = adapter(4), adapter(8)
    model.enable_lora_hotswap(target_rank=8)
    model.load_lora_adapter(first, prefix=None, adapter_name="default_0")
    compiled = on_graph_only(model)
    kwargs = tiny_flux_inputs()
    with torch.no_grad():
        before = compiled(**kwargs)[0]
        torch.testing.assert_close(before, model(**kwargs)[0], rtol=0, atol=0)
        model.load_lora_adapter(second, prefix=None, adapter_name="default_0", hotswap=True)
        for _ in range(2):
            out = compiled(**kwargs)[0]
            torch.testing.assert_close(out, model(**kwargs)[0], rtol=0, atol=0)
        assert not torch.equal(out, before)  # the swap changed the values
    stats = graphdispatch.stats()
    assert fast_calls() == 2 and through_dynamo() == {}
    assert stats["captures"] == 1 and stats["replays"] == 3
