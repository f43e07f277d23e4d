#!/usr/bin/env bash
# The README's second command: installs everything the tests need and runs the whole suite.
# That includes the local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler,
# kubectl and KWOK of Kubernetes 1.37.2, 1.36.3 and 1.35.4, helm for the chart's tests and Kueue's controller
# manager for its test bed, built once with the machine's Go from the modules pinned in testbed/ and cached
# outside the repository (minutes the first time; see docs/quick-start.md), and podman with a Debian base for
# building and running the image. Lint, format and type checks run first (ruff, mypy), then the tests: the
# whole suite on 1.37.2 (the default), then, side by side, on 1.36.3 and on 1.35.4, the oldest supported minor:
# the control plane's baseline, the manifests, the guard, upstream's scenarios, the scheduler's handling of a
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
OTHER_RELEASES=(1.36.3 1.35.4)
if [ "$#" -gt 0 ]; then
    .venv/bin/ptol dev cluster install --kubernetes-version 1.37.2 --kubernetes-version 1.36.3 \
        --kubernetes-version 1.35.4 --kueue
    exec .venv/bin/python -m pytest "$@"
fi
# Where CI's time goes (docs/development.md, "CI time"): the default release, Kueue and the image's Debian base
# first (the base beside the Go builds); the other releases built behind the default's suite at the lowest CPU
# priority, then their suites run side by side, each on its own control plane.
.venv/bin/ptol dev cluster install --kubernetes-version 1.37.2 --kueue --image-base
logs="$(mktemp -d)"
setsid nice -n 19 .venv/bin/ptol dev cluster install "${OTHER_RELEASES[@]/#/--kubernetes-version=}" \
    > "${logs}/install.log" 2>&1 &
builds=$!
trap 'kill -- -"${builds}" 2>/dev/null || true' EXIT  # the builds' process group, Go's compilers with it
# the renderers' test runs every release's kubectl: it waits for their builds
AFTER_BUILDS=tests/integration/test_kustomize_renderers.py
echo "==> the whole suite on Kubernetes ${PTOL_KUBERNETES_VERSION:-1.37.2} (but ${AFTER_BUILDS})"
# the slowest tests named at the end
.venv/bin/python -m pytest --durations=30 --ignore="${AFTER_BUILDS}"
echo "==> Kubernetes ${OTHER_RELEASES[*]} built behind it"
if ! wait "${builds}"; then
    cat "${logs}/install.log"
    exit 1
fi
trap - EXIT
tail -n 5 "${logs}/install.log"
echo "==> ${AFTER_BUILDS}"
.venv/bin/python -m pytest -p no:cacheprovider "${AFTER_BUILDS}"
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
suites=()
for release in "${OTHER_RELEASES[@]}"; do
    PTOL_KUBERNETES_VERSION="${release}" .venv/bin/python -m pytest -p no:cacheprovider --durations=10 \
        --basetemp="${logs}/tmp-${release}" "${EACH_RELEASE[@]}" > "${logs}/${release}.log" 2>&1 &
    suites+=("$!")
done
failed=0
for index in "${!OTHER_RELEASES[@]}"; do
    wait "${suites[${index}]}" || failed=1
    echo "==> on Kubernetes ${OTHER_RELEASES[${index}]}"
    cat "${logs}/${OTHER_RELEASES[${index}]}.log"
done
exit "${failed}"
