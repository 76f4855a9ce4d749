"""DistributedHerder and the worker-config record, without a broker.

The herder is built over real (never started) Kafka stores; config-topic records are fed
to the config store's record handler, the path a record read from the topic takes. The
group membership and the reconciler are replaced by recorders: what is checked is that a
worker-config record is applied on the herder thread's next pass and asks for neither a
rebalance nor a reconcile, while any other config change still does. The same runs for
real on a 3-worker cluster in ``tests/integration/test_dynamic_config_cluster.py``.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.unit.worker.herder.conftest import new_distributed_herder
from worker.config.reconfigurable import Reconfigurable
from worker.herder.distributed.assignor import Assignment
from worker.herder.distributed.herder import DistributedHerder
from worker.herder.distributed.protocol import NO_ERROR, ClusterMember, WorkerAssignment
from worker.herder.models import ClusterInfo, ClusterMemberInfo
from worker.storage.kafka import (
    ConfigUpdate,
    LogRecord,
)

CLIENT_AUTH = "listeners.https.ssl.client.auth"


class Listener(Reconfigurable):
    def __init__(self) -> None:
        self.applied: list[dict[str, str]] = []

    def reconfigurable_configs(self) -> frozenset[str]:
        return frozenset({CLIENT_AUTH})

    def validate_reconfiguration(self, configs: Mapping[str, str]) -> None:
        pass

    def reconfigure(self, configs: Mapping[str, str]) -> None:
        self.applied.append(dict(configs))


class Recorded:
    def __init__(self, herder: DistributedHerder) -> None:
        self.rejoins = 0
        self.reconciles = 0
        herder.membership.request_rejoin = self.rejoin  # type: ignore[method-assign]  # a recorder
        herder._reconciler.reconcile = self.reconcile  # type: ignore[method-assign]  # a recorder

    def rejoin(self) -> None:
        self.rejoins += 1

    def reconcile(self, only: str | None = None) -> None:
        self.reconciles += 1


@pytest.fixture
def herder() -> DistributedHerder:
    return new_distributed_herder("https://w1:8443", listeners="https://127.0.0.1:8443")


def read(herder: DistributedHerder, offset: int, key: bytes, value: bytes | None) -> None:
    """A record read from the config topic, handed to the herder as the listener would."""
    herder.kafka_config_store._on_record(LogRecord(0, offset, key, value))


def test_a_worker_config_record_is_applied_without_rebalance_or_reconcile(
        herder: DistributedHerder) -> None:
    listener = Listener()
    herder.register_reconfigurable(listener)
    herder._assignment = WorkerAssignment(NO_ERROR, "m1", "https://w1:8443", 0)
    recorded = Recorded(herder)

    read(herder, 7, b"worker-config",
         b'{"version":0,"properties":{"listeners.https.ssl.client.auth":"required"}}')
    herder._on_config_update(ConfigUpdate("worker_config", "", version=7))
    herder._process_config_updates()
    assert listener.applied[-1][CLIENT_AUTH] == "required"
    state = herder.worker_info().dynamic_config
    assert (state.version, state.overrides) == (7, {CLIENT_AUTH: "required"})
    assert (recorded.rejoins, recorded.reconciles) == (0, 0)

    # A tombstone clears the overrides: the static configuration is back.
    read(herder, 9, b"worker-config", None)
    herder._on_config_update(ConfigUpdate("worker_config", "", version=9))
    # With a connector change in the same pass, that change is handled as ever.
    read(herder, 10, b"connector-c", b'{"properties":{"connector.class":"x"}}')
    herder._on_config_update(ConfigUpdate("connector", "c"))
    herder._process_config_updates()
    assert CLIENT_AUTH not in listener.applied[-1]
    assert herder.worker_info().dynamic_config.version == 9
    assert (recorded.rejoins, recorded.reconciles) == (1, 1)  # new unassigned connector


def test_cluster_comes_from_the_assignment(herder: DistributedHerder) -> None:
    assert herder.cluster_info() == ClusterInfo(None, [])
    herder._assignment = WorkerAssignment(
        NO_ERROR, "m2", "https://w2:8443", 3, cluster=(
            ClusterMember("https://w2:8443", "w2:8443", Assignment()),
            ClusterMember("https://w1:8443", "w1:8443", Assignment())))
    assert herder.cluster_info() == ClusterInfo("https://w2:8443", [
        ClusterMemberInfo("w1:8443", "https://w1:8443"),
        ClusterMemberInfo("w2:8443", "https://w2:8443")])
