"""Helpers for the plugin-integration tests (Note [Lazy loading]; cases C17–C20) run their checks in
fresh subprocesses: what an import loads, what a fork inherits and what a first compile sets up
can only be seen in a process that has not done them yet. Each script prints one JSON object
on its last line, and tests assert on that (module sets, counters), not on exceptions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

# Every child wait in these scripts has its own timeout; this one only stops a runaway script.
SCRIPT_TIMEOUT_S = 120

HEAVY = ("torch._dynamo", "torch._inductor", "sympy")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without GRAPHDISPATCH_* settings (a developer's shell must not leak in)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHDISPATCH_")}
    env.update(extra)
    return env


def run_script(
    code: str,
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float = SCRIPT_TIMEOUT_S,
) -> dict:
    """Runs ``code`` in a fresh ``sys.executable`` and returns the JSON of its last stdout line,
    with the exit status as ``_returncode``; ``check``: a non-zero exit fails the test. Also
    used by tests/test_compat_mindiesd.py; tests that read a child's exit or stderr rather than
    a JSON line run it with subprocess directly."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env or clean_env(),
    )
    if check and proc.returncode != 0:
        pytest.fail(
            f"script exited {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    lines = proc.stdout.strip().splitlines()
    if not lines:
        pytest.fail(f"script printed nothing (rc={proc.returncode})\n--- stderr\n{proc.stderr}")
    result = json.loads(lines[-1])
    result["_returncode"] = proc.returncode
    return result
