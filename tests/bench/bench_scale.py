"""Scale: one standalone worker carrying N tasks, running and then stopped (issue #19).

For each N of ``--sizes`` a fresh worker gets N/2 ``SequenceGenerator`` sources (1 record/s
each) and N/2 ``FileStreamSink``s, one task each, one topic per pair. Measured, with every
connector RUNNING and then with every connector STOPPED (the baseline of the same run, on
the same worker):

- ``GET /connectors/{c}/status`` under 8 keep-alive clients (``http_load.py``, its own
  process): p99 and requests/s;
- ``GET /connectors?expand=status`` (median of 5);
- the worker's CPU over ``--idle`` seconds with no REST traffic (% of one core), split by
  thread kind (librdkafka's threads name themselves), and the broker's CPU over the same
  window; threads, RSS and open file descriptors, from ``/proc``;
- how busy the machine's two cores were while the REST load ran (generator, worker and
  broker share them);
- the time the N creates took (one ``PUT`` after the other), the time from the last
  create to every connector and task RUNNING, and to every sink task assigned its
  partition (``partition-count`` on ``/metrics``; the test broker's first group join
  waits half the consumers' 45 s session timeout). The idle and load figures are taken
  only after that, and ``--settle`` seconds more: steady state, not group joins;
- ``GET /metrics`` with every connector running: the median of 5 scrapes, and how many
  series and kB a scrape holds;
- with ``--restart``, a rolling restart's share: with every connector running, the
  worker is stopped (SIGTERM) and started again on the same state and port; how long the
  stop took, and from the new process's spawn to its REST API answering, to ``/health``
  healthy, to every connector and task RUNNING and to every sink task assigned again.
  The stopped figures are then taken on the restarted worker.

Then, with every connector still STOPPED (the worker near 0 % CPU), the raw baseline of
the same run: ``raw_clients.py`` builds the same N/2 producers and N/2 consumers on the same
topics, with the worker's client settings and the same traffic (a record a second per
topic), all served from one thread; once every consumer has read, its CPU over ``--idle``
seconds, split the same way. The worker's CPU near idle divided by it is what the worker
adds to clients it cannot do without (Kafka Connect gives each task its own).

With ``--nofile K`` the worker runs with ``RLIMIT_NOFILE`` K (soft = hard) and the run
reports, instead of the stopped figures, how the shortage shows: REST errors, ``/health``,
tasks FAILED (and whether their traces name the file-descriptor limit), tasks RUNNING.

``--worker-env KEY=VALUE`` and ``--worker-prop KEY=VALUE`` (repeatable) add to the worker
process's environment and to its properties.

``--broker-cpu C`` pins the test broker's threads to CPU C and this script, and so the
worker, the load generator and the raw clients it starts, to the other CPUs: the broker
then no longer competes with the worker for its cores, as on a deployment where the
brokers run elsewhere (Linux only).

Run: ``.venv/bin/python tests/bench/bench_scale.py [--sizes 10,50,100,250,500]``; prints
the table and writes ``tests/bench/results/scale.json`` (``--results`` to change).
Targets (issue #19, 500 tasks): REST p99 ≤ 2× the stopped p99; ``?expand=status`` running
≤ 3× stopped; CPU ≤ 10 % of a core; ≤ 60 threads with every connector stopped; all RUNNING
≤ 10 s after the last create; RSS ≤ 400 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "scale.json"
LOAD = ROOT / "tests" / "bench" / "http_load.py"
RAW = ROOT / "tests" / "bench" / "raw_clients.py"
sys.path.insert(0, str(ROOT))

from tests.support import wait_until  # noqa: E402
from worker.testing import EmbeddedBroker, free_port  # noqa: E402
from worker.testing.process import WorkerProcess, write_properties  # noqa: E402

STRING = "org.apache.kafka.connect.storage.StringConverter"
CLK_TCK = os.sysconf("SC_CLK_TCK")
def proc_figures(pid: int) -> dict[str, float]:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    return {"rss_mb": round(int(fields["VmRSS"].split()[0]) / 1024, 1),
            "threads": int(fields["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def thread_counters(pid: int) -> dict[str, tuple[float, int]]:
    """CPU seconds and context switches (voluntary and not) of the process's live threads,
    summed by kind: librdkafka's threads name themselves (``rdk:main``, ``rdk:broker<id>``
    for a broker connection, ``rdk:broker-1`` for the internal and bootstrap brokers), and
    so does the worker for its task, connector and idle-poller threads (``sink0-<connector>``,
    ``src0-<connector>``, ``conn-<connector>``, ``sink-poller``): ``python:sink``,
    ``python:source``, ``python:connector``, ``python:poller``; every other thread (the
    REST server, the herder) is ``python``. A context switch is roughly one wake-up. CPU
    time is the scheduler's (``schedstat``, in ns): a thread's tick-sampled utime + stime
    misses most of the short runs of a thread that wakes briefly many times a second, as
    librdkafka's do."""
    kinds: dict[str, tuple[float, int]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
            run_ns = int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except OSError:  # the thread ended meanwhile
            continue
        switches = sum(int(value) for key, _, value in
                       (line.partition(":") for line in status.splitlines())
                       if key in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"))
        kind = ("rdk:main" if name == "rdk:main"
                else "rdk:broker-1" if name.startswith("rdk:broker-")
                else "rdk:broker" if name.startswith("rdk:broker")
                else "rdk:other" if name.startswith("rdk:")
                else "python:poller" if name == "sink-poller"
                else "python:sink" if name.startswith("sink")
                else "python:source" if name.startswith("src")
                else "python:connector" if name.startswith("conn-")
                else "python")
        cpu, count = kinds.get(kind, (0.0, 0))
        kinds[kind] = (cpu + run_ns / 1e9, count + switches)
    return kinds


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def cpu_percent(pid: int, seconds: float, broker_pid: int | None = None
                ) -> dict[str, Any]:
    """The process's CPU over ``seconds`` of wall time, in % of one core; its split by
    thread kind (threads alive at both ends of the window); and the broker's CPU over the
    same window (it shares this machine's two cores with the worker)."""
    before, threads, started = cpu_seconds(pid), thread_counters(pid), time.monotonic()
    broker_before = cpu_seconds(broker_pid) if broker_pid else 0.0
    time.sleep(seconds)  # the measurement window itself
    elapsed = time.monotonic() - started
    after = thread_counters(pid)
    figures: dict[str, Any] = {
        "cpu_pct": round(100 * (cpu_seconds(pid) - before) / elapsed, 1),
        "cpu_by_thread": {kind: round(100 * (cpu - threads.get(kind, (0.0, 0))[0]) / elapsed, 1)
                          for kind, (cpu, _) in sorted(after.items())},
        "switches_per_s_by_thread": {
            kind: round((count - threads.get(kind, (0.0, 0))[1]) / elapsed)
            for kind, (_, count) in sorted(after.items())}}
    if broker_pid:
        figures["broker_cpu_pct"] = round(
            100 * (cpu_seconds(broker_pid) - broker_before) / elapsed, 1)
    return figures


def machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot, from ``/proc/stat``."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def http_load(url: str, duration: float, concurrency: int = 8) -> dict[str, Any]:
    """The load generator's figures, and how busy the machine's cores were meanwhile (the
    generator, the worker and the broker share them)."""
    busy, total = machine_ticks()
    out = subprocess.run([sys.executable, str(LOAD), url, "--concurrency", str(concurrency),
                          "--duration", str(duration)],
                         capture_output=True, text=True, timeout=duration + 120, check=True)
    busy_after, total_after = machine_ticks()
    figures: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    figures["machine_busy_pct"] = round(100 * (busy_after - busy) / max(total_after - total, 1),
                                        1)
    return figures


def expand_status_ms(client: httpx.Client, rounds: int = 5) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.get("/connectors?expand=status")
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return round(statistics.median(times), 1)


def scrape(client: httpx.Client, rounds: int = 5) -> dict[str, Any]:
    """``GET /metrics`` as Prometheus scrapes it: the median time of ``rounds`` scrapes,
    the series the last one held and its size."""
    times, text = [], ""
    for _ in range(rounds):
        started = time.perf_counter()
        response = client.get("/metrics")
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
        text = response.text
    series = sum(len(family.samples) for family in text_string_to_metric_families(text))
    return {"scrape_ms": round(statistics.median(times), 1), "series": series,
            "kb": round(len(text.encode()) / 1024)}


def answers(url: str) -> bool:
    """``GET /`` answers 200 (the REST API serves, whatever ``/health`` says)."""
    try:
        return httpx.get(f"{url}/", timeout=1.0).status_code == 200
    except httpx.TransportError:
        return False


def restart(worker: WorkerProcess, names: list[str], n: int) -> dict[str, Any]:
    """Stop the worker gracefully (SIGTERM) with every connector running, start it again
    on the same state and port: how long the stop took, and from the new process's spawn
    until its REST API answered, ``/health`` said healthy (the stored connectors
    started), every connector and task was RUNNING again, and every sink task had its
    partition back."""
    started = time.monotonic()
    code = worker.stop(timeout=120)
    assert code == 0, f"the worker exited with {code} on SIGTERM"
    stopped = time.monotonic()
    worker.launch()
    wait_until(lambda: answers(worker.url), timeout=300, interval=0.05,
               message="the restarted worker's REST API answers")
    up = time.monotonic()
    worker.wait_started(timeout=300)  # /health 200: the stored connectors started
    healthy = time.monotonic()
    client = worker.client
    wait_until(lambda: all_in(client, names, "RUNNING", "RUNNING"), timeout=600,
               interval=0.5, message=f"{n} connectors RUNNING after the restart")
    running = time.monotonic()
    wait_until(lambda: sinks_assigned(client, n // 2), timeout=600, interval=1.0,
               message=f"{n // 2} sink tasks assigned after the restart")
    return {"shutdown_s": round(stopped - started, 1), "rest_up_s": round(up - stopped, 1),
            "healthy_s": round(healthy - stopped, 1), "running_s": round(running - stopped, 1),
            "assigned_s": round(time.monotonic() - stopped, 1)}


def states(client: httpx.Client) -> dict[str, tuple[str, list[str]]]:
    body = client.get("/connectors?expand=status", timeout=120).json()
    return {name: (info["status"]["connector"]["state"],
                   [t["state"] for t in info["status"]["tasks"]])
            for name, info in body.items()}


def all_in(client: httpx.Client, names: list[str], state: str, tasks: str | None) -> bool:
    current = states(client)
    return all(name in current and current[name][0] == state
               and (tasks is None and not current[name][1]
                    or tasks is not None and current[name][1]
                    and all(t == tasks for t in current[name][1]))
               for name in names)


def sinks_assigned(client: httpx.Client, sinks: int) -> bool:
    """Every sink task has its partition (its consumer joined the group)."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    assigned = sum(1 for family in text_string_to_metric_families(response.text)
                   if family.name == "kafka_connect_sink_task_metrics_partition_count"
                   for sample in family.samples if sample.value >= 1)
    return assigned >= sinks


def create(client: httpx.Client, work: Path, n: int, run: str) -> list[str]:
    names = []
    for i in range(n):
        pair = i // 2
        if i % 2 == 0:
            name = f"{run}-source-{pair}"
            config = {"connector.class": "SequenceGenerator", "topic": f"{run}-{pair}",
                      "rate": "1", "message.size": "40", "tasks.max": "1"}
        else:
            name = f"{run}-sink-{pair}"
            config = {"connector.class": "FileStreamSink", "topics": f"{run}-{pair}",
                      "file": str(work / f"{name}.txt"), "tasks.max": "1"}
        response = client.put(f"/connectors/{name}/config", json=config)
        assert response.status_code == 201, response.text
        names.append(name)
    return names


def measure_size(broker: str, n: int, args: argparse.Namespace, work: Path,
                 broker_pid: int | None = None) -> dict[str, Any]:
    port = free_port()
    run = f"n{n}-{os.getpid()}-{int(time.time())}"
    props = write_properties(work / f"{run}.properties", {
        "bootstrap.servers": broker, "listeners": f"http://127.0.0.1:{port}",
        "storage.sql.url": f"sqlite:///{work / (run + '.db')}",
        "key.converter": STRING, "value.converter": STRING,
        **dict(item.split("=", 1) for item in args.worker_prop)})
    kwargs: dict[str, Any] = {"url": f"http://127.0.0.1:{port}",
                              "log_path": work / f"{run}.log", "cwd": work,
                              "request_timeout": 120.0}
    env = dict(item.split("=", 1) for item in args.worker_env)  # extra, on top of ours
    worker = WorkerProcess(props, nofile=args.nofile or None, env=env, **kwargs)
    row: dict[str, Any] = {"tasks": n}
    with worker:
        client = worker.client
        assert worker.pid is not None
        started = time.monotonic()
        names = create(client, work, n, run)
        created = time.monotonic()
        row["create_s"] = round(created - started, 1)  # N sequential PUTs
        if args.nofile:
            return {**row, **shortage(worker, client, names, args)}
        wait_until(lambda: all_in(client, names, "RUNNING", "RUNNING"), timeout=600,
                   interval=0.5, message=f"{n} connectors RUNNING")
        row["running_after_s"] = round(time.monotonic() - created, 1)
        wait_until(lambda: sinks_assigned(client, n // 2), timeout=600, interval=1.0,
                   message=f"{n // 2} sink tasks assigned")
        row["assigned_after_s"] = round(time.monotonic() - created, 1)
        time.sleep(args.settle)  # first fetches and commits: not steady state
        row["running"] = {**proc_figures(worker.pid),
                          **cpu_percent(worker.pid, args.idle, broker_pid),
                          "expand_status_ms": expand_status_ms(client),
                          "load": http_load(f"{worker.url}/connectors/{names[0]}/status",
                                            args.duration),
                          "metrics": scrape(client)}
        if args.restart:
            row["restart"] = restart(worker, names, n)
            client = worker.client
        for name in names:
            assert client.put(f"/connectors/{name}/stop").status_code == 204
        wait_until(lambda: all_in(client, names, "STOPPED", None), timeout=600, interval=0.5,
                   message=f"{n} connectors STOPPED")
        time.sleep(5)  # the "5 s after a stop"
        row["stopped"] = {**proc_figures(worker.pid),
                          **cpu_percent(worker.pid, args.idle, broker_pid),
                          "expand_status_ms": expand_status_ms(client),
                          "load": http_load(f"{worker.url}/connectors/{names[0]}/status",
                                            args.duration)}
        row["raw"] = raw_baseline(broker, [f"{run}-{pair}" for pair in range(n // 2)], args,
                                  broker_pid)
    return row


def raw_baseline(broker: str, topics: list[str], args: argparse.Namespace,
                 broker_pid: int | None) -> dict[str, Any]:
    """The same clients and traffic without the worker (``raw_clients.py``): its CPU once
    every consumer has read a record, over ``args.idle`` seconds."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(RAW), "--bootstrap", broker,
                             "--topics", ",".join(topics)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        deadline = started + 300  # group joins: about half the 45 s session timeout
        line = ""
        while line.strip() != "ready":
            left = deadline - time.monotonic()
            assert left > 0 and proc.poll() is None, "the raw clients did not get ready"
            if select.select([proc.stdout], [], [], left)[0]:
                line = proc.stdout.readline()
        figures = {"ready_after_s": round(time.monotonic() - started, 1),
                   **proc_figures(proc.pid), **cpu_percent(proc.pid, args.idle, broker_pid)}
    finally:
        proc.stdin.close()  # it stops at the end of its input
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return figures


def shortage(worker: WorkerProcess, client: httpx.Client, names: list[str],
             args: argparse.Namespace) -> dict[str, Any]:
    """With too few descriptors: does the REST API answer, and is the shortage visible?"""
    def settled() -> bool:  # every task started or refused
        body = client.get("/connectors?expand=status", timeout=120).json()
        return len(body) == len(names) and all(
            info["status"]["tasks"] and all(t["state"] in ("RUNNING", "FAILED")
                                            for t in info["status"]["tasks"])
            for info in body.values())
    wait_until(settled, timeout=300, interval=0.5, message="every task RUNNING or FAILED")
    load = http_load(f"{worker.url}/connectors/{names[0]}/status", args.duration)
    health = client.get("/health")
    body = client.get("/connectors?expand=status", timeout=120).json()
    tasks = [t for info in body.values() for t in info["status"]["tasks"]]
    failed = [t for t in tasks if t["state"] == "FAILED"]
    log = worker.log_path.read_text(errors="replace")
    assert worker.pid is not None
    return {"nofile": args.nofile, "load": load,
            "health": {"status_code": health.status_code, "body": health.json()},
            "tasks_running": sum(t["state"] == "RUNNING" for t in tasks),
            "tasks_failed": len(failed),
            "failed_traces_naming_the_limit": sum(
                "file descriptor" in (t.get("trace") or "").lower() for t in failed),
            "log_lines_naming_the_limit": sum(
                "file descriptor" in line.lower() for line in log.splitlines()),
            "log_lines_raw_librdkafka": sum(
                line.startswith("%") for line in log.splitlines()),
            **proc_figures(worker.pid)}


def print_table(rows: list[dict[str, Any]]) -> None:
    print(f"{'tasks':>6} {'p99 run':>9} {'p99 stop':>9} {'req/s run':>10} {'req/s stop':>10} "
          f"{'expand run':>11} {'expand stop':>11} {'cpu run':>8} {'cpu stop':>8} "
          f"{'thr run':>8} {'thr stop':>8} {'RSS run':>8} {'fds run':>8} {'fds stop':>8} "
          f"{'RUNNING':>8} {'broker':>7} {'raw cpu':>8}")
    for row in rows:
        if "running" not in row:
            continue
        run, stop = row["running"], row["stopped"]
        print(f"{row['tasks']:>6} {run['load']['p99_ms']:>7.1f}ms {stop['load']['p99_ms']:>7.1f}ms "
              f"{run['load']['req_per_s']:>10.0f} {stop['load']['req_per_s']:>10.0f} "
              f"{run['expand_status_ms']:>9.1f}ms {stop['expand_status_ms']:>9.1f}ms "
              f"{run['cpu_pct']:>7.1f}% {stop['cpu_pct']:>7.1f}% {run['threads']:>8} "
              f"{stop['threads']:>8} {run['rss_mb']:>6.0f}MB {run['fds']:>8} {stop['fds']:>8} "
              f"{row['running_after_s']:>7.1f}s {run.get('broker_cpu_pct', 0):>6.1f}% "
              f"{row['raw']['cpu_pct']:>7.1f}%")
    print(f"{'tasks':>6} {'scrape':>9} {'series':>7} {'kB':>6} {'shutdown':>9} {'REST up':>8} "
          f"{'healthy':>8} {'RUNNING':>8} {'assigned':>9}")
    for row in rows:
        if "running" not in row:
            continue
        scraped, again = row["running"]["metrics"], row.get("restart")
        restarted = (f"{again['shutdown_s']:>8.1f}s {again['rest_up_s']:>7.1f}s "
                     f"{again.get('healthy_s', again['running_s']):>7.1f}s "
                     f"{again['running_s']:>7.1f}s {again['assigned_s']:>8.1f}s"
                     if again else f"{'-':>9} {'-':>8} {'-':>8} {'-':>8} {'-':>9}")
        print(f"{row['tasks']:>6} {scraped['scrape_ms']:>7.1f}ms {scraped['series']:>7} "
              f"{scraped['kb']:>6} {restarted}")


def pin_broker(broker_pid: int, cpu: int) -> None:
    """Every thread of the broker on ``cpu``; this process (and what it starts from now on)
    on the other CPUs."""
    others = set(range(os.cpu_count() or 1)) - {cpu}
    assert others, "--broker-cpu needs a machine with more than one CPU"
    for task in Path(f"/proc/{broker_pid}/task").iterdir():
        os.sched_setaffinity(int(task.name), {cpu})
    os.sched_setaffinity(0, others)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,100,250,500",
                        help="comma-separated task counts")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of REST load")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of CPU sampling")
    parser.add_argument("--settle", type=float, default=10.0,
                        help="seconds between all RUNNING and the measurements")
    parser.add_argument("--nofile", type=int, default=0,
                        help="run the worker with this RLIMIT_NOFILE (the shortage mode)")
    parser.add_argument("--worker-env", action="append", default=[], metavar="KEY=VALUE",
                        help="environment of the worker process, e.g. MALLOC_ARENA_MAX=2")
    parser.add_argument("--worker-prop", action="append", default=[], metavar="KEY=VALUE",
                        help="an extra worker property, e.g. "
                             "consumer.statistics.interval.ms=0")
    parser.add_argument("--broker-cpu", type=int, default=None,
                        help="pin the broker to this CPU, everything else to the others")
    parser.add_argument("--restart", action="store_true",
                        help="also restart the worker with every connector running")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp, EmbeddedBroker() as broker:
        if args.broker_cpu is not None:
            assert broker.pid is not None
            pin_broker(broker.pid, args.broker_cpu)
        for n in sizes:
            print(f"--- {n} tasks", flush=True)
            rows.append(measure_size(broker.bootstrap_servers, n, args, Path(tmp),
                                    broker.pid))
            print(json.dumps(rows[-1]), flush=True)
    print_table(rows)
    result = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
              "settings": {**vars(args), "results": str(args.results)}, "rows": rows}
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
