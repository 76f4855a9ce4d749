"""Kafka's ``ssl.enabled.protocols``, ``ssl.protocol`` and ``ssl.cipher.suites`` in OpenSSL terms.

Kafka takes Java's (IANA) cipher suite names, OpenSSL its own: the table maps the suites
OpenSSL 3 offers with forward secrecy or plain RSA key exchange over AES-GCM, AES-CCM,
ChaCha20-Poly1305 and AES-CBC (made from ``openssl ciphers -stdname``). An unknown name is
a ConfigError. Python's ``ssl`` module cannot restrict TLS 1.3 suites (it has no
``SSL_CTX_set_ciphersuites``): every TLS 1.3 suite stays enabled whenever TLS 1.3 is, so a
list naming only TLS 1.3 suites is refused rather than silently ignored.

Errors name the key and the position of a bad entry in its list, never the entry: a value
may come from a ``${provider:...}`` placeholder, and an element of it is part of a secret.
"""

from __future__ import annotations

import ssl

from worker.errors import ConfigError

IANA_TO_OPENSSL: dict[str, str] = {
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CCM": "ECDHE-ECDSA-AES256-CCM",
    "TLS_DHE_RSA_WITH_AES_256_CCM": "DHE-RSA-AES256-CCM",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CCM": "ECDHE-ECDSA-AES128-CCM",
    "TLS_DHE_RSA_WITH_AES_128_CCM": "DHE-RSA-AES128-CCM",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_256_CCM": "AES256-CCM",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_128_CCM": "AES128-CCM",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
}
#: TLS 1.3 suites: always on with TLS 1.3 (see the module docstring).
TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384",
                          "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256",
                          "TLS_AES_128_CCM_8_SHA256"})

_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}
_OLD = ("SSL", "SSLV2", "SSLV3", "TLSV1", "TLSV1.1", "DTLS")


def openssl_ciphers(key: str, suites: list[str]) -> str | None:
    """The OpenSSL cipher string for Kafka's ``ssl.cipher.suites`` (None: the defaults)."""
    names = [s.strip() for s in suites if s.strip()]
    if not names:
        return None
    unknown = [i for i, n in enumerate(names, 1)
               if n not in IANA_TO_OPENSSL and n not in TLS13_SUITES]
    if unknown:
        raise ConfigError(key, f"unknown or unsupported cipher suite at {_positions(unknown)} "
                               f"of {len(names)}; use IANA names such as "
                               "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")
    mapped = [IANA_TO_OPENSSL[n] for n in names if n in IANA_TO_OPENSSL]
    if not mapped:
        raise ConfigError(key, "names only TLS 1.3 suites, which cannot be restricted here "
                               "(every TLS 1.3 suite stays enabled); list TLS 1.2 suites or "
                               "leave it unset")
    return ":".join(mapped)


def _positions(indexes: list[int]) -> str:
    """``entry 2`` or ``entries 1, 3``: where in a list the bad elements are."""
    listed = ", ".join(map(str, indexes))
    return f"entry {listed}" if len(indexes) == 1 else f"entries {listed}"


def _version(key: str, name: str, where: str, choices: str = "TLSv1.2 or TLSv1.3"
             ) -> ssl.TLSVersion:
    """The version ``name`` stands for; ``where`` says which entry it is in messages."""
    upper = name.strip().upper()
    if upper in _VERSIONS:
        return _VERSIONS[upper]
    if upper in _OLD:
        raise ConfigError(key, f"{where} names a protocol older than TLSv1.2, which is not "
                               "supported; only TLSv1.2 and TLSv1.3 are")
    raise ConfigError(key, f"{where} is not a known protocol; use {choices}")


def protocol_range(enabled_key: str, enabled: list[str], protocol_key: str, protocol: str
                   ) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
    """(minimum, maximum) TLS version from ``ssl.enabled.protocols`` capped by
    ``ssl.protocol`` (Java's SSLContext protocol: ``TLSv1.2`` allows nothing newer;
    ``TLS`` and ``TLSv1.3`` allow both)."""
    names = [n for n in enabled if n.strip()]
    if not names:
        raise ConfigError(enabled_key, "no protocol enabled")
    versions = [_version(enabled_key, n, f"entry {i} of {len(names)}")
                for i, n in enumerate(names, 1)]
    cap = (ssl.TLSVersion.TLSv1_3 if protocol.strip().upper() == "TLS"
           else _version(protocol_key, protocol, "the value", "TLS, TLSv1.2 or TLSv1.3"))
    low, high = min(versions), min(max(versions), cap)
    if low > high:
        raise ConfigError(enabled_key, f"no enabled protocol is allowed by {protocol_key}")
    return low, high
