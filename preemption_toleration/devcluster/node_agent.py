"""A stand-in for kubelets on simulated nodes: bound pods run, deleted pods go away.

Without a kubelet, a pod deleted with a grace period stays Terminating for ever and keeps its node's
resources, so a preemption never completes. The agent watches pods bound to nodes labelled
`SIMULATED_NODE_LABEL` and
- finishes graceful deletions at once (DELETE with grace 0), as a kubelet does when containers stop;
- marks newly bound pods Running and Ready.

Run in-process (`await NodeAgent(api).run()`) or as a process:
`python -m preemption_toleration.devcluster.node_agent --kubeconfig FILE`.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any

from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException
from kubernetes_asyncio.config import new_client_from_config

from preemption_toleration.devcluster.nodes import SIMULATED_NODE_LABEL

log = logging.getLogger("ptol.node_agent")

_BOUND_PODS = "spec.nodeName!="
_WATCH_SECONDS = 300
_RETRY_SECONDS = 1.0


class NodeAgent:
    def __init__(self, api: ApiClient) -> None:
        self._core = client.CoreV1Api(api)
        self._nodes: set[str] = set()

    async def run(self) -> None:
        """List and watch bound pods until cancelled; survives API errors and expired watches."""
        while True:
            try:
                await self._list_and_watch()
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - keep the agent alive; re-list after a pause
                log.warning("pod watch failed (%s); re-listing", error)
                await asyncio.sleep(_RETRY_SECONDS)

    async def _list_and_watch(self) -> None:
        pods = await self._core.list_pod_for_all_namespaces(field_selector=_BOUND_PODS)
        for pod in pods.items:
            await self.handle(pod)
        resource_version = pods.metadata.resource_version
        while True:
            stream = watch.Watch().stream(
                self._core.list_pod_for_all_namespaces,
                field_selector=_BOUND_PODS,
                resource_version=resource_version,
                timeout_seconds=_WATCH_SECONDS,
                allow_watch_bookmarks=True,
            )
            async with stream as events:
                async for event in events:
                    # Bookmarks carry only a resource version, as a plain dict.
                    raw = event.get("raw_object") or {}
                    resource_version = raw.get("metadata", {}).get("resourceVersion", resource_version)
                    if event["type"] in ("ADDED", "MODIFIED"):
                        await self.handle(event["object"])

    async def handle(self, pod: client.V1Pod) -> None:
        """Act on one pod, as its kubelet would."""
        if not await self._is_simulated(pod.spec.node_name):
            return
        meta = pod.metadata
        try:
            if meta.deletion_timestamp is not None:
                log.info("completing deletion of %s/%s", meta.namespace, meta.name)
                await self._core.delete_namespaced_pod(
                    meta.name,
                    meta.namespace,
                    grace_period_seconds=0,
                    body=client.V1DeleteOptions(
                        grace_period_seconds=0,
                        preconditions=client.V1Preconditions(uid=meta.uid),
                    ),
                )
            elif pod.status.phase == "Pending":
                await self._mark_running(pod)
        except ApiException as error:
            if error.status not in (404, 409):  # gone already, or a newer pod of that name
                raise

    async def _mark_running(self, pod: client.V1Pod) -> None:
        now = datetime.datetime.now(datetime.UTC).isoformat()
        conditions = [
            {"type": kind, "status": "True", "lastTransitionTime": now}
            for kind in ("Initialized", "ContainersReady", "Ready")
        ]
        containers = [
            {
                "name": c.name,
                "image": c.image,
                "imageID": "",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in pod.spec.containers
        ]
        status: dict[str, Any] = {
            "phase": "Running",
            "startTime": now,
            "conditions": conditions,
            "containerStatuses": containers,
        }
        log.info("marking %s/%s Running", pod.metadata.namespace, pod.metadata.name)
        await self._core.patch_namespaced_pod_status(pod.metadata.name, pod.metadata.namespace, {"status": status})

    async def _is_simulated(self, node_name: str | None) -> bool:
        if not node_name:
            return False
        if node_name not in self._nodes:  # new node: refresh the set
            nodes = await self._core.list_node(label_selector=f"{SIMULATED_NODE_LABEL}=true")
            self._nodes = {n.metadata.name for n in nodes.items}
        return node_name in self._nodes


async def _main(kubeconfig: str) -> None:
    api = await new_client_from_config(config_file=kubeconfig)
    task = asyncio.create_task(NodeAgent(api).run())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        pass
    finally:
        await api.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="node_agent", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(_main(args.kubeconfig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
