"""Kafka Connect's status topic (``status.storage.topic``): its records, and one
connector's view of them.

The records are Apache Kafka Connect's (``KafkaStatusBackingStore``), JSON written by
``JsonConverter`` with schemas disabled; the ``{"schema", "payload"}`` envelope is accepted
too::

    status-connector-{c}                 {"state", "trace", "worker_id", "generation"}
    status-task-{c}-{n}                  the same shape
    status-topic-{topic}:connector-{c}   {"topic": {"name", "connector", "task",
                                                    "discoverTimestamp"}}   (KIP-558)

A null value (tombstone) deletes the status. Malformed records are logged at WARNING (with
their key only) and skipped. Reading the topic is the business of
:mod:`airflow_provider.hooks.status_topic`; nothing here does I/O.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from airflow_provider.utils.connector_state import STATES, Outcome, TaskState, Verdict, evaluate

__all__ = ["ConnectorStatusView", "Malformed", "StatusRecord", "event_payload",
           "parse_status_key", "parse_status_record"]

log = logging.getLogger(__name__)

CONNECTOR_PREFIX = "status-connector-"
TASK_PREFIX = "status-task-"
TOPIC_PREFIX = "status-topic-"
TOPIC_SEPARATOR = ":connector-"


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


class Malformed(ValueError):
    """Why a record is skipped (never quotes the value: traces can be large)."""


def parse_status_key(key: bytes | str | None) -> StatusRecord:
    """The key fields of a status record (shaped as a tombstone); raises ``ValueError`` for
    a key that is not a status key."""
    if key is None:
        raise Malformed("the key is null")
    if isinstance(key, bytes):
        try:
            key = key.decode("utf-8")
        except UnicodeDecodeError:
            raise Malformed("the key is not UTF-8") from None
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
    raise Malformed("not a status key")


def parse_status_record(key: bytes | str | None, value: bytes | None) -> StatusRecord | None:
    """The record, or None (logged at WARNING) when it is malformed or not a status record."""
    try:
        record = parse_status_key(key)
        if value is None:
            return record
        return _with_value(record, _payload(value))
    except Malformed as exc:
        log.warning("Skipping a status-topic record with key %r: %s", key, exc)
        return None


def _payload(value: bytes) -> dict[str, Any]:
    try:
        data = json.loads(value)
    except ValueError:  # also bad UTF-8
        raise Malformed("the value is not JSON") from None
    # JsonConverter with schemas enabled wraps the value in an envelope.
    if isinstance(data, dict) and "payload" in data and "schema" in data:
        data = data["payload"]
    if not isinstance(data, dict):
        raise Malformed("the value is not a JSON object")
    return data


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Malformed(f"{what} is not an integer")
    return value


def _with_value(record: StatusRecord, data: dict[str, Any]) -> StatusRecord:
    if record.kind == "topic":
        inner = data.get("topic")
        if not isinstance(inner, dict):
            raise Malformed("'topic' is not a JSON object")
        if inner.get("name") != record.topic or inner.get("connector") != record.connector:
            raise Malformed("the topic status does not match its key")
        return StatusRecord("topic", record.connector, topic=record.topic)
    state, trace, worker_id = data.get("state"), data.get("trace"), data.get("worker_id")
    if state not in STATES:
        raise Malformed("unknown state")
    if not isinstance(trace, str | None) or not isinstance(worker_id, str | None):
        raise Malformed("'trace' or 'worker_id' is not a string")
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
        (:func:`airflow_provider.utils.connector_state.evaluate`): the connector must be in it;
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
