"""CEL text shared by the webhook configurations' matchConditions and the ValidatingAdmissionPolicy."""

from __future__ import annotations


def cel_string(text: str) -> str:
    """A CEL string literal of `text`."""
    escaped = text.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + "".join(f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in escaped) + "'"
