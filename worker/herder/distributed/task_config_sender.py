"""Sends task configs computed on a follower to the leader, which writes them.

Kafka Connect's followers do the same over REST (``POST /connectors/{c}/tasks``). Sending
runs on its own thread so the herder thread never waits on another worker; a failed send
is retried with back-off (the leader may be changing), and a newer set of configs for the
same connector replaces one not yet sent.

An ``https`` leader is reached with the worker's inter-worker TLS context (``tls_context``:
the REST server's, from ``listeners.https.ssl.*``; the herder layer takes it as a plain
callable, never importing REST): one client per context, made again when the context is
reconfigured.

Requests are signed (KIP-507) by ``sign``, which the herder backs with the cluster's
session key: each attempt is signed again with the key current then, so a send refused
because the key was rotated meanwhile (403) succeeds on a later attempt.
"""

from __future__ import annotations

import json
import logging
import ssl
import threading
from collections.abc import Callable, Mapping

import httpx

from worker.util.urls import path_segment

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 30.0
MAX_ATTEMPTS = 10
BACKOFF_S = 0.5
BACKOFF_MAX_S = 5.0


class TaskConfigSender:
    """Delivers task configs to the leader from a thread of its own.

    :param leader_url: the leader's URL now, or None while unknown.
    :param tls_context: the current TLS context for ``https`` leaders (may raise, e.g. a
        ConfigError while the settings are invalid: the attempt is then retried). Without
        it, https leaders are verified against the system's CAs.
    :param sign: the signature headers for a request body (none: sent unsigned).
    """

    def __init__(self, leader_url: Callable[[], str | None],
                 tls_context: Callable[[], ssl.SSLContext] | None = None, *,
                 sign: Callable[[bytes], Mapping[str, str]] | None = None) -> None:
        self._leader_url = leader_url
        self._tls_context = tls_context
        self._sign = sign
        self._plain: httpx.Client | None = None
        self._secure: httpx.Client | None = None
        self._secure_context: ssl.SSLContext | None = None
        self._pending: dict[str, list[dict[str, str]]] = {}
        self._cond = threading.Condition()
        self._stopped = False
        self._thread: threading.Thread | None = None

    def send(self, connector: str, configs: list[dict[str, str]]) -> None:
        with self._cond:
            self._pending[connector] = configs
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="task-config-sender")
                self._thread.start()
            self._cond.notify()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(SEND_TIMEOUT_S)

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._pending and not self._stopped:
                        self._cond.wait()
                    if self._stopped:
                        return
                    connector, configs = self._pending.popitem()
                self._deliver(connector, configs)
        finally:
            for client in (self._plain, self._secure):
                if client is not None:
                    client.close()

    def _client(self, url: str) -> httpx.Client:
        """The client for ``url``: plain, or TLS with the current context."""
        if not url.lower().startswith("https://") or self._tls_context is None:
            if self._plain is None:
                self._plain = httpx.Client(timeout=SEND_TIMEOUT_S)
            return self._plain
        context = self._tls_context()
        if self._secure is None or context is not self._secure_context:
            if self._secure is not None:
                self._secure.close()  # only this thread uses it: nothing is in flight
            self._secure = httpx.Client(timeout=SEND_TIMEOUT_S, verify=context)
            self._secure_context = context
        return self._secure

    def _deliver(self, connector: str, configs: list[dict[str, str]]) -> None:
        # The bytes sent are the bytes signed.
        body = json.dumps(configs, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        delay = BACKOFF_S
        for attempt in range(1, MAX_ATTEMPTS + 1):
            with self._cond:
                if self._stopped or connector in self._pending:
                    return  # stopping, or superseded by newer configs
            url = self._leader_url()
            if url is not None:
                target = f"{url.rstrip('/')}/connectors/{path_segment(connector)}/tasks"
                try:
                    headers = {"Content-Type": "application/json",
                               **(self._sign(body) if self._sign is not None else {})}
                    response = self._client(url).post(target, params={"forward": "true"},
                                                      content=body, headers=headers)
                except Exception as exc:  # noqa: BLE001 - HTTP or TLS settings; retried
                    log.info("Sending task configs of %s to the leader failed (attempt %d): "
                             "%s", connector, attempt, exc)
                else:
                    if response.status_code < 300 or response.status_code == 404:
                        return  # written (or the connector was deleted meanwhile)
                    log.info("Leader refused task configs of %s (attempt %d): %d %s",
                             connector, attempt, response.status_code, response.text[:200])
            with self._cond:
                self._cond.wait(delay)
            delay = min(delay * 2, BACKOFF_MAX_S)
        log.error("Could not deliver task configs of connector %s to the leader after %d "
                  "attempts; they will be sent again when the connector reconfigures",
                  connector, MAX_ATTEMPTS)
