"""Issuing keystores from a CA (PKCS12 with a new key, SANs, a password file for a config
provider placeholder, never overwriting), reading keystores back, and resolving the
placeholders a task can resolve itself."""

from __future__ import annotations

import datetime as dt
import os
import ssl
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12

from airflow_provider.certificates.keystores import (
    issue_keystore,
    keystore_certificate,
    load_ca,
    placeholder_for,
    resolve_locally,
)
from airflow_provider.exceptions import KeystoreError
from tests.unit.airflow_provider._tls_server import Ca, make_ca


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Ca:
    return make_ca(tmp_path_factory.mktemp("ca"))


def _password(issued_placeholder: str) -> str:
    value = resolve_locally(issued_placeholder)
    assert value is not None and value != issued_placeholder
    return value


def test_issued_keystore_holds_a_new_key_and_a_certificate_the_ca_signed(
        ca: Ca, tmp_path: Path) -> None:
    issued = issue_keystore(tmp_path / "ks", ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["127.0.0.1", "worker-1.example", "127.0.0.1"],
                            validity_days=45)
    assert issued.path.parent == (tmp_path / "ks").resolve() and issued.path.suffix == ".p12"
    password = _password(issued.password_placeholder)
    loaded = pkcs12.load_pkcs12(issued.path.read_bytes(), password.encode())
    assert loaded.key is not None and loaded.cert is not None
    cert = loaded.cert.certificate
    cert.verify_directly_issued_by(ca.cert)  # signed by the CA
    assert [c.certificate for c in loaded.additional_certs] == [ca.cert]  # the chain
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert sans.get_values_for_type(x509.DNSName) == ["worker-1.example"]
    assert cert.subject.rfc4514_string() == "CN=127.0.0.1"
    lifetime = cert.not_valid_after_utc - dt.datetime.now(dt.UTC)
    assert dt.timedelta(days=44) < lifetime <= dt.timedelta(days=45)
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    assert loaded.key.public_key().public_bytes(serialization.Encoding.DER, spki) == \
        cert.public_key().public_bytes(serialization.Encoding.DER, spki)
    assert issued.certificate.sha256 == issued.to_dict()["fingerprint"]
    assert keystore_certificate(issued.path, password) == cert
    # A TLS server can use it: key and certificate load together.
    key_pem = loaded.key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption())
    (tmp_path / "k.pem").write_bytes(key_pem)
    (tmp_path / "c.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tmp_path / "c.pem",
                                                            tmp_path / "k.pem")


def test_password_files_are_placeholders_never_in_the_result(ca: Ca, tmp_path: Path) -> None:
    issued = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["localhost"])
    password = _password(issued.password_placeholder)
    assert issued.password_placeholder == (
        f"${{file:{issued.password_file}:keystore.password}}")
    assert issued.password_file.read_text() == f"keystore.password={password}\n"
    assert password not in repr(issued) and password not in str(issued.to_dict())
    for path in (issued.path, issued.password_file):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    by_dir = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["localhost"], placeholder="dir", provider="secrets")
    assert by_dir.password_placeholder == (
        f"${{secrets:{tmp_path}:{by_dir.password_file.name}}}")
    dir_password = by_dir.password_file.read_text()
    assert "\n" not in dir_password and dir_password != password
    assert resolve_locally(placeholder_for("dir", by_dir.password_file)) == dir_password


def test_every_keystore_gets_new_files_and_old_ones_stay(ca: Ca, tmp_path: Path) -> None:
    now = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    first = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                           names=["localhost"], now=now)
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    second = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["localhost"], now=now)  # same second: still new files
    assert second.path != first.path and second.password_file != first.password_file
    assert {p: p.read_bytes() for p in before} == before  # the previous ones untouched
    assert len(list(tmp_path.iterdir())) == 4
    assert second.certificate.sha256 != first.certificate.sha256


@pytest.mark.parametrize(("key_type", "kind"), [("ec-p384", ec.EllipticCurvePrivateKey),
                                                ("rsa-2048", rsa.RSAPrivateKey)])
def test_key_types(ca: Ca, tmp_path: Path, key_type: str, kind: type) -> None:
    issued = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["localhost"], key_type=key_type)
    loaded = pkcs12.load_pkcs12(issued.path.read_bytes(),
                                _password(issued.password_placeholder).encode())
    assert isinstance(loaded.key, kind)


def test_validity_never_exceeds_the_cas(ca: Ca, tmp_path: Path) -> None:
    issued = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["localhost"], validity_days=10_000)
    assert issued.certificate.not_after == ca.cert.not_valid_after_utc


def test_bad_inputs_name_the_problem_and_write_nothing(ca: Ca, tmp_path: Path) -> None:
    other = make_ca(tmp_path, "other-ca")
    leaf = ca.issue(tmp_path, "leaf")
    out = tmp_path / "out"
    cases = [
        ({"ca_key": other.key_path}, "does not match the CA certificate"),
        ({"ca_cert": tmp_path / "missing.pem"}, "cannot read the CA certificate"),
        ({"ca_key": tmp_path / "missing-key.pem"}, "cannot read the CA key"),
        ({"ca_cert": leaf.cert_path, "ca_key": leaf.key_path}, "is not a CA certificate"),
        ({"names": []}, "no host name"),
        ({"key_type": "dsa-1024"}, "key_type must be one of"),
        ({"validity_days": 0}, "validity_days must be at least 1"),
        ({"placeholder": "env"}, "placeholder must be one of"),
    ]
    for change, message in cases:
        kwargs = {"ca_cert": ca.cert_path, "ca_key": ca.key_path, "names": ["localhost"],
                  **change}
        with pytest.raises(KeystoreError, match=message):
            issue_keystore(out, **kwargs)
    assert not out.exists() or not list(out.iterdir())


def test_encrypted_ca_keys_need_their_password(tmp_path: Path) -> None:
    ca = make_ca(tmp_path)
    encrypted = tmp_path / "ca-key-enc.pem"
    encrypted.write_bytes(ca.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"ca-secret-pw")))
    assert load_ca(ca.cert_path, encrypted, "ca-secret-pw")[0] == ca.cert
    with pytest.raises(KeystoreError) as caught:
        load_ca(ca.cert_path, encrypted, "wrong-pw-value")
    assert "wrong-pw-value" not in str(caught.value) and "ca-key-enc.pem" in str(caught.value)


def test_reading_keystores(ca: Ca, tmp_path: Path) -> None:
    issued = issue_keystore(tmp_path, ca_cert=ca.cert_path, ca_key=ca.key_path,
                            names=["localhost"])
    with pytest.raises(KeystoreError, match="wrong password") as caught:
        keystore_certificate(issued.path, "not-the-password")
    assert "not-the-password" not in str(caught.value)
    with pytest.raises(KeystoreError, match="cannot read keystore"):
        keystore_certificate(tmp_path / "none.p12", "x")
    with pytest.raises(KeystoreError, match="cannot be read here"):
        keystore_certificate(issued.path, "x", "JKS")
    leaf = ca.issue(tmp_path, "pem-leaf")
    pem = tmp_path / "keystore.pem"
    pem.write_bytes(leaf.key_path.read_bytes() + leaf.cert_path.read_bytes())
    assert keystore_certificate(pem, None, "PEM") == leaf.cert
    with pytest.raises(KeystoreError, match="no PEM certificate"):
        keystore_certificate(leaf.key_path, None, "pem")


def test_resolving_placeholders_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    props = tmp_path / "secrets.properties"
    props.write_text("# comment\nkeystore.password = s3cret\nother: two words\n")
    (tmp_path / "key.password").write_text("from-a-file")
    monkeypatch.setenv("KS_PASSWORD", "from-env")
    assert resolve_locally(f"${{file:{props}:keystore.password}}") == "s3cret"
    assert resolve_locally(f"${{file:{props}:other}}") == "two words"
    assert resolve_locally(f"${{file:{props}:missing}}") is None
    assert resolve_locally(f"${{file:{tmp_path / 'none'}:k}}") is None
    assert resolve_locally(f"${{dir:{tmp_path}:key.password}}") == "from-a-file"
    assert resolve_locally("${env:KS_PASSWORD}") == "from-env"
    assert resolve_locally("${vault:secret/connect:password}") is None  # not ours to read
    assert resolve_locally("plain-value") == "plain-value"
