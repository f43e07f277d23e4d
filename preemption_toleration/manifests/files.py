"""Every generated file, by path from the repository's root: what `ptol dev manifests` writes and its
`--check` compares (pure: the CLI runs helm and reads and writes the files)."""

from __future__ import annotations

from collections.abc import Callable

from preemption_toleration.manifests.admission_policy import admission_policy_yaml
from preemption_toleration.manifests.chart import CHART, chart_files
from preemption_toleration.manifests.crd import crd_yaml
from preemption_toleration.manifests.deletions import DELETIONS, deletion_files
from preemption_toleration.manifests.kopf_peering import kopf_peering_yaml
from preemption_toleration.manifests.rendered import RENDERED, rendered_file, without_release
from preemption_toleration.manifests.webhook_configurations import service_manifests_yaml

# helm's output for a chart template (by file name) rendered with some values set
RenderTemplate = Callable[[str, tuple[str, ...]], str]


def code_files() -> dict[str, str]:
    """What the code builds: config/'s CRDs, webhook configurations and ValidatingAdmissionPolicy, and the
    chart's generated files."""
    return {
        "config/crd/preemptiontolerationpolicies.yaml": crd_yaml(),
        "config/crd/kopf-peering.yaml": kopf_peering_yaml(),
        "config/webhook/webhooks.yaml": service_manifests_yaml(),
        "config/components/validating-admission-policy/admission-policy.yaml": admission_policy_yaml(),
        **chart_files(),
    }


def rendered_files(render: RenderTemplate) -> dict[str, str]:
    """config/'s files rendered from the chart's templates: the `RENDERED` ones and the variants' delete
    patches. The chart's generated templates must be written (`code_files`) before they are rendered."""
    files = {entry.path: rendered_file(entry, render(entry.template, entry.values)) for entry in RENDERED}
    for deletions in DELETIONS:
        default = without_release(render(deletions.template, ()))
        variant = without_release(render(deletions.template, deletions.values))
        files |= deletion_files(deletions, default, variant, f"{CHART}/templates/{deletions.template}")
    return files


def all_files(render: RenderTemplate) -> dict[str, str]:
    """Every generated file: `code_files` and `rendered_files`."""
    return {**code_files(), **rendered_files(render)}
