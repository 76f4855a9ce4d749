"""The composition root: builds a whole worker from its config.

plugins (discovered from ``plugin.path``) → Kafka cluster id → stores → worker → herder →
REST app and server. No import-time singletons: tests build several isolated workers in one
process.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from fastapi import FastAPI
from prometheus_client.registry import CollectorRegistry

from worker.api.exceptions import ConfigException
from worker.clients import factories as kafka_clients
from worker.clients.checks import check_worker_clients
from worker.config.worker_config import DistributedConfig, StandaloneConfig, WorkerConfig
from worker.config.worker_keys import COMMON
from worker.errors import ConfigError, PluginNotFoundError, WorkerError
from worker.herder.abstract import AbstractHerder
from worker.herder.distributed.herder import DistributedHerder
from worker.herder.standalone import StandaloneHerder
from worker.herder.threaded import ThreadedHerder
from worker.plugins.discovery import discover
from worker.plugins.registry import PluginRegistry, PluginType
from worker.rest.app import create_app
from worker.rest.routes.admin import SERVED_LISTENERS
from worker.rest.security.extensions import RestSecurity, rest_security
from worker.rest.server import Listener, RestServer, parse_listeners
from worker.runtime.loggers import Loggers
from worker.runtime.metrics.clients import WorkerClientStats
from worker.runtime.metrics.collector import ConnectMetricsCollector
from worker.runtime.metrics.worker import RebalanceMetrics
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
from worker.storage.sql.lock import StateLock, acquire_state_lock
from worker.util.logs import STARTUP_CLIENTS
from worker.util.secrets import install_log_redaction

log = logging.getLogger(__name__)

CLUSTER_ID_TIMEOUT_S = 30.0
#: The longest single wait for the cluster id (see kafka_cluster_id).
CLUSTER_ID_STEP_S = 1.0
_DISCOVERY_KEYS = ("plugin.path", "plugin.discovery", "plugin.import.packages")


@dataclass
class Connect:
    """A built worker, named after Kafka's ``org.apache.kafka.connect.runtime.Connect``:
    ``start()`` starts the herder then serves REST; ``stop()`` reverses.

    ``GET /health`` reports ``starting`` (503) until the worker is ready: at the end of
    ``start()``, or — with ``start(ready=False)``, as the CLI does — once ``mark_ready()``
    is called after the command-line connectors were created (Kafka's standalone
    readiness). A standalone herder starts its stored connectors on its own thread while
    REST already serves, and becomes ready only after them.
    """

    config: WorkerConfig
    herder: AbstractHerder
    server: RestServer
    #: The REST extensions (closed by ``stop()``) and admin principals.
    security: RestSecurity | None = None
    #: Standalone: the lock on the state database, released by ``stop()`` once all else
    #: stopped (``worker.storage.sql.lock``).
    state_lock: StateLock | None = None

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
            try:
                if self.security is not None:
                    self.security.close()  # after the server: no request uses them now
            finally:
                try:
                    self.config.close()  # the config providers, once nothing resolves with them
                finally:
                    if self.state_lock is not None:
                        self.state_lock.release()  # last: nothing of this worker writes now


def kafka_cluster_id(config: WorkerConfig, timeout_s: float = CLUSTER_ID_TIMEOUT_S, *,
                     cancelled: threading.Event | None = None) -> str:
    """Kafka's cluster id; startup fails with a clear error if no broker answers within
    ``timeout_s``, or at once (WorkerError) when ``cancelled`` is set (a signal).

    Asked in steps of at most ``CLUSTER_ID_STEP_S``: between two, the admin client's log
    lines are handed to ``worker.compose.librdkafka`` (librdkafka gives them over only in
    ``poll()``, worker/util/logs.py) and ``cancelled`` is checked. After the first step
    without an answer, one line says what the worker waits for, and whether
    ``bootstrap.servers`` was set at all (a misspelt key leaves Kafka's default).
    """
    conf = kafka_clients.admin_config(config)
    conf["logger"] = logging.getLogger(STARTUP_CLIENTS)
    admin = AdminClient(conf)
    deadline = time.monotonic() + timeout_s
    waiting = False
    default = "" if "bootstrap.servers" in config.originals \
        else " (Kafka's default: bootstrap.servers is not set)"
    while True:
        step = max(0.1, min(CLUSTER_ID_STEP_S, deadline - time.monotonic()))
        try:
            return str(admin.list_topics(timeout=step).cluster_id)
        except KafkaException as exc:
            failure = exc
        finally:
            admin.poll(0)
        if cancelled is not None and cancelled.is_set():
            raise WorkerError("Start-up interrupted while waiting for Kafka at "
                               f"bootstrap.servers={config.bootstrap_servers}")
        if time.monotonic() >= deadline:
            raise WorkerError(f"Could not reach Kafka at bootstrap.servers="
                               f"{config.bootstrap_servers}{default} within {timeout_s:.0f} "
                               f"s: {failure}") from failure
        if not waiting:
            waiting = True
            log.info("Waiting up to %.0f s for Kafka at bootstrap.servers=%s%s",
                     deadline - time.monotonic(), config.bootstrap_servers, default)


def advertised_listener(config: WorkerConfig) -> Listener:
    """The listener this worker advertises, as Kafka's ``RestServer`` chooses it.

    Its protocol is ``rest.advertised.listener``; unset, ``http`` if any listener is
    http, else ``https``. The first listener of that protocol is advertised; none at all
    is a ConfigError (Kafka would advertise a URL nothing listens on).
    """
    listeners = parse_listeners(config.listeners)
    chosen = config.get("rest.advertised.listener")
    if chosen:
        protocol = str(chosen).strip().lower()
        if protocol not in ("http", "https"):
            raise ConfigError("rest.advertised.listener", 'must be either "http" or "https"')
    else:
        protocol = "http" if any(lst.protocol == "http" for lst in listeners) else "https"
    for listener in listeners:
        if listener.protocol == protocol:
            return listener
    raise ConfigError("rest.advertised.listener", f"no {protocol} listener in listeners")


def _advertised_host_port(config: WorkerConfig) -> tuple[str, int]:
    listener = advertised_listener(config)
    host = config.get("rest.advertised.host.name") or listener.host or socket.getfqdn()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal, as java.net.URI writes it
    return host, int(config.get("rest.advertised.port") or listener.port)


def worker_id(config: WorkerConfig) -> str:
    """``host:port`` this worker advertises (Kafka's worker id in statuses)."""
    host, port = _advertised_host_port(config)
    return f"{host}:{port}"


def advertised_url(config: WorkerConfig) -> str:
    """The URL other workers forward requests to (``rest.advertised.*``, as in Kafka)."""
    return f"{advertised_listener(config).protocol}://{worker_id(config)}"


def rest_server(app: FastAPI, config: WorkerConfig) -> RestServer:
    """The REST server on ``listeners`` and ``admin.listeners``, with TLS from the worker
    configuration's resolved values (a bad keystore fails here, naming the key)."""
    admin = config.get("admin.listeners")
    return RestServer(app, config.listeners,
                      admin_listeners=None if admin is None else list(admin),
                      tls_config=config.originals, limits=config.rest_limits)


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


def discover_plugins(config: WorkerConfig | Mapping[str, str]) -> PluginRegistry:
    """The plugins ``plugin.path`` and ``plugin.discovery`` make available (KIP-898,
    ``worker/plugins/discovery.py``); WorkerError under ``hybrid_fail`` when a plugin has
    no manifest.

    Given the worker properties as written, it runs before the ``WorkerConfig`` exists, as
    Kafka's does: the config providers the properties name may come from ``plugin.path``
    (the command-line tools pass the registry to both). Those keys are read as written;
    ``plugin.import.packages`` widens which modules import paths may import.
    """
    if isinstance(config, WorkerConfig):
        path, mode = config.get("plugin.path"), config.get("plugin.discovery")
        packages = config.get("plugin.import.packages")
    else:
        try:
            values = COMMON.parse({k: v for k, v in config.items() if k in _DISCOVERY_KEYS})
        except ConfigException as exc:
            raise ConfigError(exc.name, exc.reason) from exc
        path, mode = values["plugin.path"], values["plugin.discovery"]
        packages = values["plugin.import.packages"]
    return discover(path, str(mode), import_packages=packages).registry


def build_standalone(config: StandaloneConfig, registry: PluginRegistry | None = None,
                     *, cancelled: threading.Event | None = None) -> Connect:
    """A standalone worker; ``cancelled`` (a signal) ends the wait for Kafka early."""
    install_log_redaction()  # secrets never reach logs (worker/util/secrets.py)
    registry = registry or discover_plugins(config)
    check_worker_converters(config, registry)
    check_worker_clients(config)  # a client setting librdkafka refuses names its key now
    # One worker per state database (worker/storage/sql/lock): a second one stops here,
    # naming the first, before it reaches Kafka or binds a port. Connect.stop() releases it.
    state_lock = acquire_state_lock(config.sql_url, rest_url=advertised_url(config))
    try:
        cluster_id = kafka_cluster_id(config, cancelled=cancelled)
        database = SqlDatabase(config.sql_url)
        # The lock makes this worker the database's only writer, so reads may be cached.
        config_store = CachedConfigBackingStore(SqlConfigBackingStore(database))
        offset_store = SqlOffsetBackingStore(database)
        status_store = CachedStatusBackingStore(SqlStatusBackingStore(database))
        worker = Worker(worker_id(config), config, registry, offset_store, status_store)
        herder = StandaloneHerder(config, registry, worker, config_store, offset_store,
                                  status_store, kafka_cluster_id=cluster_id,
                                  loggers=Loggers(), url=advertised_url(config))
        app, server, security = rest_layer(config, registry, herder,
                                           metrics_registry(config, worker))
        wire_dynamic_config(herder, app, server)
        return Connect(config, herder, server, security, state_lock)
    except BaseException:
        state_lock.release()
        raise


def build_distributed(config: DistributedConfig, registry: PluginRegistry | None = None,
                      *, cancelled: threading.Event | None = None) -> Connect:
    """A distributed worker: state in the internal topics, membership in ``group.id``;
    ``cancelled`` (a signal) ends the wait for Kafka early."""
    install_log_redaction()  # secrets never reach logs (worker/util/secrets.py)
    registry = registry or discover_plugins(config)
    check_worker_converters(config, registry)
    check_worker_clients(config)  # a client setting librdkafka refuses names its key now
    cluster_id = kafka_cluster_id(config, cancelled=cancelled)
    config_store = KafkaConfigBackingStore(config)
    offset_store = KafkaOffsetBackingStore(config)
    status_store = KafkaStatusBackingStore(config)
    # The internal topics' clients report librdkafka's statistics to /metrics, with the
    # task clients' statistics.interval.ms; not built when nothing would serve them.
    client_stats = WorkerClientStats() if config.get("rest.metrics.enabled") else None
    if client_stats is not None:
        interval_ms = kafka_clients.statistics_interval_ms(config)
        for store in (config_store, offset_store, status_store):
            name = f"topic '{store.topic}'"
            store.report_statistics(client_stats.listener(name), interval_ms,
                                    client_stats.admin_listener(name))
    worker = Worker(worker_id(config), config, registry, offset_store, status_store)
    herder = DistributedHerder(config, registry, worker, config_store, offset_store,
                               status_store, url=advertised_url(config),
                               kafka_cluster_id=cluster_id, loggers=Loggers())
    app, server, security = rest_layer(config, registry, herder,
                                       metrics_registry(config, worker,
                                                        herder.rebalance_metrics,
                                                        client_stats))
    wire_dynamic_config(herder, app, server)
    herder.use_inter_worker_tls(server.client_ssl_context)
    return Connect(config, herder, server, security)


def metrics_registry(config: WorkerConfig, worker: Worker,
                     rebalance: RebalanceMetrics | None = None,
                     worker_clients: WorkerClientStats | None = None
                     ) -> CollectorRegistry | None:
    """What ``/metrics`` serves: the worker's metrics (and, distributed, the rebalance
    metrics and the internal topics' client metrics) in a registry of their own; None
    when ``rest.metrics.enabled`` is false."""
    if not config.get("rest.metrics.enabled"):
        return None
    # No auto_describe: the collector's families depend on what runs at scrape time.
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ConnectMetricsCollector(worker, time.monotonic, rebalance,
                                              worker_clients))
    return registry


def rest_layer(config: WorkerConfig, registry: PluginRegistry, herder: AbstractHerder,
               metrics: CollectorRegistry | None = None
               ) -> tuple[FastAPI, RestServer, RestSecurity]:
    """The REST app and server, wrapped in the REST extensions (``rest.extension.classes``)
    and admin authorization; a ConfigError closes the extensions built until then."""
    security = rest_security(config, registry, herder, worker_id(config))
    try:
        app = create_app(herder, security, metrics, config.rest_limits,
                         docs=config.get("rest.docs.enabled"))
        return app, rest_server(app, config), security
    except BaseException:
        security.close()
        raise


def wire_dynamic_config(herder: ThreadedHerder, app: FastAPI, server: RestServer) -> None:
    """The REST server takes its TLS settings from the dynamic worker configuration (the
    overrides in force at once), and ``GET /admin/worker`` reports what it serves."""
    herder.register_reconfigurable(server)
    setattr(app.state, SERVED_LISTENERS, server.served_listeners)
