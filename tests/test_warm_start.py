"""Warm start (Note [Warm start] in src/graphdispatch/_warm_start.py): a function compiled with
``aot_compile`` and saved in one fresh process, loaded in another (tests/warm_start_child.py)
and checked bit for bit against eager, its captures and replays counted; every bad artifact
refused with an error naming why, never run.

One child saves every artifact and one loads them all (each a few seconds of imports), so the
jobs are planned together and each test reads its job's result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from warm_start_child import build, run

import graphdispatch

HERE = Path(__file__).resolve().parent
TORCH_VERSION = torch.__version__
UP_WEIGHT = "L_model_modules_up_parameters_weight_"
GRAPH_ONLY = {"graph_only": True}


def child(step: str, jobs: list[dict[str, Any]], folder: Path) -> list[Any]:
    """What ``warm_start_child.py step`` printed for each job, run in one fresh process."""
    (folder / f"{step}.json").write_text(json.dumps(jobs))
    result = subprocess.run(
        [sys.executable, str(HERE / "warm_start_child.py"), step, str(folder / f"{step}.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(jobs), result.stdout + result.stderr
    return [json.loads(line) for line in lines]


def edited(source: Path, path: Path, edit: Any) -> Path:
    path.write_bytes(edit(source.read_bytes()))
    return path


def _other_torch(data: bytes) -> bytes:
    old = f'"torch": "{TORCH_VERSION}"'.encode()
    new = f'"torch": "{TORCH_VERSION[:-1]}9"'.encode()  # same length: the outer pickle holds
    assert old in data
    return data.replace(old, new)


def _flip_body_byte(data: bytes) -> bytes:
    at = data.index(b"graphdispatch-warm-start\n")
    at = data.index(b"\n", at + 26) + 1000  # inside the body, after the header line
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """{job name: what the child reported}."""
    tmp = tmp_path_factory.mktemp("warm_start")
    cpu, emulated, passes, compile, inductor = (
        tmp / f"{name}.bin" for name in ("cpu", "emulated", "passes", "compile", "default")
    )
    saved = child(
        "save",
        [
            {"path": str(cpu), "options": GRAPH_ONLY},
            {"path": str(emulated), "options": {"graph_only": True, "device_graph": "emulated"}},
            # A graph pass may read the nodes' fake tensors: they travel, and are rebuilt.
            {"path": str(passes), "options": {"graph_only": True, "graph_passes": True}},
            {"path": str(compile), "options": {"graph_with_compile": True}},
            {"path": str(inductor), "options": {}},
            {"cache_dir": str(tmp / "cache"), "options": GRAPH_ONLY},
        ],
        tmp,
    )
    assert saved[-1] == ["compiled"]
    jobs = {
        "cpu": {"path": str(cpu)},
        "graph_with_compile": {"path": str(compile), "output": f"{compile}.pt"},
        "default": {"path": str(inductor), "output": f"{inductor}.pt"},
        "cpu_scaled": {"path": str(cpu), "variant": "scaled"},
        "emulated": {"path": str(emulated)},
        "passes": {"path": str(passes)},
        "other_torch": {"path": str(edited(cpu, tmp / "torch.bin", _other_torch))},
        "other_graphdispatch": {"path": str(cpu), "graphdispatch_version": "0.0.1"},
        "edited": {"path": str(edited(cpu, tmp / "edited.bin", _flip_body_byte))},
        "truncated": {"path": str(edited(cpu, tmp / "cut.bin", lambda d: d[: len(d) // 2]))},
        "wider": {"path": str(cpu), "variant": "wider"},
        "double": {"path": str(cpu), "variant": "double", "guards": False},
        "meta": {"path": str(cpu), "variant": "meta", "guards": False},
        "double_guarded": {"path": str(cpu), "variant": "double"},
        "cache": {"cache_dir": str(tmp / "cache"), "options": GRAPH_ONLY},
        "cache_scaled": {
            "cache_dir": str(tmp / "cache"),
            "options": GRAPH_ONLY,
            "variant": "scaled",
        },
    }
    return dict(zip(jobs, child("load", list(jobs.values()), tmp)))


@pytest.mark.parametrize("job", ["cpu", "emulated", "passes"])
def test_loaded_function_replays_bit_exact(loaded, job):
    out = loaded[job]
    assert out.get("error") is None
    assert out["exact"] == [True, True, True]
    # Recorded at the first call from the real inputs, replayed at every call.
    assert out["captures"] == 1 and out["replays"] == 3 and out["fallbacks"] == {}


def test_loaded_inductor_output_is_the_saved_one(loaded):
    # graph_with_compile on the CPU: Inductor's C++ wrapper, its bundled AOTAutograd entry
    # loaded rather than compiled again, captured at the first call, replayed at every call;
    # bit for bit the saving process's output (its kernels are the same).
    out = loaded["graph_with_compile"]
    assert out.get("error") is None and out["exact"] == [True, True, True]
    assert out["captures"] == 1 and out["replays"] == 3 and out["fallbacks"] == {}
    # The default route: Inductor alone, loaded the same way, no capture.
    out = loaded["default"]
    assert out.get("error") is None and out["exact"] == [True, True, True]
    assert out["captures"] == 0 and out["replays"] == 0


def test_weights_changed_after_saving_are_used(loaded):
    out = loaded["cpu_scaled"]  # eager on the changed weights is the oracle
    assert out.get("error") is None and out["exact"] == [True, True, True]
    assert out["replays"] == 3


@pytest.mark.parametrize(
    ("job", "message"),
    [
        ("other_torch", f"saved with torch {TORCH_VERSION[:-1]}9, this process has torch"),
        ("other_graphdispatch", "saved with graphdispatch 0.1.0, this process has graphdispatch"),
        ("edited", "its contents were changed (SHA-256 differs)"),
        # Parameters: Dynamo's flat name of the input (its source is not kept by aot_compile).
        ("wider", f"input '{UP_WEIGHT}': the artifact was saved for shape (16, 8), given (32, 8)"),
        ("double", f"input '{UP_WEIGHT}': the artifact was saved for dtype float32, given float64"),
        ("meta", f"input '{UP_WEIGHT}': the artifact was saved for device cpu, given meta"),
    ],
)
def test_bad_artifact_is_refused_naming_why(loaded, job, message):
    out = loaded[job]
    assert "exact" not in out  # nothing ran
    assert out["error"].startswith("WarmStartError") and message in out["error"], out["error"]


def test_dynamo_guards_refuse_first_where_they_check(loaded):
    # With the guard check on (the default), the buffer's tensor guard (kept by
    # keep_tensor_guards_unsafe) fails before the call reaches graphdispatch, naming it.
    error = loaded["double_guarded"]["error"]
    assert "GuardManager check failed" in error and "L['model']._buffers['shift']" in error


def test_truncated_artifact_is_refused(loaded):
    # The end of the file holds Dynamo's part: torch's own unpickler stops (no value returned).
    assert "exact" not in loaded["truncated"] and "truncated" in loaded["truncated"]["error"]


def test_plain_compile_returns_the_runner_unwrapped():
    # Only aot_compile's graphs are wrapped: a plain compile pays nothing for warm start.
    seen = []

    def backend(gm, example_inputs):
        compiled = graphdispatch.Backend(graph_only=True)(gm, example_inputs)
        seen.append(type(compiled).__name__)
        return compiled

    model, x = build()
    with torch.no_grad():
        torch.compile(model, backend=backend)(x)
    assert seen and "WarmStartFunction" not in seen


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_artifact_for_a_device_this_process_lacks_is_refused_at_load():
    from graphdispatch._warm_start import InputSpec, WarmStartError, check_device

    spec = InputSpec("tensor", "hidden_states", (1, 4), "float32", "cuda:0")
    with pytest.raises(WarmStartError, match=r"runs on cuda:0 \(input 'hidden_states'\); this"):
        check_device([spec])


def test_cache_dir_loads_what_another_process_saved(loaded):
    # The child's warm_start found the file this process wrote: loaded, recorded at its
    # warm-up call, replayed at every call, bit-exact; new weights (same shapes) are the same
    # key and are used.
    for job in ("cache", "cache_scaled"):
        out = loaded[job]
        assert out.get("error") is None and out["report"] == ["loaded"], out
        assert out["exact"] == [True, True, True]
        assert out["captures"] == 1 and out["replays"] == 4 and out["fallbacks"] == {}


def test_cache_dir_compiles_afresh_what_it_cannot_use(tmp_path, caplog):
    model, x = build()
    served = graphdispatch.warm_start(model, [(x,)], cache_dir=tmp_path, options=GRAPH_ONLY)
    (path,) = tmp_path.iterdir()
    path.write_bytes(path.read_bytes()[:-100])  # truncated
    torch._dynamo.reset()
    with caplog.at_level("WARNING", logger="graphdispatch"):
        served = graphdispatch.warm_start(model, [(x,)], cache_dir=tmp_path, options=GRAPH_ONLY)
    why = "its SHA-256 differs from the one written with it: truncated or edited"
    assert served.report == [f"compiled (ValueError: {why})"]
    assert any(
        why in r.getMessage() and "compiling afresh" in r.getMessage() for r in caplog.records
    )
    with torch.no_grad():
        assert torch.equal(served(x), model(x))
    # Rewritten: a third start loads it. Other options are another key: compiled, a second file.
    torch._dynamo.reset()
    assert graphdispatch.warm_start(
        model, [(x,)], cache_dir=tmp_path, options=GRAPH_ONLY
    ).report == ["loaded"]
    other = graphdispatch.warm_start(
        model, [(x,)], cache_dir=tmp_path, options={"graph_only": True, "max_entries": 2}
    )
    assert other.report == ["compiled"] and len(list(tmp_path.iterdir())) == 2


def test_options_that_cannot_be_saved_are_named_at_save():
    from graphdispatch._warm_start import WarmStartError

    model, x = build()
    compiled = torch.compile(
        run,
        fullgraph=True,
        backend="graphdispatch",
        options={"graph_only": True, "graph_passes": [lambda gm: None]},
    )
    with torch.no_grad():
        fn = compiled.aot_compile(((model, x), {}))
    with pytest.raises(WarmStartError, match=r"cannot save the options \['graph_only', 'graph_pa"):
        fn.save_compiled_function("unused")
