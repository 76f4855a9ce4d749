"""Kafka Connect's status topic (``status.storage.topic``): records, one connector's view,
and readers for sensors (sync) and triggers (asyncio).

The records are Apache Kafka Connect's (``KafkaStatusBackingStore``), JSON written by
``JsonConverter`` with schemas disabled; the ``{"schema", "payload"}`` envelope is accepted
too::

    status-connector-{c}                 {"state", "trace", "worker_id", "generation"}
    status-task-{c}-{n}                  the same shape
    status-topic-{topic}:connector-{c}   {"topic": {"name", "connector", "task",
                                                    "discoverTimestamp"}}   (KIP-558)

A null value (tombstone) deletes the status. Malformed records are logged at WARNING (with
their key only) and skipped. Readers assign every partition from the beginning (no group
membership, no commits) and report a view only once every partition has reached its end
once, so old history never passes for the current state.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from airflow_provider.connector_state import STATES, Outcome, TaskState, Verdict, evaluate
from airflow_provider.exceptions import (
    KafkaConnectConfigError,
    KafkaConnectError,
    KafkaConnectTransportError,
)
from airflow_provider.hooks.connection import ConnectionSettings

__all__ = ["ConnectorStatusView", "Outcome", "StatusRecord", "StatusTopicWatch", "TaskState",
           "Verdict", "event_payload", "parse_status_key", "parse_status_record",
           "read_status_view"]

log = logging.getLogger(__name__)

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
TOPIC_SEPARATOR = ":connector-"

#: A batch is read as ``poll(timeout)`` — which returns as soon as one message (or EOF) is
#: there — then ``consume(num_messages=BATCH_SIZE - 1, timeout=0)`` for what else is
#: already fetched. ``consume()`` alone waits for its whole timeout unless the batch fills,
#: which would add up to that timeout to every state change.
BATCH_SIZE = 500
POLL_TIMEOUT_S = 0.1
#: Reader defaults; the connection's ``kafka_config`` overrides them. Brokers that cannot
#: answer a fetch early when data arrives (Tansu) hold it this long at most.
_READER_DEFAULTS = {"fetch.wait.max.ms": "100", "enable.partition.eof": "true"}
#: Consumer errors that retrying cannot fix: the topic is gone or not readable.
_CONFIG_CODES = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._UNKNOWN_TOPIC,
                          KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION})


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class StatusRecord:
    """One status-topic record. ``kind`` is ``connector``, ``task`` or ``topic``;
    ``deleted`` marks a tombstone (then only the key fields are set)."""

    kind: str
    connector: str
    task: int | None = None
    topic: str | None = None
    deleted: bool = False
    state: str | None = None
    trace: str | None = None
    worker_id: str | None = None
    generation: int = 0


class _Malformed(ValueError):
    """Why a record is skipped (never quotes the value: traces can be large)."""


def parse_status_key(key: bytes | str | None) -> StatusRecord:
    """The key fields of a status record (shaped as a tombstone); raises ``ValueError`` for
    a key that is not a status key."""
    if key is None:
        raise _Malformed("the key is null")
    if isinstance(key, bytes):
        try:
            key = key.decode("utf-8")
        except UnicodeDecodeError:
            raise _Malformed("the key is not UTF-8") from None
    if key.startswith(CONNECTOR_PREFIX) and len(key) > len(CONNECTOR_PREFIX):
        return StatusRecord("connector", key[len(CONNECTOR_PREFIX):], deleted=True)
    if key.startswith(TASK_PREFIX):
        # Connector names may hold '-': the task number follows the LAST one.
        connector, sep, number = key[len(TASK_PREFIX):].rpartition("-")
        if sep and connector and number.isascii() and number.isdigit():
            return StatusRecord("task", connector, task=int(number), deleted=True)
    if key.startswith(TOPIC_PREFIX):
        # Topic names cannot hold ':', so the first separator is the one.
        topic, sep, connector = key[len(TOPIC_PREFIX):].partition(TOPIC_SEPARATOR)
        if sep and topic and connector:
            return StatusRecord("topic", connector, topic=topic, deleted=True)
    raise _Malformed("not a status key")


def parse_status_record(key: bytes | str | None, value: bytes | None) -> StatusRecord | None:
    """The record, or None (logged at WARNING) when it is malformed or not a status record."""
    try:
        record = parse_status_key(key)
        if value is None:
            return record
        return _with_value(record, _payload(value))
    except _Malformed as exc:
        log.warning("Skipping a status-topic record with key %r: %s", key, exc)
        return None


def _payload(value: bytes) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except ValueError:  # also bad UTF-8
        raise _Malformed("the value is not JSON") from None
    # JsonConverter with schemas enabled wraps the value in an envelope.
    if isinstance(data, dict) and "payload" in data and "schema" in data:
        data = data["payload"]
    if not isinstance(data, dict):
        raise _Malformed("the value is not a JSON object")
    return data


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Malformed(f"{what} is not an integer")
    return value


def _with_value(record: StatusRecord, data: dict[str, Any]) -> StatusRecord:
    if record.kind == "topic":
        inner = data.get("topic")
        if not isinstance(inner, dict):
            raise _Malformed("'topic' is not a JSON object")
        if inner.get("name") != record.topic or inner.get("connector") != record.connector:
            raise _Malformed("the topic status does not match its key")
        return StatusRecord("topic", record.connector, topic=record.topic)
    state, trace, worker_id = data.get("state"), data.get("trace"), data.get("worker_id")
    if state not in STATES:
        raise _Malformed("unknown state")
    if not isinstance(trace, str | None) or not isinstance(worker_id, str | None):
        raise _Malformed("'trace' or 'worker_id' is not a string")
    return StatusRecord(record.kind, record.connector, task=record.task, state=state,
                        trace=trace, worker_id=worker_id,
                        generation=_int(data.get("generation"), "'generation'"))


# --------------------------------------------------------------------------- the view


@dataclass
class ConnectorStatusView:
    """One connector's statuses, fed with records in log order by :meth:`apply`."""

    connector: str
    connector_status: TaskState | None = None
    tasks: dict[int, TaskState] = field(default_factory=dict)
    topics: set[str] = field(default_factory=set)
    #: The generation of each current status: ``None`` is the connector's, ints are tasks.
    generations: dict[int | None, int] = field(default_factory=dict)

    @property
    def connector_state(self) -> str | None:
        """The connector's state; None if it was never seen (or was deleted)."""
        return self.connector_status.state if self.connector_status else None

    def apply(self, record: StatusRecord) -> bool:
        """Apply ``record``; False if it is another connector's, or stale.

        Stale, as in Kafka Connect (``CacheEntry.canWriteSafely``): a status from another
        worker with a lower generation than the current one of its key (a zombie worker
        that missed a rebalance). Tombstones always apply; a connector's tombstone also
        removes its tasks' statuses, as in Kafka Connect.
        """
        if record.connector != self.connector:
            return False
        if record.kind == "topic":
            if record.deleted:
                self.topics.discard(record.topic or "")
            else:
                self.topics.add(record.topic or "")
            return True
        slot = record.task if record.kind == "task" else None
        current = self.connector_status if slot is None else self.tasks.get(slot)
        if record.deleted:
            self.generations.pop(slot, None)
            if slot is None:
                self.connector_status = None
                self.tasks.clear()
                self.generations = {}
            else:
                self.tasks.pop(slot, None)
            return True
        assert record.state is not None
        if (current is not None and current.worker_id != record.worker_id
                and record.generation < self.generations.get(slot, 0)):
            log.debug("Ignoring a stale status of connector %r (task %s): generation %d < %d",
                      record.connector, slot, record.generation, self.generations.get(slot))
            return False
        status = TaskState(record.state, record.trace, record.worker_id)
        self.generations[slot] = record.generation
        if slot is None:
            self.connector_status = status
        else:
            self.tasks[slot] = status
        return True

    def evaluate(self, target_state: str, *, wait_for_tasks: bool,
                 expected_tasks: int | None) -> Outcome:
        """Whether the connector is in ``target_state``, by the provider's one rule
        (:func:`airflow_provider.connector_state.evaluate`): the connector must be in it;
        with ``wait_for_tasks`` (ignored for STOPPED) so must tasks
        ``0..expected_tasks-1``, or every task seen (at least one) when ``expected_tasks``
        is None. FAILED anywhere considered fails at once, unless FAILED is the target."""
        return evaluate(target_state, self.connector_status, self.tasks,
                        wait_for_tasks=wait_for_tasks, expected_tasks=expected_tasks)


def event_payload(view: ConnectorStatusView, outcome: Outcome, target_state: str
                  ) -> dict[str, Any]:
    """The JSON-serialisable summary that the trigger emits and the sensor returns: keys of
    the REST trigger's events plus ``topics`` (KIP-558) and ``worker_id``. Task ids are
    strings (the payload goes through JSON, whose object keys are strings anyway)."""
    status = view.connector_status
    return {
        "status": "failed" if outcome.verdict is Verdict.FAILED else "success",
        "connector": view.connector,
        "target_state": target_state,
        "message": outcome.detail,
        "failed": outcome.failed,
        "trace": outcome.trace,
        "state": status.state if status else None,
        "tasks": {str(n): view.tasks[n].state for n in sorted(view.tasks)},
        "topics": sorted(view.topics),
        "worker_id": status.worker_id if status else None,
    }


# --------------------------------------------------------------------------- readers


def reader_config(settings: ConnectionSettings) -> dict[str, Any]:
    """librdkafka settings of a status-topic reader."""
    return {**_READER_DEFAULTS, **settings.consumer_config(), "enable.partition.eof": True,
            "logger": log}


@dataclass
class _CatchUp:
    """Feeds consumed messages to a view and tracks which partitions reached their end."""

    view: ConnectorStatusView
    partitions: frozenset[int]
    topic: str
    at_end: set[int] = field(default_factory=set)
    records: int = 0
    started: float = field(default_factory=time.monotonic)
    caught_up: bool = False
    warned: set[int] = field(default_factory=set)

    def feed(self, messages: Iterable[Any]) -> None:
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    self.at_end.add(message.partition())
                    continue
                if error.code() in _CONFIG_CODES:
                    raise KafkaConnectConfigError(
                        f"reading the status topic {self.topic!r} failed: {error.str()}")
                if error.fatal():
                    raise KafkaConnectTransportError(
                        f"reading the status topic {self.topic!r} failed: {error.str()}")
                # librdkafka retries by itself; say so once per kind of error.
                level = logging.DEBUG if error.code() in self.warned else logging.WARNING
                self.warned.add(error.code())
                log.log(level, "Reading the status topic %r: %s", self.topic, error.str())
                continue
            self.records += 1
            try:
                key = parse_status_key(message.key())
            except _Malformed as exc:
                log.warning("Skipping a status-topic record with key %r: %s",
                            message.key(), exc)
                continue
            if key.connector != self.view.connector:  # skip others' values unparsed
                continue
            record = parse_status_record(message.key(), message.value())
            if record is not None:
                self.view.apply(record)
        if not self.caught_up and self.at_end >= self.partitions:
            self.caught_up = True
            log.info("Caught up on status topic %r (%d partitions, %d records) in %.3f s",
                     self.topic, len(self.partitions), self.records,
                     time.monotonic() - self.started)


def _partitions(metadata: Any, settings: ConnectionSettings) -> list[TopicPartition]:
    topic = settings.status_topic
    info = metadata.topics.get(topic)
    if info is None or info.error is not None or not info.partitions:
        reason = info.error.str() if info is not None and info.error is not None else "missing"
        raise KafkaConnectConfigError(
            f"the status topic {topic!r} does not exist on Kafka at "
            f"{settings.bootstrap_servers} ({reason}); set the connection extra "
            "'status_topic' to the Connect cluster's status.storage.topic")
    return [TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(info.partitions)]


def _transport_error(settings: ConnectionSettings, exc: KafkaException) -> KafkaConnectError:
    return KafkaConnectTransportError(
        f"cannot read the status topic {settings.status_topic!r} from Kafka at "
        f"{settings.bootstrap_servers}: {exc}")


def read_status_view(settings: ConnectionSettings, connector: str, *,
                     timeout: float | None = None) -> tuple[ConnectorStatusView, bool]:
    """Read the whole status topic once (sync, for poke mode): the connector's view and
    whether every partition was read to its end within ``timeout`` seconds (default:
    the connection's timeout)."""
    timeout = settings.timeout if timeout is None else timeout
    deadline = time.monotonic() + timeout
    consumer = Consumer(reader_config(settings))
    try:
        try:
            partitions = _partitions(
                consumer.list_topics(topic=settings.status_topic, timeout=timeout), settings)
            consumer.assign(partitions)
            catch_up = _CatchUp(ConnectorStatusView(connector),
                                frozenset(tp.partition for tp in partitions),
                                settings.status_topic)
            while not catch_up.caught_up and time.monotonic() < deadline:
                first = consumer.poll(POLL_TIMEOUT_S)
                if first is not None:
                    catch_up.feed([first, *consumer.consume(num_messages=BATCH_SIZE - 1,
                                                            timeout=0)])
        except KafkaException as exc:
            raise _transport_error(settings, exc) from exc
        return catch_up.view, catch_up.caught_up
    finally:
        consumer.close()


class StatusTopicWatch:
    """Follows the status topic for one connector (asyncio, for triggers).

    ``view`` and ``caught_up`` stay readable after :meth:`until` is cancelled (e.g. by a
    timeout), to say what was last seen.
    """

    def __init__(self, settings: ConnectionSettings, connector: str) -> None:
        self.settings = settings
        self.view = ConnectorStatusView(connector)
        self.caught_up = False

    async def until(self, target_state: str, *, wait_for_tasks: bool,
                    expected_tasks: int | None, poll_timeout: float = POLL_TIMEOUT_S) -> Outcome:
        """Read until the outcome is MET or FAILED (evaluated after every batch once caught
        up); the caller bounds the time. Blocking librdkafka calls run on the
        ``AIOConsumer``'s two threads, never on the event loop."""
        from confluent_kafka.aio import AIOConsumer

        settings = self.settings
        self.caught_up = False
        consumer = AIOConsumer(reader_config(settings), max_workers=2)
        try:
            try:
                metadata = await consumer.list_topics(topic=settings.status_topic,
                                                      timeout=settings.timeout)
                partitions = _partitions(metadata, settings)
                await consumer.assign(partitions)
                self.view = ConnectorStatusView(self.view.connector)
                catch_up = _CatchUp(self.view, frozenset(tp.partition for tp in partitions),
                                    settings.status_topic)
                while True:
                    first = await consumer.poll(poll_timeout)
                    if first is not None:
                        catch_up.feed([first, *await consumer.consume(
                            num_messages=BATCH_SIZE - 1, timeout=0)])
                    self.caught_up = catch_up.caught_up
                    if self.caught_up:
                        outcome = self.view.evaluate(target_state,
                                                     wait_for_tasks=wait_for_tasks,
                                                     expected_tasks=expected_tasks)
                        if outcome.verdict is not Verdict.WAITING:
                            return outcome
            except KafkaException as exc:
                raise _transport_error(settings, exc) from exc
        finally:
            await consumer.close()
