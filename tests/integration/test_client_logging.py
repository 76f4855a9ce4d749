"""The Kafka clients' lines go through ``logging`` under the documented loggers, in the
worker's format, their repeats summarised; a clean stop logs no ERROR (issue #42,
worker/util/logs.py).

* A misspelt ``bootstrap.server`` leaves ``bootstrap.servers`` at Kafka's default, where
  nothing answers: the WARNING naming the typo stays in view — librdkafka's ~20 lines a
  second become a few lines under ``worker.compose.librdkafka``, then one line per 10 s
  with the count.
* A broker that goes away under a running distributed worker: its internal-topic clients,
  its task's producer and kafka-python (the group membership) all complain; a few lines a
  second at most, under the documented loggers, none raw.
* Stopping a standalone worker (a source and a sink running) or a two-worker cluster with
  SIGTERM: exit code 0, no ERROR.
"""

from __future__ import annotations

import re
import signal
import socket
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.conftest import (
    DISTRIBUTED_TEST_PROPS,
    DistributedClusterFactory,
    StandaloneWorkerFactory,
)
from tests.integration._cluster_helpers import (
    generator_config,
    leader_of,
    wait_agreed_status,
)
from tests.support import (
    WorkerProcess,
    unique_name,
    wait_for_connector_state,
    wait_until,
    write_properties,
)
from worker.testing import DISTRIBUTED_MODULE, EmbeddedBroker, free_port
from worker.util.logs import (
    CLIENT_LOGGERS,
    INTERNAL_TOPIC_CLIENTS,
    STARTUP_CLIENTS,
    TASK_CLIENTS,
)

#: A line as the worker writes it (worker.util.logs.LOG_FORMAT): time, level, message,
#: logger, thread.
LINE = re.compile(r"^\[(?P<second>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d{3}\] "
                  r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<message>.*) "
                  r"\((?P<logger>[\w.]+)\) \[[\w-]+\]$")
#: How confluent-kafka words a librdkafka line: facility, client name, text.
LIBRDKAFKA = re.compile(r"^[A-Z_]+ \[[^\]]*#(producer|consumer)-\d+\] ")
SUMMARY = re.compile(r"\((\d+) more like this in the last \d+ s\)")
STRING = "org.apache.kafka.connect.storage.StringConverter"


def lines_of(worker: WorkerProcess) -> list[str]:
    return [line for line in worker.log_tail(1_000_000).splitlines()
            if not line.startswith("=== start #")]


def client_lines(lines: Sequence[str]) -> list[re.Match[str]]:
    """The parsed lines of the Kafka clients' loggers."""
    parsed = [LINE.match(line) for line in lines]
    return [m for m in parsed if m is not None and any(
        m["logger"] == name or m["logger"].startswith(name + ".") for name in CLIENT_LOGGERS)]


def suppressed(line: str) -> int:
    """How many lines a summary line stands for (0: not a summary)."""
    found = SUMMARY.search(line)
    return int(found[1]) if found else 0


def per_second(matches: Sequence[re.Match[str]]) -> Counter[str]:
    return Counter(m["second"] for m in matches)


def assert_formatted(lines: Sequence[str]) -> None:
    raw = [line for line in lines if not LINE.match(line)]
    assert raw == [], "lines outside the worker's format:\n" + "\n".join(raw[:20])


def port_refuses(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((host, port)) != 0


@pytest.mark.integration
def test_a_misspelt_bootstrap_servers_leaves_the_typo_warning_readable(
        standalone_worker: StandaloneWorkerFactory) -> None:
    # As the user wrote it: bootstrap.servers then defaults to localhost:9092. If something
    # answers there on this machine, a port where nothing does stands in for it.
    overrides: dict[str, object | None] = {"bootstrap.servers": None,
                                           "bootstrap.server": "broker:9092"}
    if not port_refuses("127.0.0.1", 9092):
        overrides["bootstrap.servers"] = f"127.0.0.1:{free_port()}"
    worker = standalone_worker(overrides, start=False)
    worker.launch()
    # librdkafka retries ~20 times a second: the first window's repeats are counted and
    # reported on one line after 10 s.
    summary = wait_until(
        lambda: next((m for m in client_lines(lines_of(worker)) if SUMMARY.search(m[0])),
                     None),
        timeout=30, interval=0.2, message=lambda: f"a summary line:\n{worker.log_tail()}")
    pid = worker.pid
    assert pid is not None
    worker.stop()  # SIGTERM while it waits for Kafka: exit code 143 (worker.cli.base)
    lines = lines_of(worker)
    assert worker.returncode == 128 + signal.SIGTERM, "\n".join(lines)
    assert_formatted(lines)
    typo = [i for i, line in enumerate(lines) if "WARNING The configuration "
            "'bootstrap.server' was supplied but isn't a known config." in line]
    assert typo, "\n".join(lines)
    clients = client_lines(lines)
    assert {m["logger"] for m in clients} == {STARTUP_CLIENTS}
    assert all(LIBRDKAFKA.match(m["message"]) for m in clients)
    # About 20 a second were reported in those 10 s; a handful reached the log.
    assert summary is not None and suppressed(summary[0]) >= 50
    assert len(clients) <= 8, "\n".join(m[0] for m in clients)
    # What the user reads first: the typo, then one line on what the worker waits for.
    waiting = next(i for i, line in enumerate(lines) if "Waiting up to" in line)
    assert typo[0] < waiting <= typo[0] + 10, "\n".join(lines)
    if overrides["bootstrap.servers"] is None:
        assert "(Kafka's default: bootstrap.servers is not set)" in lines[waiting]


@pytest.mark.integration
def test_a_broker_gone_under_a_distributed_worker_is_summarised_per_logger(
        private_broker: EmbeddedBroker, tmp_path: Path) -> None:
    group, port = unique_name("gone"), free_port()
    props = write_properties(tmp_path / "worker.properties", {
        "bootstrap.servers": private_broker.bootstrap_servers,
        "listeners": f"http://127.0.0.1:{port}", "group.id": group,
        "config.storage.topic": f"{group}-configs", "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status", **DISTRIBUTED_TEST_PROPS})
    worker = WorkerProcess(props, url=f"http://127.0.0.1:{port}",
                           log_path=tmp_path / "worker.log", module=DISTRIBUTED_MODULE)
    try:
        worker.start(timeout=90)
        name = unique_name("gen")
        created = worker.client.post("/connectors", json={
            "name": name, "config": generator_config(unique_name("gone-topic"), 1)})
        assert created.status_code == 201, created.text
        wait_for_connector_state(worker.client, name, "RUNNING", "RUNNING")
        before = len(lines_of(worker))
        private_broker.stop()
        # The internal topics' clients repeat their failure all along: their summary line,
        # 10 s after the first, closes the window looked at.
        wait_until(lambda: any(SUMMARY.search(m[0]) and m["logger"] == INTERNAL_TOPIC_CLIENTS
                               for m in client_lines(lines_of(worker)[before:])),
                   timeout=60, message=lambda: f"a summary line:\n{worker.log_tail()}")
        outage = lines_of(worker)[before:]
    finally:
        worker.kill()  # a stop would wait for the broker: not what is looked at here
    assert_formatted(outage)
    clients = client_lines(outage)
    loggers = {m["logger"] for m in clients}
    assert {TASK_CLIENTS, INTERNAL_TOPIC_CLIENTS} <= loggers, loggers
    assert all(name in (TASK_CLIENTS, INTERNAL_TOPIC_CLIENTS) or name.startswith("kafka.")
               for name in loggers), loggers
    librdkafka = [m for m in clients if LIBRDKAFKA.match(m["message"])]
    assert {m["logger"] for m in librdkafka} <= {TASK_CLIENTS, INTERNAL_TOPIC_CLIENTS}
    # kafka-python speaks at WARNING and above unless /admin/loggers says otherwise.
    assert all(m["level"] != "INFO" for m in clients if m["logger"].startswith("kafka."))
    seconds = per_second(clients)
    first = min(seconds)
    # Each kind of line passes twice when the broker goes, then once per 10 s with its
    # count: tens of lines in the first second, a few a second after.
    assert sum(seconds.values()) <= 60, seconds
    assert max((n for s, n in seconds.items() if s > _plus(first, 1)), default=0) <= 6, seconds
    assert max(suppressed(m[0]) for m in clients) >= 100  # what the summaries stand for


def _plus(second: str, seconds: int) -> str:
    """``second`` ("YYYY-MM-DD HH:MM:SS") plus ``seconds``, in the same form."""
    from datetime import datetime, timedelta
    moment = datetime.strptime(second, "%Y-%m-%d %H:%M:%S") + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def assert_no_error(worker: WorkerProcess, code: int | None) -> None:
    lines = lines_of(worker)
    text = "\n".join(lines)
    assert code == 0, text
    assert [line for line in lines if " ERROR " in line or " CRITICAL " in line] == [], text
    assert "Traceback" not in text, text
    assert_formatted(lines)
    assert lines[-1].endswith("INFO Worker stopped (worker.cli.standalone) [MainThread]") or \
        lines[-1].endswith("INFO Worker stopped (worker.cli.distributed) [MainThread]"), text


@pytest.mark.integration
def test_a_clean_stop_of_a_standalone_worker_logs_no_error(
        standalone_worker: StandaloneWorkerFactory, tmp_path: Path) -> None:
    worker = standalone_worker()
    topic, sink_file = unique_name("clean"), tmp_path / "sink.txt"
    source = worker.client.post("/connectors", json={
        "name": unique_name("src"), "config": generator_config(topic, 1)})
    sink = worker.client.post("/connectors", json={"name": unique_name("sink"), "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": str(sink_file),
        "key.converter": STRING, "value.converter": STRING}})
    assert (source.status_code, sink.status_code) == (201, 201), source.text + sink.text
    # Records in the file: the sink's consumer has joined its group and committed.
    wait_until(lambda: sink_file.exists() and sink_file.read_text().count("\n") >= 20,
               timeout=60, message="records in the sink's file")
    assert_no_error(worker, worker.stop())


@pytest.mark.integration
def test_a_clean_stop_of_a_distributed_cluster_logs_no_error(
        distributed_cluster: DistributedClusterFactory) -> None:
    cluster = distributed_cluster(2)
    name = unique_name("gen")
    created = cluster.workers[0].client.post("/connectors", json={
        "name": name, "config": generator_config(unique_name("clean-topic"), 2)})
    assert created.status_code == 201, created.text
    wait_agreed_status(cluster.workers, name, "RUNNING", task_count=2)
    leader = leader_of(cluster.workers)
    follower = next(w for w in cluster.workers if w is not leader)
    # The follower leaves the group (LeaveGroup), the leader lets its session expire
    # (worker/herder/distributed/membership.py): both ways must end without an ERROR.
    assert_no_error(follower, follower.stop())
    assert_no_error(leader, leader.stop())
