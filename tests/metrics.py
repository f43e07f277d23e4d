"""Reading Prometheus /metrics, for the tests and the benchmarks alike: one scrape and one way of picking
samples, for every component. Benchmarks import it as they import tests/builders.py (benchmarks/_common.py)."""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterator

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

SCRAPE_SECONDS = 10  # one request to a server that is up


def scrape(url: str, context: ssl.SSLContext | None = None, timeout: float = SCRAPE_SECONDS) -> str:
    """The text of a /metrics `url` (blocking: call it in a thread from an event loop)."""
    with urllib.request.urlopen(url, context=context, timeout=timeout) as response:
        return str(response.read().decode())


def samples(text: str, name: str, /, **having: str) -> Iterator[Sample]:
    """The samples of `name` (a counter's with its `_total`) whose labels include `having` (which may hold a
    label called `name`: the parameters before it are positional)."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and having.items() <= sample.labels.items():
                yield sample


def by_label(text: str, name: str, label: str, /, **having: str) -> dict[str, float]:
    """The samples of `name` whose labels include `having`, summed by the value of one `label`."""
    found: dict[str, float] = {}
    for sample in samples(text, name, **having):
        found[sample.labels[label]] = found.get(sample.labels[label], 0.0) + sample.value
    return found


def total(text: str, name: str, /, **having: str) -> float:
    """The sum of the samples of `name` whose labels include `having`."""
    return sum(sample.value for sample in samples(text, name, **having))
