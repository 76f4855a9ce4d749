"""The ``session-key`` config-topic record (KIP-507): Kafka's exact JSON, and how the
Kafka config store reads it (the last key wins; a malformed one is skipped, keeping the
key it had)."""

from __future__ import annotations

import base64
import logging

import pytest

from worker.config.worker_config import DistributedConfig
from worker.storage.kafka.config_store import ConfigUpdate, KafkaConfigBackingStore
from worker.storage.kafka.formats import (
    SessionKey,
    decode_config_record,
    session_key_key,
    session_key_value,
)
from worker.storage.kafka.log import LogRecord

KEY = bytes(range(32))
#: What Kafka's KafkaConfigBackingStore.putSessionKey writes (SESSION_KEY_V0 through
#: JsonConverter with schemas.enable=false): field order key, algorithm, creation-timestamp.
KAFKA_VALUE = (b'{"key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",'
               b'"algorithm":"HmacSHA256","creation-timestamp":1700000000123}')


def test_written_as_kafka_writes_it() -> None:
    assert session_key_key() == b"session-key"
    assert session_key_value(SessionKey(KEY, "HmacSHA256", 1700000000123)) == KAFKA_VALUE


def test_kafka_record_reads_back() -> None:
    record = decode_config_record(b"session-key", KAFKA_VALUE)
    assert record is not None and record.kind == "session-key"
    assert record.session_key == SessionKey(KEY, "HmacSHA256", 1700000000123)


@pytest.mark.parametrize("value", [
    None,
    b"[]",
    b'{"key":"!!!","algorithm":"HmacSHA256","creation-timestamp":1}',
    b'{"key":"AAAA","algorithm":7,"creation-timestamp":1}',
    b'{"key":"AAAA","algorithm":"HmacSHA256","creation-timestamp":"1"}',
    b'{"algorithm":"HmacSHA256","creation-timestamp":1}',
])
def test_malformed_record_is_skipped_without_its_value(
        value: bytes | None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert decode_config_record(b"session-key", value) is None
    assert "session-key" in caplog.text
    assert "AAAA" not in caplog.text


def test_repr_hides_the_key() -> None:
    key = SessionKey(KEY, "HmacSHA256", 1)
    assert base64.b64encode(KEY).decode() not in repr(key)
    assert repr(KEY) not in repr(key) and "HmacSHA256" in repr(key)


def test_store_keeps_the_last_valid_key_and_tells_the_herder() -> None:
    store = KafkaConfigBackingStore(DistributedConfig({
        "group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
        "status.storage.topic": "s"}))
    updates: list[ConfigUpdate] = []
    store.set_listener(updates.append)
    store._listening = True  # noqa: SLF001 - as after start(): records reach the listener
    assert store.session_key() is None
    store._on_record(LogRecord(0, 0, b"session-key", KAFKA_VALUE))  # noqa: SLF001
    newer = SessionKey(b"n" * 32, "HmacSHA512", 1700000000999)
    store._on_record(LogRecord(0, 1, b"session-key", session_key_value(newer)))  # noqa: SLF001
    store._on_record(LogRecord(0, 2, b"session-key", b"{}"))  # noqa: SLF001
    assert store.session_key() == newer
    assert store.offset == 3
    assert [u.kind for u in updates] == ["session_key", "session_key"]
    assert store.snapshot().connector_configs == {}
