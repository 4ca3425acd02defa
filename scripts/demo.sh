#!/usr/bin/env bash
# The main job: installs what it needs, then runs a diffusers UNet and a DiT through
# graphdispatch's routes beside eager PyTorch (python -m graphdispatch.demo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m graphdispatch.demo "$@"
