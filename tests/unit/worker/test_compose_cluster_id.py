"""worker.compose.kafka_cluster_id against a port nothing listens on: its wait is readable
(one INFO line, librdkafka's lines under worker.compose.librdkafka, not on stderr), bounded,
and ends at once when start-up is cancelled by a signal."""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pytest

from worker import compose
from worker.clients import factories as kafka_clients
from worker.config.worker_config import StandaloneConfig
from worker.errors import WorkerError
from worker.testing import free_port
from worker.util.logs import STARTUP_CLIENTS


def unreachable() -> str:
    return f"127.0.0.1:{free_port()}"


def test_no_broker_fails_after_the_timeout_with_one_waiting_line_and_logged_client_lines(
        caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]) -> None:
    bootstrap = unreachable()
    config = StandaloneConfig({"bootstrap.servers": bootstrap})
    caplog.set_level("INFO")
    started = time.monotonic()
    with pytest.raises(WorkerError, match=f"Could not reach Kafka at bootstrap.servers="
                                           f"{bootstrap} within 2 s"):
        compose.kafka_cluster_id(config, timeout_s=2.0)
    assert 1.9 < time.monotonic() - started < 5
    waiting = [r.getMessage() for r in caplog.records if r.name == "worker.compose"]
    assert len(waiting) == 1
    assert re.fullmatch(rf"Waiting up to \d s for Kafka at bootstrap.servers={bootstrap}",
                        waiting[0])
    client_lines = [r for r in caplog.records if r.name == STARTUP_CLIENTS]
    assert client_lines and all("FAIL" in r.getMessage() or "REQTMOUT" in r.getMessage()
                                or "brokers are down" in r.getMessage()
                                for r in client_lines), [r.getMessage() for r in client_lines]
    assert "%3|" not in capfd.readouterr().err  # nothing raw from librdkafka


def test_a_cancelled_start_up_stops_waiting_within_a_step(
        caplog: pytest.LogCaptureFixture) -> None:
    config = StandaloneConfig({"bootstrap.servers": unreachable()})
    cancelled = threading.Event()
    threading.Timer(0.3, cancelled.set).start()
    started = time.monotonic()
    with pytest.raises(WorkerError, match="Start-up interrupted while waiting for Kafka"):
        compose.kafka_cluster_id(config, timeout_s=30.0, cancelled=cancelled)
    assert time.monotonic() - started < compose.CLUSTER_ID_STEP_S + 1.5


def test_the_waiting_line_says_when_bootstrap_servers_is_not_set(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # A misspelt key leaves Kafka's default, localhost:9092; here the client is pointed at
    # a port where nothing listens, whatever runs on 9092 on this machine.
    config = StandaloneConfig({"bootstrap.server": unreachable()})
    real = kafka_clients.admin_config

    def elsewhere(worker: Any, connector_config: Any = None) -> dict[str, Any]:
        return {**real(worker, connector_config), "bootstrap.servers": unreachable()}

    monkeypatch.setattr(kafka_clients, "admin_config", elsewhere)
    caplog.set_level("INFO")
    with pytest.raises(WorkerError, match=r"bootstrap.servers=localhost:9092 \(Kafka's "
                                           r"default: bootstrap.servers is not set\) within"):
        compose.kafka_cluster_id(config, timeout_s=1.5)
    waiting = [r.getMessage() for r in caplog.records if r.name == "worker.compose"]
    assert len(waiting) == 1
    assert waiting[0].endswith(" s for Kafka at bootstrap.servers=localhost:9092 (Kafka's "
                               "default: bootstrap.servers is not set)")
