"""The Kafka storage backend of distributed mode: three compacted internal topics.

Records use Apache Kafka Connect's formats (``formats``), so a Java Connect cluster's
topics read here and ours read there; each store runs one ``KafkaBasedLog`` (``log``)
over a topic that ``topics`` creates or checks at ``start()``.
"""

from __future__ import annotations

from worker.storage.kafka.config_store import ConfigUpdate, KafkaConfigBackingStore
from worker.storage.kafka.formats import RestartRequest
from worker.storage.kafka.log import KafkaBasedLog, LogRecord
from worker.storage.kafka.offset_store import KafkaOffsetBackingStore
from worker.storage.kafka.status_store import KafkaStatusBackingStore, StatusUpdate
from worker.storage.kafka.topics import (
    TopicSpec,
    ensure_topic,
    internal_client_config,
    topic_spec,
)

__all__ = [
    "ConfigUpdate",
    "KafkaBasedLog",
    "KafkaConfigBackingStore",
    "KafkaOffsetBackingStore",
    "KafkaStatusBackingStore",
    "LogRecord",
    "RestartRequest",
    "StatusUpdate",
    "TopicSpec",
    "ensure_topic",
    "internal_client_config",
    "topic_spec",
]
