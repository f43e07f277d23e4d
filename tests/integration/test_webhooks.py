"""The admission webhooks registered in the real API server: what kubectl prints."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable, Iterator

import pytest
from kubernetes_asyncio.client import ApiClient

from tests.integration.components import RunProcess, ptol_run_fixture
from tests.integration.conftest import Kubectl
from tests.integration.helpers import (
    ANSWER_SECONDS,
    REACTION_SECONDS,
    denied,
    eventually,
    past_the_second_of,
    unique_name,
)
from tests.integration.objects import (
    MIN,
    TOL,
    apply_class_and_policy,
    class_manifest,
    described_events,
    ours,
    policy_manifest,
    read_class,
    read_policy,
    ready,
    wait_annotations,
    wait_ready,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="session")]

LEGACY = "preemption-toleration.scheduling.sigs.k8s.io/toleration-seconds"


components = ptol_run_fixture("--resync-seconds", "3")


async def warned_then_done(
    run: Callable[..., Awaitable[subprocess.CompletedProcess[str]]], warning: str
) -> subprocess.CompletedProcess[str]:
    """`run("--dry-run=server")` until the webhook warns (its cache has what the warning is about), then
    `run()` itself: what it printed."""
    await eventually(
        lambda: run("--dry-run=server"), lambda r: "Warning:" in r.stderr, timeout=ANSWER_SECONDS, what=warning
    )
    return await run()


@pytest.fixture
def cleanup(kubectl: Kubectl) -> Iterator[list[tuple[str, str]]]:
    created: list[tuple[str, str]] = []
    yield created
    for kind, name in reversed(created):
        kubectl("delete", kind, name, "--ignore-not-found", "--wait=false", check=False)


async def test_10k_is_refused_with_our_message(components: RunProcess, alice: Kubectl, cleanup: list) -> None:
    name = unique_name("ten-k")
    cleanup.append(("priorityclass", name))
    result = alice("apply", "-f", "-", input=class_manifest(name, annotations={MIN: "10k"}), check=False)
    message = denied(result, "priorityclasses.validate.preemption-toleration.dev")
    assert message.startswith(f'PriorityClass "{name}": annotation {MIN}="10k" is not a base-10 integer')
    assert 'Fix: write a priority in plain digits, e.g. "10000".' in message


async def test_legacy_prefix_is_applied_with_a_warning(components: RunProcess, alice: Kubectl, cleanup: list) -> None:
    name = unique_name("legacy")
    cleanup.append(("priorityclass", name))
    result = alice("apply", "-f", "-", input=class_manifest(name, annotations={LEGACY: "600"}))
    assert f"priorityclass.scheduling.k8s.io/{name} created" in result.stdout
    assert f'Warning: PriorityClass "{name}": {LEGACY}="600" is ignored (legacy prefix' in result.stderr


async def test_misspelt_key_is_refused_with_the_nearest_key(
    components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    name = unique_name("typo")
    cleanup.append(("priorityclass", name))
    typo = "preemption-toleration.scheduling.x-k8s.io/toleration-second"
    result = alice("apply", "-f", "-", input=class_manifest(name, annotations={typo: "600"}), check=False)
    message = denied(result, "priorityclasses.validate.preemption-toleration.dev")
    assert f'unknown annotation {typo}="600". Fix: did you mean {TOL}?' in message


async def test_class_created_under_a_policy_carries_its_annotations_in_the_create_response(
    components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    pc, ptp = unique_name("born-protected"), unique_name("policy")
    cleanup += [("priorityclass", pc), ("ptp", ptp)]
    alice(
        "apply",
        "-f",
        "-",
        input=policy_manifest(
            ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 10000, "tolerationSeconds": -1}
        ),
    )
    created = alice("create", "-o", "json", "-f", "-", input=class_manifest(pc))
    annotations = json.loads(created.stdout)["metadata"]["annotations"]
    assert annotations[MIN] == "10000" and annotations[TOL] == "-1"


POLICY_REFUSALS = [
    (
        "unknown field",
        {"priorityClassName": "x", "minimumPreemptablePriority": 1, "tolerationSecond": 60},
        "unknown field spec.tolerationSecond (value 60). Fix: did you mean spec.tolerationSeconds?",
    ),
]


@pytest.mark.parametrize(("rule", "spec", "words"), POLICY_REFUSALS, ids=[c[0] for c in POLICY_REFUSALS])
async def test_bad_policies_are_refused(
    components: RunProcess, alice: Kubectl, cleanup: list, rule: str, spec: dict, words: str
) -> None:
    ptp = unique_name("bad-policy")
    cleanup.append(("ptp", ptp))
    result = alice("apply", "-f", "-", input=policy_manifest(ptp, spec), check=False)
    message = denied(result, "policies.validate.preemption-toleration.dev")
    assert message.startswith(f'PreemptionTolerationPolicy "{ptp}": ') and words in message


async def test_both_targets_are_refused_by_the_crd_rules_first(
    components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    ptp = unique_name("both-targets")
    cleanup.append(("ptp", ptp))
    spec = {"priorityClassName": "x", "priorityClassSelector": {"matchLabels": {"a": "b"}}}
    result = alice("apply", "-f", "-", input=policy_manifest(ptp, spec), check=False)
    assert result.returncode != 0 and "admission webhook" not in result.stderr
    assert f'PreemptionTolerationPolicy "{ptp}" is invalid' in result.stderr
    assert "spec sets both priorityClassName and priorityClassSelector. Fix: set exactly one of them." in result.stderr


async def test_toleration_out_of_range_is_refused(components: RunProcess, alice: Kubectl, cleanup: list) -> None:
    ptp = unique_name("overflow")
    cleanup.append(("ptp", ptp))
    spec = {"priorityClassName": "x", "minimumPreemptablePriority": 1, "tolerationSeconds": 9223372037}
    result = alice("apply", "-f", "-", input=policy_manifest(ptp, spec), check=False)
    assert result.returncode != 0
    # The CRD schema refuses it before any webhook runs.
    assert "spec.tolerationSeconds" in result.stderr and "9223372036" in result.stderr


async def test_second_policy_for_a_governed_class_is_refused(
    components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    pc, first, second = unique_name("shared"), unique_name("first"), unique_name("second")
    cleanup += [("ptp", first), ("ptp", second)]
    alice("apply", "-f", "-", input=policy_manifest(first, {"priorityClassName": pc, "minimumPreemptablePriority": 1}))

    async def attempt() -> subprocess.CompletedProcess[str]:
        return alice(
            "apply",
            "-f",
            "-",
            input=policy_manifest(second, {"priorityClassName": pc, "minimumPreemptablePriority": 2}),
            check=False,
        )

    result = await eventually(attempt, lambda r: r.returncode != 0, timeout=ANSWER_SECONDS, what="conflict refusal")
    message = denied(result, "policies.validate.preemption-toleration.dev")
    assert f'PriorityClass "{pc}" is already governed by PreemptionTolerationPolicy "{first}"' in message


async def test_a_policy_without_effect_is_applied_with_a_warning_and_its_status_says_so(
    api: ApiClient, components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    pc, ptp = unique_name("no-effect"), unique_name("policy")
    cleanup += [("priorityclass", pc), ("ptp", ptp)]
    alice("apply", "-f", "-", input=class_manifest(pc))  # value 8000
    manifest = policy_manifest(
        ptp, {"priorityClassName": pc, "minimumPreemptablePriority": 100, "tolerationSeconds": -1}
    )

    async def apply(*dry_run: str) -> subprocess.CompletedProcess[str]:
        return alice("apply", "-f", "-", *dry_run, input=manifest)

    # a server-side dry run until the webhook's cache has the new class, then the policy itself
    result = await warned_then_done(apply, "the no-effect warning")
    why = (
        f'spec.minimumPreemptablePriority 100 has no effect on PriorityClass "{pc}" (value 8000): it holds back '
        "only priorities below 100, none of which can preempt its pods. Fix: set it above 8001."
    )
    assert f"preemptiontolerationpolicy.preemption-toleration.dev/{ptp} created" in result.stdout
    assert result.stderr == f'Warning: PreemptionTolerationPolicy "{ptp}": {why}\n'

    policy = await wait_ready(api, ptp, "True", "AppliedNoEffect")
    applied = f"Applied to PriorityClass {pc}: minimum-preemptable-priority=100, toleration-seconds=-1."
    assert ready(policy)[2] == f"{applied} {why}"
    assert alice("get", "ptp", ptp).stdout.splitlines()[1].split()[:6] == [
        ptp,
        pc,
        "100",
        "-1",
        "True",
        "AppliedNoEffect",
    ]
    await eventually(
        lambda: _described(alice, ptp),
        lambda rows: ("Warning", "AppliedNoEffect", "preemption-toleration-operator", ready(policy)[2]) in rows,
        timeout=REACTION_SECONDS,
        what=f"the AppliedNoEffect Event under kubectl describe ptp {ptp}",
    )


async def _described(kubectl: Kubectl, ptp: str) -> list[tuple[str, str, str, str]]:
    return described_events(kubectl, "ptp", ptp)


async def test_hand_change_of_a_managed_annotation_is_refused_naming_the_policy(
    api: ApiClient, components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    pc, ptp = await _hand_edit_refused(api, alice, cleanup, "managed")
    assert ours(await read_class(api, pc)) == {MIN: "10000", TOL: "600"}
    # other changes to the class stay possible
    alice("label", "priorityclass", pc, "team=ml")


async def test_a_label_change_that_makes_a_class_contested_is_applied_with_a_warning(
    api: ApiClient, components: RunProcess, alice: Kubectl, cleanup: list
) -> None:
    pc, by_name, by_label = unique_name("contested"), unique_name("by-name"), unique_name("by-label")
    tier = unique_name("tier")
    cleanup += [("priorityclass", pc), ("ptp", by_name), ("ptp", by_label)]
    alice("apply", "-f", "-", input=class_manifest(pc))
    alice(
        "apply",
        "-f",
        "-",
        input=policy_manifest(by_name, {"priorityClassName": pc, "minimumPreemptablePriority": 10000}),
    )
    await wait_annotations(api, pc, {MIN: "10000"})
    # creation times have whole seconds, and equal ones are ordered by name: by_label must be the younger
    created = await read_policy(api, by_name)
    assert created is not None
    await past_the_second_of(created["metadata"]["creationTimestamp"])
    alice(
        "apply",
        "-f",
        "-",
        input=policy_manifest(
            by_label, {"priorityClassSelector": {"matchLabels": {"tier": tier}}, "minimumPreemptablePriority": 9500}
        ),
    )

    async def label(*dry_run: str) -> subprocess.CompletedProcess[str]:
        return alice("label", "--overwrite", "priorityclass", pc, f"tier={tier}", *dry_run)

    # a server-side dry run until the webhook's cache has the new policy, then the change itself
    result = await warned_then_done(label, "the contested warning")
    assert f"priorityclass.scheduling.k8s.io/{pc} labeled" in result.stdout
    assert (
        f'Warning: PriorityClass "{pc}" is claimed by 2 policies: "{by_name}" (the oldest) governs it, '
        f'"{by_label}" leaves it alone (Conflict). Fix: make one policy claim it.'
    ) in result.stderr
    assert ours(await read_class(api, pc)) == {MIN: "10000"}


async def test_under_ptol_run_the_admin_s_own_hand_edit_is_refused_too(
    api: ApiClient, components: RunProcess, kubectl: Kubectl, cleanup: list
) -> None:
    """`ptol run` runs with the admin's kubeconfig, and its operator writes as a user of its own
    (impersonation): the admin's hand edit of a managed annotation is refused as anyone's, not admitted and
    put back; the operator's own writes still pass."""
    pc, ptp = await _hand_edit_refused(api, kubectl, cleanup, "admin-edit")
    # the policy edited instead: the operator's write passes
    kubectl("patch", "ptp", ptp, "--type=merge", "-p", '{"spec": {"tolerationSeconds": 900}}')
    await wait_annotations(api, pc, {MIN: "10000", TOL: "900"})


async def _hand_edit_refused(api: ApiClient, editor: Kubectl, cleanup: list, prefix: str) -> tuple[str, str]:
    """`editor` applies a class and a policy governing it, then changes a managed annotation by hand: refused,
    naming the policy. The class's and the policy's names."""
    pc, ptp = unique_name(prefix), unique_name(f"{prefix}-policy")
    cleanup += [("priorityclass", pc), ("ptp", ptp)]
    apply_class_and_policy(editor, pc, ptp, toleration_seconds=600)
    await wait_annotations(api, pc, {MIN: "10000", TOL: "600"})
    result = editor("annotate", "--overwrite", "priorityclass", pc, f"{MIN}=9000", check=False)
    message = denied(result, "priorityclasses.validate.preemption-toleration.dev")
    assert f'but PreemptionTolerationPolicy "{ptp}" manages it. Fix: edit the policy instead' in message
    return pc, ptp
