"""What unauthenticated oversized requests cost a worker: RSS and ``/health`` latency.

Issue #41's probe: three 25 MB bodies without credentials on ``POST /connectors/{c}/tasks``
(let through authentication, as in Kafka) took a worker from 118 MB to 1.78 GB RSS and held
``/health`` for 2.2 s. This script starts the embedded broker (or uses
KAFKA_BOOTSTRAP_SERVERS) and a ``connect-standalone`` worker with basic auth, then per round:

1. measures ``/health`` (authenticated, from a process of its own) every 5 ms for
   ``--idle-s`` seconds: the baseline;
2. sends ``--requests`` 25 MB requests at once from as many threads, cycling through the
   probe's variants (internal route with ``Content-Length``; chunked with a made-up
   signature; chunked unsigned; ``POST /connectors`` chunked without credentials), while
   the same ``/health`` probe runs;
3. reads the worker's RSS before and after.

It reports the ``/health`` p50/p90/p99/max under attack against the idle ones of the same
round (p50 and p99 as ratios), the RSS right after the burst and once it settled (the worker
hands freed memory back 2 s after a burst), and what each request was answered. The senders
and the worker share the machine's cores: the latency ratio includes what sending 500 MB on
loopback costs.

Run: ``.venv/bin/python tests/bench/bench_request_limits.py [--rounds 5] [--requests 20]``;
prints a table and writes ``tests/bench/results/request_limits.json``.
"""

from __future__ import annotations

import argparse
import base64
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil  # type: ignore[import-untyped]  # no type hints shipped, no stubs here

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "request_limits.json"
sys.path.insert(0, str(ROOT))

from tests.bench.saved_results import save  # noqa: E402
from tests.security._raw_http import chunked, exchange, head  # noqa: E402
from worker.testing import EmbeddedBroker, WorkerProcess, free_port, write_properties  # noqa: E402

PASSWORD = "Bench-Limits-Pw-4411"
MIB = 1024 * 1024
BODY = b'[{"k":"' + b"x" * (25 * MIB - 10) + b'"}]'
JSON = ("Content-Type", "application/json")
T = TypeVar("T")
#: After the attack, before the settled RSS is read (the worker trims 2 s after a burst).
SETTLE_S = 3.0
SIGNED = [("X-Connect-Authorization", base64.b64encode(b"f" * 32).decode()),
          ("X-Connect-Request-Signature-Algorithm", "HmacSHA256")]


def attack(port: int, variant: int) -> int | None:
    """One oversized request of the given variant; the status it was answered with."""
    if variant == 0:
        answer = exchange(port, head("POST", "/connectors/x/tasks",
                                     [JSON, ("Content-Length", str(len(BODY)))]), [BODY])
    elif variant == 1:
        answer = exchange(port, head("POST", "/connectors/x/tasks",
                                     [JSON, ("Transfer-Encoding", "chunked"), *SIGNED]),
                          chunked(BODY))
    elif variant == 2:
        answer = exchange(port, head("POST", "/connectors/x/tasks",
                                     [JSON, ("Transfer-Encoding", "chunked")]), chunked(BODY))
    else:
        answer = exchange(port, head("POST", "/connectors",
                                     [JSON, ("Transfer-Encoding", "chunked")]), chunked(BODY))
    return answer.status


def _probe(url: str, stop: Any, latencies: Any) -> None:
    with httpx.Client(base_url=url, timeout=30.0) as client:
        while not stop.is_set():
            started = time.perf_counter()
            assert client.get("/health").status_code == 200
            latencies.append(time.perf_counter() - started)
            stop.wait(0.005)


def measure(url: str, work: Callable[[], T]) -> tuple[list[float], T]:
    """``/health`` latencies while ``work()`` runs, and what it returned. The probe runs in
    a process of its own: in this one the senders' threads would hold it up (the GIL), and
    the latency measured would be partly the client's."""
    with multiprocessing.Manager() as manager:
        stop, latencies = manager.Event(), manager.list()
        prober = multiprocessing.Process(target=_probe, args=(url, stop, latencies))
        prober.start()
        try:
            result = work()
        finally:
            stop.set()
            prober.join(30)
        return list(latencies), result


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p90_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))] * 1000, 1),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1), "samples": len(ordered)}


def run(bootstrap: str, rounds: int, requests: int, idle_s: float, work: Path
        ) -> dict[str, Any]:
    users = work / "users.properties"
    users.write_text(f"admin={PASSWORD}\n", encoding="utf-8")
    port = free_port()
    props = write_properties(work / "worker.properties", {
        "bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{port}",
        "storage.sql.url": f"sqlite:///{work / 'connect.db'}",
        "rest.extension.classes": "BasicAuthSecurityRestExtension",
        "rest.basic.auth.credentials.file": str(users)})
    url = f"http://admin:{PASSWORD}@127.0.0.1:{port}"
    rows = []
    with WorkerProcess(props, url=url, log_path=work / "worker.log") as worker:
        process = psutil.Process(worker.pid)
        for _ in range(5):
            worker.client.get("/connectors")
        start_rss = process.memory_info().rss
        for round_ in range(rounds):
            idle, _ = measure(url, lambda: time.sleep(idle_s))
            before = process.memory_info().rss

            def flood() -> list[int | None]:
                with ThreadPoolExecutor(requests) as pool:
                    return list(pool.map(lambda i: attack(port, i % 4), range(requests)))
            started = time.perf_counter()
            loaded, statuses = measure(url, flood)
            elapsed = time.perf_counter() - started
            after = process.memory_info().rss
            time.sleep(SETTLE_S)  # the worker hands freed memory back once a burst settles
            settled = process.memory_info().rss
            idle_q, loaded_q = quantiles(idle), quantiles(loaded)
            rows.append({
                "round": round_ + 1, "attack_s": round(elapsed, 2),
                "answers": dict(Counter(str(s) for s in statuses)),
                "rss_before_mb": round(before / MIB, 1), "rss_after_mb": round(after / MIB, 1),
                "rss_growth_mb": round((after - before) / MIB, 1),
                "rss_settled_mb": round(settled / MIB, 1),
                "health_idle": idle_q, "health_under_attack": loaded_q,
                "p50_ratio": round(loaded_q["p50_ms"] / max(idle_q["p50_ms"], 0.1), 2),
                "p99_ratio": round(loaded_q["p99_ms"] / max(idle_q["p99_ms"], 0.1), 2)})
            print(f"round {round_ + 1}/{rounds}: answers {rows[-1]['answers']}, RSS "
                  f"{rows[-1]['rss_before_mb']} -> {rows[-1]['rss_after_mb']} MB (settled "
                  f"{rows[-1]['rss_settled_mb']} MB), /health p50 "
                  f"{idle_q['p50_ms']} -> {loaded_q['p50_ms']} ms, p99 {idle_q['p99_ms']} -> "
                  f"{loaded_q['p99_ms']} ms, max {loaded_q['max_ms']} ms", flush=True)
        end_rss = process.memory_info().rss
    return {"requests_per_round": requests, "body_mb": 25, "rows": rows,
            "rss_start_mb": round(start_rss / MIB, 1), "rss_end_mb": round(end_rss / MIB, 1),
            "rss_growth_over_all_rounds_mb": round((end_rss - start_rss) / MIB, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--idle-s", type=float, default=2.0)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="limits-")))
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        summary = run(bootstrap, args.rounds, args.requests, args.idle_s, work)
    print(f"RSS over all rounds: {summary['rss_start_mb']} -> {summary['rss_end_mb']} MB")
    save(args.results, summary)
    print(f"saved {args.results}")


if __name__ == "__main__":
    main()
