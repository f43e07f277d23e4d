"""KWOK's stages as the test bed runs them: a Job's pod labelled to keep running is not completed."""

from __future__ import annotations

import pytest
import yaml

from preemption_toleration.devcluster.stages import KEEP_RUNNING_LABEL, with_keep_running

READY = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  selector:
    matchExpressions:
    - key: '.status.podIP'
      operator: 'DoesNotExist'
"""
COMPLETE = """apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  selector:
    matchExpressions:
    - key: '.metadata.ownerReferences.[].kind'
      operator: 'In'
      values:
      - 'Job'
  next:
    statusTemplate: |
      phase: Succeeded
"""


def test_the_complete_stage_asks_that_the_pod_lack_the_label_and_the_others_are_unchanged() -> None:
    stages = list(yaml.safe_load_all(with_keep_running(READY + "---\n" + COMPLETE)))
    ready, complete = stages
    assert ready == yaml.safe_load(READY)
    expressions = complete["spec"]["selector"]["matchExpressions"]
    assert expressions == [
        {"key": ".metadata.ownerReferences.[].kind", "operator": "In", "values": ["Job"]},
        {"key": f'.metadata.labels["{KEEP_RUNNING_LABEL}"]', "operator": "DoesNotExist"},
    ]
    assert complete["spec"]["next"]["statusTemplate"] == "phase: Succeeded\n", "the template is kept as text"


@pytest.mark.parametrize(
    "stages",
    [pytest.param(READY, id="no complete stage"), pytest.param(COMPLETE + "---\n" + COMPLETE, id="two")],
)
def test_stages_without_exactly_one_complete_stage_are_an_error(stages: str) -> None:
    with pytest.raises(ValueError, match="pod-complete"):
        with_keep_running(stages)
