"""Deferrable wait until every worker lists plugin classes in ``GET /connector-plugins``."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider.exceptions import WAIT_OUT_ERRORS, KafkaConnectError
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from airflow_provider.hooks.plugin_path import PluginWait


class ConnectorPluginsTrigger(BaseTrigger):
    """Ask every worker of ``worker_urls`` for ``GET /connector-plugins?connectorsOnly=false``
    every ``poll_interval`` seconds until each lists every class of ``classes``.

    Requests go with the ``kafka_connect`` connection's credentials and TLS settings (read
    with the non-blocking lookup) to ``worker_urls``, as the operator vetted them (given to
    it, or discovered within the connection's credential scope); a worker that cannot be
    reached or answers 404/409 is waited out. One event: ``status`` ``success``
    (``listed``: URL → ``{class: version}``, ``elapsed`` seconds), ``timeout`` after
    ``timeout`` seconds (``message``, and ``missing``: URL → the classes it did not list)
    or ``error`` (the connection is unusable, or a worker refused the request:
    ``message``).
    """

    def __init__(self, worker_urls: list[str], classes: list[str], kafka_connect_conn_id: str,
                 timeout: float = 120.0, poll_interval: float = 1.0) -> None:
        super().__init__()
        self.worker_urls = list(worker_urls)
        self.classes = list(classes)
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.timeout = timeout
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "worker_urls": list(self.worker_urls),
            "classes": list(self.classes),
            "kafka_connect_conn_id": self.kafka_connect_conn_id,
            "timeout": self.timeout,
            "poll_interval": self.poll_interval,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        deadline = started + self.timeout
        wait = PluginWait(self.worker_urls, self.classes)
        try:
            # No retries inside a poll: the loop is the retry, bounded by the timeout.
            async with KafkaConnectAsyncHook(self.kafka_connect_conn_id, retry_limit=0,
                                             trusted_worker_urls=self.worker_urls) as hook:
                while True:
                    for url in wait.pending():
                        try:
                            wait.seen(url, await hook.list_connector_plugins(
                                connectors_only=False, worker_url=url))
                        except WAIT_OUT_ERRORS as exc:
                            wait.failed(url, exc)
                    if wait.done:
                        break
                    if time.monotonic() >= deadline:
                        yield TriggerEvent({
                            "status": "timeout", "message": wait.timeout_message(self.timeout),
                            "missing": {url: wait.missing[url] for url in wait.pending()}})
                        return
                    await asyncio.sleep(min(self.poll_interval,
                                            max(0.0, deadline - time.monotonic())))
        except KafkaConnectError as exc:
            yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
            return
        yield TriggerEvent({"status": "success", "listed": wait.listed,
                            "elapsed": round(time.monotonic() - started, 3)})
