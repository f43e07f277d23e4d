#!/usr/bin/env bash
# The README's second command: installs everything the tests need and runs the whole suite.
# That includes the local control plane (etcd from Debian; kube-apiserver, kube-scheduler and kubectl
# v1.20.2 built once from Debian's source and cached outside the repository, ~7 minutes the first time).
# Lint, format and type checks run first (ruff, mypy), then the tests.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/unit -k exemption).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
echo "==> ruff check, ruff format --check, mypy (pyproject.toml configures them)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/ptol dev cluster install
exec .venv/bin/python -m pytest "$@"
