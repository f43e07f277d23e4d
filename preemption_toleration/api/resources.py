"""The built-in resource the project judges, watches and registers webhooks for, named once: the
PriorityClass's API group and plural (the custom resource's are `api/policy.py`'s GROUP and PLURAL)."""

from __future__ import annotations

from typing import Final

PRIORITY_CLASS_GROUP: Final = "scheduling.k8s.io"
PRIORITY_CLASS_PLURAL: Final = "priorityclasses"
# (group, plural), as admission endpoints, rules and informers pair them
PRIORITY_CLASSES: Final = (PRIORITY_CLASS_GROUP, PRIORITY_CLASS_PLURAL)
