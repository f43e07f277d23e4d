"""Structured log lines: what a log pipeline receives in each format."""

from __future__ import annotations

import json
import logging
import sys

import pytest

from preemption_toleration.logs import JsonFormatter, TextFormatter


def record(logger: str, message: str, extra: dict[str, object], exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            exc_info = sys.exc_info()
    made = logging.getLogger(logger).makeRecord(logger, logging.WARNING, "f.py", 1, message, (), exc_info, extra=extra)
    made.created = 1795000000.25  # 2026-11-18T11:06:40.250Z
    return made


CASES = [
    (
        "our fields become keys",
        "preemption_toleration.webhooks",
        "refused",
        {"endpoint": "/guard/pods", "code": 403},
        {"endpoint": "/guard/pods", "code": 403},
    ),
    ("kopf's attached objects are left out", "kopf.objects", "Handler succeeded", {"settings": object(), "k8s": 1}, {}),
    (
        "values that are not JSON are written as text",
        "preemption_toleration.operator",
        "applied",
        {"annotations": {"a": "1"}, "when": object},
        {"annotations": {"a": "1"}, "when": str(object)},
    ),
]


@pytest.mark.parametrize(("rule", "logger", "message", "extra", "fields"), CASES, ids=[c[0] for c in CASES])
def test_json_lines(rule: str, logger: str, message: str, extra: dict[str, object], fields: dict[str, object]) -> None:
    line = JsonFormatter().format(record(logger, message, extra))
    assert "\n" not in line, rule
    assert json.loads(line) == {
        "time": "2026-11-18T11:06:40.250Z",
        "level": "WARNING",
        "logger": logger,
        "message": message,
        **fields,
    }, rule


@pytest.mark.parametrize(("rule", "logger", "message", "extra", "fields"), CASES, ids=[c[0] for c in CASES])
def test_text_lines(rule: str, logger: str, message: str, extra: dict[str, object], fields: dict[str, object]) -> None:
    line = TextFormatter().format(record(logger, message, extra))
    assert f"WARNING {logger} {message}" in line, rule
    for key, value in fields.items():
        assert f" {key}={json.dumps(value)}" in line, rule
    if not fields:
        assert line.endswith(message), rule


def test_an_exception_stays_inside_its_json_line() -> None:
    entry = json.loads(JsonFormatter().format(record("preemption_toleration.operator", "failed", {}, exc=True)))
    assert entry["exception"].startswith("Traceback") and "ValueError: boom" in entry["exception"]
