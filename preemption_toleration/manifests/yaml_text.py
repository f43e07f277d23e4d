"""Manifests as YAML text: multi-line and long strings (the CEL expressions) as literal blocks, so they read
as written."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    """A SafeDumper that writes multi-line and long strings as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    literal = "\n" in text or len(text) > 100
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if literal else None)


_Dumper.add_representer(str, _represent_str)


def dump_manifests(documents: Sequence[Any]) -> str:
    return str(yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False))
