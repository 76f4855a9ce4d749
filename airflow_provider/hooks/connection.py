"""What a ``kafka_connect`` Airflow connection holds, parsed once for every hook.

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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from airflow_provider.exceptions import KafkaConnectConfigError

DEFAULT_PORT = 8083
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_STATUS_TOPIC = "connect-status"
EXTRA_PREFIX = "extra__kafka_connect__"


class ConnectionLike(Protocol):
    """The parts of ``airflow.sdk.Connection`` read here (kept structural for unit tests)."""

    host: str | None
    port: int | None
    schema: str | None
    login: str | None
    password: str | None

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

    @classmethod
    def from_connection(cls, conn: ConnectionLike) -> ConnectionSettings:
        # Forms may store extras as ``extra__kafka_connect__<field>``; accept both spellings.
        extra = {key.removeprefix(EXTRA_PREFIX): value
                 for key, value in (conn.extra_dejson or {}).items()}
        timeout = extra.get("timeout", DEFAULT_TIMEOUT_S)
        try:
            timeout = float(timeout)
        except (TypeError, ValueError):
            raise KafkaConnectConfigError(
                f"connection extra 'timeout' must be a number of seconds, got {timeout!r}"
            ) from None
        if timeout <= 0:
            raise KafkaConnectConfigError("connection extra 'timeout' must be positive")
        kafka_config = extra.get("kafka_config") or {}
        if isinstance(kafka_config, str):
            try:
                kafka_config = json.loads(kafka_config)
            except json.JSONDecodeError:
                raise KafkaConnectConfigError(
                    "connection extra 'kafka_config' must be a JSON object") from None
        if not isinstance(kafka_config, dict):
            raise KafkaConnectConfigError("connection extra 'kafka_config' must be a JSON object")
        client_cert, client_key = extra.get("client_cert"), extra.get("client_key")
        if client_key and not client_cert:
            raise KafkaConnectConfigError("connection extra 'client_key' needs 'client_cert'")
        return cls(
            base_url=_base_url(conn),
            auth=(conn.login, conn.password or "") if conn.login else None,
            verify=_as_bool(extra.get("verify", True), "verify"),
            ca_bundle=extra.get("ca_bundle") or None,
            client_cert=client_cert or None,
            client_key=client_key or None,
            timeout=timeout,
            bootstrap_servers=extra.get("bootstrap_servers") or None,
            status_topic=extra.get("status_topic") or DEFAULT_STATUS_TOPIC,
            kafka_config={str(k): str(v) for k, v in kafka_config.items()},
        )

    def consumer_config(self) -> dict[str, str]:
        """librdkafka settings for reading the status topic (no group: partitions are
        assigned, nothing is committed)."""
        if not self.bootstrap_servers:
            raise KafkaConnectConfigError(
                "the connection has no 'bootstrap_servers' extra; the status topic cannot "
                "be read (use the REST status sensor instead)")
        return {**self.kafka_config, "bootstrap.servers": self.bootstrap_servers,
                "group.id": "airflow-kafka-connect-status-reader",
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
