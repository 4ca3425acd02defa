#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/setup.sh), then runs the C++ runtime's
# GoogleTest suite, portdiff's, and pytest. GPU tests are marked and skip without a device.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh -Ccmake.define.GRAPHDISPATCH_BUILD_TESTS=ON

echo "== C++ runtime (GoogleTest via ctest)"
ctest --test-dir build/python --output-on-failure

echo "== portdiff (GoogleTest via ctest)"
cmake -S tools/portdiff -B build/portdiff -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build/portdiff
ctest --test-dir build/portdiff --output-on-failure

echo "== Python (pytest)"
.venv/bin/python -m pytest -q "$@"
