"""Deferrable wait until every worker serves the expected TLS certificate, checked by real
TLS handshakes on asyncio streams."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider.exceptions import CertificateNotServedError, KafkaConnectError
from airflow_provider.hooks.base import KafkaConnectBaseHook
from airflow_provider.hooks.tls import (
    DEFAULT_HANDSHAKE_TIMEOUT_S,
    TlsClientOptions,
    await_certificates,
)


class ServedCertificateTrigger(BaseTrigger):
    """Handshake with every URL of ``expected`` (URL → SHA-256 fingerprint) every
    ``poll_interval`` seconds until each serves its fingerprint.

    Verification follows the TLS settings of the ``kafka_connect`` connection (read with
    the non-blocking lookup). One event: ``status`` ``success`` (``served``: URL → the
    certificate, ``elapsed`` seconds), ``timeout`` after ``timeout`` seconds (``message``
    and ``served``: URL → the fingerprint or handshake error seen last) or ``error`` (the
    connection's TLS settings are unusable; ``message``).
    """

    def __init__(self, expected: dict[str, str], kafka_connect_conn_id: str,
                 timeout: float = 60.0, poll_interval: float = 0.5,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S) -> None:
        super().__init__()
        self.expected = dict(expected)
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.timeout = timeout
        self.poll_interval = poll_interval
        self.handshake_timeout = handshake_timeout

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{type(self).__module__}.{type(self).__qualname__}", {
            "expected": dict(self.expected),
            "kafka_connect_conn_id": self.kafka_connect_conn_id,
            "timeout": self.timeout,
            "poll_interval": self.poll_interval,
            "handshake_timeout": self.handshake_timeout,
        })

    async def run(self) -> AsyncIterator[TriggerEvent]:
        started = time.monotonic()
        try:
            hook = KafkaConnectBaseHook(self.kafka_connect_conn_id)
            options = TlsClientOptions.from_settings(await hook.aget_settings())
            served = await await_certificates(
                self.expected, options, timeout=self.timeout, poll_interval=self.poll_interval,
                handshake_timeout=self.handshake_timeout)
        except CertificateNotServedError as exc:
            yield TriggerEvent({"status": "timeout", "message": str(exc),
                                "served": dict(exc.served)})
            return
        except KafkaConnectError as exc:
            yield TriggerEvent({"status": "error", "message": f"{type(exc).__name__}: {exc}"})
            return
        yield TriggerEvent({"status": "success",
                            "served": {url: cert.to_dict() for url, cert in served.items()},
                            "elapsed": round(time.monotonic() - started, 3)})
