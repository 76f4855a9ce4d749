"""Reports connector and task state changes to the status store.

Runtime threads call these listeners; a failing status write is logged and never takes
the reporting thread (or the worker) down.
"""

from __future__ import annotations

import logging
import traceback

from worker.storage.base import (
    ConnectorStatus,
    State,
    StatusBackingStore,
    TaskId,
    TaskStatus,
    TopicStatus,
)
from worker.util.secrets import KNOWN_SECRETS

log = logging.getLogger(__name__)


def format_trace(error: BaseException) -> str:
    """The stack trace Kafka puts in ``trace`` (type, message and frames), scrubbed of the
    secrets the worker knows (a message built from a config must not publish its
    passwords in the status store)."""
    return KNOWN_SECRETS.redact(
        "".join(traceback.format_exception(type(error), error, error.__traceback__)))


class StatusReporter:
    """Writes statuses for one worker (``worker_id``) in one ``generation``."""

    def __init__(self, store: StatusBackingStore, worker_id: str, generation: int = 0) -> None:
        self.store = store
        self.worker_id = worker_id
        self.generation = generation

    def connector(self, name: str, state: State, error: BaseException | None = None) -> None:
        status = ConnectorStatus(name, state, self.worker_id, self.generation,
                                 format_trace(error) if error else None)
        self._write(self.store.put_connector, status)

    def task(self, task: TaskId, state: State, error: BaseException | None = None) -> None:
        status = TaskStatus(task, state, self.worker_id, self.generation,
                            format_trace(error) if error else None)
        self._write(self.store.put_task, status)

    def topic(self, topic: str, task: TaskId) -> None:
        self._write(self.store.put_topic, TopicStatus(topic, task.connector, task.task))

    @staticmethod
    def _write(put, status) -> None:  # type: ignore[no-untyped-def]
        try:
            put(status)
        except Exception:  # a status write must never fail the task that reports it
            log.exception("Failed to write status %s", type(status).__name__)
