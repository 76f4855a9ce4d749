"""KafkaConnectHook against a scripted Kafka Connect (``httpx.MockTransport``), a closed
port and a local HTTPS server; the connection comes from an ``AIRFLOW_CONN_*`` variable."""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from airflow.sdk import BaseHook

from airflow_provider.exceptions import (
    AuthenticationError,
    BadRequestError,
    ConnectorAlreadyExistsError,
    ForbiddenError,
    KafkaConnectApiError,
    KafkaConnectConfigError,
    KafkaConnectTransportError,
    MalformedResponseError,
    NotFoundError,
    RebalanceInProgressError,
    ServerError,
)
from airflow_provider.hooks import _transport
from airflow_provider.hooks.base import KafkaConnectRestBaseHook
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.hooks.results import ConnectorInfo, ConnectorStatus, WorkerHealth
from tests.unit.airflow_provider.hooks._fakes import (
    BASE_URL,
    CONFIG,
    ENDPOINTS,
    INFO,
    PASSWORD,
    SERVER_INFO,
    STATUS,
    Endpoint,
    FakeConnect,
    answer_response,
    as_json,
    error,
)
from tests.unit.airflow_provider.hooks._tls import Pki

# --- the hook as Airflow sees it ------------------------------------------------------------

def test_airflow_hook_attributes() -> None:
    assert issubclass(KafkaConnectHook, KafkaConnectRestBaseHook)
    assert issubclass(KafkaConnectHook, BaseHook)
    assert KafkaConnectHook.conn_name_attr == "kafka_connect_conn_id"
    assert KafkaConnectHook.default_conn_name == "kafka_connect_default"
    assert KafkaConnectHook.conn_type == "kafka_connect"
    assert KafkaConnectHook.hook_name == "Kafka Connect"
    hook = KafkaConnectHook()
    assert hook.kafka_connect_conn_id == "kafka_connect_default"
    assert (hook.retry_limit, hook.retry_delay, hook.retry_max_delay) == (5, 1.0, 30.0)


def test_airflow_resolves_the_connection_and_its_hook(conn_id: str) -> None:
    conn = BaseHook.get_connection(conn_id)
    assert (conn.conn_type, conn.host, conn.login) == ("kafka_connect", BASE_URL, "airflow")
    hook = BaseHook.get_hook(conn_id, hook_params={"retry_limit": 2})
    assert isinstance(hook, KafkaConnectHook)
    assert hook.kafka_connect_conn_id == conn_id and hook.retry_limit == 2


def test_settings_come_from_the_airflow_connection(
        kafka_connect_conn: Callable[..., str]) -> None:
    conn_id = kafka_connect_conn(
        "kc_tls", host="connect.example", login="u", password="p",
        extra={"verify": "false", "timeout": 12, "bootstrap_servers": "k:9092",
               "status_topic": "my-status"})
    settings = KafkaConnectHook(conn_id).settings
    assert settings.base_url == "http://connect.example:8083"
    assert settings.auth == ("u", "p")
    assert settings.verify is False and settings.timeout == 12.0
    assert (settings.bootstrap_servers, settings.status_topic) == ("k:9092", "my-status")


def test_invalid_connection_is_a_config_error(kafka_connect_conn: Callable[..., str]) -> None:
    conn_id = kafka_connect_conn("kc_bad", host="ftp://connect")
    with pytest.raises(KafkaConnectConfigError):
        KafkaConnectHook(conn_id).get_server_info()


@pytest.mark.parametrize("kwargs", [{"retry_limit": -1}, {"retry_delay": -1.0}])
def test_invalid_retry_arguments_fail_at_construction(kwargs: dict[str, Any]) -> None:
    with pytest.raises(KafkaConnectConfigError):
        KafkaConnectHook(**kwargs)


def test_client_is_created_lazily_reused_and_closed(conn_id: str, fake: FakeConnect) -> None:
    hook = KafkaConnectHook(conn_id, transport=fake.sync_transport())
    assert hook._client is None
    client = hook.get_conn()
    assert isinstance(client, httpx.Client) and hook.get_conn() is client
    assert str(client.base_url) == BASE_URL
    hook.close()
    assert client.is_closed
    fake.answer(httpx.Response(200, json=SERVER_INFO))
    with hook:
        hook.get_server_info()
        reopened = hook.get_conn()
        assert reopened is not client
    assert reopened.is_closed


def test_status_url_quotes_the_connector(hook: KafkaConnectHook) -> None:
    assert hook.status_url("a/b c") == f"{BASE_URL}/connectors/a%2Fb%20c/status"


def test_ui_field_behaviour_matches_provider_yaml() -> None:
    from airflow_provider import get_provider_info

    (conn_type,) = [c for c in get_provider_info()["connection-types"]
                    if c["connection-type"] == "kafka_connect"]
    assert conn_type["hook-class-name"] == "airflow_provider.hooks.kafka_connect.KafkaConnectHook"
    assert conn_type["hook-name"] == KafkaConnectHook.hook_name
    declared = conn_type.get("ui-field-behaviour", {})
    behaviour = KafkaConnectHook.get_ui_field_behaviour()
    assert behaviour == {"hidden_fields": declared.get("hidden-fields", []),
                         "relabeling": declared.get("relabeling", {}),
                         "placeholders": declared.get("placeholders", {})}
    behaviour["relabeling"]["host"] = "changed"  # callers get a copy
    assert KafkaConnectHook.get_ui_field_behaviour()["relabeling"].get("host") != "changed"


# --- requests -------------------------------------------------------------------------------

@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=lambda e: e.id)
def test_every_endpoint_sends_its_request(hook: KafkaConnectHook, fake: FakeConnect,
                                          endpoint: Endpoint) -> None:
    fake.answer(answer_response(endpoint.answer))
    result = getattr(hook, endpoint.call)(*endpoint.args, **endpoint.kwargs)
    (sent,) = fake.sent
    assert (sent.method, sent.raw_path) == (endpoint.method, endpoint.path)
    assert sent.query == endpoint.query
    assert sent.body == endpoint.body
    assert as_json(result) == endpoint.result


def test_typed_answers(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(200, json=STATUS), httpx.Response(201, json=INFO))
    status = hook.get_connector_status("a/b c")
    assert isinstance(status, ConnectorStatus)
    assert (status.name, status.state, status.type) == ("a/b c", "RUNNING", "source")
    assert [(t.id, t.state, t.trace) for t in status.tasks] == [(0, "FAILED", "boom")]
    info = hook.create_connector("a/b c", CONFIG)
    assert isinstance(info, ConnectorInfo) and info.config["file"] == "/tmp/in.txt"
    assert [(t.connector, t.task) for t in info.tasks] == [("a/b c", 0)]


@pytest.mark.parametrize(("call", "args", "body", "detail"), [
    ("get_connector_status", ("c",), {"name": "c", "tasks": []},
     "the connector's status is not a JSON object"),
    ("get_connector_status", ("c",), {"name": "c", "connector": {"state": 3}, "tasks": []},
     "the connector's status: 'state' is missing or not a string"),
    ("get_offsets", ("c",), {"offsets": [{"partition": "p", "offset": None}]},
     "an offset entry's partition is not a JSON object"),
    ("get_connector", ("c",), "<html>not Connect</html>", "the connector info is not a JSON"),
    ("get_server_info", (), {}, "the server info: 'version' is missing or not a string"),
    ("list_tasks", ("c",), {"not": "a list"}, "the answer is not a JSON array"),
])
def test_malformed_answers_are_typed_errors(hook: KafkaConnectHook, fake: FakeConnect,
                                            call: str, args: tuple[Any, ...], body: Any,
                                            detail: str) -> None:
    fake.answer(httpx.Response(200, json=body))
    with pytest.raises(MalformedResponseError) as caught:
        getattr(hook, call)(*args)
    assert caught.value.detail.startswith(detail)
    assert str(caught.value).startswith(
        f"GET {fake.sent[0].raw_path} returned an unexpected answer: {detail}")
    assert fake.attempts == 1  # not retried: asking again gets the same answer


def test_headers_and_basic_auth_are_sent(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(200, json=SERVER_INFO))
    hook.get_server_info()
    headers = fake.sent[0].headers
    assert headers["accept"] == "application/json"
    assert headers["content-type"] == "application/json"
    expected = base64.b64encode(f"airflow:{PASSWORD}".encode()).decode()
    assert headers["authorization"] == f"Basic {expected}"


def test_no_auth_header_without_login(kafka_connect_conn: Callable[..., str],
                                      fake: FakeConnect) -> None:
    conn_id = kafka_connect_conn("kc_anon", host=BASE_URL)
    with KafkaConnectHook(conn_id, transport=fake.sync_transport()) as hook:
        hook.list_connectors()
    assert "authorization" not in fake.sent[0].headers


def test_base_url_path_prefix_is_kept(kafka_connect_conn: Callable[..., str],
                                      fake: FakeConnect) -> None:
    conn_id = kafka_connect_conn("kc_proxy", host="https://gw.example/kafka-connect/")
    fake.answer(httpx.Response(200, json=STATUS))
    with KafkaConnectHook(conn_id, transport=fake.sync_transport()) as hook:
        hook.get_connector_status("a/b c")
    assert fake.sent[0].raw_path == "/kafka-connect/connectors/a%2Fb%20c/status"


@pytest.mark.parametrize(("call", "status"), [("pause_connector", 202),
                                              ("stop_connector", 204),
                                              ("delete_connector", 204),
                                              ("restart_connector", 204)])
def test_empty_answers_return_none(hook: KafkaConnectHook, fake: FakeConnect, call: str,
                                   status: int) -> None:
    fake.answer(httpx.Response(status))
    assert getattr(hook, call)("c") is None


def test_topics_are_unwrapped(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(200, json={"a/b c": {"topics": ["orders", "payments"]}}))
    assert hook.get_connector_topics("a/b c") == ["orders", "payments"]


def test_restart_with_flags_returns_the_status(hook: KafkaConnectHook,
                                               fake: FakeConnect) -> None:
    status = {"name": "c", "connector": {"state": "RESTARTING"}, "tasks": []}
    fake.answer(httpx.Response(202, json=status))
    restarted = hook.restart_connector("c", include_tasks=True)
    assert restarted is not None and restarted.to_dict() == status
    assert (restarted.state, restarted.tasks, restarted.type) == ("RESTARTING", (), None)


def test_unhealthy_worker_health_is_returned(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(503, json={"status": "starting", "message": "starting up"}))
    health = hook.get_health()
    assert health == WorkerHealth("starting", "starting up")
    assert health.to_dict() == {"status": "starting", "message": "starting up"}


# --- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "args", "status", "expected"), [
    ("put_connector_config", ("c", CONFIG), 400, BadRequestError),
    ("get_connector", ("c",), 401, AuthenticationError),
    ("list_connectors", (), 403, ForbiddenError),
    ("get_connector_status", ("c",), 404, NotFoundError),
    ("create_connector", ("c", CONFIG), 409, ConnectorAlreadyExistsError),
    ("get_offsets", ("c",), 500, ServerError),
    ("get_server_info", (), 503, ServerError),
    ("get_logger", ("x",), 405, KafkaConnectApiError),
])
def test_error_status_raises_its_class(hook: KafkaConnectHook, fake: FakeConnect, call: str,
                                       args: tuple[Any, ...], status: int,
                                       expected: type[Exception]) -> None:
    fake.answer(error(status, f"said {status}", error_code=status * 100 + 1))
    with pytest.raises(expected) as caught:
        getattr(hook, call)(*args)
    assert type(caught.value) is expected
    assert caught.value.status_code == status
    assert caught.value.error_code == status * 100 + 1
    assert caught.value.message == f"said {status}"
    assert fake.attempts == 1  # none of these is retried


def test_non_json_error_bodies_keep_their_text(hook: KafkaConnectHook,
                                               fake: FakeConnect) -> None:
    fake.answer(httpx.Response(502, text="Bad Gateway (nginx)"))
    with pytest.raises(ServerError) as caught:
        hook.list_connectors()
    assert caught.value.message == "Bad Gateway (nginx)" and caught.value.error_code == 502


# --- retries --------------------------------------------------------------------------------

def test_rebalance_is_retried_until_success(hook: KafkaConnectHook, fake: FakeConnect,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=_transport.__name__)
    fake.answer(error(409, "rebalance in progress"), error(409, "rebalance in progress"),
                httpx.Response(200, json=INFO))
    assert hook.put_connector_config("a/b c", CONFIG).to_dict() == INFO
    assert fake.attempts == 3
    retries = [r for r in caplog.records if r.name == _transport.__name__]
    assert len(retries) == 2 and all(r.levelno == logging.WARNING for r in retries)
    assert "PUT /connectors/a%2Fb%20c/config" in retries[0].getMessage()
    assert "409 rebalance in progress" in retries[0].getMessage()
    assert "retry 1 of 3" in retries[0].getMessage()


def test_rebalance_gives_up_after_retry_limit(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(error(409, "still rebalancing"))
    with pytest.raises(RebalanceInProgressError, match="still rebalancing"):
        hook.get_connector_status("c")
    assert fake.attempts == hook.retry_limit + 1 == 4


def test_retry_limit_zero_sends_once(conn_id: str, fake: FakeConnect) -> None:
    fake.answer(error(409))
    with KafkaConnectHook(conn_id, retry_limit=0, transport=fake.sync_transport()) as hook, \
            pytest.raises(RebalanceInProgressError):
        hook.resume_connector("c")
    assert fake.attempts == 1


@pytest.mark.parametrize("status", [400, 404, 500])
def test_other_errors_are_not_retried(hook: KafkaConnectHook, fake: FakeConnect,
                                      status: int) -> None:
    fake.answer(error(status), httpx.Response(200, json={}))
    with pytest.raises(KafkaConnectApiError):
        hook.get_connector("c")
    assert fake.attempts == 1


def test_already_exists_is_not_retried(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(error(409, "Connector c already exists"))
    with pytest.raises(ConnectorAlreadyExistsError):
        hook.create_connector("c", CONFIG)
    assert fake.attempts == 1


def test_connect_errors_are_retried_then_translated(hook: KafkaConnectHook,
                                                    fake: FakeConnect) -> None:
    fake.answer(httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(KafkaConnectTransportError, match="Connection refused") as caught:
        hook.stop_connector("c")
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert fake.attempts == 4


def test_lost_connection_then_success(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.ConnectTimeout("timed out"), httpx.RemoteProtocolError("closed"),
                httpx.Response(200, json=["c"]))
    assert hook.list_connectors() == ["c"]
    assert fake.attempts == 3


@pytest.mark.parametrize("failure", [httpx.RemoteProtocolError("Server disconnected"),
                                     httpx.ReadTimeout("timed out")])
def test_writes_that_may_have_arrived_are_not_repeated(hook: KafkaConnectHook,
                                                       fake: FakeConnect,
                                                       failure: Exception) -> None:
    fake.answer(failure, httpx.Response(204))
    with pytest.raises(KafkaConnectTransportError):
        hook.restart_connector("c")
    assert fake.attempts == 1


def test_refused_connection_on_a_real_socket(conn_id: str, refused_url: str,
                                             kafka_connect_conn: Callable[..., str]) -> None:
    kafka_connect_conn("kc_refused", host=refused_url)
    with KafkaConnectHook("kc_refused", retry_limit=2, retry_delay=0.0) as hook, \
            pytest.raises(KafkaConnectTransportError) as caught:
        hook.get_server_info()
    assert isinstance(caught.value.__cause__, httpx.ConnectError)
    assert str(caught.value).startswith("GET / got no answer: ConnectError")


# --- TLS ------------------------------------------------------------------------------------

def _tls_hook(kafka_connect_conn: Callable[..., str], url: str, **extra: Any
              ) -> KafkaConnectHook:
    return KafkaConnectHook(kafka_connect_conn("kc_tls", host=url, extra=extra),
                            retry_limit=2, retry_delay=0.0)


def test_tls_with_ca_bundle_and_client_certificate(kafka_connect_conn: Callable[..., str],
                                                   https_url: str, pki: Pki) -> None:
    with _tls_hook(kafka_connect_conn, https_url, ca_bundle=str(pki.ca),
                   client_cert=str(pki.client_cert), client_key=str(pki.client_key)) as hook:
        assert hook.get_server_info().to_dict()["client"] == "test-client"


def test_tls_with_ca_bundle_only(kafka_connect_conn: Callable[..., str], https_url: str,
                                 pki: Pki) -> None:
    with _tls_hook(kafka_connect_conn, https_url, ca_bundle=str(pki.ca)) as hook:
        assert hook.get_server_info().to_dict()["client"] is None


def test_tls_verify_false_accepts_an_unknown_ca(kafka_connect_conn: Callable[..., str],
                                                https_url: str) -> None:
    with _tls_hook(kafka_connect_conn, https_url, verify=False) as hook:
        assert hook.get_server_info().version == "4.0.0"


def test_untrusted_server_fails_without_retries(kafka_connect_conn: Callable[..., str],
                                                https_url: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = httpx.HTTPTransport.handle_request

    def counting(self: httpx.HTTPTransport, request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return original(self, request)

    monkeypatch.setattr(httpx.HTTPTransport, "handle_request", counting)
    with _tls_hook(kafka_connect_conn, https_url) as hook, \
            pytest.raises(KafkaConnectTransportError, match="CERTIFICATE_VERIFY_FAILED"):
        hook.get_server_info()
    assert len(calls) == 1


# --- test_connection ------------------------------------------------------------------------

def test_test_connection_reports_the_version(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.Response(200, json=SERVER_INFO))
    ok, message = hook.test_connection()
    assert ok, message
    assert message == (f"Connected to Kafka Connect 4.0.0 (commit abc123, Kafka cluster kc-1) "
                       f"at {BASE_URL}")


def test_test_connection_reports_refused_credentials(hook: KafkaConnectHook,
                                                     fake: FakeConnect) -> None:
    fake.answer(error(401, "Unauthorized"))
    assert hook.test_connection() == (False, "Kafka Connect answered 401: Unauthorized")


def test_test_connection_does_not_retry(hook: KafkaConnectHook, fake: FakeConnect) -> None:
    fake.answer(httpx.ConnectError("[Errno 111] Connection refused"))
    ok, message = hook.test_connection()
    assert not ok and "Connection refused" in message and "KafkaConnectTransportError" in message
    assert fake.attempts == 1
    assert hook.retry_limit == 3  # restored


def test_test_connection_reports_a_bad_connection(
        kafka_connect_conn: Callable[..., str]) -> None:
    kafka_connect_conn("kc_nohost", host="")
    ok, message = KafkaConnectHook("kc_nohost").test_connection()
    assert not ok and "no host" in message


class _Metadata:
    def __init__(self, topics: dict[str, Any]) -> None:
        self.topics = topics


class _Topic:
    error = None


def _fake_admin(monkeypatch: pytest.MonkeyPatch, topics: dict[str, Any] | Exception,
                seen: list[dict[str, Any]]) -> None:
    class Admin:
        def __init__(self, config: dict[str, Any]) -> None:
            seen.append(config)

        def list_topics(self, timeout: float) -> _Metadata:
            if isinstance(topics, Exception):
                raise topics
            return _Metadata(topics)

    monkeypatch.setattr("confluent_kafka.admin.AdminClient", Admin)


@pytest.mark.parametrize(("topics", "ok", "detail"), [
    ({"connect-status": _Topic()}, True, "; status topic 'connect-status' found"),
    ({"other": _Topic()}, False, ", but status topic 'connect-status' does not exist on k:9"),
    (RuntimeError("all brokers down"), False, ", but Kafka at k:9 did not answer: all brokers"),
])
def test_test_connection_checks_the_status_topic(
        kafka_connect_conn: Callable[..., str], fake: FakeConnect,
        monkeypatch: pytest.MonkeyPatch, topics: Any, ok: bool, detail: str) -> None:
    seen: list[dict[str, Any]] = []
    _fake_admin(monkeypatch, topics, seen)
    conn_id = kafka_connect_conn("kc_kafka", host=BASE_URL, extra={
        "bootstrap_servers": "k:9", "kafka_config": {"sasl.password": "kafka-secret"}})
    fake.answer(httpx.Response(200, json=SERVER_INFO))
    with KafkaConnectHook(conn_id, transport=fake.sync_transport()) as hook:
        result = hook.test_connection()
    assert result[0] is ok and detail in result[1], result
    assert "kafka-secret" not in result[1]
    assert seen == [{"sasl.password": "kafka-secret", "bootstrap.servers": "k:9"}]


# --- secrets --------------------------------------------------------------------------------

def test_secrets_never_reach_logs_or_errors(kafka_connect_conn: Callable[..., str],
                                            fake: FakeConnect,
                                            caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    config_secret = "jdbc-config-secret-value"
    conn_id = kafka_connect_conn("kc_secret", host=BASE_URL, login="admin", password=PASSWORD,
                                 extra={"kafka_config": {"sasl.password": "kafka-secret"}})
    fake.answer(error(409, "rebalance"), httpx.ConnectError("refused"),
                error(400, "Connector configuration is invalid"))
    errors: list[str] = []
    with KafkaConnectHook(conn_id, retry_limit=3, retry_delay=0.0,
                          transport=fake.sync_transport()) as hook:
        with pytest.raises(BadRequestError) as caught:
            hook.put_connector_config("c", {**CONFIG, "connection.password": config_secret})
        errors += [str(caught.value), repr(caught.value), repr(hook.settings)]
        errors.append(hook.test_connection()[1])
    assert fake.attempts == 4
    token = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    for text in [caplog.text, *errors]:
        for secret in (PASSWORD, token, config_secret, "kafka-secret"):
            assert secret not in text
    assert "retry 2 of 3" in caplog.text  # the retries were logged
