"""The synchronous Kafka Connect hook: Connect's REST API over one reused ``httpx.Client``.

Works against connect-plane workers and Apache Kafka Connect alike. Every endpoint is a
method of :class:`~airflow_provider.hooks._api.ConnectRestApi`, e.g.::

    with KafkaConnectHook("kafka_connect_default") as hook:
        hook.stop_connector("orders-source")
        hook.reset_offsets("orders-source")
        hook.resume_connector("orders-source")
"""

from __future__ import annotations

from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx
from airflow.sdk import BaseHook

from airflow_provider.exceptions import KafkaConnectApiError
from airflow_provider.hooks._api import ApiRequest, ConnectRestApi, handle_response
from airflow_provider.hooks._transport import (
    RetryPolicy,
    make_client,
    transport_error,
)
from airflow_provider.hooks.connection import ConnectionSettings


class KafkaConnectHook(BaseHook, ConnectRestApi):
    """Kafka Connect's REST API, synchronously, for operators and sensors.

    :param kafka_connect_conn_id: the ``kafka_connect`` Airflow connection.
    :param retry_limit: how many times a retryable failure (a rebalance's 409, a refused
        connection) is retried; 0 disables retries.
    :param retry_delay: seconds before the first retry; doubles on each retry (jittered).
    :param retry_max_delay: the longest wait between two attempts.
    :param transport: an httpx transport for the client (tests pass
        ``httpx.MockTransport``); by default httpx's network transport.

    The client is created on first use and reused; :meth:`close` it, or use the hook as a
    context manager. Errors are :mod:`airflow_provider.exceptions` classes.
    """

    conn_name_attr = "kafka_connect_conn_id"
    default_conn_name = "kafka_connect_default"
    conn_type = "kafka_connect"
    hook_name = "Kafka Connect"

    def __init__(self, kafka_connect_conn_id: str = default_conn_name, *,
                 retry_limit: int = 5, retry_delay: float = 1.0, retry_max_delay: float = 30.0,
                 transport: httpx.BaseTransport | None = None,
                 logger_name: str | None = None) -> None:
        super().__init__(logger_name=logger_name)
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.retry_limit = retry_limit
        self.retry_delay = retry_delay
        self.retry_max_delay = retry_max_delay
        RetryPolicy(retry_limit, retry_delay, retry_max_delay)  # fail fast on bad values
        self._transport = transport
        self._settings: ConnectionSettings | None = None
        self._client: httpx.Client | None = None

    # --- connection ---------------------------------------------------------------------

    @property
    def settings(self) -> ConnectionSettings:
        """The connection's settings, read once from Airflow."""
        if self._settings is None:
            conn = self.get_connection(self.kafka_connect_conn_id)
            self._settings = ConnectionSettings.from_connection(conn)
        return self._settings

    def get_conn(self) -> httpx.Client:
        """The hook's ``httpx.Client`` (base URL, auth, TLS, timeout of the connection)."""
        if self._client is None or self._client.is_closed:
            self._client = make_client(self.settings, self._transport)
        return self._client

    def close(self) -> None:
        """Close the HTTP client; the next call opens a new one."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> KafkaConnectHook:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def status_url(self, connector: str) -> str:
        """``GET /connectors/{c}/status`` of ``connector`` as an absolute URL (extra link)."""
        return f"{self.settings.base_url}/connectors/{quote(connector, safe='')}/status"

    # --- requests -----------------------------------------------------------------------

    def _send(self, request: ApiRequest) -> Any:
        policy = RetryPolicy(self.retry_limit, self.retry_delay, self.retry_max_delay)
        return policy.call(request, self._send_once)

    def _send_once(self, request: ApiRequest) -> Any:
        client = self.get_conn()
        try:
            response = client.request(request.method, request.path,
                                      params=list(request.params) or None, json=request.json)
        except httpx.TransportError as exc:
            raise transport_error(request, exc) from exc
        return handle_response(request, response.status_code, response.text)

    # --- Airflow UI ---------------------------------------------------------------------

    @classmethod
    def get_ui_field_behaviour(cls) -> dict[str, Any]:
        """Labels and placeholders of the connection form: ``provider.yaml``'s
        ``ui-field-behaviour`` (the source of truth), in the hook method's format."""
        from airflow_provider import get_provider_info

        declared: dict[str, Any] = {}
        for conn_type in get_provider_info().get("connection-types", []):
            if conn_type.get("connection-type") == cls.conn_type:
                declared = conn_type.get("ui-field-behaviour") or {}
        return {"hidden_fields": list(declared.get("hidden-fields") or []),
                "relabeling": dict(declared.get("relabeling") or {}),
                "placeholders": dict(declared.get("placeholders") or {})}

    def test_connection(self) -> tuple[bool, str]:
        """Ask the worker for ``GET /`` (once, no retries) and, if the connection has
        ``bootstrap_servers``, check that the status topic exists."""
        try:
            settings = self.settings
            # The UI waits for the answer: one attempt, no backoff.
            saved, self.retry_limit = self.retry_limit, 0
            try:
                info = self.get_server_info() or {}
            finally:
                self.retry_limit = saved
        except KafkaConnectApiError as exc:
            return False, f"Kafka Connect answered {exc.status_code}: {exc.message}"
        except Exception as exc:  # the UI shows the message; never raise from here
            return False, f"{type(exc).__name__}: {exc}"
        message = (f"Connected to Kafka Connect {info.get('version', '?')} "
                   f"(commit {info.get('commit', '?')}, Kafka cluster "
                   f"{info.get('kafka_cluster_id', '?')}) at {settings.base_url}")
        if settings.bootstrap_servers:
            ok, detail = _check_status_topic(settings)
            if not ok:
                return False, f"{message}, but {detail}"
            message = f"{message}; {detail}"
        return True, message


def _check_status_topic(settings: ConnectionSettings) -> tuple[bool, str]:
    """Whether ``settings.status_topic`` exists on ``settings.bootstrap_servers``."""
    from confluent_kafka.admin import AdminClient

    config = {**settings.kafka_config, "bootstrap.servers": settings.bootstrap_servers}
    topic = settings.status_topic
    try:
        # All topics, not list_topics(topic=...): asking for one topic by name can
        # auto-create it on brokers with auto.create.topics.enable.
        metadata = AdminClient(config).list_topics(timeout=settings.timeout)
    except Exception as exc:  # KafkaException: brokers down, SASL/TLS refused
        return False, f"Kafka at {settings.bootstrap_servers} did not answer: {exc}"
    if topic not in metadata.topics or metadata.topics[topic].error is not None:
        return False, f"status topic {topic!r} does not exist on {settings.bootstrap_servers}"
    return True, f"status topic {topic!r} found"
