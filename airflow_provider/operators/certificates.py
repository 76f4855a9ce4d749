"""Rotate the TLS certificate of a Kafka Connect cluster's REST listeners through the
dynamic worker configuration (connect-plane's ``/admin/dynamic-worker-config``), with a
way back.

Validate → snapshot → PATCH → verify by real TLS handshakes that every worker serves the
new certificate; on any failure after the PATCH the snapshot is PATCHed back, the previous
certificate is checked to be served again, and the task fails with the reason.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.log import mask_secret

from airflow_provider.certificates import rotation
from airflow_provider.exceptions import (
    CertificateNotServedError,
    InvalidWorkerConfigError,
    KafkaConnectApiError,
    KafkaConnectError,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.tls import (
    DEFAULT_HANDSHAKE_TIMEOUT_S,
    ServedCertificate,
    TlsClientOptions,
    served_certificate,
    wait_for_certificates,
)
from airflow_provider.triggers.certificates import ServedCertificateTrigger
from airflow_provider.utils.deferrable import resolve_deferrable

SNAPSHOT_XCOM_KEY = "overrides_snapshot"
STATE_XCOM_KEY = "rotation_state"
#: How much longer than ``verify_timeout`` Airflow lets the trigger run before it gives up
#: on it (the trigger ends itself at ``verify_timeout``).
DEFERRAL_GRACE_S = 120.0


class KafkaConnectRotateCertificateOperator(BaseOperator):
    """Rotate the certificate of the workers' https listeners, verified by handshakes.

    1. Build the change: ``overrides`` and/or ``keystore_location``, ``keystore_password``,
       ``keystore_type``, ``key_password`` (set as ``<listener>.https.ssl.*``). Give
       passwords as ``${provider:[path:]key}`` placeholders that the workers resolve, so
       none travels in clear; clear passwords work too and are masked in task logs.
    2. ``POST .../validate``: any error fails the task, listing the messages, before
       anything changes.
    3. Find the workers (``worker_urls``, or every member's https listeners from
       ``GET /admin/cluster`` and each member's ``GET /admin/worker``) and read the
       certificate each serves now.
    4. Snapshot the overrides in force to XCom ``overrides_snapshot``.
    5. ``PATCH /admin/dynamic-worker-config``; :meth:`on_patched`.
    6. The certificate to expect: ``expected_fingerprint``; else the new keystore's, when
       this task can open it; else what the connection's worker reports in
       ``/admin/worker`` once it applied the change.
    7. Wait until every worker serves it, for at most ``verify_timeout`` seconds — in the
       triggerer with ``deferrable=True`` (:class:`ServedCertificateTrigger`).

    If anything fails after the PATCH, the snapshot's values of the changed keys are
    PATCHed back (``None`` for keys that had no override), every worker is checked to
    serve its previous certificate again, and the task fails with the original error;
    notes on it say how the restore went.

    Returns ``{"workers", "fingerprint_before", "fingerprint_after", "not_after", "keys",
    "served_within_s", "duration_s"}``.

    :param listener: ``"listeners"`` (default) or ``"admin.listeners"``: whose TLS settings
        change (one kind per task).
    :param worker_urls: the https URLs to check (templated); discovered when not given.
        Only TLS handshakes go to them (no credentials).
    :param allow_discovered_workers: in discover mode, ask every member ``GET
        /admin/cluster`` advertises with the connection's credentials, whatever its origin
        (another host, http under an https connection) — knowingly. By default a member
        outside the connection's origin and its ``allowed_worker_urls`` extra fails the
        task before anything changes
        (:class:`~airflow_provider.exceptions.UntrustedWorkerUrlError`).
    :param expected_fingerprint: the SHA-256 of the new certificate (templated).
    :param verify_timeout: seconds for every worker to serve it (and, on failure, to
        serve the previous one again).
    """

    template_fields: Sequence[str] = ("overrides", "keystore_location", "keystore_password",
                                      "keystore_type", "key_password", "worker_urls",
                                      "expected_fingerprint")
    template_fields_renderers = {"overrides": "json"}
    ui_color = "#d7e8f5"

    def __init__(self, *, overrides: Mapping[str, str | None] | str | None = None,
                 keystore_location: str | None = None, keystore_password: str | None = None,
                 keystore_type: str | None = None, key_password: str | None = None,
                 listener: str = "listeners", worker_urls: Sequence[str] | str | None = None,
                 expected_fingerprint: str | None = None, verify_timeout: float = 60.0,
                 poll_interval: float = 0.5,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
                 kafka_connect_conn_id: str = "kafka_connect_default",
                 allow_discovered_workers: bool = False,
                 deferrable: bool | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        rotation.ssl_prefix(listener)  # fail at parse time on a bad listener
        self.overrides = overrides
        self.keystore_location = keystore_location
        self.keystore_password = keystore_password
        self.keystore_type = keystore_type
        self.key_password = key_password
        self.listener = listener
        self.worker_urls = worker_urls
        self.expected_fingerprint = expected_fingerprint
        self.verify_timeout = verify_timeout
        self.poll_interval = poll_interval
        self.handshake_timeout = handshake_timeout
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.allow_discovered_workers = allow_discovered_workers
        self.deferrable = resolve_deferrable(deferrable)

    @cached_property
    def hook(self) -> KafkaConnectHook:
        return KafkaConnectHook(kafka_connect_conn_id=self.kafka_connect_conn_id,
                                allow_discovered_workers=self.allow_discovered_workers)

    @property
    def tls_options(self) -> TlsClientOptions:
        """The connection's TLS settings, which every handshake follows."""
        return TlsClientOptions.from_settings(self.hook.settings)

    @property
    def admin(self) -> bool:
        return self.listener == "admin.listeners"

    # ------------------------------------------------------------------ the rotation

    def execute(self, context: Context) -> dict[str, Any]:
        started = time.time()
        changes = rotation.build_changes(self.listener, self.overrides, {
            "keystore_location": self.keystore_location,
            "keystore_password": self.keystore_password,
            "keystore_type": self.keystore_type, "key_password": self.key_password})
        _mask_clear_secrets(changes)
        validation = self.hook.validate_dynamic_worker_config(changes)
        if not validation.ok:
            raise InvalidWorkerConfigError(validation.errors)
        urls = (rotation.given_urls(self.worker_urls) if self.worker_urls
                else rotation.discover_urls(self.hook, self.admin))
        before = {url: self._handshake(url).sha256 for url in urls}
        prefix = rotation.ssl_prefix(self.listener)
        expected = (rotation.normalize_fingerprint(str(self.expected_fingerprint))
                    if self.expected_fingerprint not in (None, "")
                    else rotation.fingerprint_of_keystore(changes, prefix))
        version_before = None if expected else self.hook.get_worker().dynamic_config.version

        snapshot = self.hook.get_dynamic_worker_config().to_dict()
        rotation.check_restorable(snapshot, sorted(changes))
        if any(rotation.is_secret_key(k) and not rotation.is_placeholder(v)
               for k, v in snapshot.items()):
            self.log.warning("The overrides in force hold passwords in clear; they are in "
                             "XCom %r for the restore. Prefer ${provider:...} placeholders.",
                             SNAPSHOT_XCOM_KEY)
        _mask_clear_secrets(snapshot)
        ti = context["ti"]
        ti.xcom_push(key=SNAPSHOT_XCOM_KEY, value=snapshot)
        state: dict[str, Any] = {"keys": sorted(changes), "workers": urls,
                                 "fingerprint_before": before, "started": started}
        self.log.info("Rotating %s on %d worker(s) %s; snapshot of %d override(s) in XCom %r",
                      ", ".join(sorted(changes)), len(urls), urls, len(snapshot),
                      SNAPSHOT_XCOM_KEY)
        try:
            state["patched_at"] = time.time()
            applied = self.hook.patch_dynamic_worker_config(changes)
        except KafkaConnectApiError as exc:
            if 400 <= exc.status_code < 500:  # refused: the worker stored nothing
                raise
            self._restore(exc, snapshot, state)
            raise
        except BaseException as exc:  # no answer: it may have been applied
            self._restore(exc, snapshot, state)
            raise
        try:
            self.on_patched(context, applied.to_dict())
            if expected is None:
                assert version_before is not None
                expected = rotation.fingerprint_from_worker(
                    self.hook, version_before, self.admin, int(state["patched_at"] * 1000),
                    self.verify_timeout, self.poll_interval)
        except BaseException as exc:
            self._restore(exc, snapshot, state)
            raise
        state["expected"] = expected
        ti.xcom_push(key=STATE_XCOM_KEY, value=state)
        self.log.info("PATCH applied; waiting up to %g s for %d worker(s) to serve %s",
                      self.verify_timeout, len(urls), expected)
        if self.deferrable:
            self.defer(trigger=ServedCertificateTrigger(
                expected={url: expected for url in urls},
                kafka_connect_conn_id=self.kafka_connect_conn_id, timeout=self.verify_timeout,
                poll_interval=self.poll_interval, handshake_timeout=self.handshake_timeout),
                method_name="execute_complete",
                timeout=timedelta(seconds=self.verify_timeout + DEFERRAL_GRACE_S))
        try:
            served = wait_for_certificates(
                {url: expected for url in urls}, self.tls_options, timeout=self.verify_timeout,
                poll_interval=self.poll_interval, handshake_timeout=self.handshake_timeout)
        except BaseException as exc:
            self._restore(exc, snapshot, state)
            raise
        return self._summary(state, {url: cert.to_dict() for url, cert in served.items()})

    def on_patched(self, context: Context, overrides: dict[str, str]) -> None:
        """Called with the overrides in force right after the PATCH. Override to check
        them; raising restores the snapshot."""

    # ------------------------------------------------------------------ deferral

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after :class:`ServedCertificateTrigger`: the summary on success, else
        the snapshot (from XCom) is restored and the task fails."""
        ti = context["ti"]
        state = ti.xcom_pull(key=STATE_XCOM_KEY)
        snapshot = ti.xcom_pull(key=SNAPSHOT_XCOM_KEY) or {}
        if event.get("status") == "success":
            return self._summary(state, event.get("served") or {})
        error: KafkaConnectError
        if event.get("status") == "timeout":
            error = CertificateNotServedError(str(event.get("message")),
                                              served=event.get("served"))
        else:
            error = KafkaConnectError(f"checking the served certificates failed: "
                                      f"{event.get('message')}")
        self._restore(error, snapshot, state)
        raise error

    def resume_execution(self, next_method: str, next_kwargs: dict[str, Any] | None,
                         context: Context) -> Any:
        """As Airflow's, but a trigger that failed or timed out in the triggerer (no
        event to resume with) also restores the snapshot before the task fails."""
        try:
            return super().resume_execution(next_method, next_kwargs, context)
        except BaseException as exc:
            if next_method != "execute_complete":  # "__fail__": the trigger itself failed
                ti = context["ti"]
                state = ti.xcom_pull(key=STATE_XCOM_KEY)
                if state:
                    self._restore(exc, ti.xcom_pull(key=SNAPSHOT_XCOM_KEY) or {}, state)
            raise

    # ------------------------------------------------------------------ helpers

    def _handshake(self, url: str) -> ServedCertificate:
        return served_certificate(url, self.tls_options, timeout=self.handshake_timeout)

    def _summary(self, state: Mapping[str, Any], served: Mapping[str, Any]
                 ) -> dict[str, Any]:
        now = time.time()
        not_after = next((cert.get("not_after") for cert in served.values()), None)
        summary = {"workers": list(state["workers"]),
                   "fingerprint_before": dict(state["fingerprint_before"]),
                   "fingerprint_after": state["expected"], "not_after": not_after,
                   "keys": list(state["keys"]),
                   "served_within_s": round(now - state["patched_at"], 3),
                   "duration_s": round(now - state["started"], 3)}
        self.log.info("Every worker serves %s (was %s); %.2f s after the PATCH",
                      state["expected"], sorted(set(state["fingerprint_before"].values())),
                      summary["served_within_s"])
        return summary

    def _restore(self, error: BaseException, snapshot: Mapping[str, str],
                 state: Mapping[str, Any]) -> None:
        """PATCH the snapshot's values of the changed keys back and wait until every
        worker serves its previous certificate; the outcome becomes a note on ``error``."""
        self.log.error("Certificate rotation failed (%s: %s); restoring the previous TLS "
                       "settings", type(error).__name__, error)
        body = rotation.restore_body(snapshot, state["keys"])
        try:
            self.hook.patch_dynamic_worker_config(body)
            wait_for_certificates(dict(state["fingerprint_before"]), self.tls_options,
                                  timeout=self.verify_timeout, poll_interval=self.poll_interval,
                                  handshake_timeout=self.handshake_timeout)
        except Exception as restore_error:
            note = (f"Restoring the previous TLS settings failed too: "
                    f"{type(restore_error).__name__}: {restore_error}. The overrides before "
                    f"the rotation are in XCom {SNAPSHOT_XCOM_KEY!r}.")
            self.log.error(note)
            error.add_note(note)
            return
        restored = sorted(key for key, value in body.items() if value is not None)
        removed = sorted(key for key, value in body.items() if value is None)
        note = (f"The previous TLS settings were restored (overrides put back: "
                f"{restored or 'none'}; back to the static value: {removed or 'none'}) and "
                f"every worker serves its previous certificate again: "
                f"{dict(state['fingerprint_before'])}.")
        self.log.info(note)
        error.add_note(note)


def _mask_clear_secrets(values: Mapping[str, str | None]) -> None:
    """Register clear passwords with Airflow's secrets masker, so no task log shows them."""
    for key, value in values.items():
        if value and rotation.is_secret_key(key) and not rotation.is_placeholder(value):
            mask_secret(value)
