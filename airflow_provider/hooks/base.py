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
from collections.abc import Sequence
from typing import Generic, TypeVar

from airflow.sdk import BaseHook

from airflow_provider.hooks._transport import RetryPolicy
from airflow_provider.hooks.connection import ConnectionSettings
from airflow_provider.hooks.credential_scope import CredentialScope, Origin

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
    """The connection and retry settings of a REST hook, where its requests may go, and
    its HTTP client's slot (``ClientT``: ``httpx.Client`` or ``httpx.AsyncClient``, made on
    first use).

    Requests, and the connection's credentials with them, go only to the connection's own
    origin, to ``trusted_worker_urls``, to URLs the connection extra
    ``allowed_worker_urls`` matches, or anywhere with ``allow_discovered_workers=True``;
    any other absolute URL raises
    :class:`~airflow_provider.exceptions.UntrustedWorkerUrlError` before anything is sent
    (:mod:`airflow_provider.hooks.credential_scope`).

    :param kafka_connect_conn_id: the ``kafka_connect`` Airflow connection.
    :param retry_limit: how many times a retryable failure (a rebalance's 409, a refused
        connection) is retried; 0 disables retries.
    :param retry_delay: seconds before the first retry; doubles on each retry (jittered).
    :param retry_max_delay: the longest wait between two attempts.
    :param transport: an httpx transport for the client (tests pass
        ``httpx.MockTransport``); by default httpx's network transport.
    :param trusted_worker_urls: other workers' URLs given explicitly (an operator's
        ``worker_urls``): their origins may receive the connection's credentials.
    :param allow_discovered_workers: send the credentials to any http(s) worker URL, such
        as those ``GET /admin/cluster`` advertises — another host, or http under an https
        connection — knowingly (each such origin is logged at WARNING once).
    """

    def __init__(self, kafka_connect_conn_id: str = KafkaConnectBaseHook.default_conn_name,
                 *, retry_limit: int = 5, retry_delay: float = 1.0,
                 retry_max_delay: float = 30.0, transport: TransportT | None = None,
                 trusted_worker_urls: Sequence[str] | str = (),
                 allow_discovered_workers: bool = False,
                 logger_name: str | None = None) -> None:
        super().__init__(kafka_connect_conn_id, logger_name=logger_name)
        self.retry_limit = retry_limit
        self.retry_delay = retry_delay
        self.retry_max_delay = retry_max_delay
        RetryPolicy(retry_limit, retry_delay, retry_max_delay)  # fail fast on bad values
        urls = ([trusted_worker_urls] if isinstance(trusted_worker_urls, str)
                else list(trusted_worker_urls))
        for url in urls:
            Origin.of(url)  # fail fast on a URL that is not absolute http(s)
        self.trusted_worker_urls = tuple(urls)
        self.allow_discovered_workers = bool(allow_discovered_workers)
        self._transport = transport
        self._client: ClientT | None = None
        self._scope: CredentialScope | None = None

    @property
    def credential_scope(self) -> CredentialScope:
        """Where this hook's requests may go (made once from the connection's settings:
        in the async hook, once they are loaded)."""
        if self._scope is None:
            self._scope = CredentialScope.of(self.settings, self.trusted_worker_urls,
                                             self.allow_discovered_workers)
        return self._scope

    @property
    def retry_policy(self) -> RetryPolicy:
        """The retry settings as they are now (``test_connection`` lowers the limit)."""
        return RetryPolicy(self.retry_limit, self.retry_delay, self.retry_max_delay)
