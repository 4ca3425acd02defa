#!/usr/bin/env bash
# The main job: installs what it needs, then runs python -m graphdispatch.demo: three tiny
# diffusers pipelines with random weights (Stable Diffusion's UNet, SD3's MMDiT, Flux's
# transformer; --pipeline picks one) through eager PyTorch, the default route and the graph
# route of the best device, comparing each route's images with eager's. Arguments go to the
# demo (--pipeline, --steps, --json, --threads); exit status 1 when a route misses its rule.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m graphdispatch.demo "$@"
