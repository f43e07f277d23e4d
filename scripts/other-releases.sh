#!/usr/bin/env bash
# Part of scripts/test.sh, run behind the default release's suite: builds Kubernetes 1.36.3 and 1.35.4 at the
# lowest CPU priority, then runs the kustomize renderers' test (it runs every release's kubectl) and what every
# supported release runs on 1.36.3 and on 1.35.4, side by side, each on its own control plane. Each run's output
# goes to a file of LOGS (the one argument); exits non-zero if the builds or a run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
logs="$1"
RELEASES=(1.36.3 1.35.4)
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
nice -n 19 .venv/bin/ptol dev cluster install "${RELEASES[@]/#/--kubernetes-version=}" > "${logs}/install.log" 2>&1
runs=()
.venv/bin/python -m pytest -p no:cacheprovider --basetemp="${logs}/tmp-renderers" \
    tests/integration/test_kustomize_renderers.py > "${logs}/renderers.log" 2>&1 &
runs+=("$!")
for release in "${RELEASES[@]}"; do
    PTOL_KUBERNETES_VERSION="${release}" .venv/bin/python -m pytest -p no:cacheprovider --durations=10 \
        --basetemp="${logs}/tmp-${release}" "${EACH_RELEASE[@]}" > "${logs}/${release}.log" 2>&1 &
    runs+=("$!")
done
failed=0
for run in "${runs[@]}"; do
    wait "${run}" || failed=1
done
exit "${failed}"
