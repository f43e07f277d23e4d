"""The yardstick of webhook_throughput.py: the least an aiohttp HTTPS admission webhook can do.

It parses the AdmissionReview JSON body and answers "allowed" with the request's uid, on the same paths as
`ptol webhook`, with the same kind of certificate (`GeneratedCertificates`: our CA, an EC serving key) and
the same TLS settings, and without an access log (as `ptol webhook`). Run as a process:

    .venv/bin/python benchmarks/_bare_webhook.py --port PORT [--ca-file PATH]

With `--ca-file`, it writes its CA's certificate there (PEM), for a webhook configuration's caBundle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from pathlib import Path

from aiohttp import web

from preemption_toleration.webhooks.tls import GeneratedCertificates

PATHS = (
    "/validate/priorityclasses",
    "/mutate/priorityclasses",
    "/validate/preemptiontolerationpolicies",
    "/guard/pods",
)
MAX_BODY_BYTES = 3 * 1024 * 1024


async def review(request: web.Request) -> web.Response:
    payload = json.loads(await request.read())
    answer = {"uid": payload["request"]["uid"], "allowed": True}
    return web.json_response({"apiVersion": payload["apiVersion"], "kind": "AdmissionReview", "response": answer})


async def healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


def build() -> web.Application:
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    for path in PATHS:
        app.router.add_post(path, review)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", healthz)
    return app


async def serve(host: str, port: int, certificates: GeneratedCertificates) -> None:
    runner = web.AppRunner(build(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=certificates.context).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ca-file", type=Path, help="write the CA's certificate (PEM) here")
    args = parser.parse_args()
    certificates = GeneratedCertificates(["localhost"], [args.host])
    if args.ca_file is not None:
        args.ca_file.write_bytes(certificates.ca_bundle)
    asyncio.run(serve(args.host, args.port, certificates))


if __name__ == "__main__":
    main()
