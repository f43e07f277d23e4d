#!/usr/bin/env bash
# Regenerates constraints.txt: the newest versions of the runtime dependencies that pyproject.toml allows,
# resolved in a scratch virtual environment (the test extras are not pinned). Run the tests afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
python3 -m venv "$scratch/venv"
"$scratch/venv/bin/python" -m pip install --quiet --upgrade pip
"$scratch/venv/bin/python" -m pip install --quiet .
{
    sed -n '1,/^# Refresh with/p' constraints.txt
    "$scratch/venv/bin/python" -m pip freeze --exclude preemption-toleration
} > "$scratch/constraints.txt"
mv "$scratch/constraints.txt" constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) pinned packages"
