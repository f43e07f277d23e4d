"""KWOK's stages as the local control plane runs them: the "fast" ones of its release (`toolchain.KWOK_STAGE_FILES`),
except that a pod labelled `KEEP_RUNNING_LABEL` is not completed when a Job owns it.

KWOK's fast `pod-complete` stage makes a Job's pod Succeeded as soon as it runs, so a Job admitted by Kueue
would finish at once and never be a victim; a test that needs a running Job labels its pod template.
"""

from __future__ import annotations

from typing import Any, Final

import yaml

KEEP_RUNNING_LABEL: Final = "devcluster.preemption-toleration.x-k8s.io/keep-running"
_COMPLETE_STAGE = "pod-complete"


def with_keep_running(stages: str) -> str:
    """The stages of `stages` (KWOK's multi-document YAML) with the `pod-complete` stage's selector asking that
    the pod lack `KEEP_RUNNING_LABEL`. Raises ValueError when there is no such stage (a KWOK release that
    renamed it: the test bed would complete every Job at once, silently)."""
    documents: list[Any] = [document for document in yaml.safe_load_all(stages) if document]
    completing = [
        document
        for document in documents
        if isinstance(document, dict) and (document.get("metadata") or {}).get("name") == _COMPLETE_STAGE
    ]
    if len(completing) != 1:
        raise ValueError(f"KWOK's stages have {len(completing)} stages named {_COMPLETE_STAGE!r}, not 1")
    selector = completing[0].setdefault("spec", {}).setdefault("selector", {})
    selector.setdefault("matchExpressions", []).append(
        {"key": f'.metadata.labels["{KEEP_RUNNING_LABEL}"]', "operator": "DoesNotExist"}
    )
    return yaml.safe_dump_all(documents, sort_keys=False)
