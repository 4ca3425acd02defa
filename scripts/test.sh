#!/usr/bin/env bash
# The whole test suite: installs what it needs (scripts/setup.sh), checks the style, then runs the
# C++ runtime's GoogleTest suite and portdiff's (both built with warnings as errors), and pytest.
# GPU tests are marked and skip without a device.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh -Ccmake.define.GRAPHDISPATCH_BUILD_TESTS=ON \
  -Ccmake.define.GRAPHDISPATCH_WARNINGS_AS_ERRORS=ON

# Seconds: the tree must stay as .clang-format and pyproject.toml's [tool.ruff] format it
# (fix: `.venv/bin/clang-format -i FILE`, `.venv/bin/ruff format`, `.venv/bin/ruff check --fix`).
echo "== Style (clang-format, ruff)"
git ls-files -z '*.h' '*.cpp' | xargs -0 .venv/bin/clang-format --dry-run --Werror
.venv/bin/ruff format --check --quiet .
.venv/bin/ruff check --quiet .

echo "== C++ runtime (GoogleTest via ctest)"
ctest --test-dir build/python --output-on-failure

echo "== portdiff (GoogleTest via ctest)"
cmake -S tools/portdiff -B build/portdiff -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPORTDIFF_WARNINGS_AS_ERRORS=ON >/dev/null
cmake --build build/portdiff
ctest --test-dir build/portdiff --output-on-failure

echo "== Python (pytest)"
.venv/bin/python -m pytest -q "$@"
