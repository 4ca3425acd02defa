#!/usr/bin/env bash
# On a machine with a GPU, PyTorch, CMake and nvcc (no network): builds the extension in place
# against that machine's torch, runs the device-marked tests and the demo, and writes logs
# under $OUT (default ./out), and the pipeline bench beside cudagraph trees. Budget: under 8 minutes.
# Packages missing there (diffusers, transformers) can travel as wheels in .whl/ (see docs); without them
# the diffusers tests skip and the demo is not run.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
status=0

if [ -d .whl ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/gd-site .whl/*.whl \
    && export PYTHONPATH=/tmp/gd-site${PYTHONPATH:+:$PYTHONPATH}
fi

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== build (pip install --no-build-isolation -e .)"
timeout 300 "$PY" -m pip install -q --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 \
  || { echo "build failed"; tail -40 "$OUT/build.log"; exit 1; }

echo "== device tests"
timeout 240 "$PY" -m pytest -q -m device -p no:cacheprovider tests 2>&1 | tee "$OUT/device-tests.log" | tail -25
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if "$PY" -c "import diffusers, transformers" 2>/dev/null; then
  echo "== demo"
  timeout 180 "$PY" -m graphdispatch.demo 2>&1 | tee "$OUT/demo.log" | tail -20
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== pipeline bench (eager, default, graph routes, reduce-overhead)"
  timeout 240 "$PY" bench/pipelines.py --device cuda --steps 20 2> "$OUT/pipelines.err" \
    | tee "$OUT/pipelines.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "== demo and pipeline bench skipped: diffusers or transformers is not installed here" \
    | tee "$OUT/demo.log"
fi
exit $status
