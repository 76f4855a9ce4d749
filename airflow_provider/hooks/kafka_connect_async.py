"""The asynchronous Kafka Connect hook, for triggers: the same API over ``httpx.AsyncClient``.

Every method of :class:`~airflow_provider.hooks._api.ConnectRestApi` returns a coroutine::

    async with KafkaConnectAsyncHook("kafka_connect_default") as hook:
        status = await hook.get_connector_status("orders-source")

The connection is read with ``BaseHook.aget_connection`` (never the blocking lookup: in the
triggerer that would stall the event loop).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import httpx
from airflow.sdk import BaseHook

from airflow_provider.hooks._api import ApiRequest, ConnectRestApi, handle_response
from airflow_provider.hooks._transport import (
    RetryPolicy,
    make_async_client,
    transport_error,
)
from airflow_provider.hooks.connection import ConnectionSettings


class KafkaConnectAsyncHook(BaseHook, ConnectRestApi):
    """Kafka Connect's REST API, asynchronously (triggers, deferrable operators).

    Parameters as :class:`~airflow_provider.hooks.kafka_connect.KafkaConnectHook`
    (``transport``: an ``httpx.AsyncBaseTransport``). Each hook owns one
    ``httpx.AsyncClient``, bound to the event loop that first used it; ``await``
    :meth:`aclose` (or use ``async with``) when done.
    """

    conn_name_attr = "kafka_connect_conn_id"
    default_conn_name = "kafka_connect_default"
    conn_type = "kafka_connect"
    hook_name = "Kafka Connect"

    def __init__(self, kafka_connect_conn_id: str = default_conn_name, *,
                 retry_limit: int = 5, retry_delay: float = 1.0, retry_max_delay: float = 30.0,
                 transport: httpx.AsyncBaseTransport | None = None,
                 logger_name: str | None = None) -> None:
        super().__init__(logger_name=logger_name)
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.retry_limit = retry_limit
        self.retry_delay = retry_delay
        self.retry_max_delay = retry_max_delay
        RetryPolicy(retry_limit, retry_delay, retry_max_delay)  # fail fast on bad values
        self._transport = transport
        self._settings: ConnectionSettings | None = None
        self._client: httpx.AsyncClient | None = None

    # --- connection ---------------------------------------------------------------------

    async def aget_settings(self) -> ConnectionSettings:
        """The connection's settings, read once from Airflow without blocking the loop."""
        if self._settings is None:
            conn = await self.aget_connection(self.kafka_connect_conn_id)
            self._settings = ConnectionSettings.from_connection(conn)
        return self._settings

    @property
    def settings(self) -> ConnectionSettings:
        """The settings once :meth:`aget_settings` (or any request) has loaded them."""
        if self._settings is None:
            raise RuntimeError("await hook.aget_settings() before reading hook.settings")
        return self._settings

    async def aget_conn(self) -> httpx.AsyncClient:
        """The hook's ``httpx.AsyncClient``, created on first use."""
        if self._client is None or self._client.is_closed:
            self._client = make_async_client(await self.aget_settings(), self._transport)
        return self._client

    def get_conn(self) -> Any:
        """Not available synchronously: use ``await hook.aget_conn()``."""
        raise NotImplementedError("KafkaConnectAsyncHook: use `await hook.aget_conn()`")

    async def aclose(self) -> None:
        """Close the HTTP client; the next call opens a new one."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def __aenter__(self) -> KafkaConnectAsyncHook:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.aclose()

    # --- requests -----------------------------------------------------------------------

    async def _send(self, request: ApiRequest) -> Any:
        policy = RetryPolicy(self.retry_limit, self.retry_delay, self.retry_max_delay)
        return await policy.acall(request, self._send_once)

    async def _send_once(self, request: ApiRequest) -> Any:
        client = await self.aget_conn()
        try:
            response = await client.request(request.method, request.path,
                                            params=list(request.params) or None,
                                            json=request.json)
        except httpx.TransportError as exc:
            raise transport_error(request, exc) from exc
        return handle_response(request, response.status_code, response.text)
