"""The API server's minor release, read from GET /version."""

import pytest

from preemption_toleration.kube.version import minor_of

MINORS = [
    # (rule, the version's minor field, the release read)
    ("a plain minor", "37", 37),
    ("a managed control plane's sign is dropped", "35+", 35),
    ("no digits: unknown", "", None),
    ("not a string: unknown", 37, None),
    ("garbage: unknown", "x1", None),
]


@pytest.mark.parametrize(("rule", "text", "minor"), MINORS, ids=[m[0] for m in MINORS])
def test_minor_of(rule, text, minor) -> None:
    assert minor_of(text) == minor
