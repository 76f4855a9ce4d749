"""The steps of a certificate rotation that need no Airflow context, used by
:class:`~airflow_provider.operators.certificates.KafkaConnectRotateCertificateOperator` and
the ``kafka_connect_certificate_rotation`` DAG: the PATCH body, the workers to check
(:func:`given_urls`, :func:`discover_urls`), and the certificate they must serve afterwards.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from airflow_provider.certificates.keystores import keystore_certificate, resolve_locally
from airflow_provider.exceptions import (
    CertificateNotServedError,
    KafkaConnectConfigError,
    KafkaConnectError,
    KeystoreError,
)
from airflow_provider.hooks.admin_results import WorkerReport
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.tls import describe_certificate, https_address

LISTENERS = ("listeners", "admin.listeners")
#: The convenience arguments of the operator and the settings they stand for.
CONVENIENCE_KEYS = {"keystore_location": "keystore.location",
                    "keystore_password": "keystore.password",
                    "keystore_type": "keystore.type", "key_password": "key.password"}
_FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")
_PLACEHOLDER = re.compile(r"^\$\{[^}]+\}$")

log = logging.getLogger(__name__)


def ssl_prefix(listener: str) -> str:
    """``listeners.https.ssl.`` or ``admin.listeners.https.ssl.``."""
    if listener not in LISTENERS:
        raise ValueError(f"listener must be one of {LISTENERS}, got {listener!r}")
    return f"{listener}.https.ssl."


def is_placeholder(value: str | None) -> bool:
    """True for a ``${provider:[path:]key}`` placeholder."""
    return value is not None and bool(_PLACEHOLDER.match(value.strip()))


def is_secret_key(key: str) -> bool:
    """Keys whose values are passwords."""
    return key.endswith("password")


def build_changes(listener: str, overrides: Any, convenience: Mapping[str, str | None]
                  ) -> dict[str, str | None]:
    """The PATCH body: ``overrides`` (a mapping, or its JSON) merged with the convenience
    arguments given (``keystore_location`` → ``<listener>.https.ssl.keystore.location``,
    ...). Every key must be a TLS setting of ``listener``; errors name keys, never values."""
    prefix = ssl_prefix(listener)
    if isinstance(overrides, str):
        try:
            overrides = json.loads(overrides) if overrides.strip() else None
        except json.JSONDecodeError:
            raise ValueError("overrides is not valid JSON") from None
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ValueError("overrides must be a mapping of setting names to strings or None")
    changes: dict[str, str | None] = {}
    for key, value in (overrides or {}).items():
        if not isinstance(key, str) or not (value is None or isinstance(value, str)):
            raise ValueError(f"overrides[{key!r}] must be a string or None")
        changes[key] = value
    for argument, suffix in CONVENIENCE_KEYS.items():
        value = convenience.get(argument)
        if value in (None, ""):
            continue
        key = prefix + suffix
        if key in changes and changes[key] != value:
            raise ValueError(f"{key} is given twice, in overrides and as {argument}, with "
                             "different values")
        changes[key] = str(value)
    if not changes:
        raise ValueError("nothing to change: give overrides or keystore_location")
    outside = sorted(key for key in changes if not key.startswith(prefix))
    if outside:
        raise ValueError(f"keys {outside} are not TLS settings of {listener} "
                         f"({prefix}*): rotate one listener kind per task")
    return changes


def normalize_fingerprint(value: str) -> str:
    """A SHA-256 fingerprint as 64 lowercase hex characters (colons allowed in input)."""
    text = value.strip().lower().replace(":", "")
    if not _FINGERPRINT.match(text):
        raise ValueError(f"{value!r} is not a SHA-256 fingerprint (64 hex characters)")
    return text


def given_urls(urls: Any) -> list[str]:
    """``worker_urls`` as given: a list, a JSON list or a comma-separated string of
    ``https://`` URLs."""
    if isinstance(urls, str):
        text = urls.strip()
        urls = json.loads(text) if text.startswith("[") else text.split(",")
    found = [str(url).strip().rstrip("/") for url in urls or () if str(url).strip()]
    for url in found:
        https_address(url)  # only https URLs have a certificate to check
    return list(dict.fromkeys(found))


def discover_urls(hook: KafkaConnectHook, admin: bool) -> list[str]:
    """The https listener URLs of ``admin`` kind of every member of the cluster:
    ``GET /admin/cluster``, then each member's own ``GET /admin/worker``. The members
    advertise their URLs themselves, so every one must be in the hook's credential scope
    before any is asked (else :class:`~airflow_provider.exceptions.UntrustedWorkerUrlError`,
    nothing sent to any member)."""
    cluster = hook.get_cluster()
    hook.credential_scope.check_all(cluster.urls, source="GET /admin/cluster")
    urls: list[str] = []
    for member in cluster.members:
        report = hook.get_worker(member.url)
        urls += [listener.url.rstrip("/") for listener in report.https_listeners(admin)]
    if not urls:
        raise KafkaConnectConfigError(
            f"no {'admin ' if admin else ''}https listener on the cluster's workers "
            f"({', '.join(cluster.urls) or 'no members'}): nothing serves a certificate "
            "to rotate")
    return list(dict.fromkeys(urls))


def fingerprint_of_keystore(changes: Mapping[str, str | None], prefix: str) -> str | None:
    """The new keystore's leaf fingerprint when this task can read it: its location in
    ``changes``, its password clear or a placeholder resolvable here
    (:func:`~airflow_provider.certificates.keystores.resolve_locally`); else ``None`` (logged)."""
    location = changes.get(prefix + "keystore.location")
    if not location:
        return None
    password = changes.get(prefix + "keystore.password")
    path = resolve_locally(location)
    secret = resolve_locally(password) if password else None
    if path is None or (password and secret is None):
        log.info("The new keystore cannot be opened here (a placeholder that only the "
                 "workers resolve); its fingerprint is read from /admin/worker instead")
        return None
    # Without a type in the change, guess from the name (the static type is not known).
    kind = changes.get(prefix + "keystore.type") or (
        "PEM" if path.lower().endswith((".pem", ".crt")) else "PKCS12")
    try:
        cert = keystore_certificate(path, secret, kind)
    except KeystoreError as exc:
        log.info("Not reading the new certificate from the keystore here (%s); its "
                 "fingerprint is read from /admin/worker instead", exc)
        return None
    return describe_certificate(cert).sha256


def fingerprint_from_worker(hook: KafkaConnectHook, version_before: int, admin: bool,
                            patched_at_ms: int, timeout: float, poll_interval: float) -> str:
    """The fingerprint the connection's worker serves once it applied the change: its
    ``/admin/worker`` ``dynamic_config.version`` must pass ``version_before``. A failed
    local validation after the PATCH is an error (the worker kept its old certificate)."""
    deadline = time.monotonic() + timeout
    while True:
        report = hook.get_worker()
        applied = report.dynamic_config
        failed = applied.last_validation
        if failed.status == "failed" and (failed.timestamp or 0) >= patched_at_ms:
            raise KafkaConnectError(f"worker {report.worker_id} refused the new TLS settings: "
                                    f"{failed.message}")
        if applied.version > version_before:
            return _served_by(report, admin)
        if time.monotonic() >= deadline:
            raise CertificateNotServedError(
                f"worker {report.worker_id} did not apply the change within {timeout:g} s "
                f"(dynamic config version {applied.version}, before the PATCH "
                f"{version_before})")
        time.sleep(poll_interval)


def _served_by(report: WorkerReport, admin: bool) -> str:
    for listener in report.https_listeners(admin):
        if listener.certificate is not None:
            return listener.certificate.sha256
    raise KafkaConnectConfigError(f"worker {report.worker_id} reports no "
                                  f"{'admin ' if admin else ''}https listener certificate")


def restore_body(snapshot: Mapping[str, str], keys: Sequence[str]) -> dict[str, str | None]:
    """The PATCH that puts ``keys`` back as in ``snapshot``: its value, or ``None`` (no
    override: the static value) for keys it did not override."""
    return {key: snapshot.get(key) for key in sorted(set(keys))}


#: What a worker shows instead of a password written in clear to a caller who is not an
#: admin principal (docs/security.md, "Secrets in /admin reads").
HIDDEN = "[hidden]"


def check_restorable(snapshot: Mapping[str, str], keys: Sequence[str]) -> None:
    """KafkaConnectConfigError unless ``snapshot`` holds the real value of every key of
    ``keys`` it overrides: a value the worker hid from this connection's user could not be
    put back if the rotation failed, so the rotation must not start."""
    hidden = sorted(key for key in set(keys) if snapshot.get(key) == HIDDEN)
    if hidden:
        raise KafkaConnectConfigError(
            f"The worker hides the override(s) in force of {', '.join(hidden)} from this "
            f"connection's user ({HIDDEN}: not an admin principal), so a failed rotation "
            "could not put them back; nothing was changed. Use the credentials of a user "
            "listed in rest.admin.principals, or keep passwords in ${provider:...} "
            "placeholders, which are shown as written.")
