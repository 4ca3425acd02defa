#!/usr/bin/env bash
# On a machine with a GPU, PyTorch, CMake, ninja and scikit-build-core (no network): builds the
# extension against that machine's torch, runs the device-marked tests and the demo, and writes
# logs under $OUT (default ./out), and the pipeline bench beside cudagraph trees. Budget: under
# 8 minutes. Packages missing there (diffusers, transformers) can travel as wheels in .whl/ (see
# docs); without them the diffusers tests skip and the demo is not run. The device tests include
# a pool emptied and captured into again (test_cuda_graphs.py, case G3). The test device
# (csrc/test_device/) runs the device-graph routes on every CI run; what only a real device
# shows is listed in its Note [Test device] (csrc/test_device/test_device.h), and is what this
# script checks. Only `device`-marked tests run here: the test device, loaded, would be the
# process's torch.accelerator in place of CUDA.
#
# The install goes into a venv that sees the system's packages (--system-site-packages: its
# torch, scikit-build-core, pybind11), made without pip (--without-pip: no ensurepip needed) and
# driven by the system's pip, which allows installing into a venv where PEP 668 refuses the
# system Python. No CUDA toolkit is needed, of any version: CMakeLists.txt builds against
# torch's headers and CPU libraries, not through find_package(Torch) (case G7).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-out}
mkdir -p "$OUT"
SYSTEM_PY=${PYTHON:-python3}
VENV=${GD_VENV:-/tmp/gd-venv}
status=0
# Every step gets at most its own cap and what is left of the 8 minutes (480 s).
limit() { local left=$((470 - SECONDS)); echo $(( left < $1 ? (left > 0 ? left : 1) : $1 )); }

"$SYSTEM_PY" -m venv --system-site-packages --without-pip "$VENV" \
  || { echo "cannot make a venv with $SYSTEM_PY"; exit 1; }
PY=$VENV/bin/python
"$PY" -c "import sysconfig, os, sys; h = os.path.join(sysconfig.get_paths()['include'], 'Python.h');
sys.exit(0 if os.path.exists(h) else f'no Python headers ({h}): install python{sys.version_info[0]}.{sys.version_info[1]}-dev')" \
  || exit 1

if [ -d .whl ]; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/gd-site .whl/*.whl \
    && export PYTHONPATH=/tmp/gd-site${PYTHONPATH:+:$PYTHONPATH}
fi

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name())"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== build (pip install --no-index --no-build-isolation -e . into $VENV)"
start=$SECONDS
CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) timeout "$(limit 300)" "$PY" -m pip install -q --no-index \
  --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1 \
  || { echo "build failed"; tail -40 "$OUT/build.log"; exit 1; }
echo "built in $((SECONDS - start)) s" | tee -a "$OUT/build.log"

echo "== device tests"
timeout "$(limit 240)" "$PY" -m pytest -q -m device -p no:cacheprovider tests 2>&1 | tee "$OUT/device-tests.log" | tail -25
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if "$PY" -c "import diffusers, transformers" 2>/dev/null; then
  echo "== demo"
  timeout "$(limit 180)" "$PY" -m graphdispatch.demo 2>&1 | tee "$OUT/demo.log" | tail -20
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  echo "== pipeline bench (eager, default, graph routes, reduce-overhead)"
  timeout "$(limit 240)" "$PY" bench/pipelines.py --device cuda --steps 20 2> "$OUT/pipelines.err" \
    | tee "$OUT/pipelines.md"
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
else
  echo "== demo and pipeline bench skipped: diffusers or transformers is not installed here" \
    | tee "$OUT/demo.log"
fi
exit $status
