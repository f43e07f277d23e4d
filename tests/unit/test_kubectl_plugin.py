"""`kubectl ptol` takes kubectl's -n (the pod's namespace) and --context (the kubeconfig context)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import pytest

from preemption_toleration.cli.explain_cmd import namespace_conflict, pod_key
from preemption_toleration.cli.main import build_parser, main
from preemption_toleration.kube.client import ClusterConfigError, load_configuration

KUBECONFIG = """\
apiVersion: v1
kind: Config
current-context: dev
clusters:
- {name: dev, cluster: {server: 'https://dev.example:6443'}}
- {name: prod, cluster: {server: 'https://prod.example:6443'}}
users: [{name: u, user: {token: t}}]
contexts:
- {name: dev, context: {cluster: dev, user: u, namespace: team-a}}
- {name: prod, context: {cluster: prod, user: u}}
"""


@pytest.fixture
def kubeconfig(tmp_path: Path) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return str(path)


def explain_args(kubeconfig: str, *argv: str) -> argparse.Namespace:
    return build_parser("kubectl ptol").parse_args(["explain", *argv, "--kubeconfig", kubeconfig])


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        pytest.param(["pod", "p", "-n", "batch"], ("batch", "p"), id="-n names the namespace"),
        pytest.param(["pod", "p", "--namespace", "batch"], ("batch", "p"), id="--namespace too"),
        pytest.param(["pod", "batch/p"], ("batch", "p"), id="NAMESPACE/NAME"),
        pytest.param(["pod", "batch/p", "-n", "batch"], ("batch", "p"), id="both, when they agree"),
        pytest.param(["pod", "p"], ("team-a", "p"), id="else the current context's namespace, as kubectl"),
        pytest.param(["pod", "p", "--context", "prod"], ("default", "p"), id="else default"),
    ],
)
def test_the_namespace_of_the_pod(kubeconfig: str, argv: list[str], key: tuple[str, str]) -> None:
    args = explain_args(kubeconfig, *argv)
    assert (namespace_conflict(args), pod_key(args)) == (None, key)


def test_a_namespace_given_twice_differently_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], kubeconfig: str
) -> None:
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/kubectl-ptol"])
    assert main(["explain", "pod", "batch/p", "-n", "web", "--kubeconfig", kubeconfig]) == 2
    assert capsys.readouterr().err == (
        "kubectl ptol explain: error: pod batch/p is in namespace batch, -n names web: give one of them\n"
    )


@pytest.mark.parametrize(
    ("context", "server"),
    [
        pytest.param(None, "https://dev.example:6443", id="the current context by default"),
        pytest.param("prod", "https://prod.example:6443", id="--context selects another"),
    ],
)
def test_context_selects_the_cluster(kubeconfig: str, context: str | None, server: str) -> None:
    assert asyncio.run(load_configuration(kubeconfig, context)).host == server


def test_an_unknown_context_names_the_ones_there_are(kubeconfig: str) -> None:
    with pytest.raises(ClusterConfigError) as refused:
        asyncio.run(load_configuration(kubeconfig, "staging"))
    assert str(refused.value) == (
        f"kubeconfig {kubeconfig} (from --kubeconfig) has no context 'staging' (--context); its contexts: dev, prod"
    )
