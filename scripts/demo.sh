#!/usr/bin/env bash
# The README's first command: sets everything up on a fresh Debian machine and runs the main job, the demo:
# a local control plane, `ptol run` (operator, webhooks, eviction guard) and the two use cases played with
# the real kube-scheduler. Without --once the cluster stays up afterwards (Ctrl-C stops everything).
# Arguments go to `ptol demo` (e.g. --once, --dir DIR, --guarantee-seconds N).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
.venv/bin/ptol dev cluster install
echo "==> ptol validate -f config/samples"
.venv/bin/ptol validate -f config/samples
exec .venv/bin/ptol demo "$@"
