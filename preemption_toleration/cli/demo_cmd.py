"""`ptol demo`: the two use cases with the real kube-scheduler on a local control plane."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from preemption_toleration.cli.kubernetes_release import variable_problem
from preemption_toleration.cli.signals import run_until_signalled
from preemption_toleration.cli.values import positive_integer


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="play the two use cases, in four stories, with the real kube-scheduler on a local control plane",
        description="Start a local control plane and `ptol run`, apply the classes and policies of the two use "
        "cases (protected forever, and for a guaranteed time), show a manifest mistake refused, and tell four "
        "stories of what the real kube-scheduler may and may not preempt. Runs Kubernetes 1.37.2 "
        "(PTOL_KUBERNETES_VERSION selects another pinned release); the first time it builds the control plane "
        "with the machine's Go (minutes). Needs no cluster of your own.",
    )
    parser.add_argument("--dir", default=".demo-cluster", help="the cluster's directory (default .demo-cluster)")
    parser.add_argument("--once", action="store_true", help="stop everything and exit when done")
    parser.add_argument(
        "--guarantee-seconds",
        type=positive_integer,
        default=20,
        help="guaranteed running time of the demo's time-limited class (default 20)",
    )
    parser.add_argument(
        "--samples",
        default="config/samples",
        metavar="DIR",
        help="apply the PriorityClasses and policies in this directory's manifests first "
        "(default config/samples; skipped when it does not exist)",
    )
    parser.set_defaults(handler=run)


def _say(text: str) -> None:
    print(text, flush=True)


def run(args: argparse.Namespace) -> int:
    from preemption_toleration.demo.play import Demo, DemoSettings, StepFailed

    if problem := variable_problem("demo"):
        return problem

    settings = DemoSettings(
        Path(args.dir).resolve(),
        once=args.once,
        guarantee_seconds=args.guarantee_seconds,
        samples=Path(args.samples).resolve(),
    )
    outcome = {"code": 0}

    async def main(stop: asyncio.Event) -> None:
        demo = Demo(settings, _say)
        keep = False
        try:
            play = asyncio.create_task(demo.play())
            stopped = asyncio.create_task(stop.wait())
            done, _ = await asyncio.wait({play, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if play not in done:
                play.cancel()
                _say("Interrupted; stopping everything.")
                outcome["code"] = 130
                return
            play.result()
            if not settings.once:
                keep = True
                kubectl = demo.cluster.toolchain.kubectl
                _say(
                    f"\nThe cluster stays up. Try:\n  export KUBECONFIG={demo.cluster.kubeconfig}\n"
                    f"  {kubectl} get ptp\n  {kubectl} get pods -n demo\n"
                    "Press Ctrl-C to stop everything."
                )
                await stopped
                keep = False
        except StepFailed as failure:
            print(f"demo failed while {failure.step}: {failure.problem}", file=sys.stderr, flush=True)
            outcome["code"] = 1
        finally:
            await demo.close(keep=keep)

    run_until_signalled(main)
    return outcome["code"]
