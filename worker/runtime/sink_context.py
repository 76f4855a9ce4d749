"""The sink task's context (``SinkTaskContext``) and its consumer's subscription."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from worker.api.connector import TopicPartition
from worker.api.task import ErrantRecordReporter, SinkTaskContext


class SinkTaskOwner(Protocol):
    """What the context reads of its worker task (``WorkerSinkTask``)."""

    @property
    def task_config(self) -> dict[str, str]: ...

    @property
    def errant_reporter(self) -> ErrantRecordReporter | None: ...

    @property
    def assignment(self) -> Iterable[TopicPartition]: ...

    def consumer_call(self, method: str, partitions: tuple[TopicPartition, ...]) -> None: ...


class WorkerSinkTaskContext(SinkTaskContext):
    """What a sink task's plugin sees of its worker task (``SinkTask.context``): requests
    (offsets, a commit, a timeout) the task's loop applies, and its consumer's partitions."""

    def __init__(self, owner: SinkTaskOwner) -> None:
        self._owner = owner
        self.rewinds: dict[TopicPartition, int] = {}
        self.timeout_ms: int | None = None
        self.commit_requested = False

    @property
    def configs(self) -> dict[str, str]:
        return self._owner.task_config

    def offset(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.rewinds.update(offsets)

    def timeout(self, timeout_ms: int) -> None:
        self.timeout_ms = timeout_ms

    def assignment(self) -> set[TopicPartition]:
        return set(self._owner.assignment)

    def pause(self, *partitions: TopicPartition) -> None:
        self._owner.consumer_call("pause", partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self._owner.consumer_call("resume", partitions)

    def request_commit(self) -> None:
        self.commit_requested = True

    def errant_record_reporter(self) -> ErrantRecordReporter | None:
        return self._owner.errant_reporter


def subscription_pattern(topics_regex: str) -> str:
    """librdkafka's subscription for ``topics.regex``: a pattern must start with ``^`` to
    be one, and librdkafka matches it anywhere in the name; Kafka matches the whole topic
    name, so the regex is anchored at both ends (``orders`` never reads ``orders_dlq``).
    A group, not ``(?:...)``: librdkafka's regex engine has no non-capturing groups."""
    return f"^({topics_regex})$"
