#!/usr/bin/env bash
# Installs everything graphdispatch and portdiff need on a fresh Debian machine, into a
# project-local virtual environment (.venv). Safe to run again: it only adds what is missing
# and rebuilds incrementally.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(build-essential cmake ninja-build pkg-config git libgit2-dev libgtest-dev nlohmann-json3-dev libcli11-dev libssl-dev python3-venv)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# One set-up at a time: two runs sharing build/python would corrupt each other's build.
mkdir -p build
exec 9>build/.setup.lock
flock 9

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
PIP=(.venv/bin/python -m pip -q --disable-pip-version-check)
# torch 2.13.0 (CPU) comes from the wheel on local disk; the rest from PyPI.
.venv/bin/python -c "import torch; assert torch.__version__.startswith('2.13.0')" 2>/dev/null \
  || "${PIP[@]}" install torch==2.13.0
"${PIP[@]}" install "scikit-build-core>=0.10" ninja "pytest>=8" "diffusers>=0.30" "transformers>=4.40" "tqdm>=4.60" "peft>=0.15" expecttest matplotlib
# The style checkers of scripts/test.sh, pinned: another version formats differently.
"${PIP[@]}" install ruff==0.17.6 clang-format==23.1.5
# --no-build-isolation: build against the torch installed above (an isolated build would
# fetch another torch). Editable: Python sources are used from src/, the extension is built
# in build/python and reused, so a second run only recompiles what changed. Extra arguments
# go to pip (the test script turns on the GoogleTest target this way).
"${PIP[@]}" install --no-build-isolation -e . "$@"
