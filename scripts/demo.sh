#!/usr/bin/env bash
# The README's first command: sets everything up and runs the main job.
# For now the main job is the offline check of the samples, the way a GitOps pipeline runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "==> ptol validate -f config/samples"
.venv/bin/ptol validate -f config/samples
echo "==> every sample is valid"
