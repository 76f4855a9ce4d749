"""What a ``kafka_connect`` Airflow connection holds, parsed once for every hook (see
:mod:`airflow_provider.hooks.base` for the lookup, sync and async).

Standard fields: ``host`` (a hostname or a full URL such as ``https://connect:8083``),
``port``, ``schema`` (``http`` or ``https`` when ``host`` is a bare name), ``login`` /
``password`` (HTTP basic auth). Extra fields (``provider.yaml`` ``conn-fields``):

``verify``            verify the server certificate (default true)
``ca_bundle``         path of a PEM CA bundle used instead of the system store
``client_cert``       path of a PEM client certificate (mutual TLS)
``client_key``        path of the client certificate's PEM key
``timeout``           seconds per HTTP request (default 30)
``bootstrap_servers`` Kafka brokers of the cluster's internal topics (status-topic sensors)
``status_topic``      Connect's ``status.storage.topic`` (default ``connect-status``)
``kafka_config``      extra librdkafka properties for the status-topic consumer
                      (``security.protocol``, ``sasl.*``, ``ssl.*``); never logged
``allowed_worker_urls`` other workers the credentials may be sent to, as
                      ``scheme://host[:port]`` patterns (``*.domain`` / ``*`` hosts, ``*``
                      port): a list, a JSON list or a comma-separated string
                      (:mod:`airflow_provider.hooks.credential_scope`)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from airflow_provider.exceptions import KafkaConnectConfigError
from airflow_provider.hooks.credential_scope import parse_allowed_worker_urls

DEFAULT_PORT = 8083
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_STATUS_TOPIC = "connect-status"
EXTRA_PREFIX = "extra__kafka_connect__"


class ConnectionLike(Protocol):
    """The parts of ``airflow.sdk.Connection`` read here (kept structural for unit tests;
    read-only, so frozen objects qualify too)."""

    @property
    def host(self) -> str | None: ...

    @property
    def port(self) -> int | None: ...

    @property
    def schema(self) -> str | None: ...

    @property
    def login(self) -> str | None: ...

    @property
    def password(self) -> str | None: ...

    @property
    def extra_dejson(self) -> dict[str, Any]: ...


def _as_bool(value: Any, key: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise KafkaConnectConfigError(f"connection extra {key!r} must be true or false, got {value!r}")


@dataclass(frozen=True)
class ConnectionSettings:
    """A ``kafka_connect`` connection, validated. ``repr`` never shows secrets."""

    base_url: str
    auth: tuple[str, str] | None = field(default=None, repr=False)
    verify: bool = True
    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    bootstrap_servers: str | None = None
    status_topic: str = DEFAULT_STATUS_TOPIC
    kafka_config: dict[str, str] = field(default_factory=dict, repr=False)
    allowed_worker_urls: tuple[str, ...] = ()

    @classmethod
    def from_connection(cls, conn: ConnectionLike,
                        extra: Mapping[str, Any] | None = None) -> ConnectionSettings:
        """Validate ``conn``. ``extra``: its extras when already read (the async lookup
        reads them with ``aextra_dejson()``); by default ``conn.extra_dejson``."""
        given = conn.extra_dejson if extra is None else extra
        # Forms may store extras as ``extra__kafka_connect__<field>``; accept both spellings.
        fields = {key.removeprefix(EXTRA_PREFIX): value for key, value in (given or {}).items()}
        timeout = fields.get("timeout", DEFAULT_TIMEOUT_S)
        try:
            timeout = float(timeout)
        except (TypeError, ValueError):
            raise KafkaConnectConfigError(
                f"connection extra 'timeout' must be a number of seconds, got {timeout!r}"
            ) from None
        if timeout <= 0:
            raise KafkaConnectConfigError("connection extra 'timeout' must be positive")
        kafka_config = fields.get("kafka_config") or {}
        if isinstance(kafka_config, str):
            try:
                kafka_config = json.loads(kafka_config)
            except json.JSONDecodeError:
                raise KafkaConnectConfigError(
                    "connection extra 'kafka_config' must be a JSON object") from None
        if not isinstance(kafka_config, dict):
            raise KafkaConnectConfigError("connection extra 'kafka_config' must be a JSON object")
        client_cert, client_key = fields.get("client_cert"), fields.get("client_key")
        if client_key and not client_cert:
            raise KafkaConnectConfigError("connection extra 'client_key' needs 'client_cert'")
        return cls(
            base_url=_base_url(conn),
            auth=(conn.login, conn.password or "") if conn.login else None,
            verify=_as_bool(fields.get("verify", True), "verify"),
            ca_bundle=fields.get("ca_bundle") or None,
            client_cert=client_cert or None,
            client_key=client_key or None,
            timeout=timeout,
            bootstrap_servers=fields.get("bootstrap_servers") or None,
            status_topic=fields.get("status_topic") or DEFAULT_STATUS_TOPIC,
            kafka_config={str(k): str(v) for k, v in kafka_config.items()},
            allowed_worker_urls=parse_allowed_worker_urls(fields.get("allowed_worker_urls")),
        )

    def kafka_client_config(self) -> dict[str, str]:
        """librdkafka settings of any client of the connection's Kafka cluster."""
        if not self.bootstrap_servers:
            raise KafkaConnectConfigError(
                "the connection has no 'bootstrap_servers' extra; the status topic cannot "
                "be read (use the REST status sensor instead)")
        return {**self.kafka_config, "bootstrap.servers": self.bootstrap_servers}

    def consumer_config(self) -> dict[str, str]:
        """librdkafka settings for reading the status topic (no group: partitions are
        assigned, nothing is committed)."""
        return {**self.kafka_client_config(), "group.id": "airflow-kafka-connect-status-reader",
                "enable.auto.commit": "false", "enable.auto.offset.store": "false"}


def _base_url(conn: ConnectionLike) -> str:
    host = (conn.host or "").strip()
    if not host:
        raise KafkaConnectConfigError("the connection has no host (e.g. http://connect:8083)")
    if "://" in host:
        parts = urlsplit(host)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise KafkaConnectConfigError(f"connection host {host!r} is not an http(s) URL")
        port = parts.port or conn.port
        netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
        base = f"{parts.scheme}://{netloc}" + (f":{port}" if port else "")
        return base + parts.path.rstrip("/")
    scheme = (conn.schema or "http").strip().lower()
    if scheme not in ("http", "https"):
        raise KafkaConnectConfigError(f"connection schema must be http or https, got {scheme!r}")
    return f"{scheme}://{host}:{conn.port or DEFAULT_PORT}"
