"""The builders of tests/builders.py under their former name, for the unit tests not yet moved to it."""

from tests.builders import pod, priority_class, rfc3339

__all__ = ["pod", "priority_class", "rfc3339"]
