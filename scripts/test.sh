#!/usr/bin/env bash
# The README's second command: installs everything the tests need and runs the whole suite.
# That includes the local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl and KWOK of Kubernetes 1.37.2, 1.36.3 and 1.35.4, helm for the chart's tests and Kueue's controller
# manager for its test bed, built once with the machine's Go from the modules pinned in testbed/ and cached
# outside the repository (minutes the first time; see docs/quick-start.md), and podman with a Debian base for
# building and running the image. Lint, format and type checks run first (ruff, mypy), then the tests: the
# whole suite on 1.37.2 (the default) and, beside it once they are built, on 1.36.3 and on 1.35.4, the oldest
# supported minor: the control plane's baseline, the manifests, the guard, upstream's scenarios, the scheduler's handling of a
# refused victim, the ValidatingAdmissionPolicy, kubectl drain, the Helm chart and steering. Extra arguments go to
# one pytest run instead (e.g. scripts/test.sh tests/unit -k exemption; PTOL_KUBERNETES_VERSION=1.35.4 selects the
# release).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/image-tools.sh
echo "==> ruff check, ruff format --check, mypy (pyproject.toml configures them)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
if [ "$#" -gt 0 ]; then
    .venv/bin/ptol dev cluster install --kubernetes-version 1.37.2 --kubernetes-version 1.36.3 \
        --kubernetes-version 1.35.4 --kueue
    exec .venv/bin/python -m pytest "$@"
fi
# Where CI's time goes (docs/development.md, "CI time"): the default release, Kueue and the image's Debian base
# first (the base beside the Go builds); then the default's suite, and behind it, in a process group of its own,
# scripts/other-releases.sh: the other releases built at the lowest CPU priority, then their runs side by side.
.venv/bin/ptol dev cluster install --kubernetes-version 1.37.2 --kueue --image-base
logs="$(mktemp -d)"
setsid ./scripts/other-releases.sh "${logs}" > "${logs}/other-releases.log" 2>&1 &
behind=$!
trap 'kill -- -"${behind}" 2>/dev/null || true' EXIT  # its builds and runs with it
AFTER_BUILDS=tests/integration/test_kustomize_renderers.py  # in other-releases.sh: it runs every release's kubectl
echo "==> the whole suite on Kubernetes ${PTOL_KUBERNETES_VERSION:-1.37.2} (but ${AFTER_BUILDS})"
# the slowest tests named at the end
status=0
.venv/bin/python -m pytest --durations=30 --ignore="${AFTER_BUILDS}" || status=$?
wait "${behind}" || status=1
trap - EXIT
for part in other-releases install renderers 1.36.3 1.35.4; do
    if [ -f "${logs}/${part}.log" ]; then
        echo "==> ${part} (scripts/other-releases.sh)"
        if [ "${part}" = install ]; then tail -n 5 "${logs}/${part}.log"; else cat "${logs}/${part}.log"; fi
    fi
done
exit "${status}"
