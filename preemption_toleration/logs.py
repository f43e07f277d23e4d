"""Structured logs: `key=value` text by default, one JSON object per line with `--log-format json`.

Fields passed as `extra={...}` to a logger call are part of the line.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

# What `ptol webhook --register-url` and `ptol run` log once their webhook configurations call them: the
# harness (devcluster.components), the demo and the tests wait for this line.
REGISTERED = "webhook configurations registered"

_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", (), None))) | {"message", "asctime"}


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    # Only our own loggers' fields: kopf attaches its settings and object references to every record.
    if not record.name.startswith("preemption_toleration"):
        return {}
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


def _rfc3339(timestamp: float) -> str:
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = f"{self.formatTime(record)} {record.levelname} {record.name} {record.getMessage()}"
        for key, value in _fields(record).items():
            line += f" {key}={json.dumps(value, default=str)}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": _rfc3339(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **_fields(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Log to stderr at `level` (DEBUG, INFO, WARNING, ERROR), as `fmt` ("text" or "json") lines."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
