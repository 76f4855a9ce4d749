"""Scheduled TLS certificate rotation of a Kafka Connect cluster's REST listeners, with
no worker restart (connect-plane's dynamic worker configuration and TLS hot reload).

``kafka_connect_certificate_rotation`` runs daily:

1. ``read_served_certificate`` reads, by a TLS handshake, the certificate every worker
   serves (``worker_urls``, or every member's https listeners found through
   ``GET /admin/cluster``), and ``should_rotate`` decides: rotate when one expires within
   ``days_before_expiry`` days (or ``force``), else skip the rest — saying why;
2. ``create_keystore`` issues a new PKCS12 keystore with ``cryptography``: a new key
   (``key_type``), a certificate the given CA signs for ``validity_days`` with the
   workers' host names and IPs (and those of the current certificate) as SANs, and a new
   random password written to a file of its own, which the workers read through a config
   provider placeholder (``${file:...}`` or ``${dir:...}``); the previous keystore and
   password file are never overwritten (every keystore has new file names), so a rollback
   can point back at them;
3. ``rotate`` (:class:`KafkaConnectRotateCertificateOperator`, deferred while it waits)
   validates, snapshots, PATCHes ``listeners.https.ssl.*`` and checks by handshakes that
   every worker serves the new certificate — restoring the snapshot otherwise;
4. ``verify`` reads the served certificates once more and reports before and after.

The workers need a config provider for the password file: ``config.providers=file`` with
``config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider``
(``password_placeholder: "file"``), or ``dir`` with the DirectoryConfigProvider. Files are
created owner-only: run the worker as the task's user (or give it the group). Default
paths come from ``CONNECT_PLANE_TLS_DIR`` (``/etc/connect-plane/tls``): ``ca.pem``,
``ca-key.pem`` and ``keystores/``. The ``kafka_connect_default`` connection's TLS extras
(``ca_bundle``, ``client_cert``/``client_key``) verify every handshake.
"""

from __future__ import annotations

import datetime
import logging
import os
from typing import Any, cast
from urllib.parse import urlsplit

from airflow.sdk import DAG, Param, task

from airflow_provider.certificates.keystores import KEY_TYPES, PLACEHOLDER_KINDS
from airflow_provider.operators.certificates import KafkaConnectRotateCertificateOperator

TLS_DIR = os.environ.get("CONNECT_PLANE_TLS_DIR", "/etc/connect-plane/tls")
START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
# Deferred tasks: one retry. Airflow <= 3.3.2's scheduler can fail a task whose trigger
# fires within seconds of its deferral, before the scheduler has seen the deferring
# process exit (apache/airflow#67287, #72716: fixed there for the "scheduled" state only).
# Every task here is safe to run again: its end state is the same.
RETRY = {"retries": 1, "retry_delay": datetime.timedelta(seconds=5)}
KEYSTORE_LOCATION = "listeners.https.ssl.keystore.location"
log = logging.getLogger(__name__)
NEW = "ti.xcom_pull(task_ids='create_keystore')"
Value = dict[str, Any]

# [START howto_operator_kafka_connect_certificate_rotation]
with DAG(
    "kafka_connect_certificate_rotation",
    default_args=RETRY,
    schedule="@daily",
    start_date=START,
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,
    tags=["kafka-connect", "tls"],
    params={
        "ca_cert": Param(f"{TLS_DIR}/ca.pem", type="string"),
        "ca_key": Param(f"{TLS_DIR}/ca-key.pem", type="string"),
        "keystore_dir": Param(f"{TLS_DIR}/keystores", type="string"),
        "days_before_expiry": Param(30, type="integer", minimum=0),
        "force": Param(False, type="boolean"),
        "key_type": Param("ec-p256", enum=list(KEY_TYPES)),
        "validity_days": Param(90, type="integer", minimum=1),
        # The https URLs to check; by default every member's https listeners.
        "worker_urls": Param(None, type=["array", "null"]),
        # More SANs for the new certificate (the workers' own are always there).
        "hostnames": Param([], type="array"),
        "password_placeholder": Param("file", enum=list(PLACEHOLDER_KINDS)),
    },
):

    @task
    def read_served_certificate(params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The certificate every worker serves now (by handshake), and whether to rotate."""
        from airflow_provider.certificates import rotation
        from airflow_provider.hooks.kafka_connect import KafkaConnectHook
        from airflow_provider.hooks.tls import TlsClientOptions, served_certificate

        assert params is not None
        with KafkaConnectHook() as hook:
            urls = (rotation.given_urls(params["worker_urls"]) if params["worker_urls"]
                    else rotation.discover_urls(hook, admin=False))
            options = TlsClientOptions.from_settings(hook.settings)
            served = [served_certificate(url, options) for url in urls]
            previous = hook.get_dynamic_worker_config().overrides.get(KEYSTORE_LOCATION)
        soonest = min(served, key=lambda cert: cert.not_after)
        days_left = soonest.days_left()
        threshold = params["days_before_expiry"]
        if params["force"]:
            reason = f"forced (the soonest certificate expires in {days_left:.1f} days)"
        elif days_left <= threshold:
            reason = (f"{soonest.url} serves a certificate that expires in {days_left:.1f} "
                      f"days, within {threshold}")
        else:
            reason = (f"every certificate is valid for more than {threshold} days (the "
                      f"soonest, at {soonest.url}, for {days_left:.1f}): nothing to do")
        hosts = [urlsplit(url).hostname or "" for url in urls]
        names = list(dict.fromkeys([*params["hostnames"], *hosts,
                                    *(name for cert in served for name in cert.names)]))
        return {"rotate": bool(params["force"] or days_left <= threshold), "reason": reason,
                "workers": urls, "fingerprints": {cert.url: cert.sha256 for cert in served},
                "not_after": soonest.not_after.isoformat(), "days_left": round(days_left, 2),
                "names": names, "previous_keystore": previous}

    @task.short_circuit
    def should_rotate(inspection: dict[str, Any]) -> bool:
        """Go on only when a certificate expires soon (or the run is forced); log why."""
        log.info("Rotate: %s — %s", inspection["rotate"], inspection["reason"])
        return bool(inspection["rotate"])

    @task
    def create_keystore(inspection: dict[str, Any],
                        params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A new PKCS12 keystore signed by the CA, its password in a file of its own."""
        from airflow_provider.certificates.keystores import issue_keystore

        assert params is not None
        issued = issue_keystore(
            params["keystore_dir"], ca_cert=params["ca_cert"], ca_key=params["ca_key"],
            names=inspection["names"], key_type=params["key_type"],
            validity_days=params["validity_days"],
            placeholder=params["password_placeholder"])
        log.info("New keystore %s (certificate %s, valid until %s); the previous one, %s, "
                 "stays for a rollback", issued.path, issued.certificate.sha256,
                 issued.certificate.not_after.isoformat(), inspection["previous_keystore"])
        return {**issued.to_dict(), "previous_keystore": inspection["previous_keystore"]}

    rotate = KafkaConnectRotateCertificateOperator(
        task_id="rotate",
        keystore_location=f"{{{{ {NEW}['keystore'] }}}}",
        keystore_type="PKCS12",
        # Placeholders, resolved by each worker: no password travels in clear.
        keystore_password=f"{{{{ {NEW}['password_placeholder'] }}}}",
        key_password=f"{{{{ {NEW}['password_placeholder'] }}}}",
        expected_fingerprint=f"{{{{ {NEW}['fingerprint'] }}}}",
        worker_urls="{{ ti.xcom_pull(task_ids='read_served_certificate')['workers'] }}",
        verify_timeout=120,
        deferrable=True,
    )

    @task
    def verify(inspection: dict[str, Any], keystore: dict[str, Any]) -> dict[str, Any]:
        """Every worker serves the new certificate: before and after, by handshake."""
        from airflow_provider.hooks.kafka_connect import KafkaConnectHook
        from airflow_provider.hooks.tls import TlsClientOptions, served_certificate

        options = TlsClientOptions.from_settings(KafkaConnectHook().settings)
        after = {url: served_certificate(url, options) for url in inspection["workers"]}
        wrong = {url: cert.sha256 for url, cert in after.items()
                 if cert.sha256 != keystore["fingerprint"]}
        if wrong:
            raise RuntimeError(f"workers serve another certificate than the new one "
                               f"({keystore['fingerprint']}): {wrong}")
        soonest = min(after.values(), key=lambda cert: cert.not_after)
        return {"workers": inspection["workers"], "fingerprint_before":
                inspection["fingerprints"], "fingerprint_after": keystore["fingerprint"],
                "not_after": soonest.not_after.isoformat(),
                "days_left": round(soonest.days_left(), 2), "keystore": keystore["keystore"],
                "previous_keystore": keystore["previous_keystore"]}

    # TaskFlow takes the XComArgs here and passes their values at run time; the functions
    # are typed for the values.
    inspection = read_served_certificate()
    keystore = create_keystore(cast(Value, inspection))
    should_rotate(cast(Value, inspection)) >> keystore
    keystore >> rotate >> verify(cast(Value, inspection), cast(Value, keystore))
# [END howto_operator_kafka_connect_certificate_rotation]
