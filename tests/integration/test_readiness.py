"""Readiness tells the truth: `ptol webhook` started before its CRD keeps running, says on /readyz what it
waits for and becomes ready when the CRD appears; a watch down for longer than --cache-staleness-seconds
turns /readyz to 503, and it turns back to 200 when the API server answers again."""

from __future__ import annotations

import re
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from preemption_toleration.devcluster import LocalCluster
from tests.integration.components import CRD_FILE, WebhookServer, install_crd
from tests.integration.helpers import ANSWER_SECONDS, REACTION_SECONDS, SLOW_SECONDS, START_SECONDS
from tests.metrics import scrape, total

pytestmark = [pytest.mark.integration]

INSECURE = ssl.create_default_context()  # the webhook's generated certificate
INSECURE.check_hostname, INSECURE.verify_mode = False, ssl.CERT_NONE
POLICY_CACHE = "preemptiontolerationpolicies"


class Webhook(WebhookServer):
    since = 0

    def readyz(self) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{self.port}/readyz", context=INSECURE, timeout=ANSWER_SECONDS
            ) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
        except OSError as error:
            return 0, str(error)

    def until(self, check: str, wanted: int, timeout: float, starting: str = "", ending: str = "") -> str:
        """Polls /readyz until it answers `wanted` with a body `starting` and `ending` so; returns the body."""
        deadline = time.monotonic() + timeout
        status, body = self.readyz()
        while status != wanted or not (body.startswith(starting) and body.endswith(ending)):
            assert self.process.running(), f"ptol webhook exited; log:\n{self.process.log()[-3000:]}"
            assert time.monotonic() < deadline, f"{check}: /readyz still answers {status} {body!r}"
            time.sleep(0.3)
            status, body = self.readyz()
        return body

    def until_failures(self, resource: str, wanted: int, timeout: float) -> None:
        """Polls /metrics until the cache of `resource` counts `wanted` failed listings or watches."""
        deadline = time.monotonic() + timeout
        while (failures := self.watch_failures(resource)) < wanted:
            assert time.monotonic() < deadline, f"{resource}: {failures} failed listings, not {wanted}"
            time.sleep(0.3)

    def watch_failures(self, resource: str) -> float:
        text = scrape(f"https://127.0.0.1:{self.port}/metrics", INSECURE)
        return total(text, "ptol_webhook_cache_watch_failures_total", kind=resource)

    def lines(self, text: str) -> list[str]:
        return [line for line in self.process.log()[self.since :].splitlines() if text in line]

    def eventually_lines(self, text: str, timeout: float = REACTION_SECONDS) -> list[str]:
        deadline = time.monotonic() + timeout
        while not (found := self.lines(text)) and time.monotonic() < deadline:
            time.sleep(0.3)
        return found


@pytest.fixture
def webhook_without_crd(cluster: LocalCluster) -> Iterator[Webhook]:
    subprocess.run(
        cluster.kubectl_argv("delete", "-f", str(CRD_FILE), "--ignore-not-found", "--wait"),
        check=True,
        capture_output=True,
    )
    webhook = Webhook(cluster, "webhook-before-crd")
    webhook.since = webhook.process.start()
    try:
        yield webhook
    finally:
        webhook.process.stop()
        install_crd(cluster)


def test_a_webhook_started_before_its_crd_waits_says_why_and_becomes_ready(
    cluster: LocalCluster, webhook_without_crd: Webhook
) -> None:
    webhook = webhook_without_crd
    # the other caches list in their own time (on a slow machine after the first 404): wait until only
    # the policies' cache keeps /readyz at 503, and says why
    policies_missing = "caches are not ready: preemptiontolerationpolicies: not listed yet (last problem: 404"
    why = "(the resource is not served: is its CRD installed?))"
    webhook.until("before the CRD", 503, timeout=START_SECONDS, starting=policies_missing, ending=why)
    webhook.until_failures(POLICY_CACHE, 4, timeout=START_SECONDS)  # retried after 1, 2 and 4 s
    assert webhook.process.running()
    assert len([line for line in webhook.lines("watch failed") if "preemptiontolerationpolicies" in line]) == 1
    assert webhook.lines("heap frozen") == []  # only once every cache is listed
    install_crd(cluster)
    assert webhook.until("after the CRD", 200, timeout=START_SECONDS) == "ok"
    assert len(webhook.lines("watch recovered")) == 1
    # then the heap of a synced server leaves the garbage collector's full collections (gc_pause.py)
    frozen = webhook.eventually_lines("heap frozen")
    found = re.search(r"objects=(\d+)", frozen[0])
    assert len(frozen) == 1 and found is not None and int(found.group(1)) > 10_000, frozen


@pytest.fixture
def stale_webhook(cluster: LocalCluster) -> Iterator[Webhook]:
    install_crd(cluster)
    webhook = Webhook(cluster, "webhook-stale", "--cache-staleness-seconds", "3")
    webhook.since = webhook.process.start()
    try:
        yield webhook
    finally:
        webhook.process.stop()


def test_caches_without_a_watch_for_longer_than_the_bound_are_not_ready_until_it_recovers(
    cluster: LocalCluster, stale_webhook: Webhook
) -> None:
    webhook = stale_webhook
    assert webhook.until("at start", 200, timeout=START_SECONDS) == "ok"
    cluster.stop_apiserver()
    try:
        body = webhook.until("with the API server down", 503, timeout=START_SECONDS)
        assert body.startswith("caches are not ready: ")
        assert "no successful list or watch for" in body and "(last problem: " in body
        for kind in ("priorityclasses", "preemptiontolerationpolicies", "pods", "nodes"):
            assert f"{kind}: no successful list or watch for" in body
    finally:
        cluster.start_apiserver()
    assert webhook.until("with the API server back", 200, timeout=SLOW_SECONDS) == "ok"
