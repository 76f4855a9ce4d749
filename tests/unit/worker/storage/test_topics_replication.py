"""Internal topics: a replication factor above the number of brokers fails the worker's
start with the message Kafka's controller gives, before anything is created — also on a
broker that would accept it (the embedded Tansu broker creates any replication factor)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException

from worker.config.worker_config import DistributedConfig
from worker.errors import StorageError
from worker.storage.kafka import topics


class FakeAdmin:
    def __init__(self, brokers: int, existing: tuple[str, ...] = (),
                 failure: KafkaException | None = None) -> None:
        self.brokers = {i: object() for i in range(brokers)}
        self.existing = existing
        self.failure = failure
        self.listed = 0

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        assert topic is None  # naming the topic could make a broker auto-create it
        self.listed += 1
        if self.failure is not None:
            raise self.failure
        return SimpleNamespace(brokers=self.brokers,
                               topics={name: object() for name in self.existing})


def spec(kind: str = "config", replication_factor: int = 3) -> topics.TopicSpec:
    config = DistributedConfig({
        "bootstrap.servers": "127.0.0.1:1", "group.id": "g", "config.storage.topic": "cfg",
        "offset.storage.topic": "off", "status.storage.topic": "st",
        f"{kind}.storage.replication.factor": str(replication_factor)})
    return topics.topic_spec(config, kind)


@pytest.mark.parametrize(("kind", "topic"), [("config", "cfg"), ("offset", "off"),
                                             ("status", "st")])
def test_more_replicas_than_brokers_is_refused_with_kafkas_message(kind: str,
                                                                   topic: str) -> None:
    with pytest.raises(StorageError) as refused:
        topics._check_replication_factor(cast(Any, FakeAdmin(brokers=1)), spec(kind), 5.0)
    assert str(refused.value) == (
        f"Error while attempting to create/find topic '{topic}' (set by "
        f"{kind}.storage.topic): Unable to replicate the partition 3 time(s): The target "
        f"replication factor of 3 cannot be reached because only 1 broker(s) are "
        f"registered. Set {kind}.storage.replication.factor to at most 1 (the number of "
        f"brokers), or to -1 for the broker's default.")


@pytest.mark.parametrize(("admin", "replication_factor"), [
    (FakeAdmin(brokers=3), 3),                      # enough brokers
    (FakeAdmin(brokers=1, existing=("cfg",)), 3),   # exists: not created, not checked
    (FakeAdmin(brokers=0), 3),                      # no broker known: the create decides
    (FakeAdmin(brokers=1, failure=KafkaException(KafkaError(KafkaError._TIMED_OUT))), 3),
])
def test_what_passes(admin: FakeAdmin, replication_factor: int) -> None:
    topics._check_replication_factor(cast(Any, admin),
                                     spec(replication_factor=replication_factor), 5.0)
    assert admin.listed == 1


def test_the_brokers_default_is_not_checked() -> None:
    admin = FakeAdmin(brokers=1)
    topics._check_replication_factor(cast(Any, admin), spec(replication_factor=-1), 5.0)
    assert admin.listed == 0


def test_ensure_topic_checks_before_creating(monkeypatch: pytest.MonkeyPatch) -> None:
    admin = FakeAdmin(brokers=1)
    created: list[Any] = []
    admin.create_topics = lambda *a, **k: created.append(a)  # type: ignore[attr-defined]
    monkeypatch.setattr(topics, "AdminClient", lambda conf: admin)
    with pytest.raises(StorageError, match="replication factor of 3 cannot be reached"):
        topics.ensure_topic({"bootstrap.servers": "127.0.0.1:1"}, spec(), 5.0)
    assert created == []
