"""The KIP-507 worker keys (``inter.worker.*``): Kafka's names, types, defaults and
validation; a standalone worker does not know them (as Kafka's StandaloneConfig)."""

from __future__ import annotations

import logging

import pytest

from worker.config.worker_config import DistributedConfig, StandaloneConfig
from worker.errors import ConfigError

BASE = {"group.id": "g", "config.storage.topic": "c", "offset.storage.topic": "o",
        "status.storage.topic": "s"}


def test_kafka_defaults() -> None:
    config = DistributedConfig(BASE)
    assert config.get("inter.worker.key.generation.algorithm") == "HmacSHA256"
    assert config.get("inter.worker.key.size") is None
    assert config.get("inter.worker.key.ttl.ms") == 3600000
    assert config.get("inter.worker.signature.algorithm") == "HmacSHA256"
    assert config.get("inter.worker.verification.algorithms") == ["HmacSHA256"]
    assert config.get("connect.protocol") == "sessioned"
    assert config.unused == []


def test_values_are_typed() -> None:
    config = DistributedConfig({
        **BASE, "inter.worker.key.generation.algorithm": "HmacSHA512",
        "inter.worker.key.size": "512", "inter.worker.key.ttl.ms": "5000",
        "inter.worker.signature.algorithm": "HmacSHA384",
        "inter.worker.verification.algorithms": "HmacSHA256, HmacSHA384"})
    assert config.get("inter.worker.key.size") == 512
    assert config.get("inter.worker.key.ttl.ms") == 5000
    assert config.get("inter.worker.verification.algorithms") == ["HmacSHA256", "HmacSHA384"]


@pytest.mark.parametrize(("settings", "key", "reason"), [
    ({"inter.worker.key.generation.algorithm": "AES-ish"},
     "inter.worker.key.generation.algorithm", "the algorithm is not supported"),
    ({"inter.worker.signature.algorithm": "HmacFoo",
      "inter.worker.verification.algorithms": "HmacFoo"},
     "inter.worker.signature.algorithm", "the supported algorithms are: "),
    ({"inter.worker.verification.algorithms": "HmacSHA256,Nope"},
     "inter.worker.verification.algorithms", "the algorithm is not supported"),
    ({"inter.worker.verification.algorithms": ""},
     "inter.worker.verification.algorithms",
     "At least one signature verification algorithm must be provided"),
    ({"inter.worker.signature.algorithm": "HmacSHA512"},
     "inter.worker.signature.algorithm",
     "Signature algorithm must be present in inter.worker.verification.algorithms list"),
    ({"inter.worker.key.size": "32"}, "inter.worker.key.size",
     "Unable to create key generator with algorithm HmacSHA256 and key size 32: Key length "
     "must be at least 40 bits"),
    ({"inter.worker.key.ttl.ms": "-1"}, "inter.worker.key.ttl.ms",
     "Value must be no less than 0 and no more than 2147483647"),
    ({"inter.worker.key.ttl.ms": "2147483648"}, "inter.worker.key.ttl.ms", "Not a number"),
    ({"connect.protocol": "v3"}, "connect.protocol", ""),
])
def test_invalid_values_fail_naming_the_key(settings: dict[str, str], key: str,
                                            reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        DistributedConfig({**BASE, **settings})
    assert caught.value.key == key
    assert reason in str(caught.value)


def test_standalone_does_not_know_them(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        config = StandaloneConfig({"inter.worker.key.ttl.ms": "1000",
                                   "inter.worker.signature.algorithm": "Nonsense"})
    assert config.unused == ["inter.worker.key.ttl.ms", "inter.worker.signature.algorithm"]
    assert ("The configuration 'inter.worker.key.ttl.ms' was supplied but isn't a known "
            "config.") in caplog.text
