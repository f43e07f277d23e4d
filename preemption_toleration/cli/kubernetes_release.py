"""The Kubernetes release of the local control plane (`--kubernetes-version`, `$PTOL_KUBERNETES_VERSION`),
checked before anything is built or started: only a release the repository pins can run."""

from __future__ import annotations

import argparse
import os

from preemption_toleration.cli.failures import refused
from preemption_toleration.devcluster.gomod import GoModError, Release
from preemption_toleration.devcluster.toolchain import VERSION_ENV, supported_versions


def kubernetes_release(value: str) -> str:
    """A release the repository pins (a build module in testbed/), as `1.37.2`."""
    supported = supported_versions()
    offer = f"supported: {', '.join(supported)}" if supported else "none is pinned here (no testbed/: not a checkout)"
    try:
        version = str(Release.parse(value))
    except GoModError as error:
        raise argparse.ArgumentTypeError(f"{error}; {offer}") from None
    if version not in supported:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a Kubernetes release this repository pins; {offer} "
            f"(`ptol dev cluster pin {version}` adds one)"
        )
    return version


def variable_problem(command: str) -> int | None:
    """Exit code 2, after a line saying why, when $PTOL_KUBERNETES_VERSION names a release that is not pinned;
    None when it is unset or pinned. For a command run without --kubernetes-version (the variable is its
    default)."""
    value = os.environ.get(VERSION_ENV)
    if not value:
        return None
    try:
        kubernetes_release(value)
    except argparse.ArgumentTypeError as error:
        return refused(command, f"${VERSION_ENV}: {error}")
    return None
