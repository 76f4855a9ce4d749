"""Soak: one standalone worker carries 50 connectors for ten minutes under day-2 traffic.

25 ``SequenceGenerator`` sources (one task each, ``--rate`` records/s) each feed a topic
read by a ``FileStreamSink``. While they run, a REST client polls statuses and listings
(``--rest-rate`` requests/s), and every ``--cycle`` seconds one source and one sink go
through the runbook an operator uses: stop → reset offsets → resume.

Sampled every ``--sample`` seconds from ``/proc``: the worker's RSS, open file
descriptors and threads. The baseline, in the same run, is the same worker idle before any
connector exists: the figures are reported as absolute values and as ratios to it.

At the end the sources are stopped and each sink's file is checked against its source's
sequence numbers (``tests/faults/_pipeline.py``): every number up to the last one the
source committed must be there (a reset source starts again at 0; the repeats count as
duplicates, never as loss).

Run: ``.venv/bin/python tests/bench/bench_soak.py [--minutes 10]``; prints the curve and
writes ``tests/bench/results/soak.json``. Targets (issue #15): RSS and descriptors flat
after warm-up; idle RSS < 150 MB, < 300 MB with 50 connectors; 0 records lost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "soak.json"
sys.path.insert(0, str(ROOT))

from tests.faults._pipeline import check_sequences, sink_lines  # noqa: E402
from tests.support import wait_for_connector_state, wait_until  # noqa: E402
from worker.testing import EmbeddedBroker, free_port  # noqa: E402
from worker.testing.process import WorkerProcess, write_properties  # noqa: E402

STRING = "org.apache.kafka.connect.storage.StringConverter"


def proc_figures(pid: int) -> dict[str, float]:
    """RSS (MB), open descriptors and threads of a process, from /proc; the RSS split by
    mapping (``rss_split``)."""
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {"rss_mb": int(fields["VmRSS"].split()[0]) / 1024,
            **rss_split(pid),
            "fds": len(os.listdir(f"/proc/{pid}/fd")),
            "threads": int(fields["Threads"])}


ARENA_ALIGN = 64 << 20  # glibc's per-thread malloc arenas: 64 MiB-aligned heaps
STACK_KB = 8192  # a thread's stack (the default 8 MiB)


def rss_split(pid: int) -> dict[str, float]:
    """RSS by mapping kind: the main malloc heap (``[heap]``), glibc's thread arenas, thread
    stacks, other anonymous memory (mostly Python's object allocator) and file-backed
    mappings (code, shared libraries)."""
    kb = {"heap_mb": 0, "arenas_mb": 0, "stacks_mb": 0, "anon_mb": 0, "file_mb": 0}
    kind = "anon_mb"
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(maxsplit=1)[0]
        if "-" in first and not first.endswith(":"):  # a mapping's header line
            parts = line.split()
            path = parts[5] if len(parts) > 5 else ""
            low, high = (int(x, 16) for x in first.split("-"))
            kind = ("heap_mb" if path == "[heap]"
                    else "file_mb" if path.startswith("/")
                    else "anon_mb" if path
                    else "arenas_mb" if low % ARENA_ALIGN == 0
                    else "stacks_mb" if (high - low) // 1024 == STACK_KB
                    else "anon_mb")
        elif first == "Rss:":
            kb[kind] += int(line.split()[1])
    return {k: round(v / 1024, 1) for k, v in kb.items()}


def slope(samples: list[dict[str, float]], key: str) -> float:
    """Least-squares slope of ``key`` over the samples' ``t_s``, per minute."""
    if len(samples) < 2:
        return 0.0
    ts = [s["t_s"] / 60 for s in samples]
    ys = [s[key] for s in samples]
    mean_t, mean_y = sum(ts) / len(ts), sum(ys) / len(ys)
    var = sum((t - mean_t) ** 2 for t in ts)
    return round(sum((t - mean_t) * (y - mean_y) for t, y in zip(ts, ys, strict=True)) / var, 2)


def all_running(client: httpx.Client, names: list[str]) -> bool:
    body = client.get("/connectors?expand=status").json()
    return all(name in body and body[name]["status"]["connector"]["state"] == "RUNNING"
               and body[name]["status"]["tasks"]
               and all(t["state"] == "RUNNING" for t in body[name]["status"]["tasks"])
               for name in names)


class RestTraffic(threading.Thread):
    """Reads at a steady rate; counts answers by status."""

    def __init__(self, url: str, names: list[str], rate: float) -> None:
        super().__init__(daemon=True, name="rest-traffic")
        self.url, self.names, self.interval = url, names, 1.0 / rate
        self.stop_event = threading.Event()
        self.statuses: dict[int, int] = {}

    def run(self) -> None:
        paths = ["/connectors?expand=status", "/connectors", "/connector-plugins",
                 *(f"/connectors/{n}/status" for n in self.names)]
        with httpx.Client(base_url=self.url, timeout=30) as client:
            i = 0
            while not self.stop_event.wait(self.interval):
                try:
                    code = client.get(paths[i % len(paths)]).status_code
                except httpx.HTTPError:
                    code = 0
                self.statuses[code] = self.statuses.get(code, 0) + 1
                i += 1


def runbook(client: httpx.Client, name: str) -> dict[str, float]:
    """stop → reset offsets → resume; the seconds each step took."""
    started = time.monotonic()
    assert client.put(f"/connectors/{name}/stop").status_code == 204
    wait_for_connector_state(client, name, "STOPPED", timeout=60)
    stopped = time.monotonic()
    response = client.delete(f"/connectors/{name}/offsets")
    assert response.status_code == 200, response.text
    reset = time.monotonic()
    assert client.put(f"/connectors/{name}/resume").status_code == 202
    wait_for_connector_state(client, name, "RUNNING", tasks_state="RUNNING", timeout=60)
    done = time.monotonic()
    return {"total": round(done - started, 2), "stop": round(stopped - started, 2),
            "reset": round(reset - stopped, 2), "resume": round(done - reset, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--pairs", type=int, default=25, help="source/sink pairs")
    parser.add_argument("--rate", type=float, default=20.0, help="records/s per source")
    parser.add_argument("--rest-rate", type=float, default=20.0)
    parser.add_argument("--cycle", type=float, default=60.0, help="seconds between runbooks")
    parser.add_argument("--sample", type=float, default=15.0)
    parser.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment of the worker process, e.g. MALLOC_ARENA_MAX=2")
    parser.add_argument("--worker-prop", action="append", default=[], metavar="KEY=VALUE",
                        help="extra worker property, e.g. consumer.queued.max.messages.kbytes=1024")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    worker_env = dict(item.split("=", 1) for item in args.worker_env)
    worker_props = dict(item.split("=", 1) for item in args.worker_prop)

    with tempfile.TemporaryDirectory(prefix="soak-") as tmp, EmbeddedBroker() as broker:
        work = Path(tmp)
        port = free_port()
        props = write_properties(work / "worker.properties", {
            "bootstrap.servers": broker.bootstrap_servers,
            "listeners": f"http://127.0.0.1:{port}",
            "storage.sql.url": f"sqlite:///{work / 'connect.db'}",
            "offset.flush.interval.ms": 5000, "key.converter": STRING,
            "value.converter": STRING, **worker_props})
        worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}",
                               log_path=work / "worker.log", cwd=work, env=worker_env)
        with worker:
            client = worker.client
            assert worker.pid is not None
            time.sleep(5)  # let start-up allocations settle before the idle baseline
            idle = proc_figures(worker.pid)
            sources = [f"soak-source-{i}" for i in range(args.pairs)]
            sinks = [f"soak-sink-{i}" for i in range(args.pairs)]
            for i in range(args.pairs):
                for name, config in (
                    (sources[i], {"connector.class": "SequenceGenerator",
                                  "topic": f"soak-{i}", "rate": str(args.rate),
                                  "message.size": "40"}),
                    (sinks[i], {"connector.class": "FileStreamSink", "topics": f"soak-{i}",
                                "file": str(work / f"sink-{i}.txt")})):
                    response = client.put(f"/connectors/{name}/config", json=config)
                    assert response.status_code == 201, response.text
            wait_until(lambda: all_running(client, sources + sinks), timeout=180,
                       interval=0.5, message="all RUNNING")
            traffic = RestTraffic(worker.url, sources + sinks, args.rest_rate)
            traffic.start()

            samples: list[dict[str, float]] = []
            runbooks: list[dict[str, Any]] = []
            started = time.monotonic()
            next_sample, next_cycle = started, started + args.cycle
            cycle = 0
            while time.monotonic() - started < args.minutes * 60:
                now = time.monotonic()
                if now >= next_sample:
                    samples.append({"t_s": round(now - started, 1), **proc_figures(worker.pid)})
                    print(f"  t={samples[-1]['t_s']:6.0f} s  RSS {samples[-1]['rss_mb']:6.1f} MB"
                          f" (heap {samples[-1]['heap_mb']:.1f}, arenas "
                          f"{samples[-1]['arenas_mb']:.1f}, stacks {samples[-1]['stacks_mb']:.1f},"
                          f" other anon {samples[-1]['anon_mb']:.1f})"
                          f"  fds {samples[-1]['fds']:5.0f}  threads "
                          f"{samples[-1]['threads']:4.0f}", flush=True)
                    next_sample += args.sample
                if now >= next_cycle:
                    pair = cycle % args.pairs
                    runbooks.append({"t_s": round(now - started, 1),
                                     "source": runbook(client, sources[pair]),
                                     "sink": runbook(client, sinks[pair])})
                    print(f"  runbook {runbooks[-1]}", flush=True)
                    cycle += 1
                    next_cycle += args.cycle
                time.sleep(min(1.0, max(0.0, min(next_sample, next_cycle) - time.monotonic())))
            traffic.stop_event.set()
            traffic.join(30)

            # Stop the sources; their last committed sequence number is what must arrive.
            for name in sources:
                assert client.put(f"/connectors/{name}/stop").status_code == 204
            committed = {}
            for i, name in enumerate(sources):
                wait_for_connector_state(client, name, "STOPPED", timeout=60)
                offsets = client.get(f"/connectors/{name}/offsets").json()["offsets"]
                committed[i] = max((o["offset"]["seq"] for o in offsets), default=-1)

            def complete(i: int) -> bool:
                seen = {int(line.split("-", 2)[1]) for line in sink_lines(work / f"sink-{i}.txt")}
                return set(range(committed[i] + 1)) <= seen
            wait_until(lambda: all(complete(i) for i in range(args.pairs)), timeout=300,
                       interval=0.5, message="every sink caught up with its source")
            lost = duplicated = reordered = delivered = 0
            for i in range(args.pairs):
                lines = sink_lines(work / f"sink-{i}.txt")
                highest = max(int(line.split("-", 2)[1]) for line in lines)
                report = check_sequences(lines, {0: max(highest, committed[i]) + 1})[0]
                lost += len(report.lost)
                duplicated += report.duplicated
                reordered += report.reordered
                delivered += report.received
            final = proc_figures(worker.pid)

    warm = [s for s in samples if s["t_s"] >= 120] or samples
    result = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "settings": {**vars(args), "results": str(args.results)},
        "idle_baseline": idle,
        "samples": samples,
        "after_stop": final,
        "runbooks": runbooks,
        "rest_statuses": traffic.statuses,
        "records": {"delivered": delivered, "lost": lost, "duplicated": duplicated,
                    "reordered": reordered},
        "summary": {
            "rss_mb_idle": round(idle["rss_mb"], 1),
            "rss_mb_warm_min": round(min(s["rss_mb"] for s in warm), 1),
            "rss_mb_warm_max": round(max(s["rss_mb"] for s in warm), 1),
            "rss_ratio_to_idle": round(max(s["rss_mb"] for s in warm) / idle["rss_mb"], 2),
            "fds_idle": idle["fds"],
            "fds_warm_min": min(s["fds"] for s in warm),
            "fds_warm_max": max(s["fds"] for s in warm),
            "threads_warm_max": max(s["threads"] for s in warm),
            # Least-squares slope after warm-up, MB per minute, per RSS part.
            "growth_mb_per_min": {key: slope(warm, key) for key in (
                "rss_mb", "heap_mb", "arenas_mb", "stacks_mb", "anon_mb", "file_mb")},
            "runbook_max_s": max((max(r["source"]["total"], r["sink"]["total"])
                                  for r in runbooks), default=0.0),
            "rest_5xx": sum(n for code, n in traffic.statuses.items()
                            if code >= 500 or code == 0),
        },
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["summary"], indent=2))
    print(json.dumps(result["records"]))
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
