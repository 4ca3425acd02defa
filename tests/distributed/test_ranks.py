"""C26, C51, C60: two ranks under torchrun (gloo) compile a forward holding functional
collectives; both capture the same signatures in the same order, replay, and match eager, on
the emulated graph and on the CPU graph."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(),
    reason="needs torch.distributed with gloo",
)


def run_two_ranks(worker: str, tmp_path: Path, kind: str) -> None:
    """Runs ``worker`` (a file beside this one) on two ranks under torchrun, capturing into
    ``kind`` graphs; each writes its report to ``tmp_path / f"rank{r}.json"``. On failure the
    message carries each rank's own log, with the Python stacks of every thread when a rank was
    killed by a signal (faulthandler)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONFAULTHANDLER": "1"}
    logs = tmp_path / "logs"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "--log-dir",
            str(logs),
            "--tee",
            "3",
            str(Path(__file__).with_name(worker)),
            str(tmp_path),
            kind,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    if done.returncode != 0:
        ranks = "".join(
            f"\n--- {log.relative_to(logs)} ---\n{log.read_text()[-4000:]}"
            for log in sorted(logs.rglob("*.log"))
        )
        pytest.fail(
            f"torchrun exited {done.returncode}{ranks}\n--- torchrun ---\n{done.stderr[-2000:]}"
        )


# Both graph kinds a CPU has. On the CPU graph a functional collective's result is read only
# after its wait (case C60): the work is registered under the tensor the replayed call returns.
KINDS = pytest.mark.parametrize("kind", ["emulated", "cpu"])


@KINDS
def test_c26_two_ranks_capture_in_lockstep_and_replay(tmp_path, kind):
    run_two_ranks("allreduce_worker.py", tmp_path, kind)
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for report in ranks:
        assert max(report["diffs"]) <= 1e-5, report
        stats = report["stats"]
        assert stats["fallbacks"] == {}, stats
        # Two signatures (batch 3 and 2), each captured once; every call a replay.
        assert stats["captures"] == 2 and stats["replays"] == 6, stats
    # Lockstep: the same shapes in the same order on both ranks, so the collectives inside the
    # warmup, capture and replays pair up. Bytes held may differ: whether gloo's work still
    # holds the all_reduce's input when the capture ends (its thread's timing) decides whether
    # that intermediate goes to the entry's arena or the shared workspace (Note [Shared
    # workspace]); both replay the same values.
    assert ranks[0]["shapes"] == ranks[1]["shapes"]
    counters = [{k: v for k, v in r["stats"].items() if k != "entry_bytes"} for r in ranks]
    assert counters[0] == counters[1]


@KINDS
def test_c51_context_parallel_flux_captures_once_per_rank_and_replays(tmp_path, kind):
    # diffusers' enable_parallelism(ContextParallelConfig(ulysses_degree=2)): the all-to-alls
    # of Ulysses attention run inside the captured graph on every replay.
    pytest.importorskip("diffusers")
    run_two_ranks("context_parallel_worker.py", tmp_path, kind)
    for rank in (0, 1):
        report = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert report["equal"] == [True] * 4, report  # bit-exact to eager context parallelism
        stats = report["stats"]
        assert stats["routes"] == {"graph_only": 1} and stats["fallbacks"] == {}, stats
        assert stats["captures"] == 1 and stats["replays"] == 4, stats
