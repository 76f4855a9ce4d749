"""Sink connector offsets (KIP-875): the committed offsets of the connector's consumer group.

A sink's offsets live in its consumer group ``connect-{name}`` (or the
``consumer.override.group.id``), exactly as in Kafka Connect, so reading, altering and
resetting them are consumer-group admin operations:

* read  → ``list_consumer_group_offsets`` (an unknown group has no offsets);
* alter → ``alter_consumer_group_offsets``; a partition whose new offset is null has its
  committed offset removed;
* reset → ``delete_consumer_groups`` (an unknown group is already reset: idempotent).

Three gaps are closed here rather than papered over:

* confluent-kafka has no ``delete_consumer_group_offsets`` (Kafka's OffsetDelete). Removing
  some partitions' offsets therefore deletes the (empty) group and commits the remaining
  offsets again. This is not atomic: if the second step fails, the error names the offsets
  to restore, and the connector would re-consume those partitions from
  ``auto.offset.reset`` (duplicates, not gaps, with Connect's default ``earliest``).
* Apache Kafka refuses to delete a group with active members, and to alter its offsets;
  Tansu, the test broker, deletes it anyway (docs/architecture.md §6). So every write
  first checks the group's membership with ``describe_consumer_groups`` and refuses with
  Kafka's message.
* librdkafka does not retry an admin request whose connection broke, and Tansu breaks the
  connection of the first request that touches a group after the group was deleted (a
  storage error in the broker). Such a request is sent once more through a new client;
  every request made here is idempotent.

Every admin call is bounded by a timeout, and ``KafkaException`` never leaves this module:
failures become ``worker.errors`` types, with the original as ``__cause__``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeoutError
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
)
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from worker.api.connector import TopicPartition
from worker.clients import factories as kafka_clients
from worker.config.worker_config import WorkerConfig
from worker.errors import WorkerError
from worker.util.logs import watch_logs

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Bound of each admin request, and of each read/alter/reset as a whole: the herder's write
#: must end well within its 90 s request timeout (Kafka bounds the whole operation too).
ADMIN_TIMEOUT_S = 15.0
OPERATION_TIMEOUT_S = 45.0
#: Group states in which the group has (or is gaining) members.
_ACTIVE_STATES = frozenset({ConsumerGroupState.STABLE, ConsumerGroupState.PREPARING_REBALANCING,
                            ConsumerGroupState.COMPLETING_REBALANCING})
#: Errors meaning "the group has active members" (Kafka's zombie-task case).
_MEMBER_ERRORS = frozenset({KafkaError.UNKNOWN_MEMBER_ID, KafkaError.NON_EMPTY_GROUP,
                            KafkaError.GROUP_SUBSCRIBED_TO_TOPIC, KafkaError.ILLEGAL_GENERATION,
                            KafkaError.REBALANCE_IN_PROGRESS})


def zombie_tasks_error(connector: str, reset: bool) -> WorkerError:
    """Kafka's answer (a 500) when the group still has members, e.g. tasks that ignored stop."""
    verb = "reset" if reset else "alter"
    return WorkerError(
        f"Failed to {verb} consumer group offsets for connector {connector} either because "
        "its tasks haven't stopped completely yet or the connector was resumed before the "
        f"request to {verb} its offsets could be successfully completed. If the connector is "
        "in a stopped state, this operation can be safely retried. If it doesn't eventually "
        "succeed, the Connect cluster may need to be restarted to get rid of the zombie sink "
        "tasks.")


class SinkGroupOffsets:
    """The committed offsets of one sink connector's consumer group.

    ``admin`` is a confluent-kafka ``AdminClient`` (or anything with the same methods);
    :func:`open_sink_offsets` builds one the way Kafka Connect configures it.
    ``new_admin`` makes another such client (default: reuse ``admin``).
    """

    def __init__(self, admin: Any, connector: str, group_id: str,
                 timeout_s: float = ADMIN_TIMEOUT_S,
                 new_admin: Callable[[], Any] | None = None,
                 operation_timeout_s: float = OPERATION_TIMEOUT_S) -> None:
        self.admin = admin
        self._new_admin = new_admin or (lambda: admin)
        self.connector = connector
        self.group_id = group_id
        self.timeout_s = timeout_s
        self.operation_timeout_s = operation_timeout_s
        self._deadline: float | None = None

    @contextmanager
    def _budget(self) -> Iterator[None]:
        """Bound a public operation (and the calls it makes to the others) as a whole."""
        if self._deadline is not None:
            yield
            return
        self._deadline = time.monotonic() + self.operation_timeout_s
        try:
            yield
        finally:
            self._deadline = None

    # --- reads ---------------------------------------------------------------------------

    def offsets(self) -> dict[TopicPartition, int]:
        """Committed offsets by topic partition; an unknown group has none."""
        with self._budget():
            return self._offsets()

    def _offsets(self) -> dict[TopicPartition, int]:
        what = f"Failed to retrieve consumer group offsets for sink connector {self.connector}"
        request = [ConsumerGroupTopicPartitions(self.group_id)]
        result = self._await(what, lambda admin, timeout: admin.list_consumer_group_offsets(
            request, request_timeout=timeout)[self.group_id])
        committed: dict[TopicPartition, int] = {}
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                raise WorkerError(f"{what}: {tp.error.str()}")
            if tp.offset >= 0:  # librdkafka reports "no committed offset" as -1001
                committed[TopicPartition(tp.topic, tp.partition)] = tp.offset
        return committed

    def ensure_no_active_members(self, reset: bool) -> None:
        """Refuse (Kafka's zombie-task error) while the group has members.

        Tansu reports a group with members as STABLE but lists no members, so the state
        counts as well as the member list.
        """
        with self._budget():
            self._ensure_no_active_members(reset)

    def _ensure_no_active_members(self, reset: bool) -> None:
        what = f"Failed to describe the consumer group {self.group_id} of sink connector " \
               f"{self.connector}"
        try:
            group = self._await(what, lambda admin, timeout: admin.describe_consumer_groups(
                [self.group_id], request_timeout=timeout)[self.group_id])
        except WorkerError as exc:
            if _kafka_code(exc.__cause__) == KafkaError.GROUP_ID_NOT_FOUND:
                return  # Kafka 4 answers this for a group that does not exist: no members
            raise
        if group.members or group.state in _ACTIVE_STATES:
            log.warning("Consumer group %s of sink connector %s has %d member(s) in state %s",
                        self.group_id, self.connector, len(group.members), group.state)
            raise zombie_tasks_error(self.connector, reset)

    # --- writes --------------------------------------------------------------------------

    def alter(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        """Commit the non-null offsets and remove the committed offsets of the null ones."""
        with self._budget():
            self._alter(offsets)

    def _alter(self, offsets: Mapping[TopicPartition, int | None]) -> None:
        self._ensure_no_active_members(reset=False)
        removed = {tp for tp, offset in offsets.items() if offset is None}
        to_commit = {tp: offset for tp, offset in offsets.items() if offset is not None}
        current = self._offsets() if removed else {}
        if removed & current.keys():
            # No OffsetDelete in confluent-kafka: drop the group, then restore what stays.
            kept = {tp: o for tp, o in current.items() if tp not in removed}
            self._delete_group(reset=False)
            to_commit = {**kept, **to_commit}
            try:
                self._commit(to_commit)
            except WorkerError as exc:
                log.error("Sink connector %s: group %s was deleted to remove offsets of %s, "
                          "but committing the others failed; restore them with PATCH: %s",
                          self.connector, self.group_id, sorted(removed), to_commit)
                raise WorkerError(f"{exc} (the offsets of the other partitions were "
                                   f"removed too; they were {_describe(to_commit)})") from exc
        elif to_commit:
            self._commit(to_commit)

    def reset(self) -> None:
        """Delete the consumer group (and with it every committed offset); idempotent."""
        with self._budget():
            self._ensure_no_active_members(reset=True)
            self._delete_group(reset=True)

    def _commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        if not offsets:
            return
        what = f"Failed to alter consumer group offsets for connector {self.connector}"
        request = [ConsumerGroupTopicPartitions(self.group_id, [
            KafkaTopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in sorted(offsets.items())])]
        result = self._await(what, lambda admin, timeout: admin.alter_consumer_group_offsets(
            request, request_timeout=timeout)[self.group_id])
        # Errors per partition come back in the result, not as an exception.
        for tp in result.topic_partitions or []:
            if tp.error is None:
                continue
            if tp.error.code() in _MEMBER_ERRORS:
                raise zombie_tasks_error(self.connector, reset=False)
            raise WorkerError(f"{what}: {tp.topic}-{tp.partition}: {tp.error.str()}")

    def _delete_group(self, reset: bool) -> None:
        what = (f"Failed to reset consumer group offsets for sink connector {self.connector}"
                if reset else
                f"Failed to alter consumer group offsets for connector {self.connector}")
        try:
            self._await(what, lambda admin, timeout: admin.delete_consumer_groups(
                [self.group_id], request_timeout=timeout)[self.group_id])
        except WorkerError as exc:
            code = _kafka_code(exc.__cause__)
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return  # already gone: resetting offsets is idempotent, as in Kafka
            if code in _MEMBER_ERRORS:
                raise zombie_tasks_error(self.connector, reset) from exc.__cause__
            raise

    def _await(self, what: str, call: Callable[[Any, float], Future[T]]) -> T:
        """Run one admin call and wait for it, translating every failure into WorkerError.

        A call whose connection broke is sent once more, through a new client (the old one
        may not reconnect within our timeout); see the module docstring.
        """
        def attempt() -> T:
            remaining = (self.timeout_s if self._deadline is None
                         else min(self.timeout_s, self._deadline - time.monotonic()))
            if remaining <= 0:
                raise TimeoutError
            # The client's own timeout first, so that it reports why; then ours.
            return call(self.admin, remaining).result(timeout=remaining + 1)

        try:
            try:
                return attempt()
            except KafkaException as exc:
                if _kafka_code(exc) != KafkaError._TRANSPORT:
                    raise
                log.info("%s: connection lost (%s); retrying once", what, exc)
                self.admin = self._new_admin()
                return attempt()
        except KafkaException as exc:
            # Debug only: some codes are expected (an unknown group); callers decide.
            log.debug("%s", what, exc_info=True)
            raise WorkerError(f"{what}: {exc.args[0].str() if exc.args else exc}") from exc
        except (FutureTimeoutError, TimeoutError) as exc:
            raise WorkerError(f"{what}: timed out") from exc
        except (ValueError, TypeError) as exc:  # the client refused the request itself
            raise WorkerError(f"{what}: {exc}") from exc


def open_sink_offsets(worker_config: WorkerConfig, connector: str,
                      connector_config: Mapping[str, str]) -> SinkGroupOffsets:
    """The group offsets of ``connector``, through an admin client configured as Connect's
    (the worker's ``admin.`` keys, then the connector's ``admin.override.`` keys)."""
    conf: dict[str, Any] = dict(kafka_clients.admin_config(worker_config, connector_config))
    conf.setdefault("client.id", f"connector-worker-adminclient-{connector}")
    conf["logger"] = kafka_clients.CLIENT_LOG  # served by the log pump (watch_logs)

    def new_admin() -> AdminClient:
        try:
            return watch_logs(AdminClient(conf))
        except KafkaException as exc:
            raise WorkerError(f"Failed to create an admin client for sink connector "
                               f"{connector}: {exc}") from exc

    return SinkGroupOffsets(new_admin(), connector,
                            kafka_clients.sink_group_id(connector, connector_config),
                            new_admin=new_admin)


def _kafka_code(exc: BaseException | None) -> int | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return int(exc.args[0].code())
    return None


def _describe(offsets: Mapping[TopicPartition, int]) -> str:
    return ", ".join(f"{tp.topic}-{tp.partition}: {offset}"
                     for tp, offset in sorted(offsets.items())) or "none"
