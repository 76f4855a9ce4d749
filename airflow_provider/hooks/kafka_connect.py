"""The synchronous Kafka Connect hook: Connect's REST API over one reused ``httpx.Client``.

Works against connect-plane workers and Apache Kafka Connect alike. Every endpoint is a
method of :class:`~airflow_provider.hooks._api.ConnectRestApi` returning its typed answer
(:mod:`airflow_provider.hooks.results`), e.g.::

    with KafkaConnectHook("kafka_connect_default") as hook:
        hook.stop_connector("orders-source")
        hook.reset_offsets("orders-source")
        hook.resume_connector("orders-source")
        status = hook.get_connector_status("orders-source")  # a ConnectorStatus
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from airflow_provider.exceptions import KafkaConnectApiError
from airflow_provider.hooks._api import ConnectRestApi, SyncConnectRestApi
from airflow_provider.hooks._request import ApiRequest, handle_response
from airflow_provider.hooks._transport import http_request, make_client, no_answer_errors
from airflow_provider.hooks.base import KafkaConnectRestBaseHook

T = TypeVar("T")


class KafkaConnectHook(KafkaConnectRestBaseHook[httpx.Client, httpx.BaseTransport],
                       ConnectRestApi, SyncConnectRestApi):
    """Kafka Connect's REST API, synchronously, for operators and sensors.

    Parameters: see :class:`~airflow_provider.hooks.base.KafkaConnectRestBaseHook`
    (``transport``: an ``httpx.BaseTransport``).

    The client is created on first use and reused; :meth:`close` it, or use the hook as a
    context manager. Errors are :mod:`airflow_provider.exceptions` classes.
    """

    # --- connection ---------------------------------------------------------------------

    def get_conn(self) -> httpx.Client:
        """The hook's ``httpx.Client`` (base URL, auth, TLS, timeout of the connection)."""
        if self._client is None or self._client.is_closed:
            self._client = make_client(self.settings, self._transport,
                                       self.credential_scope)
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

    def _send(self, request: ApiRequest[T]) -> T:
        return self.retry_policy.call(request, self._send_once)

    def _send_once(self, request: ApiRequest[T]) -> T:
        client = self.get_conn()
        with no_answer_errors(request):
            response = client.send(http_request(client, request))
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
                info = self.get_server_info()
            finally:
                self.retry_limit = saved
        except KafkaConnectApiError as exc:
            return False, f"Kafka Connect answered {exc.status_code}: {exc.message}"
        except Exception as exc:  # the UI shows the message; never raise from here
            return False, f"{type(exc).__name__}: {exc}"
        message = (f"Connected to Kafka Connect {info.version} "
                   f"(commit {info.commit or '?'}, Kafka cluster "
                   f"{info.kafka_cluster_id or '?'}) at {settings.base_url}")
        if settings.bootstrap_servers:
            # Imported here: the REST hook does not load the Kafka client until needed.
            from airflow_provider.hooks.status_topic import check_status_topic

            ok, detail = check_status_topic(settings)
            if not ok:
                return False, f"{message}, but {detail}"
            message = f"{message}; {detail}"
        return True, message
