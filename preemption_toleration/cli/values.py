"""The value types of command-line options: each returns the converted value, or raises ArgumentTypeError
with the reason (options.py names the flag or variable it came from)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from preemption_toleration.core.quantities import QuantityError, parse_quantity


def port_number(value: str) -> int:
    if not re.fullmatch(r"\d{1,5}", value.strip()) or int(value) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number (0 to 65535)")
    return int(value)


def _seconds_from(value: str, low: float, high: float) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not low <= seconds <= high:
        raise argparse.ArgumentTypeError(f"{value!r} must be from {low:g} to {high:g} seconds")
    return seconds


def resync_seconds(value: str) -> float:
    return _seconds_from(value, 1, 86400)


def hold_seconds(value: str) -> float:
    """Seconds to hold a guard answer: 0 to 2 (the guard's webhook times out after 3)."""
    return _seconds_from(value, 0, 2)


def positive_integer(value: str) -> int:
    if not re.fullmatch(r"\s*\d+\s*", value) or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a positive integer")
    return int(value)


def count(value: str) -> int:
    """How many of something: 0 or more."""
    if not re.fullmatch(r"\s*\+?\d{1,9}\s*", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a count: a whole number, 0 or more")
    return int(value)


def quantity(value: str) -> str:
    """A Kubernetes quantity of more than 0, such as 4, 500m or 8Gi (as given: the API server reads it)."""
    try:
        amount = parse_quantity(value)
    except QuantityError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a Kubernetes quantity such as 4, 500m or 8Gi") from None
    if amount <= 0:
        raise argparse.ArgumentTypeError(f"{value!r} is not more than 0: give a quantity such as 4, 500m or 8Gi")
    return value.strip()


def non_negative_integer(value: str) -> int:
    """Seconds to wait, say: 0 to 3600."""
    if not re.fullmatch(r"\s*\d{1,4}\s*", value) or int(value) > 3600:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds from 0 to 3600")
    return int(value)


def _integer_from(value: str, low: int, high: int, what: str) -> int:
    if not re.fullmatch(r"\s*[-+]?\d+\s*", value) or not low <= int(value) <= high:
        raise argparse.ArgumentTypeError(f"{value!r} is not {what} (an integer from {low} to {high})")
    return int(value)


def peering_priority(value: str) -> int:
    return _integer_from(value, 1, 2**31 - 1, "a peering priority")


def pod_priority(value: str) -> int:
    """A pod priority, in the range of a PriorityClass's value (int32, as the API server stores it)."""
    return _integer_from(value, -(2**31), 2**31 - 1, "a priority")


def choice(*allowed: str, ignore_case: bool = False) -> Callable[[str], str]:
    """One of `allowed` (given lower-case when `ignore_case`); env_option shows them as the metavar."""

    def one_of(value: str) -> str:
        given = value.strip().lower() if ignore_case else value
        if given not in allowed:
            raise argparse.ArgumentTypeError(f"{value!r} is not one of {', '.join(allowed)}")
        return str(given)

    one_of.__name__ = "choice"
    one_of.choices = allowed  # type: ignore[attr-defined]
    return one_of


def host_and_port(value: str) -> str:
    host, separator, port = value.rpartition(":")
    if not separator or not re.fullmatch(r"\d{1,5}", port) or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{value!r} is not HOST:PORT (e.g. 0.0.0.0:8081)")
    return str(value)


def url(*schemes: str) -> Callable[[str], str]:
    def checked_url(value: str) -> str:
        parts = urlsplit(value)
        try:
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{value!r} has a port that is not a number from 0 to 65535 "
                "(an IPv6 address goes in brackets: http://[::1]:8080/)"
            ) from None
        if parts.scheme not in schemes or not parts.hostname:
            raise argparse.ArgumentTypeError(
                f"{value!r} is not a URL starting with {' or '.join(s + '://' for s in schemes)} and a host"
            )
        return str(value)

    checked_url.__name__ = "url"
    return checked_url


_DNS_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"


def namespaced_name(value: str) -> str:
    namespace, separator, name = value.partition("/")
    if (
        not separator
        or not re.fullmatch(_DNS_LABEL, namespace)
        or not re.fullmatch(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*", name)
    ):
        raise argparse.ArgumentTypeError(f"{value!r} is not NAMESPACE/NAME (e.g. preemption-toleration/webhook-tls)")
    return str(value)


def dns_label(value: str) -> str:
    """A namespace's name: a DNS label (RFC 1123) of lower-case letters, digits and '-'."""
    if not re.fullmatch(_DNS_LABEL, value):
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a namespace name (up to 63 lower-case letters, digits and '-', starting and ending "
            "with a letter or digit)"
        )
    return str(value)


def non_empty(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError("an empty value")
    return str(value).strip()


LOG_FORMATS = ("text", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def log_level(value: str) -> str:
    level = value.strip().upper()
    level = "WARNING" if level == "WARN" else level
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{value!r} is not one of {', '.join(LOG_LEVELS)}")
    return level


log_level.choices = LOG_LEVELS  # type: ignore[attr-defined]


def is_on(value: str) -> bool:
    """An on/off option's value as a bool."""
    return value == "on"
