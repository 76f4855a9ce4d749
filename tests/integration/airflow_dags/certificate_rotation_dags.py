"""DAGs of the certificate-rotation operator for tests/integration/test_certificate_rotation.py,
run with ``dag.test(run_conf=...)`` against the ``kafka_connect_default`` connection.

``kc_rotate_certificate`` rotates to the keystore in ``params``; the ``_injected_failure``
variant fails right after the PATCH (its ``on_patched`` raises), so the snapshot must be
restored.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider.operators.certificates import KafkaConnectRotateCertificateOperator

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
COMMON: dict[str, Any] = {"schedule": None, "start_date": START, "catchup": False,
                          "render_template_as_native_obj": True}
PARAMS: dict[str, Any] = {"keystore_location": "", "keystore_password": "",
                          "expected_fingerprint": None, "worker_urls": None,
                          "verify_timeout": 30}
ARGS: dict[str, Any] = {
    "keystore_location": "{{ params.keystore_location }}",
    "keystore_password": "{{ params.keystore_password }}",
    "keystore_type": "PKCS12",
    "expected_fingerprint": "{{ params.expected_fingerprint }}",
    "worker_urls": "{{ params.worker_urls }}",
    "poll_interval": 0.2,
}


class InjectedFailureRotation(KafkaConnectRotateCertificateOperator):
    """The rotation with a failure injected once the PATCH is applied."""

    def on_patched(self, context: Any, overrides: dict[str, str]) -> None:
        raise RuntimeError(f"injected failure after the PATCH of {sorted(overrides)}")


with DAG("kc_rotate_certificate", params=PARAMS, **COMMON):
    KafkaConnectRotateCertificateOperator(task_id="rotate", verify_timeout=30, **ARGS)

with DAG("kc_rotate_certificate_deferred", params=PARAMS, **COMMON):
    KafkaConnectRotateCertificateOperator(task_id="rotate", verify_timeout=30,
                                          deferrable=True, **ARGS)

with DAG("kc_rotate_certificate_short_wait", params=PARAMS, **COMMON):
    # An expected fingerprint that never appears fails within 3 s and restores.
    KafkaConnectRotateCertificateOperator(task_id="rotate", verify_timeout=3, **ARGS)

with DAG("kc_rotate_certificate_injected_failure", params=PARAMS, **COMMON):
    InjectedFailureRotation(task_id="rotate", verify_timeout=30, **ARGS)
