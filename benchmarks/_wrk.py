"""wrk (the HTTP load generator, `apt-get install wrk`) POSTing one body, and what it measured."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from _webhook_bench import cpu_seconds, pin

CONNECTIONS = 16
LUA = """wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local file = assert(io.open(%s, "rb"))
wrk.body = file:read("*a")
file:close()
function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %%d %%d %%d %%d %%f %%f\\n", summary.requests, summary.duration,
    e.connect + e.read + e.write + e.timeout, e.status, latency:percentile(50), latency:percentile(99)))
end
"""


@dataclass(frozen=True)
class Run:
    requests_per_s: float
    requests_per_cpu_s: float  # per second of CPU the server process used: robust to a busy machine
    p50_ms: float
    p99_ms: float
    socket_errors: int
    non_2xx: int


def wrk(url: str, script: Path, seconds: int, server_pid: int, cpu: int | None) -> Run:
    """`wrk -t1` on `cpu` for `seconds` against `url`, counting the CPU the server `server_pid` used."""
    argv = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--timeout", "5s", "-s", str(script), url]
    cpu_before = cpu_seconds(server_pid)
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pin(process.pid, cpu)
    output, _ = process.communicate(timeout=seconds + 60)
    used = cpu_seconds(server_pid) - cpu_before
    line = next((x for x in output.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"wrk gave no result for {url}:\n{output}")
    requests, micros, errors, status, p50, p99 = (float(x) for x in line.split()[1:])
    return Run(requests / (micros / 1e6), requests / max(used, 0.01), p50 / 1000, p99 / 1000, int(errors), int(status))


def post_script(body: bytes, stem: Path) -> Path:
    """Write `body` to STEM.json and a wrk script that POSTs it to STEM.lua; returns the script."""
    stem.with_suffix(".json").write_bytes(body)
    script = stem.with_suffix(".lua")
    script.write_text(LUA % json.dumps(str(stem.with_suffix(".json"))))
    return script
