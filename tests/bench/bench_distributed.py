"""Distributed mode on 3 workers: the KIP-875 runbook through a follower, join/leave settle.

Three ``connect-distributed`` worker subprocesses share one ``group.id`` on one broker; a
SequenceGenerator source (4 tasks, 200 rec/s each, StringConverter) runs on them. Every
request goes to a *follower* (the leader is read from the workers' logs: the latest
"Joined generation N as leader" line), so writes are forwarded to the leader.

* **runbook** — each round, once the connector has committed offsets for its 4 partitions
  (untimed), times from the first request until ``GET /connectors/{c}/status`` on the
  follower shows the connector and all 4 tasks RUNNING again: ``PUT /stop``, wait for
  STOPPED with no tasks, ``DELETE /offsets`` (retried on 409: a rebalance may still be
  settling; retries are counted), ``PUT /resume``, wait for RUNNING. Status is polled every
  20 ms. The generations the round cost (group rebalances) are read from the logs.
* **join settle** — a 4th worker is launched; time from its launch until every live
  worker's status shows the connector and all tasks RUNNING on live workers, the newcomer
  running at least one task and per-worker task counts within 1 of each other. Also
  reported from the newcomer's first "Rebalance started" log line (excludes its start-up).
* **leave settle** — the newcomer gets SIGTERM (a clean leave; with
  ``scheduled.rebalance.max.delay.ms=0`` its tasks move at once); time until the same
  condition holds on the remaining 3 workers.
* **raw baseline**, same run, same broker: a bare confluent-kafka consumer group (3 members
  on a 12-partition topic, librdkafka's default eager range assignor, the workers'
  ``session.timeout.ms``/``heartbeat.interval.ms``): time for a 4th member to join until
  all 4 hold a disjoint assignment covering every partition, and for it to ``close()``
  until the other 3 cover every partition again. Settle ratio = worker / raw.

On Tansu a JoinGroup round waits about ``session.timeout.ms``/2, so both the workers and
the raw group use ``session.timeout.ms=3000`` (recorded in the JSON).

Run: ``.venv/bin/python tests/bench/bench_distributed.py [--rounds 10] [--settle-rounds 5]
[--workdir DIR]`` (``--workdir`` keeps the worker logs); prints a table and writes
``tests/bench/results/distributed.json``. Target (issue #4): runbook median below 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "bench" / "results" / "distributed.json"
sys.path.insert(0, str(ROOT))

from tests.conftest import DISTRIBUTED_TEST_PROPS  # noqa: E402
from worker.testing import EmbeddedBroker, free_port, terminate_process  # noqa: E402

SESSION_TIMEOUT_MS = 3000
HEARTBEAT_INTERVAL_MS = 500
TASKS = 4
RAW_PARTITIONS = 12
POLL_S = 0.02
SETTLE_POLL_S = 0.05
TIMEOUT_S = 60.0
CONNECTOR = "bench-generator"
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"
_JOINED = re.compile(r"^\[([^\]]+)\] INFO Joined generation (\d+) as (leader|follower) "
                     r"\(leader ([^)]+)\)", re.M)
_REBALANCE = re.compile(r"^\[([^\]]+)\] INFO Rebalance started", re.M)
_HERDER_STARTED = re.compile(r"^\[([^\]]+)\] INFO Distributed herder started", re.M)
#: kafka-python's line when a SyncGroup is answered REBALANCE_IN_PROGRESS (a lost round).
_SYNC_FAILED = re.compile(r"SyncGroup for group \S+ failed due to coordinator rebalance")
#: The join lines in order: a "(Re-)joining" right after "Successfully joined" (JoinGroup
#: answered), with no join completed, no error and no new rebalance in between, is a
#: JoinGroup/SyncGroup round whose outcome the member dropped.
_JOIN_EVENTS = re.compile(r"(Rebalance started|\(Re-\)joining group|Successfully joined group"
                          r"|failed due to|Joined generation|Received member id)")


def log_time(stamp: str) -> float:
    """Epoch seconds of a logging ``asctime`` (local time, ``2026-11-22 10:00:00,123``)."""
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").timestamp()


class Worker:
    """One ``connect-distributed`` subprocess with its REST client and log."""

    def __init__(self, workdir: Path, index: int, props: dict[str, object]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.worker_id = f"127.0.0.1:{self.port}"
        self.dir = workdir / f"worker-{index}"
        self.dir.mkdir()
        self.log_path = self.dir / "worker.log"
        props_file = self.dir / "worker.properties"
        props_file.write_text("".join(f"{k}={v}\n" for k, v in
                                      {**props, "listeners": self.url}.items()))
        self.props_file = props_file
        self.client = httpx.Client(base_url=self.url, timeout=30)
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.launched_at = 0.0  # time.time() of launch, to compare with log timestamps

    def launch(self) -> None:
        self._log = self.log_path.open("wb")
        self.launched_at = time.time()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "worker.cli.distributed", str(self.props_file)],
            cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def close(self) -> None:
        if self.proc is not None:
            terminate_process(self.proc, 30.0, 5.0)
        self.client.close()
        if self._log is not None:
            self._log.close()

    def text(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def joins(self) -> list[tuple[float, int, str, str]]:
        """(epoch s, generation, role, leader URL) of every completed join."""
        return [(log_time(t), int(g), role, leader)
                for t, g, role, leader in _JOINED.findall(self.text())]

    def first(self, pattern: re.Pattern[str]) -> float | None:
        match = pattern.search(self.text())
        return log_time(match.group(1)) if match else None

    def sync_failures(self) -> int:
        return len(_SYNC_FAILED.findall(self.text()))

    def dropped_joins(self) -> int:
        dropped, previous = 0, ""
        for event in _JOIN_EVENTS.findall(self.text()):
            dropped += previous == "Successfully joined group" and event.startswith("(Re-)")
            previous = event
        return dropped

    def round_durations(self) -> list[float]:
        """Seconds from each "Rebalance started" to the next completed join."""
        text = self.text()
        events = sorted([(m.start(), "start", log_time(m.group(1)))
                         for m in _REBALANCE.finditer(text)]
                        + [(m.start(), "joined", log_time(m.group(1)))
                           for m in _JOINED.finditer(text)])
        durations, started = [], None
        for _, kind, stamp in events:
            if kind == "start":
                started = started if started is not None else stamp
            elif started is not None:
                durations.append(stamp - started)
                started = None
        return durations

    def quiet(self) -> bool:
        """Joined a generation and not rebalancing since (as far as its log says)."""
        text = self.text()
        joined = [m.start() for m in _JOINED.finditer(text)]
        started = [m.start() for m in _REBALANCE.finditer(text)]
        return bool(joined) and (not started or joined[-1] > started[-1])

    def status(self, name: str) -> dict[str, Any] | None:
        try:
            response = self.client.get(f"/connectors/{name}/status")
        except httpx.HTTPError:
            return None
        return response.json() if response.status_code == 200 else None


def wait_for(check: Callable[[], Any], what: str, interval: float = SETTLE_POLL_S,
             timeout: float = TIMEOUT_S) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what}")


def generation(workers: Iterable[Worker]) -> int:
    return max((j[1] for w in workers for j in w.joins()), default=-1)


def sync_failures(workers: Iterable[Worker]) -> int:
    return sum(w.sync_failures() for w in workers)


def dropped_joins(workers: Iterable[Worker]) -> int:
    return sum(w.dropped_joins() for w in workers)


def leader_url(workers: list[Worker]) -> str:
    """The leader named in the latest join line, once every live worker is in that
    generation and quiet."""
    def agreed() -> str | None:
        latest = [w.joins()[-1] if w.joins() else None for w in workers if w.running]
        if any(j is None for j in latest) or not all(w.quiet() for w in workers if w.running):
            return None
        if len({j[1] for j in latest if j is not None}) != 1:
            return None
        return latest[0][3] if latest[0] is not None else None
    found: str = wait_for(agreed, "one agreed leader")
    return found


def settled(workers: list[Worker], name: str, must_run: Worker | None = None) -> bool:
    """Every live worker's status: connector and all tasks RUNNING on live workers,
    per-worker task counts (zeros included) within 1, ``must_run`` running a task."""
    live = {w.worker_id for w in workers}
    for worker in workers:
        body = worker.status(name)
        if body is None or body["connector"]["state"] != "RUNNING" \
                or body["connector"]["worker_id"] not in live or len(body["tasks"]) != TASKS:
            return False
        if any(t["state"] != "RUNNING" or t["worker_id"] not in live for t in body["tasks"]):
            return False
        counts = Counter({w: 0 for w in live})
        counts.update(t["worker_id"] for t in body["tasks"])
        if max(counts.values()) - min(counts.values()) > 1:
            return False
        if must_run is not None and counts[must_run.worker_id] == 0:
            return False
    return True


def quiesce(workers: list[Worker], name: str) -> None:
    """Untimed: every worker quiet in the same generation and the connector settled."""
    wait_for(lambda: settled(workers, name) and leader_url(workers), "a settled cluster")
    time.sleep(0.5)


def write(client: httpx.Client, method: str, path: str, want: int) -> int:
    """Send a write, retrying on 409 (rebalance in progress); returns the retries."""
    retries = 0
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        response = client.request(method, path)
        if response.status_code == want:
            return retries
        if response.status_code != 409 or time.monotonic() > deadline:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        retries += 1
        time.sleep(0.05)


def wait_state(client: httpx.Client, name: str, want: str, tasks: int) -> None:
    def reached() -> bool:
        response = client.get(f"/connectors/{name}/status")
        if response.status_code != 200:
            return False
        body = response.json()
        states = [t["state"] for t in body["tasks"]]
        return bool(body["connector"]["state"] == want and len(states) == tasks
                    and set(states) <= {want})
    wait_for(reached, f"{name} {want}", interval=POLL_S)


def wait_steady(client: httpx.Client, name: str) -> None:
    """Untimed, before each round: offsets committed for all the connector's partitions."""
    def committed() -> bool:
        response = client.get(f"/connectors/{name}/offsets")
        return response.status_code == 200 and len(response.json()["offsets"]) >= TASKS
    wait_for(committed, "committed offsets", interval=0.1)


def runbook(workers: list[Worker], follower: Worker, name: str) -> dict[str, Any]:
    client = follower.client
    generation_before, failures_before = generation(workers), sync_failures(workers)
    dropped_before = dropped_joins(workers)
    marks = [time.perf_counter()]
    retries = write(client, "PUT", f"/connectors/{name}/stop", 204)
    wait_state(client, name, "STOPPED", 0)
    marks.append(time.perf_counter())
    reset_retries = write(client, "DELETE", f"/connectors/{name}/offsets", 200)
    marks.append(time.perf_counter())
    retries += write(client, "PUT", f"/connectors/{name}/resume", 202)
    wait_state(client, name, "RUNNING", TASKS)
    marks.append(time.perf_counter())
    steps = {step: end - begin for step, begin, end
             in zip(("stop", "reset", "resume"), marks, marks[1:], strict=False)}
    return {"total_s": marks[-1] - marks[0], "steps_s": steps,
            "reset_409_retries": reset_retries, "other_409_retries": retries,
            "generation_before": generation_before, "generation_after": generation(workers),
            "sync_failures_before": failures_before, "dropped_joins_before": dropped_before}


# ------------------------------------------------------------------ raw consumer group


class RawMember:
    """A confluent-kafka consumer polled on its own thread; its assignment as last told by
    the rebalance callbacks."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.assigned: frozenset[int] = frozenset()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._conf = {"bootstrap.servers": bootstrap, "group.id": group,
                      "session.timeout.ms": SESSION_TIMEOUT_MS,
                      "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
                      "enable.auto.commit": False, "auto.offset.reset": "latest"}
        self._topic = topic
        self.consumer: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait()

    def _run(self) -> None:
        from confluent_kafka import Consumer

        self.consumer = Consumer(self._conf)

        def on_assign(_: Any, partitions: list[Any]) -> None:
            self.assigned = frozenset(p.partition for p in partitions)

        def on_revoke(_: Any, partitions: list[Any]) -> None:
            self.assigned = frozenset()
        self.consumer.subscribe([self._topic], on_assign=on_assign, on_revoke=on_revoke)
        self._ready.set()
        while not self._stop.is_set():
            self.consumer.poll(0.02)

    def halt(self) -> None:
        """Stop polling (the member stays in the group until ``close()``)."""
        self._stop.set()
        self._thread.join()

    def close(self) -> None:
        self.halt()
        self.consumer.close()


def covered(members: list[RawMember]) -> bool:
    """Every member holds partitions, disjoint, covering the topic."""
    sets = [m.assigned for m in members]
    return (all(sets) and sum(len(s) for s in sets) == RAW_PARTITIONS
            and frozenset().union(*sets) == frozenset(range(RAW_PARTITIONS)))


def raw_baseline(bootstrap: str, rounds: int) -> dict[str, list[float]]:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, RAW_PARTITIONS, 1)])[topic].result(30)
    group = f"bench-raw-{uuid.uuid4().hex[:8]}"
    members = [RawMember(bootstrap, group, topic) for _ in range(3)]
    times: dict[str, list[float]] = {"join_s": [], "leave_s": []}
    try:
        wait_for(lambda: covered(members), "raw group formed", interval=0.01)
        for _ in range(rounds):
            time.sleep(1.0)
            started = time.perf_counter()
            members.append(RawMember(bootstrap, group, topic))
            wait_for(lambda: covered(members), "raw join", interval=0.01)
            times["join_s"].append(time.perf_counter() - started)
            time.sleep(1.0)
            leaving = members.pop()
            leaving.halt()
            started = time.perf_counter()
            leaving.consumer.close()
            wait_for(lambda: covered(members), "raw leave", interval=0.01)
            times["leave_s"].append(time.perf_counter() - started)
    finally:
        for member in members:
            member.close()
    return times


# ------------------------------------------------------------------ report


def figures(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {"median_s": statistics.median(values),
            "p90_s": ordered[max(0, int(len(values) * 0.9) - 1)],
            "min_s": ordered[0], "max_s": ordered[-1], "all_s": values}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{platform.machine()}, {cpu}, {os.cpu_count()} cores, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="runbook rounds")
    parser.add_argument("--settle-rounds", type=int, default=5, help="join/leave rounds")
    parser.add_argument("--workdir", type=Path, help="keep worker logs here")
    args = parser.parse_args()
    with ExitStack() as stack:
        bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
        broker = "env"
        if not bootstrap:
            bootstrap = stack.enter_context(EmbeddedBroker()).bootstrap_servers
            broker = "embedded Tansu"
        # First, while nothing else runs: the workers' own load is not the baseline's.
        raw = raw_baseline(bootstrap, args.settle_rounds)
        if args.workdir:
            workdir = args.workdir
            workdir.mkdir(parents=True, exist_ok=True)
        else:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        group = f"bench-cluster-{uuid.uuid4().hex[:8]}"
        props: dict[str, object] = {
            "bootstrap.servers": bootstrap, "group.id": group,
            "config.storage.topic": f"{group}-configs",
            "offset.storage.topic": f"{group}-offsets",
            "status.storage.topic": f"{group}-status",
            **DISTRIBUTED_TEST_PROPS,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
            "consumer.session.timeout.ms": SESSION_TIMEOUT_MS,
            "scheduled.rebalance.max.delay.ms": 0,
        }
        workers: list[Worker] = []

        def add_worker() -> Worker:
            worker = Worker(workdir, len(workers) + 1, props)
            workers.append(worker)
            stack.callback(worker.close)
            worker.launch()
            return worker

        cluster = [add_worker() for _ in range(3)]
        leader = leader_url(cluster)
        follower = next(w for w in cluster if w.url != leader)
        config = {"connector.class": "worker.connectors.generator.SequenceGeneratorConnector",
                  "topic": f"{group}-data", "tasks.max": str(TASKS), "rate": "200",
                  "format": "string", "message.size": "100",
                  "key.converter": STRING_CONVERTER, "value.converter": STRING_CONVERTER}
        response = follower.client.put(f"/connectors/{CONNECTOR}/config", json=config)
        assert response.status_code == 201, response.text
        quiesce(cluster, CONNECTOR)

        rounds = []
        for _ in range(args.rounds):
            quiesce(cluster, CONNECTOR)
            wait_steady(follower.client, CONNECTOR)
            leader = leader_url(cluster)
            follower = next(w for w in cluster if w.url != leader)
            rounds.append({**runbook(cluster, follower, CONNECTOR), "follower": follower.url,
                           "leader": leader})
            print(f"runbook {len(rounds)}: {rounds[-1]['total_s']:.3f} s, "
                  f"409 retries {rounds[-1]['reset_409_retries']}", flush=True)
        quiesce(cluster, CONNECTOR)
        # Per round, up to the next round's start: rebalances (and SyncGroup failures) that
        # completed after RUNNING was seen belong to the round that caused them.
        ends = [(r["generation_before"], r["sync_failures_before"], r["dropped_joins_before"])
                for r in rounds[1:]]
        ends.append((generation(cluster), sync_failures(cluster), dropped_joins(cluster)))
        for entry, (generation_end, failures_end, dropped_end) in zip(rounds, ends,
                                                                       strict=True):
            entry["generations"] = generation_end - entry["generation_before"]
            entry["sync_failures"] = failures_end - entry["sync_failures_before"]
            entry["dropped_joins"] = dropped_end - entry["dropped_joins_before"]

        joins: list[dict[str, Any]] = []
        leaves: list[dict[str, Any]] = []
        for _ in range(args.settle_rounds):
            quiesce(cluster, CONNECTOR)
            before, failures_before = generation(cluster), sync_failures(workers)
            dropped_before = dropped_joins(workers)
            started = time.perf_counter()
            newcomer = add_worker()
            members = [*cluster, newcomer]
            wait_for(lambda: settled(members, CONNECTOR, newcomer), "join settle")  # noqa: B023
            elapsed = time.perf_counter() - started
            settled_at = time.time()
            rebalance = newcomer.first(_REBALANCE)
            herder = newcomer.first(_HERDER_STARTED)
            joins.append({"total_s": elapsed,
                          "from_first_rebalance_s": settled_at - rebalance if rebalance
                          else None,
                          "startup_s": herder - newcomer.launched_at if herder else None,
                          "generations_at_settle": generation(members) - before})
            quiesce(members, CONNECTOR)
            joins[-1]["generations"] = generation(members) - before
            joins[-1]["sync_failures"] = sync_failures(workers) - failures_before
            joins[-1]["dropped_joins"] = dropped_joins(workers) - dropped_before
            before, failures_before = generation(members), sync_failures(workers)
            dropped_before = dropped_joins(workers)
            assert newcomer.proc is not None
            started = time.perf_counter()
            newcomer.proc.terminate()
            wait_for(lambda: settled(cluster, CONNECTOR), "leave settle")
            leaves.append({"total_s": time.perf_counter() - started})
            newcomer.proc.wait(30)
            quiesce(cluster, CONNECTOR)
            leaves[-1]["generations"] = generation(cluster) - before
            leaves[-1]["sync_failures"] = sync_failures(workers) - failures_before
            leaves[-1]["dropped_joins"] = dropped_joins(workers) - dropped_before
            print(f"join {joins[-1]['total_s']:.3f} s "
                  f"({joins[-1]['generations']} generations), leave "
                  f"{leaves[-1]['total_s']:.3f} s ({leaves[-1]['generations']})", flush=True)
        leader = leader_url(cluster)
        rounds_on_leader = next(w for w in cluster if w.url == leader).round_durations()

    def median_of(entries: list[dict[str, Any]], key: str) -> float:
        return statistics.median(e[key] for e in entries if e[key] is not None)

    raw_join, raw_leave = statistics.median(raw["join_s"]), statistics.median(raw["leave_s"])
    join_group = [e["from_first_rebalance_s"] for e in joins
                  if e["from_first_rebalance_s"] is not None]
    summary = {
        "broker": broker,
        "leader_join_round_median_s": statistics.median(rounds_on_leader),
        "leader_join_rounds": len(rounds_on_leader),
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "worker_properties": {k: v for k, v in props.items()
                              if k not in ("bootstrap.servers",)},
        "runbook": {
            "rounds": args.rounds, "tasks": TASKS,
            **figures([r["total_s"] for r in rounds]),
            "step_medians_s": {step: statistics.median(r["steps_s"][step] for r in rounds)
                               for step in ("stop", "reset", "resume")},
            "reset_409_retries": sum(r["reset_409_retries"] for r in rounds),
            "other_409_retries": sum(r["other_409_retries"] for r in rounds),
            "generations_per_round": [r["generations"] for r in rounds],
            "sync_failures_per_round": [r["sync_failures"] for r in rounds],
            "dropped_joins_per_round": [r["dropped_joins"] for r in rounds],
            "target_median_s": 3.0,
            "all_rounds": rounds,
        },
        "join_settle": {"rounds": args.settle_rounds,
                        **figures([j["total_s"] for j in joins]),
                        "from_first_rebalance": figures(join_group) if join_group else None,
                        "startup_median_s": median_of(joins, "startup_s"),
                        "generations_per_round": [j["generations"] for j in joins],
                        "sync_failures_per_round": [j["sync_failures"] for j in joins],
                        "dropped_joins_per_round": [j["dropped_joins"] for j in joins],
                        "all_rounds": joins},
        "leave_settle": {"rounds": args.settle_rounds,
                         **figures([e["total_s"] for e in leaves]),
                         "generations_per_round": [e["generations"] for e in leaves],
                         "sync_failures_per_round": [e["sync_failures"] for e in leaves],
                         "dropped_joins_per_round": [e["dropped_joins"] for e in leaves]},
        "raw_group": {"members": 3, "partitions": RAW_PARTITIONS,
                      "assignor": "librdkafka default (range,roundrobin; eager)",
                      "join": figures(raw["join_s"]), "leave": figures(raw["leave_s"])},
        "ratios": {
            "join_settle_vs_raw_join": statistics.median(j["total_s"] for j in joins)
            / raw_join,
            "join_settle_from_first_rebalance_vs_raw_join":
                statistics.median(join_group) / raw_join if join_group else None,
            "leave_settle_vs_raw_leave": statistics.median(e["total_s"] for e in leaves)
            / raw_leave,
        },
        "machine": machine(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")

    book = summary["runbook"]
    print(f"\n{broker}, session.timeout.ms={SESSION_TIMEOUT_MS}, "
          f"heartbeat.interval.ms={HEARTBEAT_INTERVAL_MS}; {summary['machine']}")
    print(f"{'measure':<34}{'median s':>10}{'p90 s':>8}{'min s':>8}{'max s':>8}{'ratio':>8}")

    def row(label: str, values: dict[str, Any], ratio: float | None = None) -> None:
        print(f"{label:<34}{values['median_s']:>10.3f}{values['p90_s']:>8.3f}"
              f"{values['min_s']:>8.3f}{values['max_s']:>8.3f}"
              f"{'' if ratio is None else f'{ratio:.2f}':>8}")
    row(f"runbook via follower ({args.rounds})", book)
    row("join settle, from launch", summary["join_settle"],
        summary["ratios"]["join_settle_vs_raw_join"])
    if summary["join_settle"]["from_first_rebalance"]:
        row("join settle, from first JoinGroup", summary["join_settle"]["from_first_rebalance"],
            summary["ratios"]["join_settle_from_first_rebalance_vs_raw_join"])
    row("leave settle (SIGTERM)", summary["leave_settle"],
        summary["ratios"]["leave_settle_vs_raw_leave"])
    row("raw group: 4th member joins", summary["raw_group"]["join"])
    row("raw group: member close()s", summary["raw_group"]["leave"])
    steps = ", ".join(f"{k} {v:.3f}" for k, v in book["step_medians_s"].items())
    print(f"runbook step medians: {steps}; DELETE /offsets 409 retries: "
          f"{book['reset_409_retries']}; generations per round: "
          f"{book['generations_per_round']}")
    print(f"runbook per round: SyncGroup failures {book['sync_failures_per_round']}, "
          f"dropped joins {book['dropped_joins_per_round']}")
    for what in ("join", "leave"):
        figures_ = summary[f"{what}_settle"]
        print(f"{what} per round: generations {figures_['generations_per_round']}, SyncGroup "
              f"failures {figures_['sync_failures_per_round']}, dropped joins "
              f"{figures_['dropped_joins_per_round']}")
    print(f"newcomer start-up median {summary['join_settle']['startup_median_s']:.3f} s")
    print(f"leader: median {summary['leader_join_round_median_s']:.3f} s from 'Rebalance "
          f"started' to 'Joined generation' over {len(rounds_on_leader)} rounds")
    print(f"target: runbook median < 3 s; saved {RESULTS}")


if __name__ == "__main__":
    main()
