"""Reading Kafka Connect's status topic (``status.storage.topic``): the hook of the Kafka
side of the ``kafka_connect`` connection, for sensors (sync) and triggers (asyncio).

:class:`KafkaConnectStatusTopicHook` owns the connection's Kafka settings
(``bootstrap_servers``, ``status_topic``, ``kafka_config``), read once, synchronously or
without blocking the event loop, as Airflow's Kafka provider's ``KafkaConsumerHook`` does for
``AwaitMessageTrigger``. Its readers assign every partition from the beginning (no group
membership, no commits) and report a view (:mod:`airflow_provider.utils.status_records`) only
once every partition has reached its end once, so old history never passes for the current
state.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from airflow_provider.exceptions import (
    KafkaConnectConfigError,
    KafkaConnectError,
    KafkaConnectTransportError,
)
from airflow_provider.hooks.base import KafkaConnectBaseHook
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.utils.connector_state import Outcome, Verdict
from airflow_provider.utils.status_records import (
    ConnectorStatusView,
    Malformed,
    parse_status_key,
    parse_status_record,
)

log = logging.getLogger(__name__)

#: A batch is read as ``poll(timeout)`` — which returns as soon as one message (or EOF) is
#: there — then ``consume(num_messages=BATCH_SIZE - 1, timeout=0)`` for what else is
#: already fetched. ``consume()`` alone waits for its whole timeout unless the batch fills,
#: which would add up to that timeout to every state change.
BATCH_SIZE = 500
POLL_TIMEOUT_S = 0.1
#: Reader defaults; the connection's ``kafka_config`` overrides them. Brokers that cannot
#: answer a fetch early when data arrives (Tansu) hold it this long at most.
# fetch.queue.backoff.ms: librdkafka (2.4+) waits 1 s before fetching again for a partition
# whose local queue is full (queued.min.messages); catching up on a long status topic would
# stall for a second every 100,000 records.
_READER_DEFAULTS = {"fetch.wait.max.ms": "100", "enable.partition.eof": "true",
                    "fetch.queue.backoff.ms": "100"}
#: Consumer errors that retrying cannot fix: the topic is gone or not readable.
_CONFIG_CODES = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError._UNKNOWN_TOPIC,
                          KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION})


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
            except Malformed as exc:
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


class StatusTopicReader:
    """Reads the status topic for one connector synchronously and keeps its consumer and
    view between reads (a poke-mode sensor calls :meth:`read` on each poke): the first
    read catches up from the beginning, later ones only fetch what arrived since.
    :meth:`close` releases the consumer."""

    def __init__(self, settings: ConnectionSettings, connector: str) -> None:
        self.settings = settings
        self.connector = connector
        self._consumer: Consumer | None = None
        self._catch_up: _CatchUp | None = None

    def read(self, timeout: float | None = None) -> tuple[ConnectorStatusView, bool]:
        """Fetch what is new: ``(view, caught_up)``, where ``caught_up`` says that every
        partition has been read to its end at least once (within ``timeout`` seconds,
        default: the connection's timeout, for this call)."""
        settings = self.settings
        timeout = settings.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        try:
            catch_up = self._catch_up or self._open(timeout)
            was_caught_up = catch_up.caught_up
            consumer = self._consumer
            assert consumer is not None
            while time.monotonic() < deadline:
                first = consumer.poll(POLL_TIMEOUT_S)
                if first is None:
                    if was_caught_up:  # nothing more has arrived since the last read
                        break
                    continue
                catch_up.feed([first, *consumer.consume(num_messages=BATCH_SIZE - 1,
                                                        timeout=0)])
                if catch_up.caught_up and not was_caught_up:
                    break
        except KafkaException as exc:
            self.close()  # the next read starts over
            raise _transport_error(settings, exc) from exc
        return catch_up.view, catch_up.caught_up

    def _open(self, timeout: float) -> _CatchUp:
        consumer = Consumer(reader_config(self.settings))
        try:
            partitions = _partitions(
                consumer.list_topics(topic=self.settings.status_topic, timeout=timeout),
                self.settings)
            consumer.assign(partitions)
        except BaseException:
            consumer.close()
            raise
        self._consumer = consumer
        self._catch_up = _CatchUp(ConnectorStatusView(self.connector),
                                  frozenset(tp.partition for tp in partitions),
                                  self.settings.status_topic)
        return self._catch_up

    def close(self) -> None:
        consumer, self._consumer, self._catch_up = self._consumer, None, None
        if consumer is not None:
            consumer.close()


def read_status_view(settings: ConnectionSettings, connector: str, *,
                     timeout: float | None = None) -> tuple[ConnectorStatusView, bool]:
    """Read the whole status topic once: the connector's view and whether every partition
    was read to its end within ``timeout`` seconds (default: the connection's timeout)."""
    reader = StatusTopicReader(settings, connector)
    try:
        return reader.read(timeout)
    finally:
        reader.close()


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


# --------------------------------------------------------------------------- the hook


def check_status_topic(settings: ConnectionSettings) -> tuple[bool, str]:
    """Whether ``settings.status_topic`` exists on ``settings.bootstrap_servers`` (for
    *Test connection*; never raises)."""
    from confluent_kafka.admin import AdminClient

    topic = settings.status_topic
    try:
        config: dict[str, Any] = settings.kafka_client_config()
        # All topics, not list_topics(topic=...): asking for one topic by name can
        # auto-create it on brokers with auto.create.topics.enable.
        metadata = AdminClient(config).list_topics(timeout=settings.timeout)
    except KafkaConnectConfigError as exc:
        return False, str(exc)
    except Exception as exc:  # KafkaException: brokers down, SASL/TLS refused
        return False, f"Kafka at {settings.bootstrap_servers} did not answer: {exc}"
    if topic not in metadata.topics or metadata.topics[topic].error is not None:
        return False, f"status topic {topic!r} does not exist on {settings.bootstrap_servers}"
    return True, f"status topic {topic!r} found"


class KafkaConnectStatusTopicHook(KafkaConnectBaseHook):
    """Kafka Connect's status topic, read with the Kafka settings of the ``kafka_connect``
    connection (``bootstrap_servers``, ``status_topic``, ``kafka_config``).

    :param kafka_connect_conn_id: the ``kafka_connect`` Airflow connection.

    Sensors call :meth:`reader` (a reader that keeps its position between pokes) or
    :meth:`read_status_view` (one pass over the topic); triggers :meth:`awatch` (a live
    reader; the connection is looked up without blocking). The connection is read once
    per hook.
    """

    hook_name = "Kafka Connect status topic"

    def get_conn(self) -> ConnectionSettings:
        """The connection's settings: each read opens its own consumer."""
        return self.settings

    def read_status_view(self, connector: str, *, timeout: float | None = None
                         ) -> tuple[ConnectorStatusView, bool]:
        """Read the whole topic once: ``connector``'s view and whether every partition was
        read to its end within ``timeout`` seconds (default: the connection's timeout)."""
        return read_status_view(self.settings, connector, timeout=timeout)

    def reader(self, connector: str) -> StatusTopicReader:
        """A reader for ``connector`` that keeps its consumer between reads (close it)."""
        return StatusTopicReader(self.settings, connector)

    async def awatch(self, connector: str) -> StatusTopicWatch:
        """A live reader of the topic for ``connector`` (:meth:`StatusTopicWatch.until`)."""
        return StatusTopicWatch(await self.aget_settings(), connector)

    def test_connection(self) -> tuple[bool, str]:
        """Whether the status topic exists on the connection's Kafka cluster."""
        try:
            return check_status_topic(self.settings)
        except Exception as exc:  # the UI shows the message; never raise from here
            return False, f"{type(exc).__name__}: {exc}"
