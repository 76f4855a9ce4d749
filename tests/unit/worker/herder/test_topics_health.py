"""AbstractHerder: KIP-558 active topics, KIP-495 loggers and KIP-1017 health.

Herders here are AbstractHerder subclasses over the memory stores; the loggers act on a
private logging hierarchy. ``QueueHerder`` has a request thread like StandaloneHerder's
and overrides the health hooks the way a herder with a request loop is meant to.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from tests.unit.worker.herder.conftest import MinimalHerder
from worker.config.worker_config import WorkerConfig
from worker.errors import ForbiddenError, NotFoundError
from worker.herder import health
from worker.herder.abstract import AbstractHerder
from worker.herder.models import HealthStatus, LoggerLevel, LoggerScope
from worker.plugins.registry import builtin_registry
from worker.runtime.loggers import Loggers
from worker.storage.base import TopicStatus
from worker.storage.memory import MemoryConfigBackingStore, MemoryStatusBackingStore

NOW_S = 1_700_000_000.0


class QueueHerder(MinimalHerder):
    """A request loop on its own thread, with the health hooks pointed at it."""

    def __init__(self, config: WorkerConfig) -> None:
        super().__init__(config, builtin_registry(), MemoryConfigBackingStore(),
                         MemoryStatusBackingStore())
        self.requests: queue.Queue[tuple[Callable[[], Any], Future[Any]] | None] = (
            queue.Queue())
        self.thread = threading.Thread(target=self._loop, name="herder", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while (item := self.requests.get()) is not None:
            fn, future = item
            try:
                future.set_result(fn())
            except BaseException as exc:
                future.set_exception(exc)

    def _health_probe(self) -> Future[None]:
        future: Future[None] = Future()
        self.requests.put((lambda: None, future))
        return future

    def _health_thread(self) -> threading.Thread | None:
        return self.thread


def make_herder(**worker_props: str) -> MinimalHerder:
    root = logging.RootLogger(logging.INFO)
    manager = logging.Manager(root)
    root.manager = manager
    loggers = Loggers(clock=lambda: NOW_S, manager=manager)
    return MinimalHerder(WorkerConfig(worker_props), builtin_registry(),
                         MemoryConfigBackingStore(), MemoryStatusBackingStore(), loggers)


@pytest.fixture
def herder() -> MinimalHerder:
    return make_herder()


# --- KIP-558 active topics ----------------------------------------------------------------

def record(herder: AbstractHerder, connector: str, *topics: str, task: int = 0) -> None:
    for topic in topics:
        herder.status_store.put_topic(TopicStatus(topic, connector, task))


def test_active_topics_are_sorted_and_per_connector(herder: MinimalHerder) -> None:
    record(herder, "src", "zeta", "alpha")
    record(herder, "src", "alpha", task=1)  # a second task on the same topic: one entry
    record(herder, "other", "beta")

    assert herder.connector_active_topics("src") == ["alpha", "zeta"]
    assert herder.connector_active_topics("other") == ["beta"]


def test_unknown_connector_has_no_topics_as_in_kafka(herder: MinimalHerder) -> None:
    assert herder.connector_active_topics("never-created") == []
    herder.reset_connector_active_topics("never-created")  # no error either


def test_reset_forgets_only_that_connectors_topics(herder: MinimalHerder) -> None:
    record(herder, "src", "a", "b")
    record(herder, "other", "a")

    herder.reset_connector_active_topics("src")

    assert herder.connector_active_topics("src") == []
    assert herder.connector_active_topics("other") == ["a"]
    record(herder, "src", "b")  # used again: recorded again
    assert herder.connector_active_topics("src") == ["b"]


def test_tracking_disabled_forbids_reading_and_reset() -> None:
    herder = make_herder(**{"topic.tracking.enable": "false"})

    for call in (herder.connector_active_topics, herder.reset_connector_active_topics):
        with pytest.raises(ForbiddenError) as info:
            call("src")
        assert str(info.value) == "Topic tracking is disabled."


def test_reset_disabled_forbids_only_the_reset() -> None:
    herder = make_herder(**{"topic.tracking.allow.reset": "false"})
    record(herder, "src", "a")

    with pytest.raises(ForbiddenError) as info:
        herder.reset_connector_active_topics("src")
    assert str(info.value) == "Topic tracking reset is disabled."
    assert herder.connector_active_topics("src") == ["a"]


def test_tracking_disabled_wins_over_reset_disabled() -> None:
    herder = make_herder(**{"topic.tracking.enable": "false",
                            "topic.tracking.allow.reset": "false"})

    with pytest.raises(ForbiddenError, match=r"^Topic tracking is disabled\.$"):
        herder.reset_connector_active_topics("src")


# --- KIP-495 loggers ------------------------------------------------------------------------

def test_loggers_lists_root_with_domain_levels(herder: MinimalHerder) -> None:
    assert herder.loggers() == {"root": LoggerLevel("INFO", None)}


def test_set_logger_level_worker_scope_returns_changed(herder: MinimalHerder) -> None:
    changed = herder.set_logger_level("worker.runtime", "DEBUG", LoggerScope.WORKER)

    assert changed == ["worker.runtime"]
    assert herder.logger_level("worker.runtime") == LoggerLevel("DEBUG", int(NOW_S * 1000))
    assert "worker.runtime" in herder.loggers()


def test_cluster_scope_applies_here_and_returns_none(herder: MinimalHerder) -> None:
    assert herder.set_logger_level("a.b", "ERROR", LoggerScope.CLUSTER) is None
    assert herder.logger_level("a.b").level == "ERROR"


def test_logger_errors_come_from_loggers(herder: MinimalHerder) -> None:
    with pytest.raises(NotFoundError, match=r"^Logger nope not found\.$"):
        herder.logger_level("nope")
    with pytest.raises(NotFoundError, match=r"^invalid log level 'NOISY'\.$"):
        herder.set_logger_level("a", "NOISY", LoggerScope.WORKER)


def test_each_herder_gets_its_own_loggers_by_default() -> None:
    first = MinimalHerder(WorkerConfig({}), builtin_registry(), MemoryConfigBackingStore(),
                          MemoryStatusBackingStore())
    second = MinimalHerder(WorkerConfig({}), builtin_registry(), MemoryConfigBackingStore(),
                           MemoryStatusBackingStore())
    assert first._loggers is not second._loggers


# --- KIP-1017 health ----------------------------------------------------------------------

def test_starting_until_marked_ready(herder: MinimalHerder) -> None:
    assert herder.health() == HealthStatus("starting", "Worker is still starting up.")

    herder.mark_ready()

    assert herder.health() == HealthStatus(
        "healthy", "Worker has completed startup and is ready to handle requests.")


@pytest.fixture
def queue_herder() -> Iterator[QueueHerder]:
    herder = QueueHerder(WorkerConfig({}))
    herder.health_check_timeout_s = 0.3
    herder.mark_ready()
    yield herder
    herder.requests.put(None)
    herder.thread.join(5)


def test_responsive_request_loop_is_healthy(queue_herder: QueueHerder) -> None:
    assert queue_herder.health().status == health.HEALTHY


def stuck_in_a_connector_call(release: threading.Event) -> None:
    release.wait(10)


def test_stuck_request_loop_is_unhealthy_and_says_where(queue_herder: QueueHerder,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    release = threading.Event()
    blocked: Future[None] = Future()
    queue_herder.requests.put((lambda: stuck_in_a_connector_call(release), blocked))
    try:
        with caplog.at_level(logging.WARNING, logger="worker.herder.health"):
            status = queue_herder.health()
    finally:
        release.set()
    blocked.result(5)

    assert status.status == "unhealthy"
    assert status.message.startswith(
        "Worker was unable to handle this request and may be unable to handle other "
        "requests. The herder thread is busy in stuck_in_a_connector_call (")
    assert status.worker_thread_details is not None
    assert "stuck_in_a_connector_call" in status.worker_thread_details
    assert "stuck_in_a_connector_call" in caplog.text
    # Once the loop is free again the worker is healthy again.
    assert queue_herder.health().status == health.HEALTHY


def test_unhealthy_without_a_known_thread_has_kafkas_plain_message() -> None:
    pending: Future[None] = Future()

    status = health.probe(pending, 0.01)

    assert status == HealthStatus("unhealthy", "Worker was unable to handle this request and "
                                               "may be unable to handle other requests.")


def test_a_failing_probe_is_an_error_not_a_status() -> None:
    failed: Future[None] = Future()
    failed.set_exception(RuntimeError("herder stopped"))

    with pytest.raises(RuntimeError, match="herder stopped"):
        health.probe(failed, 1)


def test_starting_is_answered_without_waiting_for_the_probe() -> None:
    herder = QueueHerder(WorkerConfig({}))
    herder.requests.put(None)  # the loop is gone: a probe would time out
    herder.thread.join(5)

    assert herder.health().status == health.STARTING
