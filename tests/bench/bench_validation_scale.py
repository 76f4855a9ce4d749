"""``PUT /connector-plugins/{p}/config/validate`` with 1,000 / 2,000 / 10,000 transforms.

Issue #41 found validation quadratic in the number of transforms (1,000: 0.9 s, 2,000:
3.6 s, 10,000: ~80 s of CPU): every alias merged its keys into a copy of the whole config
definition, and the groups were collected in a list. This script starts the embedded broker
(or uses KAFKA_BOOTSTRAP_SERVERS) and a ``connect-standalone`` subprocess, then validates a
FileStreamSource config with N ``RegexRouter`` transforms (``type``, ``regex`` and
``replacement`` each), half of them gated by a predicate of their own (N/2
``TopicNameMatches`` predicates), over HTTP, ``--runs`` times per size, sizes interleaved
within a round.

Per size it reports the median wall time of the request and the worker's CPU time for it
(``psutil``), each as a ratio against validating the same config with 0 transforms in the
same run (the machine's speed divides out), and the cost per transform. Linear means the
cost per transform stays flat from 1,000 to 10,000 — the 10,000 / 1,000 ratio near 10, not
100.

The request body grows with N (about 1.4 MB at 10,000): the worker's connector-config body
limit (``rest.request.body.max.bytes``, 1 MiB by default) is raised for the run.

Run: ``.venv/bin/python tests/bench/bench_validation_scale.py [--sizes 1000,2000,10000]
[--runs 3]``; prints a table and writes ``tests/bench/results/validation_scale.json``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import psutil  # type: ignore[import-untyped]  # no type hints shipped, no stubs here

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "validation_scale.json"
sys.path.insert(0, str(ROOT))

from tests.bench.saved_results import save  # noqa: E402
from worker.testing import EmbeddedBroker, WorkerProcess, free_port, write_properties  # noqa: E402

ROUTER = "org.apache.kafka.connect.transforms.RegexRouter"
MATCHES = "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"
PLUGIN = "FileStreamSource"
#: The 0-transform baseline is this many validations in a row, averaged: one takes a few
#: milliseconds, below the resolution of the CPU clock (10 ms ticks).
BASELINE_REPEATS = 50


def config(n: int) -> dict[str, str]:
    """A FileStreamSource config with ``n`` transforms and ``n // 2`` predicates."""
    props = {"name": "bench", "connector.class": PLUGIN, "topic": "bench",
             "file": "/dev/null", "transforms": ",".join(f"t{i}" for i in range(n)),
             "predicates": ",".join(f"p{i}" for i in range(n // 2))}
    for i in range(n):
        props |= {f"transforms.t{i}.type": ROUTER, f"transforms.t{i}.regex": f"(.*)-{i}",
                  f"transforms.t{i}.replacement": f"$1-r{i}"}
    for i in range(n // 2):
        props |= {f"predicates.p{i}.type": MATCHES, f"predicates.p{i}.pattern": f"x{i}",
                  f"transforms.t{i}.predicate": f"p{i}"}
    return props


def validate(client: httpx.Client, worker: psutil.Process, body: dict[str, str],
             repeats: int = 1) -> tuple[float, float, int]:
    """(wall seconds, worker CPU seconds) of one validation, the mean of ``repeats`` in a
    row, and the size of the answer; asserts each found no error."""
    before = worker.cpu_times()
    started = time.perf_counter()
    for _ in range(repeats):
        response = client.put(f"/connector-plugins/{PLUGIN}/config/validate", json=body)
        assert response.status_code == 200, response.text[:500]
        assert response.json()["error_count"] == 0, response.text[:500]
    wall = time.perf_counter() - started
    after = worker.cpu_times()
    cpu = (after.user + after.system) - (before.user + before.system)
    return wall / repeats, cpu / repeats, len(response.content)


def run(bootstrap: str, sizes: list[int], runs: int, work: Path) -> dict[str, Any]:
    port = free_port()
    props = write_properties(work / "worker.properties", {
        "bootstrap.servers": bootstrap, "listeners": f"http://127.0.0.1:{port}",
        "storage.sql.url": f"sqlite:///{work / 'connect.db'}",
        "rest.request.body.max.bytes": 64 * 1024 * 1024})
    worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}", log_path=work / "worker.log",
                           request_timeout=600.0)
    bodies = {n: config(n) for n in [0, *sizes]}
    samples: dict[int, list[tuple[float, float, int]]] = {n: [] for n in bodies}
    rss: dict[int, int] = {}
    with worker:
        process = psutil.Process(worker.pid)
        client = worker.client
        validate(client, process, bodies[0])  # warm-up: imports, first request
        for round_ in range(runs):
            for n, body in bodies.items():
                samples[n].append(validate(client, process, body,
                                           BASELINE_REPEATS if n == 0 else 1))
                rss[n] = max(rss.get(n, 0), process.memory_info().rss)
            print(f"round {round_ + 1}/{runs} done", flush=True)
    wall0 = statistics.median(w for w, _, _ in samples[0])
    cpu0 = max(statistics.median(c for _, c, _ in samples[0]), 1e-4)  # never zero
    rows = []
    for n in sizes:
        wall = statistics.median(w for w, _, _ in samples[n])
        cpu = statistics.median(c for _, c, _ in samples[n])
        rows.append({"transforms": n, "predicates": n // 2,
                     "body_bytes": len(httpx.Request("PUT", "/", json=bodies[n]).content),
                     "answer_bytes": samples[n][-1][2],
                     "worker_rss_mb_after": round(rss[n] / 2**20),
                     "wall_s": round(wall, 3), "worker_cpu_s": round(cpu, 3),
                     "wall_ratio_vs_0": round(wall / wall0, 1),
                     "cpu_ratio_vs_0": round(cpu / cpu0, 1),
                     "wall_ms_per_transform": round((wall - wall0) * 1000 / n, 3)})
    return {"baseline_0_transforms": {"wall_s": round(wall0, 4), "worker_cpu_s": round(cpu0, 4)},
            "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,2000,10000",
                        help="numbers of transforms, comma-separated")
    parser.add_argument("--runs", type=int, default=3, help="validations per size")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="validate-")))
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
        summary = run(bootstrap, sizes, args.runs, work)
    base = summary["baseline_0_transforms"]
    print(f"0 transforms: {base['wall_s'] * 1000:.1f} ms wall, "
          f"{base['worker_cpu_s'] * 1000:.1f} ms worker CPU")
    print(f"{'transforms':>10} {'body MB':>8} {'answer MB':>9} {'wall s':>8} {'CPU s':>8} "
          f"{'wall/0':>8} {'CPU/0':>8} {'ms/transform':>12} {'RSS MB':>7}")
    for row in summary["rows"]:
        print(f"{row['transforms']:>10} {row['body_bytes'] / 1e6:>8.2f} "
              f"{row['answer_bytes'] / 1e6:>9.2f} {row['wall_s']:>8.3f} "
              f"{row['worker_cpu_s']:>8.3f} {row['wall_ratio_vs_0']:>8.1f} "
              f"{row['cpu_ratio_vs_0']:>8.1f} {row['wall_ms_per_transform']:>12.3f} "
              f"{row['worker_rss_mb_after']:>7}")
    by_size = {row["transforms"]: row for row in summary["rows"]}
    if 1000 in by_size and 10000 in by_size:
        growth = by_size[10000]["wall_s"] / by_size[1000]["wall_s"]
        summary["wall_10000_over_1000"] = round(growth, 1)
        print(f"10,000 / 1,000 transforms: {growth:.1f}x (linear: ~10x, quadratic: ~100x)")
    save(args.results, {"sizes": sizes, "runs": args.runs, **summary})
    print(f"saved {args.results}")


if __name__ == "__main__":
    main()
