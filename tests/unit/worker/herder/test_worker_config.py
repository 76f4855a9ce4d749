"""The dynamic worker configuration operations ThreadedHerder defines once, through
StandaloneHerder over real stores (memory; SQL where a restart matters).

A ``Listener`` stands for the REST server: it declares the TLS keys and refuses a keystore
location that contains ``missing``. The distributed herder carries out the same operations
on its leader (``tests/integration/test_dynamic_config_cluster.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from worker.config.dynamic import ValidationStatus
from worker.config.reconfigurable import Reconfigurable
from worker.config.worker_config import WorkerConfig
from worker.errors import (
    BadRequestError,
    ConfigError,
    ConfigValidationError,
    NotFoundError,
    StorageError,
)
from worker.herder.models import ClusterInfo, ClusterMemberInfo
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import builtin_registry
from worker.runtime.worker import Worker
from worker.storage.base import ConfigBackingStore
from worker.storage.memory import (
    MemoryConfigBackingStore,
    MemoryOffsetBackingStore,
    MemoryStatusBackingStore,
)
from worker.storage.sql import SqlConfigBackingStore, SqlDatabase

KEYSTORE = "listeners.https.ssl.keystore.location"
PASSWORD = "listeners.https.ssl.keystore.password"
CLIENT_AUTH = "listeners.https.ssl.client.auth"


class Listener(Reconfigurable):
    def __init__(self) -> None:
        self.applied: list[dict[str, str]] = []

    def reconfigurable_configs(self) -> frozenset[str]:
        return frozenset({KEYSTORE, PASSWORD, CLIENT_AUTH})

    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        if "missing" in configs.get(KEYSTORE, ""):
            raise ConfigError(KEYSTORE, "the keystore file does not exist")
        if configs.get(KEYSTORE) and not configs.get(PASSWORD):
            raise ConfigError(PASSWORD, "a keystore needs its password")

    def reconfigure(self, configs: Mapping[str, str]) -> None:
        self.applied.append(dict(configs))


@pytest.fixture
def listener() -> Listener:
    return Listener()


def build_herder(store: ConfigBackingStore, listener: Listener,
                 url: str | None = None) -> StandaloneHerder:
    """A herder whose worker reaches no Kafka (no connector is created here), with an
    ``env`` config provider."""
    config = WorkerConfig({"bootstrap.servers": "127.0.0.1:1", "config.providers": "env",
                           "config.providers.env.class": "EnvVarConfigProvider"})
    offsets, statuses = MemoryOffsetBackingStore(), MemoryStatusBackingStore()
    registry = builtin_registry()
    worker = Worker("w:8083", config, registry, offsets, statuses)
    herder = StandaloneHerder(config, registry, worker, store, offsets, statuses, url=url)
    herder.register_reconfigurable(listener)
    return herder


@pytest.fixture
def herder(listener: Listener, monkeypatch: pytest.MonkeyPatch
           ) -> Iterator[StandaloneHerder]:
    monkeypatch.setenv("KS_PW", "env-secret")
    herder = build_herder(MemoryConfigBackingStore(), listener)
    herder.start()
    try:
        yield herder
    finally:
        herder.stop()


def version(herder: StandaloneHerder) -> int:
    return herder.worker_info().dynamic_config.version


def test_nothing_is_overridden_at_first(herder: StandaloneHerder, listener: Listener) -> None:
    assert herder.worker_config_overrides() == {}
    info = herder.worker_info()
    assert (info.worker_id, info.url) == ("w:8083", "http://w:8083")
    assert info.dynamic_config.version == 0
    assert info.dynamic_config.last_validation.status is ValidationStatus.NONE
    assert listener.applied == []


def test_patch_merges_stores_and_applies_before_answering(herder: StandaloneHerder,
                                                          listener: Listener) -> None:
    answer = herder.patch_worker_config({KEYSTORE: "/tls/a.p12", PASSWORD: "${env:KS_PW}"})
    assert answer == {KEYSTORE: "/tls/a.p12", PASSWORD: "${env:KS_PW}"}
    assert herder.worker_config_overrides() == answer  # raw: the placeholder as written
    assert listener.applied[-1][KEYSTORE] == "/tls/a.p12"
    assert listener.applied[-1][PASSWORD] == "env-secret"  # resolved for the listener only
    state = herder.worker_info().dynamic_config
    assert (state.version, state.overrides) == (1, answer)
    assert state.last_validation.status is ValidationStatus.OK

    answer = herder.patch_worker_config({CLIENT_AUTH: "required", PASSWORD: "pw2"})
    assert answer == {KEYSTORE: "/tls/a.p12", PASSWORD: "pw2", CLIENT_AUTH: "required"}
    # Null removes an override; removing one that is not there is no error.
    answer = herder.patch_worker_config({CLIENT_AUTH: None, KEYSTORE: None, PASSWORD: None})
    assert answer == {} and herder.worker_config_overrides() == {}
    assert version(herder) == 3
    assert KEYSTORE not in listener.applied[-1]  # the static configuration is back


def test_a_key_outside_the_whitelist_changes_nothing(herder: StandaloneHerder) -> None:
    herder.patch_worker_config({CLIENT_AUTH: "requested"})
    with pytest.raises(BadRequestError, match="offset.flush.interval.ms"):
        herder.patch_worker_config({"offset.flush.interval.ms": "5", CLIENT_AUTH: "none"})
    with pytest.raises(BadRequestError, match="group.id"):
        herder.validate_worker_config({"group.id": "other"})
    assert herder.worker_config_overrides() == {CLIENT_AUTH: "requested"}
    assert version(herder) == 1


def test_an_invalid_patch_is_refused_whole(herder: StandaloneHerder,
                                           listener: Listener) -> None:
    herder.patch_worker_config({KEYSTORE: "/tls/a.p12", PASSWORD: "pw"})
    applied = len(listener.applied)
    with pytest.raises(ConfigValidationError) as caught:
        herder.patch_worker_config({KEYSTORE: "/tls/missing.p12", CLIENT_AUTH: "required"})
    assert caught.value.errors == {KEYSTORE: [
        f"Invalid value for configuration {KEYSTORE}: the keystore file does not exist"]}
    assert herder.worker_config_overrides() == {KEYSTORE: "/tls/a.p12", PASSWORD: "pw"}
    assert version(herder) == 1 and len(listener.applied) == applied
    assert herder.worker_info().dynamic_config.last_validation.status is ValidationStatus.OK


def test_validate_reports_what_the_patch_would_produce_and_changes_nothing(
        herder: StandaloneHerder, listener: Listener) -> None:
    herder.patch_worker_config({KEYSTORE: "/tls/a.p12", PASSWORD: "pw"})
    valid = herder.validate_worker_config({CLIENT_AUTH: "required"})
    assert (valid.error_count, valid.errors) == (0, {})
    # Against the stored overrides: removing the password leaves a keystore without one.
    invalid = herder.validate_worker_config({PASSWORD: None})
    assert (invalid.error_count, list(invalid.errors)) == (1, [PASSWORD])
    invalid = herder.validate_worker_config({KEYSTORE: "/tls/missing.p12"})
    assert (invalid.error_count, list(invalid.errors)) == (1, [KEYSTORE])
    assert herder.worker_config_overrides() == {KEYSTORE: "/tls/a.p12", PASSWORD: "pw"}
    assert version(herder) == 1 and len(listener.applied) == 1


def test_delete_restores_the_static_value(herder: StandaloneHerder,
                                          listener: Listener) -> None:
    herder.patch_worker_config({KEYSTORE: "/tls/a.p12", PASSWORD: "pw",
                                CLIENT_AUTH: "required"})
    herder.delete_worker_config(CLIENT_AUTH)
    assert herder.worker_config_overrides() == {KEYSTORE: "/tls/a.p12", PASSWORD: "pw"}
    assert CLIENT_AUTH not in listener.applied[-1] and version(herder) == 2
    with pytest.raises(NotFoundError, match=f"override named {CLIENT_AUTH}"):
        herder.delete_worker_config(CLIENT_AUTH)
    # What would remain is invalid (a keystore without its password): refused, unchanged.
    with pytest.raises(ConfigValidationError, match=PASSWORD):
        herder.delete_worker_config(PASSWORD)
    assert herder.worker_config_overrides() == {KEYSTORE: "/tls/a.p12", PASSWORD: "pw"}
    assert version(herder) == 2


def test_standalone_cluster_is_the_worker_itself(herder: StandaloneHerder) -> None:
    assert herder.cluster_info() == ClusterInfo(
        "http://w:8083", [ClusterMemberInfo("w:8083", "http://w:8083")])


class FailingStore(SqlConfigBackingStore):
    """The SQL store whose worker-config writes fail, as a full disk would."""

    fail = False

    def put_worker_config(self, properties: Mapping[str, str]) -> None:
        if self.fail:
            raise StorageError("Writing the worker config failed: disk I/O error")
        super().put_worker_config(properties)


def sql_herder(store: ConfigBackingStore, listener: Listener) -> StandaloneHerder:
    return build_herder(store, listener, url="https://w:8443")


def test_a_storage_failure_changes_nothing(tmp_path: Path) -> None:
    store = FailingStore(SqlDatabase(f"sqlite:///{tmp_path / 'connect.db'}"))
    listener = Listener()
    herder = sql_herder(store, listener)
    herder.start()
    try:
        herder.patch_worker_config({CLIENT_AUTH: "required"})
        store.fail = True
        with pytest.raises(StorageError, match="disk I/O error"):
            herder.patch_worker_config({CLIENT_AUTH: "none"})
        assert herder.worker_config_overrides() == {CLIENT_AUTH: "required"}
        assert herder.worker_info().dynamic_config.version == 1
        assert listener.applied[-1][CLIENT_AUTH] == "required"
    finally:
        herder.stop()


def test_a_restarted_worker_applies_the_stored_overrides_at_start(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'connect.db'}"
    first = sql_herder(SqlConfigBackingStore(SqlDatabase(url)), Listener())
    first.start()
    try:
        first.patch_worker_config({KEYSTORE: "/tls/a.p12", PASSWORD: "pw"})
        first.patch_worker_config({CLIENT_AUTH: "required"})
    finally:
        first.stop()
    listener = Listener()
    second = sql_herder(SqlConfigBackingStore(SqlDatabase(url)), listener)
    assert listener.applied == []
    second.start()
    try:
        overrides = {KEYSTORE: "/tls/a.p12", PASSWORD: "pw", CLIENT_AUTH: "required"}
        assert len(listener.applied) == 1
        assert listener.applied[0].items() >= overrides.items()
        state = second.worker_info().dynamic_config
        assert (state.version, state.overrides) == (2, overrides)
        assert second.worker_info().url == "https://w:8443"
    finally:
        second.stop()
