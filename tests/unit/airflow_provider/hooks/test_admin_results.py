"""The typed answers of connect-plane's /admin/ extensions (dynamic worker config, worker
report, cluster): built from the worker's JSON, refused when malformed, back to the same
JSON for XCom, and never showing a value in a repr."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

import httpx
import pytest

from airflow_provider.exceptions import (
    KafkaConnectConfigError,
    MalformedResponseError,
    UntrustedWorkerUrlError,
)
from airflow_provider.hooks import results
from airflow_provider.hooks.admin_results import (
    AppliedWorkerConfig,
    CertificateInfo,
    ClusterMembers,
    DynamicConfigValidation,
    WorkerConfigOverrides,
    WorkerListener,
    WorkerReport,
)
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from tests.unit.airflow_provider.hooks._fakes import (
    CERTIFICATE,
    CLUSTER,
    DYNAMIC_VALIDATION,
    OVERRIDES,
    SSL,
    WORKER_REPORT,
    FakeConnect,
)

ANSWERS: list[tuple[type[Any], dict[str, Any]]] = [
    (WorkerConfigOverrides, OVERRIDES),
    (WorkerConfigOverrides, {}),
    (DynamicConfigValidation, DYNAMIC_VALIDATION),
    (DynamicConfigValidation, {"error_count": 0, "errors": {}}),
    (CertificateInfo, CERTIFICATE),
    (WorkerReport, WORKER_REPORT),
    (ClusterMembers, CLUSTER),
    (ClusterMembers, {"leader_url": None, "members": []}),
]


@pytest.mark.parametrize(("cls", "body"), ANSWERS, ids=lambda x: getattr(x, "__name__", ""))
def test_to_dict_is_the_answer_as_sent(cls: type[Any], body: dict[str, Any]) -> None:
    answer = cls.from_json(json.loads(json.dumps(body)))
    assert answer.to_dict() == body
    json.dumps(answer.to_dict())  # XCom-ready
    answer.to_dict().clear()  # a copy
    assert answer.to_dict() == body
    with pytest.raises(dataclasses.FrozenInstanceError):
        answer.raw = {}


def test_results_module_exports_the_admin_answers() -> None:
    assert results.WorkerReport is WorkerReport
    assert results.DynamicConfigValidation is DynamicConfigValidation


def test_validation_lists_key_and_message() -> None:
    validation = DynamicConfigValidation.from_json(DYNAMIC_VALIDATION)
    assert not validation.ok and validation.error_count == 2
    assert validation.errors == [
        f"{SSL}keystore.location: file /etc/connect/ks-2.p12 does not exist",
        f"{SSL}keystore.password: the keystore password is wrong"]
    assert DynamicConfigValidation.from_json({"error_count": 0, "errors": {}}).ok
    # Inconsistent answers are not "ok" either way.
    assert not DynamicConfigValidation.from_json({"error_count": 1}).ok


def test_worker_report_fields() -> None:
    report = WorkerReport.from_json(WORKER_REPORT)
    assert (report.worker_id, report.url) == ("127.0.0.1:8083", "http://127.0.0.1:8083")
    assert report.dynamic_config.version == 3
    assert report.dynamic_config.last_validation.status == "ok"
    assert [listener.url for listener in report.https_listeners()] == [
        "https://127.0.0.1:8443"]
    assert report.https_listeners(admin=True) == []
    (https,) = report.https_listeners(admin=False)
    assert https.certificate is not None and https.certificate.sha256 == "ab" * 32
    assert https.certificate.expires_at == dt.datetime(2026, 4, 1, tzinfo=dt.UTC)
    assert report.listeners[0].certificate is None


def test_cluster_urls() -> None:
    assert ClusterMembers.from_json(CLUSTER).urls == ["http://127.0.0.1:8083",
                                                     "http://127.0.0.1:8084"]


def test_reprs_show_keys_never_values() -> None:
    secret = "clear-text-password-123"
    overrides = WorkerConfigOverrides.from_json({f"{SSL}keystore.password": secret})
    applied = AppliedWorkerConfig.from_json({
        "version": 1, "overrides": {f"{SSL}keystore.password": secret},
        "last_validation": {"status": "none", "message": None, "timestamp": None}})
    report = WorkerReport.from_json({**WORKER_REPORT, "dynamic_config": applied.to_dict()})
    for shown in (repr(overrides), repr(applied), repr(report), str(overrides)):
        assert secret not in shown
        assert f"{SSL}keystore.password" in shown


@pytest.mark.parametrize(("cls", "body", "detail"), [
    (WorkerConfigOverrides, ["a"], "the dynamic worker config is not a JSON object"),
    (WorkerConfigOverrides, {"k": 1}, "values that are not strings"),
    (DynamicConfigValidation, {"errors": {}}, "'error_count' is missing"),
    (DynamicConfigValidation, {"error_count": 1, "errors": {"k": "bad"}},
     "the errors of 'k' are not a list of strings"),
    (CertificateInfo, {**CERTIFICATE, "sha256": None}, "'sha256' is missing"),
    (CertificateInfo, {**CERTIFICATE, "not_after": "next year"}, "not an ISO-8601 date"),
    (WorkerListener, {"url": "https://h:1", "protocol": "https"}, "'admin' is missing"),
    (WorkerReport, {**WORKER_REPORT, "dynamic_config": None}, "is not a JSON object"),
    (WorkerReport, {**WORKER_REPORT, "listeners": {}}, "'listeners' is missing or not"),
    (WorkerReport, {**WORKER_REPORT, "dynamic_config": {
        **WORKER_REPORT["dynamic_config"], "version": "3"}}, "'version' is missing"),
    (ClusterMembers, {"leader_url": 1, "members": []}, "'leader_url' is not a string"),
    (ClusterMembers, {"members": [{"url": "x"}]}, "'worker_id' is missing"),
])
def test_malformed_answers_name_the_problem(cls: type[Any], body: Any, detail: str) -> None:
    with pytest.raises(MalformedResponseError, match=detail):
        cls.from_json(body)


def test_get_worker_of_another_member(conn_id: str) -> None:
    fake = FakeConnect().answer(httpx.Response(200, json=WORKER_REPORT))
    # The member's URL given explicitly: the connection's credentials may go there.
    with KafkaConnectHook(conn_id, retry_limit=0, transport=fake.sync_transport(),
                          trusted_worker_urls=["https://w2.test:8443"]) as hook:
        report = hook.get_worker("https://w2.test:8443/")
        with pytest.raises(KafkaConnectConfigError, match="not an http"):
            hook.get_worker("w2.test:8443")
        with pytest.raises(UntrustedWorkerUrlError, match="https://w3.test:8443/admin/worker"):
            hook.get_worker("https://w3.test:8443")  # not given: nothing sent
    assert report.worker_id == "127.0.0.1:8083"
    (sent,) = fake.sent
    assert (sent.method, sent.raw_path) == ("GET", "/admin/worker")
    assert sent.headers["host"] == "w2.test:8443"
    assert "authorization" in sent.headers  # the connection's credentials go along


def test_plugins_of_another_member(conn_id: str) -> None:
    listed = [{"class": "acme.Source", "type": "source", "version": "1.2"}]
    fake = FakeConnect().answer(httpx.Response(200, json=listed))
    with KafkaConnectHook(conn_id, retry_limit=0, transport=fake.sync_transport(),
                          allow_discovered_workers=True) as hook:
        plugins = hook.list_connector_plugins(connectors_only=False,
                                              worker_url="http://w2.test:8084/")
        with pytest.raises(KafkaConnectConfigError, match="not an http"):
            hook.list_connector_plugins(worker_url="w2.test:8084")
    assert [(p.class_name, p.version) for p in plugins] == [("acme.Source", "1.2")]
    (sent,) = fake.sent
    assert (sent.method, sent.raw_path, sent.query) == (
        "GET", "/connector-plugins", [("connectorsOnly", "false")])
    assert sent.headers["host"] == "w2.test:8084"
