"""The HMAC algorithms a worker offers for signing internal requests (KIP-507).

Kafka's workers take these from the JVM's security providers (``Mac`` and ``KeyGenerator``
services); ours are the ones Java's default provider (SunJCE) offers under the same names
and Python's ``hashlib`` can compute. The worker config validates
``inter.worker.key.generation.algorithm``, ``inter.worker.signature.algorithm`` and
``inter.worker.verification.algorithms`` against this table; the herder signs and
verifies with it (``worker.herder.request_signing``).

Names are looked up case-insensitively, as Java's ``Mac.getInstance`` does; the name as
written is kept (Kafka compares a request's algorithm with the verification list as
written).
"""

from __future__ import annotations

import hashlib
from typing import NamedTuple


class HmacAlgorithm(NamedTuple):
    name: str  # Java's name, e.g. HmacSHA256
    digest: str  # hashlib's name
    default_key_bits: int  # the key size of SunJCE's KeyGenerator when none is set
    min_key_bits: int  # smaller sizes make SunJCE's KeyGenerator refuse to initialise


_CANDIDATES = (
    HmacAlgorithm("HmacMD5", "md5", 512, 0),
    HmacAlgorithm("HmacSHA1", "sha1", 512, 0),
    HmacAlgorithm("HmacSHA224", "sha224", 224, 40),
    HmacAlgorithm("HmacSHA256", "sha256", 256, 40),
    HmacAlgorithm("HmacSHA384", "sha384", 384, 40),
    HmacAlgorithm("HmacSHA512", "sha512", 512, 40),
    HmacAlgorithm("HmacSHA512/224", "sha512_224", 224, 40),
    HmacAlgorithm("HmacSHA512/256", "sha512_256", 256, 40),
    HmacAlgorithm("HmacSHA3-224", "sha3_224", 224, 40),
    HmacAlgorithm("HmacSHA3-256", "sha3_256", 256, 40),
    HmacAlgorithm("HmacSHA3-384", "sha3_384", 384, 40),
    HmacAlgorithm("HmacSHA3-512", "sha3_512", 512, 40),
)


def _available(algorithm: HmacAlgorithm) -> bool:
    try:
        hashlib.new(algorithm.digest)  # e.g. md5 is missing under a FIPS OpenSSL
    except ValueError:
        return False
    return True


#: Every algorithm this worker can sign, verify and generate keys with, by Java's name.
ALGORITHMS: dict[str, HmacAlgorithm] = {a.name: a for a in _CANDIDATES if _available(a)}
_BY_LOWER = {name.lower(): algorithm for name, algorithm in ALGORITHMS.items()}

#: Kafka's default for the key generation and signature algorithms and the verification list.
DEFAULT_ALGORITHM = "HmacSHA256"


def hmac_algorithm(name: str) -> HmacAlgorithm | None:
    """The algorithm called ``name`` (any case), or None if this worker has no such MAC."""
    return _BY_LOWER.get(name.lower())


def supported() -> str:
    """The supported names, for error messages."""
    return ", ".join(ALGORITHMS)
