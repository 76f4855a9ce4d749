"""The composition root: builds a whole worker from its config.

plugins → Kafka cluster id → stores → worker → herder → REST app and server. No
import-time singletons: tests build several isolated workers in one process.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from worker.config.worker_config import DistributedConfig, StandaloneConfig, WorkerConfig
from worker.errors import ConfigError, ConnectError, PluginNotFoundError
from worker.herder.abstract import AbstractHerder
from worker.herder.distributed import DistributedHerder
from worker.herder.standalone import StandaloneHerder
from worker.plugins.registry import PluginRegistry, PluginType, builtin_registry
from worker.rest.app import create_app
from worker.rest.server import RestServer
from worker.runtime import kafka_clients
from worker.runtime.loggers import Loggers
from worker.runtime.worker import Worker
from worker.storage.cached import CachedConfigBackingStore, CachedStatusBackingStore
from worker.storage.kafka import (
    KafkaConfigBackingStore,
    KafkaOffsetBackingStore,
    KafkaStatusBackingStore,
)
from worker.storage.sql import (
    SqlConfigBackingStore,
    SqlDatabase,
    SqlOffsetBackingStore,
    SqlStatusBackingStore,
)

log = logging.getLogger(__name__)

CLUSTER_ID_TIMEOUT_S = 30.0


@dataclass
class Connect:
    """A built worker, named after Kafka's ``org.apache.kafka.connect.runtime.Connect``:
    ``start()`` starts the herder then serves REST; ``stop()`` reverses.

    ``GET /health`` reports ``starting`` (503) until the worker is ready: at the end of
    ``start()``, or — with ``start(ready=False)``, as the CLI does — once ``mark_ready()``
    is called after the command-line connectors were created (Kafka's standalone
    readiness).
    """

    config: WorkerConfig
    herder: AbstractHerder
    server: RestServer

    def start(self, *, ready: bool = True) -> None:
        # The herder (and its stores) first: a request must never reach a herder whose
        # storage is not open yet. REST then answers, /health with 503 until ready.
        self.herder.start()
        try:
            self.server.start()
        except BaseException:
            self.herder.stop()
            raise
        if ready:
            self.mark_ready()

    def mark_ready(self) -> None:
        """KIP-1017: startup is complete; ``/health`` turns from 503 to 200."""
        self.herder.mark_ready()

    def stop(self) -> None:
        try:
            self.herder.stop()
        finally:
            self.server.stop()


def kafka_cluster_id(config: WorkerConfig, timeout_s: float = CLUSTER_ID_TIMEOUT_S) -> str:
    """Kafka's cluster id; startup fails with a clear error if no broker answers."""
    admin = AdminClient(kafka_clients.admin_config(config))
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise ConnectError(f"Could not reach Kafka at bootstrap.servers="
                           f"{config.bootstrap_servers} within {timeout_s:.0f} s: {exc}") from exc
    return str(metadata.cluster_id)


def worker_id(config: WorkerConfig) -> str:
    """``host:port`` this worker advertises (Kafka's worker id in statuses)."""
    listener = config.listeners[0] if config.listeners else "http://:8083"
    parts = urlsplit(listener)
    if parts.port is None:
        raise ConfigError("listeners", f"listener {listener} has no port")
    host = config.get("rest.advertised.host.name") or parts.hostname or socket.getfqdn()
    port = config.get("rest.advertised.port") or parts.port
    return f"{host}:{port}"


def advertised_url(config: WorkerConfig) -> str:
    """The URL other workers forward requests to (``rest.advertised.*``, as in Kafka)."""
    listener = config.listeners[0] if config.listeners else "http://:8083"
    scheme = config.get("rest.advertised.listener") or urlsplit(listener).scheme or "http"
    return f"{scheme.lower()}://{worker_id(config)}"


def check_worker_converters(config: WorkerConfig, registry: PluginRegistry) -> None:
    """Fail startup, naming the key, if a worker-level converter class is not installed.

    Kafka's WorkerConfig rejects such a class at startup; without this check every task
    would fail later instead.
    """
    for key in ("key.converter", "value.converter"):
        class_name = str(config.get(key))
        try:
            registry.resolve(class_name, PluginType.CONVERTER)
        except PluginNotFoundError as exc:
            raise ConfigError(key, f"Class {class_name} could not be found.") from exc


def build_standalone(config: StandaloneConfig, registry: PluginRegistry | None = None
                     ) -> Connect:
    registry = registry or builtin_registry()
    check_worker_converters(config, registry)
    cluster_id = kafka_cluster_id(config)
    database = SqlDatabase(config.sql_url)
    # The standalone worker is the database's only writer, so reads may be cached.
    config_store = CachedConfigBackingStore(SqlConfigBackingStore(database))
    offset_store = SqlOffsetBackingStore(database)
    status_store = CachedStatusBackingStore(SqlStatusBackingStore(database))
    worker = Worker(worker_id(config), config, registry, offset_store, status_store)
    herder = StandaloneHerder(config, registry, worker, config_store, offset_store,
                              status_store, kafka_cluster_id=cluster_id, loggers=Loggers())
    server = RestServer(create_app(herder), config.listeners)
    return Connect(config, herder, server)


def build_distributed(config: DistributedConfig, registry: PluginRegistry | None = None
                      ) -> Connect:
    """A distributed worker: state in the internal topics, membership in ``group.id``."""
    registry = registry or builtin_registry()
    check_worker_converters(config, registry)
    cluster_id = kafka_cluster_id(config)
    config_store = KafkaConfigBackingStore(config)
    offset_store = KafkaOffsetBackingStore(config)
    status_store = KafkaStatusBackingStore(config)
    worker = Worker(worker_id(config), config, registry, offset_store, status_store)
    herder = DistributedHerder(config, registry, worker, config_store, offset_store,
                               status_store, url=advertised_url(config),
                               kafka_cluster_id=cluster_id, loggers=Loggers())
    server = RestServer(create_app(herder), config.listeners)
    return Connect(config, herder, server)
