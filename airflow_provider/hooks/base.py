"""What every hook of the ``kafka_connect`` connection shares: the connection, read once.

:class:`KafkaConnectBaseHook` looks the connection up and validates it
(:class:`~airflow_provider.hooks.connection.ConnectionSettings`) once per hook, either
way: :attr:`~KafkaConnectBaseHook.settings` (sync, for operators and sensors) or
:meth:`~KafkaConnectBaseHook.aget_settings` (for triggers: the lookup and the masking of
the extra's secrets are awaited, never blocking the triggerer's event loop).
:class:`KafkaConnectRestBaseHook` adds what the two REST hooks share: retry settings, the
optional test transport and the slot of their HTTP client.
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

from airflow.sdk import BaseHook

from airflow_provider.hooks._transport import RetryPolicy
from airflow_provider.hooks.connection import ConnectionSettings

ClientT = TypeVar("ClientT")
TransportT = TypeVar("TransportT")


class KafkaConnectBaseHook(BaseHook):
    """A hook of the ``kafka_connect`` connection ``kafka_connect_conn_id``."""

    conn_name_attr = "kafka_connect_conn_id"
    default_conn_name = "kafka_connect_default"
    conn_type = "kafka_connect"
    hook_name = "Kafka Connect"

    def __init__(self, kafka_connect_conn_id: str = default_conn_name, *,
                 logger_name: str | None = None) -> None:
        super().__init__(logger_name=logger_name)
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self._settings: ConnectionSettings | None = None

    @property
    def settings(self) -> ConnectionSettings:
        """The connection's settings, read once from Airflow (a blocking lookup)."""
        if self._settings is None:
            conn = self.get_connection(self.kafka_connect_conn_id)
            self._settings = ConnectionSettings.from_connection(conn)
        return self._settings

    async def aget_settings(self) -> ConnectionSettings:
        """The connection's settings, read once from Airflow without blocking the loop:
        ``aget_connection``, and ``aextra_dejson()`` (``extra_dejson`` masks secrets with
        a blocking call to the supervisor; Airflow before 3.3.2 has no ``aextra_dejson``,
        so there it runs on a thread)."""
        if self._settings is None:
            conn = await self.aget_connection(self.kafka_connect_conn_id)
            read_extra = getattr(conn, "aextra_dejson", None)
            extra = (await read_extra() if read_extra is not None
                     else await asyncio.to_thread(lambda: conn.extra_dejson))
            self._settings = ConnectionSettings.from_connection(conn, extra)
        return self._settings


class KafkaConnectRestBaseHook(KafkaConnectBaseHook, Generic[ClientT, TransportT]):
    """The connection and retry settings of a REST hook, and its HTTP client's slot
    (``ClientT``: ``httpx.Client`` or ``httpx.AsyncClient``, made on first use).

    :param kafka_connect_conn_id: the ``kafka_connect`` Airflow connection.
    :param retry_limit: how many times a retryable failure (a rebalance's 409, a refused
        connection) is retried; 0 disables retries.
    :param retry_delay: seconds before the first retry; doubles on each retry (jittered).
    :param retry_max_delay: the longest wait between two attempts.
    :param transport: an httpx transport for the client (tests pass
        ``httpx.MockTransport``); by default httpx's network transport.
    """

    def __init__(self, kafka_connect_conn_id: str = KafkaConnectBaseHook.default_conn_name,
                 *, retry_limit: int = 5, retry_delay: float = 1.0,
                 retry_max_delay: float = 30.0, transport: TransportT | None = None,
                 logger_name: str | None = None) -> None:
        super().__init__(kafka_connect_conn_id, logger_name=logger_name)
        self.retry_limit = retry_limit
        self.retry_delay = retry_delay
        self.retry_max_delay = retry_max_delay
        RetryPolicy(retry_limit, retry_delay, retry_max_delay)  # fail fast on bad values
        self._transport = transport
        self._client: ClientT | None = None

    @property
    def retry_policy(self) -> RetryPolicy:
        """The retry settings as they are now (``test_connection`` lowers the limit)."""
        return RetryPolicy(self.retry_limit, self.retry_delay, self.retry_max_delay)
