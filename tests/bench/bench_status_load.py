"""``GET /connectors/{c}/status`` under 16 concurrent keep-alive clients.

Starts the embedded broker (or uses KAFKA_BOOTSTRAP_SERVERS), a standalone worker
subprocess with a 4-task connector, and loads the status endpoint from a separate client
process (tests/bench/http_load.py). The baseline, in the same run, is a bare ASGI app on
the same uvicorn server settings returning the very same JSON bytes: the ratio is what the
worker's REST, herder and storage layers cost on top of the HTTP server itself.

Run: ``.venv/bin/python tests/bench/bench_status_load.py [--duration 10]``; prints a table
and writes ``tests/bench/results/status_load.json``. Targets (issue #3): ≥ 1,500 req/s and
p99 < 25 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "status_load.json"
LOAD = ROOT / "tests" / "bench" / "http_load.py"
sys.path.insert(0, str(ROOT))

from worker.testing import EmbeddedBroker, free_port, terminate_process  # noqa: E402

BASELINE_APP = """
import sys, uvicorn
body = open(sys.argv[2], "rb").read()
headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
            access_log=False)
"""


def wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def load(url: str, duration: float, concurrency: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, str(LOAD), url, "--duration", str(duration),
                          "--concurrency", str(concurrency)], check=True,
                         capture_output=True, text=True, timeout=duration + 120)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        port = free_port()
        props = workdir / "worker.properties"
        props.write_text(f"bootstrap.servers={bootstrap}\nlisteners=http://127.0.0.1:{port}\n"
                         f"storage.sql.url=sqlite:///{workdir / 'connect.db'}\n")
        log = (workdir / "worker.log").open("w")
        worker = subprocess.Popen([sys.executable, "-m", "worker.cli.standalone", str(props)],
                                  cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        stack.callback(terminate_process, worker, 30.0, 5.0)
        base = f"http://127.0.0.1:{port}"
        wait_http(base + "/")
        name = "bench-status"
        response = httpx.put(f"{base}/connectors/{name}/config", timeout=30, json={
            "connector.class": "SequenceGenerator", "topic": "bench-status", "rate": "1",
            "tasks.max": "4"})
        response.raise_for_status()
        deadline = time.monotonic() + 60
        while True:
            body = httpx.get(f"{base}/connectors/{name}/status", timeout=5).json()
            if len(body.get("tasks", [])) == 4 and all(
                    t["state"] == "RUNNING" for t in body["tasks"]):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"connector did not start: {body}")
            time.sleep(0.2)
        status_bytes = httpx.get(f"{base}/connectors/{name}/status").content
        ours = load(f"{base}/connectors/{name}/status", args.duration, args.concurrency)

        body_file = workdir / "status.json"
        body_file.write_bytes(status_bytes)
        baseline_port = free_port()
        baseline = subprocess.Popen([sys.executable, "-c", BASELINE_APP, str(baseline_port),
                                     str(body_file)], cwd=ROOT)
        stack.callback(terminate_process, baseline, 10.0, 5.0)
        wait_http(f"http://127.0.0.1:{baseline_port}/")
        raw = load(f"http://127.0.0.1:{baseline_port}/connectors/{name}/status",
                   args.duration, args.concurrency)

    summary = {
        "concurrency": args.concurrency, "duration_s": args.duration,
        "response_bytes": len(status_bytes), "worker": ours, "bare_asgi": raw,
        "throughput_ratio": ours["req_per_s"] / raw["req_per_s"],
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"Python {platform.python_version()}",
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    print(f"{'server':<12}{'req/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for label, result in (("worker", ours), ("bare ASGI", raw)):
        print(f"{label:<12}{result['req_per_s']:>10,.0f}{result['p50_ms']:>9.2f}"
              f"{result['p99_ms']:>9.2f}{result['errors']:>8.0f}")
    print(f"throughput ratio worker/bare: {summary['throughput_ratio']:.2f} "
          "(targets: >= 1,500 req/s, p99 < 25 ms)")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
