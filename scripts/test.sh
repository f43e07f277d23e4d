#!/usr/bin/env bash
# The README's second command: installs everything the tests need and runs the whole suite.
# That includes the local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl and KWOK of Kubernetes 1.37.2, 1.36.3 and 1.35.4, helm for the chart's tests and Kueue's controller
# manager for its test bed, built once with the machine's Go from the modules pinned in testbed/ and cached
# outside the repository (minutes the first time; see docs/quick-start.md), and podman with a Debian base for
# building and running the image. Lint, format and type checks run first (ruff, mypy), then the tests: the
# whole suite on 1.37.2 (the default), then on 1.36.3 and on 1.35.4, the oldest supported minor, the control
# plane's baseline, the manifests, the guard, upstream's scenarios, the scheduler's handling of a refused
# victim, the ValidatingAdmissionPolicy, kubectl drain, the Helm chart and steering. Extra arguments go to one
# pytest run instead (e.g. scripts/test.sh tests/unit -k exemption; PTOL_KUBERNETES_VERSION=1.35.4 selects the
# release).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/image-tools.sh
echo "==> ruff check, ruff format --check, mypy (pyproject.toml configures them)"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
.venv/bin/ptol dev cluster install --kubernetes-version 1.37.2 --kubernetes-version 1.36.3 \
    --kubernetes-version 1.35.4 --kueue
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
echo "==> the whole suite on Kubernetes ${PTOL_KUBERNETES_VERSION:-1.37.2}"
# the slowest tests named at the end, where CI's time goes (docs/development.md, "CI time")
.venv/bin/python -m pytest --durations=30
# what every supported release runs
EACH_RELEASE=(
    tests/integration/test_smoke.py tests/integration/test_manifests.py tests/integration/test_guard.py
    tests/integration/test_guard_upstream.py tests/integration/test_scheduler_preemption.py
    tests/integration/test_admission_policy.py tests/integration/test_drain.py
    tests/integration/test_chart.py tests/integration/test_chart_install.py
    tests/integration/test_steering.py tests/integration/test_steering_audit.py
    tests/integration/test_steering_resume.py tests/integration/test_steering_faults.py
    tests/integration/test_steering_replicas.py tests/integration/test_run_replicas.py
    tests/integration/test_replicas.py
)
for release in 1.36.3 1.35.4; do
    echo "==> on Kubernetes ${release}"
    PTOL_KUBERNETES_VERSION="${release}" .venv/bin/python -m pytest --durations=10 "${EACH_RELEASE[@]}"
done
