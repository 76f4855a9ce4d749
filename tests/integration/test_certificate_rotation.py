"""Certificate rotation from Airflow against a real ``connect-standalone`` worker with an
https listener, through real ``dag.test()`` runs, every certificate read by a real TLS
handshake:

* the operator rotates to a new keystore (password as a ``${file:...}`` placeholder): the
  served fingerprint changes, the worker's PID does not, the overrides hold the raw
  placeholder — deferred or not;
* a failure after the PATCH (``on_patched`` raising; an expected fingerprint that never
  appears) restores the previous certificate, checked by handshake; a keystore that fails
  validation changes nothing;
* the ``kafka_connect_certificate_rotation`` DAG skips while the certificate is far from
  expiry, rotates when it expires soon (a new keystore signed by the CA, its password in a
  file of its own, the previous one kept), and again when forced;
* no password reaches the Airflow logs or the worker's log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives import serialization

from airflow_provider.certificates.keystores import resolve_locally
from airflow_provider.exceptions import BadRequestError, NotFoundError
from airflow_provider.hooks.admin_results import (
    ClusterMembers,
    WorkerConfigOverrides,
    WorkerReport,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.kafka_connect_async import KafkaConnectAsyncHook
from airflow_provider.testing import record_trigger_runs, task_states, xcom
from airflow_provider.triggers.certificates import ServedCertificateTrigger
from tests.support import WorkerProcess, WorkerStartError, write_properties
from worker.testing import free_port
from worker.testing.tls import Issued, TestCA, served_fingerprint

pytestmark = pytest.mark.integration

DAG_FILE = Path(__file__).parent / "airflow_dags" / "certificate_rotation_dags.py"
EXAMPLE_DAG = Path(__file__).parents[2] / "dags" / "kafka_connect_certificate_rotation.py"
SSL = "listeners.https.ssl."
STATIC_PASSWORD = "static-keystore-pw-8f2c"


@dataclass
class TlsWorker:
    """A standalone worker with an http and an https listener, and its CA."""

    worker: WorkerProcess
    https_url: str
    ca: TestCA
    ca_cert: Path
    ca_key: Path
    static_cert: Issued
    directory: Path

    @property
    def client(self) -> httpx.Client:
        return self.worker.client

    def served(self) -> str:
        return served_fingerprint(self.https_url, ca=self.ca)

    def overrides(self) -> dict[str, str]:
        response = self.client.get("/admin/dynamic-worker-config")
        assert response.status_code == 200, response.text
        return response.json()

    def keystore(self, name: str, *, days: float = 90) -> tuple[Path, str, str]:
        """A new PKCS12 keystore the CA signed, its password in a properties file:
        ``(path, ${file:...} placeholder, fingerprint)``."""
        issued = self.ca.issue_server(days=days)
        password = f"pw-{name}-{issued.sha256[:12]}"
        path = issued.write_pkcs12(self.directory / f"{name}.p12", password)
        secret = self.directory / f"{name}.properties"
        secret.write_text(f"keystore.password={password}\n", encoding="utf-8")
        return path, f"${{file:{secret}:keystore.password}}", issued.sha256


@pytest.fixture(scope="module")
def tls_worker(tmp_path_factory: pytest.TempPathFactory, kafka_bootstrap: str
               ) -> Iterator[TlsWorker]:
    """One worker for the module: each test reads what it serves when it starts."""
    directory = tmp_path_factory.mktemp("tls-worker")
    ca = TestCA(days=365)
    ca_cert = ca.write_pem_truststore(directory / "ca.pem")
    ca_key = directory / "ca-key.pem"
    ca_key.write_bytes(ca.key.private_bytes(serialization.Encoding.PEM,
                                            serialization.PrivateFormat.PKCS8,
                                            serialization.NoEncryption()))
    static = ca.issue_server(days=7)  # expires soon: the DAG rotates it
    keystore = static.write_pkcs12(directory / "static.p12", STATIC_PASSWORD)
    for attempt in range(3):  # a free port can be taken before the worker binds it
        http_port, https_port = free_port(), free_port()
        props = write_properties(directory / "worker.properties", {
            "bootstrap.servers": kafka_bootstrap,
            "listeners": f"http://127.0.0.1:{http_port},https://127.0.0.1:{https_port}",
            f"{SSL}keystore.location": keystore,
            f"{SSL}keystore.password": STATIC_PASSWORD,
            f"{SSL}keystore.type": "PKCS12",
            "config.providers": "file,dir",
            "config.providers.file.class":
                "org.apache.kafka.common.config.provider.FileConfigProvider",
            "config.providers.dir.class":
                "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
            "storage.sql.url": f"sqlite:///{directory / 'connect.db'}",
            "offset.flush.interval.ms": 1000,
        })
        worker = WorkerProcess(props, url=f"http://127.0.0.1:{http_port}",
                               log_path=directory / f"worker-{attempt}.log")
        try:
            worker.start()
        except WorkerStartError as exc:
            worker.close()
            if attempt == 2 or "address already in use" not in str(exc).lower():
                raise
            continue
        try:
            yield TlsWorker(worker, f"https://127.0.0.1:{https_port}", ca, ca_cert, ca_key,
                            static, directory)
        finally:
            worker.close()
        return


@pytest.fixture
def conn(tls_worker: TlsWorker, kafka_connect_conn: Callable[..., str]) -> str:
    """``kafka_connect_default``: the worker's http URL, trusting the test CA."""
    return kafka_connect_conn(host=tls_worker.worker.url,
                              extra={"ca_bundle": str(tls_worker.ca_cert)})


def run(airflow_dag: Callable[..., Any], dag_id: str, dag_file: Path = DAG_FILE,
        **conf: Any) -> Any:
    return airflow_dag(dag_file, dag_id).test(run_conf=conf)


def worker_log(tls_worker: TlsWorker) -> str:
    return tls_worker.worker.log_path.read_text(encoding="utf-8", errors="replace")


# --- the hooks ------------------------------------------------------------------------------


def test_hooks_speak_the_workers_admin_api(tls_worker: TlsWorker, conn: str) -> None:
    reset = {key: None for key in tls_worker.overrides()}
    path, placeholder, new = tls_worker.keystore("hooks")
    change = {f"{SSL}keystore.location": str(path), f"{SSL}keystore.password": placeholder}
    with KafkaConnectHook(conn) as hook:
        if reset:
            hook.patch_dynamic_worker_config(reset)
        assert hook.get_dynamic_worker_config().overrides == {}
        bad = hook.validate_dynamic_worker_config({**change, f"{SSL}keystore.password": "x"})
        assert not bad.ok and list(bad.messages) == [f"{SSL}keystore.password"]
        assert hook.validate_dynamic_worker_config(change).ok
        with pytest.raises(BadRequestError, match="ssl.keystore.password"):
            hook.validate_dynamic_worker_config({"group.id": "x"})
        version = hook.get_worker().dynamic_config.version
        assert hook.patch_dynamic_worker_config(change).overrides == change
        report = hook.get_worker()
        assert report.dynamic_config.version > version
        assert report.dynamic_config.overrides == change  # raw: the placeholder
        (listener,) = report.https_listeners(admin=False)
        assert listener.url == tls_worker.https_url
        assert listener.certificate is not None and listener.certificate.sha256 == new
        assert tls_worker.served() == new
        cluster = hook.get_cluster()
        assert [m.url for m in cluster.members] == [report.url] == [cluster.leader_url]
        assert hook.get_worker(report.url).worker_id == report.worker_id
        # Removed together (one alone would pair a keystore with the other's password).
        assert hook.patch_dynamic_worker_config({key: None for key in change}).overrides == {}
        assert tls_worker.served() == tls_worker.static_cert.sha256
        hook.patch_dynamic_worker_config({f"{SSL}keystore.type": "PKCS12"})
        assert hook.delete_dynamic_worker_config(f"{SSL}keystore.type") is None
        with pytest.raises(NotFoundError):
            hook.delete_dynamic_worker_config(f"{SSL}keystore.type")
        assert hook.get_dynamic_worker_config().overrides == {}

    async def read_async() -> tuple[WorkerReport, ClusterMembers, WorkerConfigOverrides]:
        async with KafkaConnectAsyncHook(conn) as hook:
            return (await hook.get_worker(), await hook.get_cluster(),
                    await hook.get_dynamic_worker_config())

    report, cluster, overrides = asyncio.run(read_async())
    assert report.https_listeners()[0].certificate.sha256 == tls_worker.static_cert.sha256
    assert cluster.urls == [report.url] and overrides.overrides == {}


# --- the operator ---------------------------------------------------------------------------


def airflow_output(capfd: pytest.CaptureFixture[str], marker: str) -> str:
    """What the DAG runs printed (``dag.test()`` prints task logs to stdout); ``marker``,
    a line the task logs, proves the task logs are in it."""
    out, err = capfd.readouterr()
    assert marker in out + err
    return out + err


@pytest.mark.parametrize("dag_id", ["kc_rotate_certificate", "kc_rotate_certificate_deferred"])
def test_rotation_changes_the_served_certificate_not_the_process(
        tls_worker: TlsWorker, conn: str, airflow_dag, dag_id: str,
        capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    triggers, _ = record_trigger_runs(monkeypatch, ServedCertificateTrigger)
    pid, before = tls_worker.worker.pid, tls_worker.served()
    path, placeholder, new = tls_worker.keystore(dag_id)
    dag_run = run(airflow_dag, dag_id, keystore_location=str(path),
                  keystore_password=placeholder)
    assert task_states(dag_run) == {"rotate": "success"}
    if dag_id.endswith("deferred"):  # the wait ran in the trigger
        assert [run["expected"] for run in triggers] == [{tls_worker.https_url: new}]
    else:
        assert triggers == []
    assert tls_worker.served() == new != before
    assert tls_worker.worker.pid == pid and tls_worker.worker.is_running
    result = xcom(dag_run, "rotate")
    assert result["workers"] == [tls_worker.https_url]
    assert result["fingerprint_before"] == {tls_worker.https_url: before}
    assert result["fingerprint_after"] == new
    assert result["served_within_s"] < 30
    # Stored and returned raw: the placeholder, never the password it names.
    assert tls_worker.overrides()[f"{SSL}keystore.password"] == placeholder
    password = resolve_locally(placeholder)
    output = airflow_output(capfd, "Rotating listeners.https.ssl.")
    assert password and password not in output + worker_log(tls_worker)


def test_a_failure_after_the_patch_restores_the_previous_certificate(
        tls_worker: TlsWorker, conn: str, airflow_dag) -> None:
    pid, before, overrides = tls_worker.worker.pid, tls_worker.served(), tls_worker.overrides()
    path, placeholder, new = tls_worker.keystore("injected")
    dag_run = run(airflow_dag, "kc_rotate_certificate_injected_failure",
                  keystore_location=str(path), keystore_password=placeholder)
    assert task_states(dag_run) == {"rotate": "failed"}
    assert xcom(dag_run, "rotate", "overrides_snapshot") == overrides
    assert tls_worker.served() == before != new
    assert tls_worker.overrides() == overrides
    assert tls_worker.worker.pid == pid


def test_a_fingerprint_that_never_appears_is_rolled_back(
        tls_worker: TlsWorker, conn: str, airflow_dag) -> None:
    before, overrides = tls_worker.served(), tls_worker.overrides()
    path, placeholder, new = tls_worker.keystore("unexpected")
    dag_run = run(airflow_dag, "kc_rotate_certificate_short_wait",
                  keystore_location=str(path), keystore_password=placeholder,
                  expected_fingerprint="5eed" * 16, worker_urls=[tls_worker.https_url])
    assert task_states(dag_run) == {"rotate": "failed"}
    # The new keystore was served for a while; now the previous one is back.
    assert tls_worker.served() == before != new
    assert tls_worker.overrides() == overrides


def test_an_invalid_keystore_changes_nothing(tls_worker: TlsWorker, conn: str, airflow_dag,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    before, overrides = tls_worker.served(), tls_worker.overrides()
    path, _, _ = tls_worker.keystore("wrong-password")
    dag_run = run(airflow_dag, "kc_rotate_certificate", keystore_location=str(path),
                  keystore_password="not-the-password")
    assert task_states(dag_run) == {"rotate": "failed"}
    assert xcom(dag_run, "rotate", "overrides_snapshot") is None  # failed before it
    assert tls_worker.served() == before and tls_worker.overrides() == overrides
    output = airflow_output(capfd, "InvalidWorkerConfigError")
    assert f"{SSL}keystore.password" in output
    assert "not-the-password" not in output + worker_log(tls_worker)


# --- the example DAG -----------------------------------------------------------------------


def test_the_dag_rotates_only_when_due_and_keeps_the_previous_keystore(
        tls_worker: TlsWorker, conn: str, airflow_dag, tmp_path: Path,
        capfd: pytest.CaptureFixture[str]) -> None:
    pid = tls_worker.worker.pid
    keystores = tmp_path / "keystores"
    params = {"ca_cert": str(tls_worker.ca_cert), "ca_key": str(tls_worker.ca_key),
              "keystore_dir": str(keystores), "validity_days": 60}
    dag_id = "kafka_connect_certificate_rotation"
    # Back to the static certificate (7 days left), whatever earlier tests left: one PATCH
    # (removing the overrides one by one would leave a location without its password).
    reset = {key: None for key in tls_worker.overrides()}
    if reset:
        response = tls_worker.client.patch("/admin/dynamic-worker-config", json=reset)
        assert response.status_code == 200, response.text
    assert tls_worker.served() == tls_worker.static_cert.sha256

    # Valid for more than 1 day: nothing to do, and nothing written.
    skipped = run(airflow_dag, dag_id, EXAMPLE_DAG, **params, days_before_expiry=1)
    assert task_states(skipped) == {"read_served_certificate": "success",
                                    "should_rotate": "success", "create_keystore": "skipped",
                                    "rotate": "skipped", "verify": "skipped"}
    inspection = xcom(skipped, "read_served_certificate")
    assert inspection["rotate"] is False and "nothing to do" in inspection["reason"]
    assert not keystores.exists()
    assert tls_worker.served() == tls_worker.static_cert.sha256

    # Expires within 30 days: rotated to a new keystore signed by the CA.
    first = run(airflow_dag, dag_id, EXAMPLE_DAG, **params, days_before_expiry=30)
    assert set(task_states(first).values()) == {"success"}, task_states(first)
    made = xcom(first, "create_keystore")
    report = xcom(first, "verify")
    assert tls_worker.served() == made["fingerprint"] == report["fingerprint_after"]
    assert report["fingerprint_before"] == {tls_worker.https_url: tls_worker.static_cert.sha256}
    assert 59 < report["days_left"] <= 60
    assert tls_worker.overrides() == {
        f"{SSL}keystore.location": made["keystore"], f"{SSL}keystore.type": "PKCS12",
        f"{SSL}keystore.password": made["password_placeholder"],
        f"{SSL}key.password": made["password_placeholder"]}

    # Forced: another new keystore; the previous one and its password file stay.
    second = run(airflow_dag, dag_id, EXAMPLE_DAG, **params, days_before_expiry=1, force=True)
    assert set(task_states(second).values()) == {"success"}, task_states(second)
    again = xcom(second, "create_keystore")
    assert again["previous_keystore"] == made["keystore"]
    assert tls_worker.served() == again["fingerprint"] != made["fingerprint"]
    for path in (made["keystore"], made["password_file"], again["keystore"],
                 again["password_file"]):
        assert Path(path).is_file()
    assert tls_worker.worker.pid == pid
    output = airflow_output(capfd, "Every worker serves")
    for placeholder in (made["password_placeholder"], again["password_placeholder"]):
        password = resolve_locally(placeholder)
        assert password and password not in output + worker_log(tls_worker)
