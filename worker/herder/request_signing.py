"""Signed internal requests (KIP-507): how a request between workers is signed and checked.

A worker sends an internal request (``POST /connectors/{c}/tasks``) with two headers, as
Kafka's ``InternalRequestSignature`` does: ``X-Connect-Authorization``, the base64 HMAC of
the request body under the cluster's session key, and
``X-Connect-Request-Signature-Algorithm``, the MAC algorithm's Java name (e.g.
``HmacSHA256``). The receiving worker checks the signature against its own copy of the
session key (``worker.herder.distributed.session_key``) before acting on the request, answering with
Kafka's statuses and messages:

* a signature header present, but an algorithm no worker offers, or a signature that is
  not base64: 400 with the reason (Kafka reports Java's exception message);
* no signature at all: 400 "Internal request missing required signature";
* an algorithm outside ``inter.worker.verification.algorithms``: 400;
* no session key read yet: 503;
* a signature that does not match (a forged request, or one signed with a key that has
  since been rotated): 403 "Internal request contained invalid signature."

Neither the key nor a signature ever appears in a repr or a log line. Imports no storage:
REST builds a signature from the request with :meth:`InternalRequestSignature.from_headers`.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import string
from collections.abc import Sequence

from worker.config import crypto
from worker.errors import BadRequestError, ForbiddenError, WorkerError

SIGNATURE_HEADER = "X-Connect-Authorization"
SIGNATURE_ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"

MISSING_SIGNATURE = "Internal request missing required signature"
INVALID_SIGNATURE = "Internal request contained invalid signature."
NO_SESSION_KEY = ("This worker is still starting up and has not been able to read a session "
                  "key from the config topic yet")

_BASE64 = frozenset(string.ascii_letters + string.digits + "+/=")


class SessionKeyUnavailableError(WorkerError):
    """An internal request arrived before this worker read any session key (Kafka: 503)."""

    status_code = 503

    def __init__(self) -> None:
        super().__init__(NO_SESSION_KEY)


class InvalidSignatureError(ForbiddenError):
    """The request's signature does not match the current session key (Kafka: 403)."""

    def __init__(self) -> None:
        super().__init__(INVALID_SIGNATURE)


def _mac(algorithm: str) -> str:
    """hashlib's name for the MAC ``algorithm``; BadRequestError with Java's message for a
    MAC this worker does not have."""
    found = crypto.hmac_algorithm(algorithm)
    if found is None:
        raise BadRequestError(f"Algorithm {algorithm} not available")
    return found.digest


def sign(key: bytes, algorithm: str, body: bytes) -> dict[str, str]:
    """The signature headers for ``body`` under ``key`` with the MAC ``algorithm``."""
    digest = hmac.new(key, body, _mac(algorithm)).digest()
    return {SIGNATURE_HEADER: base64.b64encode(digest).decode("ascii"),
            SIGNATURE_ALGORITHM_HEADER: algorithm}


def _decode_base64(text: str) -> bytes:
    """Java's basic ``Base64.getDecoder()``: padding optional, nothing outside the alphabet
    (Java's messages, approximately)."""
    for char in text:
        if char not in _BASE64:
            raise BadRequestError(f"Illegal base64 character {ord(char):x}")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequestError(str(exc)) from None


class InternalRequestSignature:
    """The signature an internal request carries, with the body it covers."""

    __slots__ = ("_body", "_digest", "_signature", "algorithm")

    def __init__(self, body: bytes, algorithm: str, signature: bytes) -> None:
        self._body = body
        self.algorithm = algorithm  # as the sender wrote it
        self._digest = _mac(algorithm)
        self._signature = signature

    @classmethod
    def from_headers(cls, body: bytes, algorithm: str | None, signature: str | None
                     ) -> InternalRequestSignature | None:
        """The request's signature; None if either header is missing. BadRequestError for
        an unknown algorithm or a signature that is not base64."""
        if algorithm is None or signature is None:
            return None
        _mac(algorithm)
        return cls(body, algorithm, _decode_base64(signature))

    def is_valid(self, key: bytes) -> bool:
        expected = hmac.new(key, self._body, self._digest).digest()
        return hmac.compare_digest(expected, self._signature)

    def __repr__(self) -> str:
        return f"InternalRequestSignature(algorithm={self.algorithm!r})"


def verify(signature: InternalRequestSignature | None, key: bytes | None,
           verification_algorithms: Sequence[str]) -> None:
    """Kafka's ``requestNotSignedProperly``, in its order: raise unless ``signature`` is
    present, uses a permitted algorithm (as written, case-sensitive as in Kafka) and matches
    ``key``, the current session key (None: none read yet)."""
    if signature is None:
        raise BadRequestError(MISSING_SIGNATURE)
    if signature.algorithm not in verification_algorithms:
        configured = "[" + ", ".join(verification_algorithms) + "]"
        raise BadRequestError(
            f"This worker does not support the '{signature.algorithm}' key signing algorithm "
            f"used by other workers. This worker is currently configured to use: "
            f"{configured}. Check that all workers' configuration files permit the same set "
            "of signature algorithms, and correct any misconfigured worker and restart it.")
    if key is None:
        raise SessionKeyUnavailableError()
    if not signature.is_valid(key):
        raise InvalidSignatureError()
