"""worker.herder.distributed.session_key: when the leader replaces the session key, what the new key
looks like, and signing and checking with the key read last."""

from __future__ import annotations

import logging

import pytest

from worker.config.worker_config import DistributedConfig
from worker.errors import ForbiddenError
from worker.herder.distributed.session_key import SessionKeys
from worker.herder.request_signing import (
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
    SessionKeyUnavailableError,
)
from worker.storage.kafka.formats import SessionKey

BASE = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
        "status.storage.topic": "s"}
NOW = 1_700_000_000_000


class Topic:
    """The config topic's session key, as the store keeps it."""

    def __init__(self) -> None:
        self.key: SessionKey | None = None
        self.writes: list[SessionKey] = []
        self.fail = False

    def write(self, key: SessionKey) -> None:
        if self.fail:
            raise RuntimeError("broker down")
        self.writes.append(key)
        self.key = key


def keys(topic: Topic, clock: list[int], **settings: str) -> SessionKeys:
    config = DistributedConfig({**BASE, **settings})
    return SessionKeys(config, lambda: topic.key, topic.write, clock=lambda: clock[0])


def test_first_key_then_rotation_after_the_ttl() -> None:
    topic, clock = Topic(), [NOW]
    session = keys(topic, clock, **{"inter.worker.key.ttl.ms": "5000"})
    assert session.due() == "no session key has been distributed yet"
    assert session.rotate_if_due()
    first = topic.key
    assert first is not None
    assert (first.algorithm, len(first.key), first.creation_timestamp) == ("HmacSHA256", 32, NOW)
    clock[0] = NOW + 4999
    assert not session.rotate_if_due()
    clock[0] = NOW + 5000
    assert session.due() == "the existing key has expired"
    assert session.rotate_if_due()
    assert topic.key is not None and topic.key.key != first.key
    assert topic.key.creation_timestamp == NOW + 5000


def test_expiry_counts_from_the_records_timestamp() -> None:
    # A new leader inherits its predecessor's key and its age.
    topic, clock = Topic(), [NOW]
    topic.key = SessionKey(b"k" * 32, "HmacSHA256", NOW - 3_600_000)
    assert keys(topic, clock).due() == "the existing key has expired"
    topic.key = SessionKey(b"k" * 32, "HmacSHA256", NOW - 3_599_999)
    assert keys(topic, clock).due() is None


def test_ttl_zero_never_expires() -> None:
    topic, clock = Topic(), [NOW]
    topic.key = SessionKey(b"k" * 32, "HmacSHA256", 0)
    assert keys(topic, clock, **{"inter.worker.key.ttl.ms": "0"}).due() is None


@pytest.mark.parametrize(("settings", "size"), [
    ({"inter.worker.key.generation.algorithm": "HmacSHA512"}, 64),
    ({"inter.worker.key.generation.algorithm": "HmacSHA1"}, 64),
    ({"inter.worker.key.size": "128"}, 16),
    ({"inter.worker.key.size": "130"}, 17),
])
def test_key_of_another_algorithm_or_size_is_replaced(settings: dict[str, str],
                                                      size: int) -> None:
    topic, clock = Topic(), [NOW]
    topic.key = SessionKey(b"k" * 32, "HmacSHA256", NOW)
    session = keys(topic, clock, **settings)
    assert "different algorithm or key size" in (session.due() or "")
    assert session.rotate_if_due()
    assert topic.key is not None and len(topic.key.key) == size
    assert session.due() is None


def test_failed_write_is_retried_later(caplog: pytest.LogCaptureFixture) -> None:
    topic, clock = Topic(), [NOW]
    session = keys(topic, clock)
    topic.fail = True
    with caplog.at_level(logging.WARNING):
        assert not session.rotate_if_due()
    assert "Failed to write a new session key" in caplog.text
    topic.fail = False
    assert not session.rotate_if_due()  # within the retry delay
    assert topic.writes == []


def test_sign_and_verify_with_the_current_key() -> None:
    topic, clock = Topic(), [NOW]
    session = keys(topic, clock)
    assert session.sign(b"[]") == {}  # no key yet: unsigned, as Kafka's client sends it
    with pytest.raises(SessionKeyUnavailableError):
        session.verify(InternalRequestSignature(b"[]", "HmacSHA256", b"x"))
    session.rotate_if_due()
    headers = session.sign(b"[]")

    def signature(h: dict[str, str]) -> InternalRequestSignature | None:
        return InternalRequestSignature.from_headers(
            b"[]", h[SIGNATURE_ALGORITHM_HEADER], h[SIGNATURE_HEADER])
    session.verify(signature(headers))
    clock[0] += 3_600_000
    session.rotate_if_due()  # the old key is gone: what it signed is refused
    with pytest.raises(ForbiddenError):
        session.verify(signature(headers))
    session.verify(signature(session.sign(b"[]")))


def test_key_never_in_repr_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    topic, clock = Topic(), [NOW]
    with caplog.at_level(logging.DEBUG):
        keys(topic, clock).rotate_if_due()
    assert topic.key is not None
    for shown in (repr(topic.key), caplog.text):
        assert topic.key.key.hex() not in shown and repr(topic.key.key) not in shown
