"""The model the warm-start tests save, and the fresh processes that save and load it
(tests/test_warm_start.py).

``python tests/warm_start_child.py save JOBS.json`` saves each job's artifact (``save``) in
one fresh process, so no other test's state (a renamed device backend, registered ops) is
saved with it. ``python tests/warm_start_child.py load JOBS.json`` runs each job in order in
this one process and prints one JSON line per job: the loaded function (or, with
``cache_dir``, the model served by ``graphdispatch.warm_start``) called ``calls`` times on the
model (built with the job's ``variant``; Dynamo's guard check off with ``"guards": false``),
each output compared bit for bit with eager on the same model (or with the saving process's
``output``), with the graphdispatch counters of those calls, or the error the load or a call
raised.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import torch


class Tiny(torch.nn.Module):
    """Linear, LayerNorm, GELU, a buffer: a few ops of each kind the CPU graph records."""

    def __init__(self, hidden: int = 16) -> None:
        super().__init__()
        self.up = torch.nn.Linear(8, hidden)
        self.norm = torch.nn.LayerNorm(hidden)
        self.down = torch.nn.Linear(hidden, 4)
        self.register_buffer("shift", torch.linspace(-1, 1, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.gelu(self.norm(self.up(x)))) + self.shift


def run(model: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
    """What the tests compile: a module-level function calling the model (docs/usage.md)."""
    return model(*args, **kwargs)


def build(variant: str = "same") -> tuple[Tiny, torch.Tensor]:
    """The model of seed 0 and its input; ``variant``: "same", "scaled" (the same weights,
    then changed in place), "wider" (another hidden size), "double" (float64), "meta" (its
    parameters on the meta device)."""
    torch.manual_seed(0)
    model = Tiny(32 if variant == "wider" else 16).eval()
    x = torch.randn(2, 8)
    if variant == "scaled":
        with torch.no_grad():
            model.up.weight.mul_(2)
            model.shift.add_(1)
    elif variant == "double":
        model = model.double()
    elif variant == "meta":
        model = model.to("meta")
    return model, x


def save(path: str, options: dict[str, Any]) -> None:
    """``run`` on the tiny model compiled with ``options`` (``"graph_passes": True``: with
    ``patterns.fuse_rms_norm``), saved at ``path``, its output at ``path + ".pt"``: the serving
    recipe of docs/usage.md (a guard filter that keeps the inputs' tensor guards)."""
    from graphdispatch.patterns import fuse_rms_norm

    if options.get("graph_passes"):
        options = {**options, "graph_passes": [fuse_rms_norm]}
    model, x = build()
    compiled = torch.compile(
        run,
        fullgraph=True,
        backend="graphdispatch",
        options={**options, "guard_filter_fn": torch.compiler.keep_tensor_guards_unsafe},
    )
    with torch.no_grad():
        fn = compiled.aot_compile(((model, x), {}))
        out = fn(model, x)
        torch.testing.assert_close(out, model(x))
    fn.save_compiled_function(path)
    torch.save(out, path + ".pt")


def save_and_report(job: dict[str, Any]) -> Any:
    """Saves ``job["path"]``, or fills ``job["cache_dir"]`` through graphdispatch.warm_start
    (returning its report)."""
    import graphdispatch

    if "cache_dir" not in job:
        return save(job["path"], job["options"])
    model, x = build()
    return graphdispatch.warm_start(
        model, [(x,)], cache_dir=job["cache_dir"], options=job["options"]
    ).report


def load_and_call(job: dict[str, Any]) -> dict[str, Any]:
    import graphdispatch

    version = graphdispatch.__version__
    graphdispatch.__version__ = job.get("graphdispatch_version", version)
    model, x = build(job.get("variant", "same"))
    graphdispatch.reset()
    report = None
    try:
        if "cache_dir" in job:  # graphdispatch.warm_start: served as the model
            served = graphdispatch.warm_start(
                model, [(x,)], cache_dir=job["cache_dir"], options=job["options"]
            )
            report = served.report

            def fn(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
                return served(x)

        else:
            with open(job["path"], "rb") as f:
                fn = torch.compiler.load_compiled_function(f)
            if not job.get("guards", True):
                fn.disable_guard_check()
        exact = []
        with torch.no_grad():
            for _ in range(job.get("calls", 3)):
                got = fn(model, x)
                # Inductor's kernels are not eager's: the saving process's output is the oracle.
                expected = torch.load(job["output"]) if "output" in job else model(x)
                exact.append(torch.equal(got, expected))
    except Exception as error:  # reported: the tests check which error
        return {"error": f"{type(error).__name__}: {error}"}
    finally:
        graphdispatch.__version__ = version
    stats = graphdispatch.stats()
    return {
        "report": report,
        "exact": exact,
        "captures": stats["captures"],
        "replays": stats["replays"],
        "fallbacks": stats["fallbacks"],
    }


if __name__ == "__main__":
    step = save_and_report if sys.argv[1] == "save" else load_and_call
    with open(sys.argv[2]) as f:
        jobs = json.load(f)
    for job in jobs:
        print(json.dumps(step(job)), flush=True)
