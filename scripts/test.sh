#!/usr/bin/env bash
# The README's second command: installs everything the tests need and runs the whole suite.
# Extra arguments go to pytest (e.g. scripts/test.sh tests/unit -k exemption).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
