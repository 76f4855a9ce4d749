"""The cluster's session key (KIP-507), as the distributed herder keeps it.

The leader generates a random HMAC key (``inter.worker.key.generation.algorithm``,
``inter.worker.key.size``) and writes it to the config topic as Kafka does (the
``session-key`` record); every worker, the leader included, uses the last one it read to
sign its internal requests (``inter.worker.signature.algorithm``) and to check the ones
it receives (``inter.worker.verification.algorithms``). The leader checks on every
herder tick whether the key is due for replacement, as Kafka's ``checkForKeyRotation``
does: none yet, older than ``inter.worker.key.ttl.ms`` (measured from its
``creation-timestamp``, so a new leader knows when its predecessor's key expires; 0: never
expires), or made with another algorithm or size than this worker's settings ask for.

Signing is on only while the group runs the ``sessioned`` protocol: every member has
``connect.protocol=sessioned`` (the default), Kafka's rule (``worker.herder.distributed.protocol``).
The key is never logged, nor shown in a repr.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable

from worker.config import crypto
from worker.config.worker_config import DistributedConfig
from worker.herder.request_signing import InternalRequestSignature, sign, verify
from worker.storage.kafka.formats import SessionKey

log = logging.getLogger(__name__)

#: After a failed write of a new key, the leader tries again this much later.
WRITE_RETRY_S = 1.0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SessionKeys:
    """The session key: the current one, signing and checking with it, rotating it.

    :param current: the key read last from the config topic (None: none yet).
    :param write: distributes a new key (the config store's ``put_session_key``); it
        returns once the key was read back, so ``current()`` is the new key.
    :param clock: epoch milliseconds (tests pass their own).
    """

    def __init__(self, config: DistributedConfig, current: Callable[[], SessionKey | None],
                 write: Callable[[SessionKey], None],
                 clock: Callable[[], int] = _now_ms) -> None:
        generator = crypto.hmac_algorithm(config.get("inter.worker.key.generation.algorithm"))
        assert generator is not None  # validated by the worker config
        self._algorithm = generator.name
        bits = config.get("inter.worker.key.size") or generator.default_key_bits
        self._key_bytes = (bits + 7) // 8
        self._ttl_ms: int = config.get("inter.worker.key.ttl.ms")
        self._signature_algorithm: str = config.get("inter.worker.signature.algorithm")
        self._verification: list[str] = list(config.get("inter.worker.verification.algorithms"))
        self._current = current
        self._write = write
        self._clock = clock
        self._retry_at = 0.0

    # --- every worker ----------------------------------------------------------------------

    def sign(self, body: bytes) -> dict[str, str]:
        """Signature headers for an internal request's ``body``; none while no key is
        known (Kafka's client then sends the request unsigned, too)."""
        key = self._current()
        return {} if key is None else sign(key.key, self._signature_algorithm, body)

    def verify(self, signature: InternalRequestSignature | None) -> None:
        """Raise (400/403/503, Kafka's messages) unless ``signature`` is valid now."""
        key = self._current()
        verify(signature, None if key is None else key.key, self._verification)

    # --- the leader ------------------------------------------------------------------------

    def expires_at(self, key: SessionKey) -> int | None:
        """When ``key`` is due for replacement (epoch ms); None: never."""
        return key.creation_timestamp + self._ttl_ms if self._ttl_ms > 0 else None

    def due(self) -> str | None:
        """Why the current key must be replaced now, or None."""
        key = self._current()
        if key is None:
            return "no session key has been distributed yet"
        expires = self.expires_at(key)
        if expires is not None and expires <= self._clock():
            return "the existing key has expired"
        if key.algorithm != self._algorithm or len(key.key) != self._key_bytes:
            return ("the existing key uses a different algorithm or key size than this "
                    "worker's configuration requires")
        return None

    def rotate_if_due(self) -> bool:
        """Leader, herder thread: write a new key if one is due; True if one was written.
        A failed write is logged and tried again ``WRITE_RETRY_S`` later."""
        reason = self.due()
        if reason is None or time.monotonic() < self._retry_at:
            return False
        key = SessionKey(secrets.token_bytes(self._key_bytes), self._algorithm, self._clock())
        log.info("Distributing a new session key (%s)", reason)
        try:
            self._write(key)
        except Exception:  # noqa: BLE001 - a storage failure; retried on a later tick
            log.warning("Failed to write a new session key to the config topic; retrying "
                        "in %.0f s", WRITE_RETRY_S, exc_info=True)
            self._retry_at = time.monotonic() + WRITE_RETRY_S
            return False
        return True
