"""``worker.rest.tls.contexts``: Kafka's ssl.* settings, keystores and truststores, contexts.

Certificates come from a real test CA (``worker.testing.tls``); every failure must be a
ConfigError naming the key as written and never carrying a password.
"""

from __future__ import annotations

import os
import ssl
import stat
from pathlib import Path

import pytest

from worker.errors import ConfigError
from worker.rest.tls.ciphers import openssl_ciphers, protocol_range
from worker.rest.tls.contexts import (
    ADMIN_PREFIX,
    LISTENERS_PREFIX,
    CertificateInfo,
    ClientTls,
    build_client_context,
    build_server_context,
    phase1_keys,
    tls_settings,
)
from worker.rest.tls.stores import install_key_pair
from worker.testing.tls import Issued, TestCA

PASSWORD = "s3cret-keystore-pw"
KEY_PASSWORD = "s3cret-key-pw"
P = LISTENERS_PREFIX


@pytest.fixture(scope="module")
def ca() -> TestCA:
    return TestCA()


@pytest.fixture(scope="module")
def server(ca: TestCA) -> Issued:
    return ca.issue_server(["worker-1"])


def _server(config: dict[str, str], prefix: str = P) -> CertificateInfo:
    return build_server_context(tls_settings(config, prefix)).certificate


def _error(config: dict[str, str], prefix: str = P) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        build_server_context(tls_settings(config, prefix))
    message = str(info.value)
    assert PASSWORD not in message and KEY_PASSWORD not in message
    assert "PRIVATE KEY" not in message
    return info.value


def test_all_or_nothing_prefix_as_kafka() -> None:
    config = {"ssl.keystore.location": "/a", "ssl.keystore.password": PASSWORD,
              "listeners.https.ssl.keystore.location": "/b"}
    settings = tls_settings(config, P)
    # One prefixed key: only prefixed keys count; the unprefixed password is not used.
    assert settings.prefix == P and dict(settings.values) == {"ssl.keystore.location": "/b"}
    assert settings.key("ssl.keystore.password") == "listeners.https.ssl.keystore.password"
    fallback = tls_settings(config, ADMIN_PREFIX)
    assert fallback.prefix == "" and fallback.get("ssl.keystore.location") == "/a"
    assert fallback.get("ssl.enabled.protocols") == "TLSv1.2,TLSv1.3"  # Kafka's default
    assert PASSWORD not in repr(fallback)


def test_phase1_keys() -> None:
    keys = phase1_keys(ADMIN_PREFIX)
    assert "admin.listeners.https.ssl.keystore.location" in keys and len(keys) == 10


def test_pkcs12_keystore(tmp_path: Path, server: Issued) -> None:
    store = server.write_pkcs12(tmp_path / "k.p12", PASSWORD)
    info = _server({f"{P}ssl.keystore.location": str(store),
                    f"{P}ssl.keystore.password": PASSWORD})
    assert info.sha256 == server.sha256 and len(info.sha256) == 64
    assert info.subject == server.subject
    assert info.serial == format(server.certificate.serial_number, "x")
    assert info.to_json()["not_after"].endswith("Z")
    # Kafka's default type is JKS; like Java, a PKCS12 file is read under it.
    assert _server({f"{P}ssl.keystore.location": str(store),
                    f"{P}ssl.keystore.password": PASSWORD,
                    f"{P}ssl.keystore.type": "JKS"}).sha256 == server.sha256


@pytest.mark.parametrize("password", [KEY_PASSWORD, None])
def test_pem_keystore_file(tmp_path: Path, server: Issued, password: str | None) -> None:
    store = server.write_pem(tmp_path / "k.pem", password)
    config = {"ssl.keystore.location": str(store), "ssl.keystore.type": "PEM"}
    if password:
        config["ssl.key.password"] = password
    assert _server(config).sha256 == server.sha256


def test_inline_pem_keystore(server: Issued) -> None:
    assert _server({"ssl.keystore.type": "PEM", "ssl.keystore.key": server.key_pem(KEY_PASSWORD),
                    "ssl.key.password": KEY_PASSWORD,
                    "ssl.keystore.certificate.chain": server.chain_pem()}).sha256 == server.sha256


def test_missing_keystore_file(tmp_path: Path) -> None:
    error = _error({f"{P}ssl.keystore.location": str(tmp_path / "nope.p12"),
                    f"{P}ssl.keystore.password": PASSWORD})
    assert error.key == "listeners.https.ssl.keystore.location"
    assert "does not exist" in str(error)


def test_no_keystore_at_all() -> None:
    assert _error({}).key == "ssl.keystore.location"


def test_wrong_pkcs12_password(tmp_path: Path, server: Issued) -> None:
    store = server.write_pkcs12(tmp_path / "k.p12", "another-password")
    error = _error({f"{P}ssl.keystore.location": str(store),
                    f"{P}ssl.keystore.password": PASSWORD})
    assert error.key == "listeners.https.ssl.keystore.password"
    assert "wrong password" in str(error)


def test_wrong_pem_key_password(tmp_path: Path, server: Issued) -> None:
    store = server.write_pem(tmp_path / "k.pem", "another-password")
    error = _error({"ssl.keystore.location": str(store), "ssl.keystore.type": "PEM",
                    "ssl.key.password": KEY_PASSWORD})
    assert error.key == "ssl.key.password" and "wrong password" in str(error)
    missing = _error({"ssl.keystore.location": str(store), "ssl.keystore.type": "PEM"})
    assert "encrypted" in str(missing)


@pytest.mark.parametrize("kind", ["PKCS12", "PEM"])
def test_keystore_without_private_key(tmp_path: Path, server: Issued, kind: str) -> None:
    store = (server.write_pkcs12(tmp_path / "k.p12", PASSWORD, include_key=False)
             if kind == "PKCS12" else server.write_pem(tmp_path / "k.pem", include_key=False))
    error = _error({"ssl.keystore.location": str(store), "ssl.keystore.password": PASSWORD,
                    "ssl.keystore.type": kind})
    assert error.key == "ssl.keystore.location" and "no private key" in str(error)


def test_key_that_does_not_match_certificate(tmp_path: Path, ca: TestCA,
                                             server: Issued) -> None:
    other = ca.issue_server()
    mixed = Issued(server.certificate, other.key, server.chain)
    store = mixed.write_pem(tmp_path / "mixed.pem")
    error = _error({"ssl.keystore.location": str(store), "ssl.keystore.type": "PEM"})
    assert "does not match" in str(error)


def test_jks_keystore_says_how_to_convert(tmp_path: Path) -> None:
    store = tmp_path / "k.jks"
    store.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 64)
    error = _error({"ssl.keystore.location": str(store), "ssl.keystore.password": PASSWORD})
    assert error.key == "ssl.keystore.location"
    assert "keytool -importkeystore" in str(error) and "-deststoretype PKCS12" in str(error)


def test_not_a_keystore_and_unsupported_type(tmp_path: Path, server: Issued) -> None:
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"not a keystore at all")
    assert "is not a JKS keystore" in str(_error({"ssl.keystore.location": str(junk)}))
    pem = server.write_pem(tmp_path / "k.pem")
    assert "set ssl.keystore.type=PEM" in str(_error({"ssl.keystore.location": str(pem)}))
    error = _error({"ssl.keystore.location": str(pem), "ssl.keystore.type": "BKS"})
    assert error.key == "ssl.keystore.type"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("ssl.client.auth", "sometimes", "not one of none, requested, required"),
    ("ssl.cipher.suites", "TLS_NOT_A_SUITE", "unknown or unsupported cipher suite"),
    ("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256", "only TLS 1.3 suites"),
    ("ssl.enabled.protocols", "TLSv1.1", "only TLSv1.2 and TLSv1.3"),
    ("ssl.enabled.protocols", "TLSv1.3", "no enabled protocol is allowed"),
])
def test_bad_algorithm_settings(tmp_path: Path, server: Issued, key: str, value: str,
                                message: str) -> None:
    store = server.write_pkcs12(tmp_path / "k.p12", PASSWORD)
    config = {"ssl.keystore.location": str(store), "ssl.keystore.password": PASSWORD,
              "ssl.protocol": "TLSv1.2", key: value}
    if key == "ssl.enabled.protocols" and value == "TLSv1.1":
        config.pop("ssl.protocol")
    error = _error(config)
    assert error.key == key and message in str(error)


def test_protocols_and_ciphers_map_to_openssl() -> None:
    assert openssl_ciphers("k", ["TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                                 "TLS_AES_128_GCM_SHA256"]) == "ECDHE-RSA-AES128-GCM-SHA256"
    assert openssl_ciphers("k", []) is None
    assert protocol_range("e", ["TLSv1.2", "TLSv1.3"], "p", "TLSv1.3") == (
        ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3)
    assert protocol_range("e", ["TLSv1.2", "TLSv1.3"], "p", "TLSv1.2") == (
        ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2)


def test_client_auth_modes_and_truststores(tmp_path: Path, ca: TestCA, server: Issued) -> None:
    store = server.write_pkcs12(tmp_path / "k.p12", PASSWORD)
    base = {"ssl.keystore.location": str(store), "ssl.keystore.password": PASSWORD}
    pem_trust = ca.write_pem_truststore(tmp_path / "ca.pem")
    p12_trust = ca.write_pkcs12_truststore(tmp_path / "ca.p12", "trust-pw")
    for mode, expected in (("none", ssl.CERT_NONE), ("requested", ssl.CERT_OPTIONAL),
                           ("required", ssl.CERT_REQUIRED)):
        context = build_server_context(tls_settings(
            {**base, "ssl.client.auth": mode, "ssl.truststore.location": str(pem_trust),
             "ssl.truststore.type": "PEM"}, P)).context
        assert context.verify_mode == expected
    context = build_server_context(tls_settings(
        {**base, "ssl.client.auth": "required", "ssl.truststore.location": str(p12_trust),
         "ssl.truststore.password": "trust-pw", "ssl.truststore.type": "PKCS12"}, P)).context
    assert [c["subject"] for c in context.get_ca_certs()] != []
    wrong = _error({**base, "ssl.truststore.location": str(p12_trust),
                    "ssl.truststore.password": PASSWORD})
    assert wrong.key == "ssl.truststore.password"


def test_client_context(tmp_path: Path, ca: TestCA, server: Issued) -> None:
    trust = ca.write_pem_truststore(tmp_path / "ca.pem")
    settings = tls_settings({f"{P}ssl.truststore.location": str(trust),
                             f"{P}ssl.truststore.type": "PEM"}, P)
    context = build_client_context(settings)
    assert context.check_hostname and context.verify_mode == ssl.CERT_REQUIRED
    no_hostname = build_client_context(tls_settings(
        {f"{P}ssl.truststore.location": str(trust), f"{P}ssl.truststore.type": "PEM",
         f"{P}ssl.endpoint.identification.algorithm": ""}, P))
    assert not no_hostname.check_hostname
    with pytest.raises(ConfigError, match="ssl.endpoint.identification.algorithm"):
        build_client_context(tls_settings({"ssl.endpoint.identification.algorithm": "x"}, P))


def test_client_tls_is_lazy_and_reinstallable(tmp_path: Path, ca: TestCA) -> None:
    broken = ClientTls({f"{P}ssl.truststore.location": str(tmp_path / "missing.pem")})
    with pytest.raises(ConfigError, match="does not exist"):
        broken.context()  # nothing was loaded before it was needed
    trust = ca.write_pem_truststore(tmp_path / "ca.pem")
    good = {f"{P}ssl.truststore.location": str(trust), f"{P}ssl.truststore.type": "PEM"}
    broken.install(good, ClientTls.build(good))
    first = broken.context()
    assert broken.context() is first
    broken.install(good, None)
    assert broken.context() is not first


def test_private_key_reaches_openssl_without_touching_disk_unencrypted(
        monkeypatch: pytest.MonkeyPatch, server: Issued) -> None:
    seen: list[tuple[str, bytes, int]] = []
    original = ssl.SSLContext.load_cert_chain

    def spy(self: ssl.SSLContext, certfile: str, keyfile: str | None = None,
            password: str | None = None) -> None:
        seen.append((certfile, Path(certfile).read_bytes(), os.stat(certfile).st_mode))
        original(self, certfile, keyfile, password)

    monkeypatch.setattr(ssl.SSLContext, "load_cert_chain", spy)
    install_key_pair(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), server.pair(), "k")
    assert seen[-1][0].startswith("/proc/self/fd/")  # an anonymous in-memory file

    monkeypatch.delattr(os, "memfd_create")  # e.g. not Linux: the fallback
    install_key_pair(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), server.pair(), "k")
    path, content, mode = seen[-1]
    assert b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in content
    assert b"-----BEGIN PRIVATE KEY-----" not in content
    assert stat.S_IMODE(mode) == 0o600
    assert not Path(path).exists() and not Path(path).parent.exists()  # deleted at once


# --- issue #41: a value never appears in a message -------------------------------------------

MARK = "Resolved-Secret-Value-9d1c"  # what a ${provider:...} placeholder resolved to


@pytest.mark.parametrize(("key", "value", "words"), [
    ("ssl.client.auth", MARK, "is not one of none, requested, required"),
    ("ssl.client.auth", f" {MARK.upper()} ", "is not one of none, requested, required"),
    ("ssl.enabled.protocols", f"TLSv1.2, {MARK}", "entry 2 of 2 is not a known protocol"),
    ("ssl.enabled.protocols", f"{MARK},TLSv1.2", "entry 1 of 2 is not a known protocol"),
    ("ssl.protocol", MARK, "the value is not a known protocol; use TLS, TLSv1.2 or"),
    ("ssl.cipher.suites", f"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, {MARK}, x{MARK}",
     "unknown or unsupported cipher suite at entries 2, 3 of 3"),
    ("ssl.keystore.type", MARK, "unsupported store type; use PKCS12 or PEM"),
    ("ssl.truststore.type", f"{MARK}", "unsupported store type; use PKCS12 or PEM"),
    ("ssl.keystore.location", f"/nowhere/{MARK}.p12", "the file does not exist"),
    ("ssl.truststore.location", f"/nowhere/{MARK}.p12", "the file does not exist"),
])
def test_messages_name_the_key_and_the_problem_never_the_value(
        tmp_path: Path, server: Issued, key: str, value: str, words: str) -> None:
    store = server.write_pkcs12(tmp_path / "k.p12", PASSWORD)
    config = {"ssl.keystore.location": str(store), "ssl.keystore.password": PASSWORD,
              "ssl.truststore.location": str(ca_file(tmp_path)), "ssl.truststore.type": "PEM",
              "ssl.client.auth": "required", key: value}
    error = _error(config)
    assert error.key == key
    assert words in str(error)
    assert MARK.lower() not in str(error).lower()
    assert "nowhere" not in str(error)


def ca_file(tmp_path: Path) -> Path:
    return TestCA().write_pem_truststore(tmp_path / "ca.pem")


@pytest.mark.parametrize("content", [b"not a keystore at all", b"\xfe\xed\xfe\xed" + bytes(64),
                                     b"\xce\xce\xce\xce" + bytes(64)])
def test_store_files_of_the_wrong_kind_are_described_without_their_path(
        tmp_path: Path, content: bytes) -> None:
    where = tmp_path / MARK
    where.mkdir()
    (where / "k.bin").write_bytes(content)
    for key in ("ssl.keystore.location", "ssl.truststore.location"):
        config = {"ssl.keystore.location": str(where / "k.bin"),
                  "ssl.keystore.password": PASSWORD, key: str(where / "k.bin")}
        message = str(_error(config))
        assert MARK not in message and "k.bin" not in message
        assert "keystore file" in message or "truststore file" in message


def test_a_directory_is_not_a_keystore(tmp_path: Path) -> None:
    error = _error({"ssl.keystore.location": str(tmp_path)})
    assert error.key == "ssl.keystore.location"
    assert "the path is not a regular file" in str(error)
    assert str(tmp_path) not in str(error)


def test_a_wrong_password_names_the_password_key_not_the_file(tmp_path: Path,
                                                              server: Issued) -> None:
    store = server.write_pkcs12(tmp_path / f"{MARK}.p12", PASSWORD)
    error = _error({"ssl.keystore.location": str(store),
                    "ssl.keystore.password": f"{PASSWORD}-wrong"})
    assert error.key == "ssl.keystore.password"
    assert str(error).endswith("the keystore file cannot be opened: wrong password, or a "
                               "corrupt PKCS12 file")
    assert MARK not in str(error)
