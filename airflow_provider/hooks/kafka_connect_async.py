"""The asynchronous Kafka Connect hook, for triggers: the same API over ``httpx.AsyncClient``.

Every method of :class:`~airflow_provider.hooks._api.ConnectRestApi` returns a coroutine of
its typed answer (:mod:`airflow_provider.hooks.results`)::

    async with KafkaConnectAsyncHook("kafka_connect_default") as hook:
        status = await hook.get_connector_status("orders-source")  # a ConnectorStatus

The connection is read with
:meth:`~airflow_provider.hooks.base.KafkaConnectBaseHook.aget_settings` (never the blocking
lookup: in the triggerer that would stall the event loop).
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, TypeVar

import httpx

from airflow_provider.hooks._api import AsyncConnectRestApi, ConnectRestApi
from airflow_provider.hooks._request import ApiRequest, handle_response
from airflow_provider.hooks._transport import http_request, make_async_client, no_answer_errors
from airflow_provider.hooks.base import KafkaConnectRestBaseHook
from airflow_provider.hooks.connection import ConnectionSettings

T = TypeVar("T")


class KafkaConnectAsyncHook(KafkaConnectRestBaseHook[httpx.AsyncClient, httpx.AsyncBaseTransport],
                            ConnectRestApi, AsyncConnectRestApi):
    """Kafka Connect's REST API, asynchronously (triggers, deferrable operators).

    Parameters as :class:`~airflow_provider.hooks.kafka_connect.KafkaConnectHook`
    (``transport``: an ``httpx.AsyncBaseTransport``). Each hook owns one
    ``httpx.AsyncClient``, bound to the event loop that first used it; ``await``
    :meth:`aclose` (or use ``async with``) when done.
    """

    # --- connection ---------------------------------------------------------------------

    @property
    def settings(self) -> ConnectionSettings:
        """The settings once :meth:`aget_settings` (or any request) has loaded them; never
        the blocking lookup."""
        if self._settings is None:
            raise RuntimeError("await hook.aget_settings() before reading hook.settings")
        return self._settings

    async def aget_conn(self) -> httpx.AsyncClient:
        """The hook's ``httpx.AsyncClient``, created on first use."""
        if self._client is None or self._client.is_closed:
            settings = await self.aget_settings()
            self._client = make_async_client(settings, self._transport, self.credential_scope)
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

    async def _send(self, request: ApiRequest[T]) -> T:
        return await self.retry_policy.acall(request, self._send_once)

    async def _send_once(self, request: ApiRequest[T]) -> T:
        client = await self.aget_conn()
        with no_answer_errors(request):
            response = await client.send(http_request(client, request))
        return handle_response(request, response.status_code, response.text)
