"""worker.herder.request_signing: Kafka's signature headers, and the checks a worker makes
on an internal request (statuses and messages of Kafka's DistributedHerder)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from worker.config import crypto
from worker.errors import BadRequestError, ForbiddenError
from worker.herder.request_signing import (
    INVALID_SIGNATURE,
    MISSING_SIGNATURE,
    NO_SESSION_KEY,
    SIGNATURE_ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    InternalRequestSignature,
    SessionKeyUnavailableError,
    sign,
    verify,
)

KEY = bytes(range(32))
BODY = b'[{"task.class":"x","topic":"t"}]'


def received(headers: dict[str, str], body: bytes = BODY) -> InternalRequestSignature:
    signature = InternalRequestSignature.from_headers(
        body, headers.get(SIGNATURE_ALGORITHM_HEADER), headers.get(SIGNATURE_HEADER))
    assert signature is not None
    return signature


def test_kafka_header_names() -> None:
    assert SIGNATURE_HEADER == "X-Connect-Authorization"
    assert SIGNATURE_ALGORITHM_HEADER == "X-Connect-Request-Signature-Algorithm"


def test_signature_is_base64_hmac_of_the_body() -> None:
    # RFC 4231 test case 2: what javax.crypto.Mac("HmacSHA256") computes for it.
    headers = sign(b"Jefe", "HmacSHA256", b"what do ya want for nothing?")
    assert headers == {
        SIGNATURE_HEADER: base64.b64encode(bytes.fromhex(
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")).decode(),
        SIGNATURE_ALGORITHM_HEADER: "HmacSHA256"}


@pytest.mark.parametrize("algorithm", ["HmacSHA1", "HmacSHA256", "HmacSHA384", "HmacSHA512"])
def test_each_algorithm_signs_and_verifies(algorithm: str) -> None:
    headers = sign(KEY, algorithm, BODY)
    digest = crypto.ALGORITHMS[algorithm].digest
    assert base64.b64decode(headers[SIGNATURE_HEADER]) == hmac.new(KEY, BODY, digest).digest()
    verify(received(headers), KEY, [algorithm])  # no exception


def test_missing_signature_is_400() -> None:
    assert InternalRequestSignature.from_headers(BODY, None, None) is None
    assert InternalRequestSignature.from_headers(BODY, "HmacSHA256", None) is None
    with pytest.raises(BadRequestError, match=f"^{MISSING_SIGNATURE}$"):
        verify(None, KEY, ["HmacSHA256"])


def test_algorithm_not_permitted_is_400_with_kafkas_message() -> None:
    signature = received(sign(KEY, "HmacSHA512", BODY))
    with pytest.raises(BadRequestError) as caught:
        verify(signature, KEY, ["HmacSHA256", "HmacSHA384"])
    assert str(caught.value) == (
        "This worker does not support the 'HmacSHA512' key signing algorithm used by other "
        "workers. This worker is currently configured to use: [HmacSHA256, HmacSHA384]. "
        "Check that all workers' configuration files permit the same set of signature "
        "algorithms, and correct any misconfigured worker and restart it.")


def test_algorithm_is_compared_as_written() -> None:
    # Java's Mac accepts any case; Kafka's list check does not.
    signature = received(sign(KEY, "hmacsha256", BODY))
    with pytest.raises(BadRequestError, match="'hmacsha256' key signing algorithm"):
        verify(signature, KEY, ["HmacSHA256"])
    verify(signature, KEY, ["hmacsha256"])


def test_unknown_algorithm_is_400_naming_it() -> None:
    with pytest.raises(BadRequestError, match="^Algorithm HmacFoo not available$"):
        InternalRequestSignature.from_headers(BODY, "HmacFoo", "AAAA")


@pytest.mark.parametrize("encoded", ["not base64!", "a-b_", "A"])
def test_signature_that_is_not_base64_is_400(encoded: str) -> None:
    with pytest.raises(BadRequestError):
        InternalRequestSignature.from_headers(BODY, "HmacSHA256", encoded)


def test_padding_is_optional_as_in_java() -> None:
    encoded = sign(KEY, "HmacSHA256", BODY)[SIGNATURE_HEADER]
    assert encoded.endswith("=")
    verify(received({SIGNATURE_ALGORITHM_HEADER: "HmacSHA256",
                     SIGNATURE_HEADER: encoded.rstrip("=")}), KEY, ["HmacSHA256"])


def test_no_session_key_yet_is_503() -> None:
    with pytest.raises(SessionKeyUnavailableError, match=f"^{NO_SESSION_KEY}$") as caught:
        verify(received(sign(KEY, "HmacSHA256", BODY)), None, ["HmacSHA256"])
    assert caught.value.status_code == 503


@pytest.mark.parametrize("case", ["wrong key", "other body", "truncated"])
def test_wrong_signature_is_403(case: str) -> None:
    headers = sign(KEY, "HmacSHA256", BODY)
    if case == "wrong key":  # e.g. signed with the key from before a rotation
        signature = received(sign(hashlib.sha256(b"old").digest(), "HmacSHA256", BODY))
    elif case == "other body":
        signature = received(headers, BODY + b" ")
    else:
        raw = base64.b64decode(headers[SIGNATURE_HEADER])[:-1]
        signature = received({**headers, SIGNATURE_HEADER: base64.b64encode(raw).decode()})
    with pytest.raises(ForbiddenError, match=f"^{INVALID_SIGNATURE}$") as caught:
        verify(signature, KEY, ["HmacSHA256"])
    assert caught.value.status_code == 403


def test_repr_shows_no_signature() -> None:
    headers = sign(KEY, "HmacSHA256", BODY)
    shown = repr(received(headers))
    assert headers[SIGNATURE_HEADER] not in shown
    assert "HmacSHA256" in shown
