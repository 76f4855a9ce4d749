"""The REST layer without a hook: error mapping, response handling, the endpoint table,
retry rules, TLS setup."""

from __future__ import annotations

import dataclasses
import inspect
import json
import ssl

import httpx
import pytest

from airflow_provider.exceptions import (
    AuthenticationError,
    BadRequestError,
    ConflictError,
    ConnectorAlreadyExistsError,
    ForbiddenError,
    KafkaConnectApiError,
    KafkaConnectConfigError,
    KafkaConnectTransportError,
    NotFoundError,
    RebalanceInProgressError,
    ServerError,
)
from airflow_provider.hooks._api import ConnectRestApi, endpoint
from airflow_provider.hooks._request import (
    CREATE,
    ApiRequest,
    handle_response,
    raise_for_response,
    segment,
)
from airflow_provider.hooks._transport import (
    HEADERS,
    RetryPolicy,
    client_kwargs,
    is_retryable,
    ssl_config,
    transport_error,
)
from airflow_provider.hooks.connection import ConnectionSettings
from tests.unit.airflow_provider.hooks._fakes import EMPTY, ENDPOINTS, Endpoint, as_json
from tests.unit.airflow_provider.hooks._tls import Pki

GET = ApiRequest("GET", "/connectors/c/status")
POST_CREATE = ApiRequest("POST", "/connectors", json={"name": "c"}, context=CREATE)
PUT_CONFIG = ApiRequest("PUT", "/connectors/c/config", json={"k": "v"})


# --- error mapping --------------------------------------------------------------------------

@pytest.mark.parametrize(("request_", "status", "expected"), [
    (GET, 400, BadRequestError),
    (GET, 401, AuthenticationError),
    (GET, 403, ForbiddenError),
    (GET, 404, NotFoundError),
    (POST_CREATE, 409, ConnectorAlreadyExistsError),
    (GET, 409, RebalanceInProgressError),
    (PUT_CONFIG, 409, RebalanceInProgressError),
    (GET, 500, ServerError),
    (GET, 503, ServerError),
    (GET, 504, ServerError),
    (GET, 405, KafkaConnectApiError),
    (GET, 415, KafkaConnectApiError),
    (GET, 302, KafkaConnectApiError),
])
def test_status_maps_to_exception_class(request_: ApiRequest, status: int,
                                        expected: type[Exception]) -> None:
    with pytest.raises(expected) as caught:
        body = json.dumps({"error_code": status, "message": "m"})
        raise_for_response(request_, status, body)
    assert type(caught.value) is expected
    assert caught.value.status_code == status
    assert caught.value.method == request_.method and caught.value.path == request_.path


def test_conflicts_share_a_base_class() -> None:
    for request_ in (GET, POST_CREATE):
        with pytest.raises(ConflictError):
            raise_for_response(request_, 409, "")


def test_connect_error_body_gives_message_and_error_code() -> None:
    body = '{"error_code": 40001, "message": "Connector configuration is invalid"}'
    with pytest.raises(BadRequestError) as caught:
        raise_for_response(PUT_CONFIG, 400, body)
    err = caught.value
    assert err.message == "Connector configuration is invalid"
    assert err.error_code == 40001
    assert err.body == {"error_code": 40001, "message": "Connector configuration is invalid"}
    assert str(err) == "PUT /connectors/c/config returned 400: Connector configuration is invalid"


@pytest.mark.parametrize(("body", "message"), [
    ("<html><body>Bad Gateway</body></html>", "<html><body>Bad Gateway</body></html>"),
    ("  plain text from a proxy \n", "plain text from a proxy"),
    ("", "HTTP 502"),
    ('{"error_code": 502, "message": null}', "HTTP 502"),
    ('["not", "an", "error", "body"]', '["not", "an", "error", "body"]'),
])
def test_non_connect_bodies_fall_back_to_text(body: str, message: str) -> None:
    with pytest.raises(ServerError) as caught:
        raise_for_response(GET, 502, body)
    assert caught.value.message == message
    assert caught.value.error_code == 502  # the status when the body has none


def test_huge_error_bodies_are_cut() -> None:
    with pytest.raises(ServerError) as caught:
        raise_for_response(GET, 500, "x" * 10_000)
    assert len(caught.value.message) < 600


def test_error_code_must_be_an_integer() -> None:
    with pytest.raises(NotFoundError) as caught:
        raise_for_response(GET, 404, '{"error_code": "nope", "message": "gone"}')
    assert caught.value.error_code == 404 and caught.value.message == "gone"


# --- successful answers ---------------------------------------------------------------------

@pytest.mark.parametrize("status", [202, 204])
def test_empty_answers_are_none(status: int) -> None:
    assert handle_response(GET, status, "") is None


def test_json_answers_are_parsed() -> None:
    assert handle_response(GET, 200, '{"name": "c", "tasks": []}') == {"name": "c", "tasks": []}
    assert handle_response(GET, 201, '["a", "b"]') == ["a", "b"]


def test_result_unwraps_the_parsed_body() -> None:
    request = ApiRequest("GET", "/x", result=lambda body: body["v"])
    assert handle_response(request, 200, '{"v": 7}') == 7


@pytest.mark.parametrize("status", [500, 503])
def test_health_answers_starting_and_unhealthy_workers(status: int) -> None:
    health = ApiRequest("GET", "/health", answers=frozenset({500, 503}))
    body = '{"status": "starting", "message": "Worker is starting"}'
    assert handle_response(health, status, body)["status"] == "starting"
    with pytest.raises(ServerError):  # a proxy's error page is still an error
        handle_response(health, status, "<html>down</html>")


def test_api_request_is_frozen_and_hides_bodies() -> None:
    request = ApiRequest("PUT", "/connectors/c/config", json={"db.password": "hunter2"})
    assert "hunter2" not in repr(request)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.path = "/other"  # type: ignore[misc]
    assert ApiRequest("GET", "/").idempotent and not request.idempotent


@pytest.mark.parametrize(("name", "quoted"), [
    ("a/b c", "a%2Fb%20c"), ("plain-name_1.x", "plain-name_1.x"), ("x?y#z%", "x%3Fy%23z%25"),
    ("ünï", "%C3%BCn%C3%AF"), (3, "3"),
])
def test_names_are_quoted_as_one_segment(name: str | int, quoted: str) -> None:
    assert segment(name) == quoted


class _Recorder(ConnectRestApi):
    def __init__(self) -> None:
        self.requests: list[ApiRequest] = []

    def _send(self, request: ApiRequest) -> ApiRequest:
        self.requests.append(request)
        return request


@pytest.mark.parametrize("endpoint_", ENDPOINTS, ids=lambda e: e.id)
def test_every_endpoint_builds_its_request(endpoint_: Endpoint) -> None:
    api = _Recorder()
    request = getattr(api, endpoint_.call)(*endpoint_.args, **endpoint_.kwargs)
    assert (request.method, request.path) == (endpoint_.method, endpoint_.path)
    assert list(request.params) == endpoint_.query
    assert request.json == endpoint_.body
    assert request.context == (CREATE if endpoint_.call == "create_connector" else "")
    answer = "" if endpoint_.answer is EMPTY else json.dumps(endpoint_.answer)
    assert as_json(handle_response(request, 200, answer)) == endpoint_.result


def test_endpoints_are_methods_with_their_builders_signature_and_doc() -> None:
    api = _Recorder()
    method = api.restart_connector
    assert method.__name__ == "restart_connector" and "POST" in (method.__doc__ or "")
    assert str(inspect.signature(method)) == (
        "(name: 'str', include_tasks: 'bool' = False, only_failed: 'bool' = False)")
    assert isinstance(ConnectRestApi.__dict__["get_offsets"], endpoint)
    assert ConnectRestApi.get_offsets(api, "c").path == "/connectors/c/offsets"  # unbound


def test_topics_are_unwrapped() -> None:
    request = _Recorder().get_connector_topics("a/b c")
    assert handle_response(request, 200, '{"a/b c": {"topics": ["t2", "t1"]}}') == ["t2", "t1"]
    assert handle_response(request, 200, '{"a/b c": {"topics": []}}') == []
    assert handle_response(request, 200, "{}") == []


# --- retry rules ----------------------------------------------------------------------------

def _transport(cause: Exception, request: ApiRequest = GET) -> KafkaConnectTransportError:
    try:
        raise transport_error(request, cause) from cause
    except KafkaConnectTransportError as exc:
        return exc


def _tls_failure() -> httpx.ConnectError:
    try:
        try:
            raise ssl.SSLCertVerificationError("certificate verify failed")
        except ssl.SSLError as exc:
            raise httpx.ConnectError(str(exc)) from exc
    except httpx.ConnectError as exc:
        return exc


@pytest.mark.parametrize(("request_", "cause", "retry"), [
    (GET, httpx.ConnectError("refused"), True),
    (PUT_CONFIG, httpx.ConnectError("refused"), True),
    (POST_CREATE, httpx.ConnectTimeout("slow"), True),
    (GET, httpx.RemoteProtocolError("closed"), True),
    (GET, httpx.ReadTimeout("slow"), True),
    (PUT_CONFIG, httpx.RemoteProtocolError("closed"), False),
    (POST_CREATE, httpx.ReadTimeout("slow"), False),
    (ApiRequest("DELETE", "/connectors/c"), httpx.ReadError("reset"), False),
    (GET, _tls_failure(), False),
])
def test_transport_failures_retried_only_when_safe(request_: ApiRequest, cause: Exception,
                                                   retry: bool) -> None:
    assert is_retryable(request_, _transport(cause, request_)) is retry


@pytest.mark.parametrize(("exc", "retry"), [
    (RebalanceInProgressError(409, "rebalancing"), True),
    (ConnectorAlreadyExistsError(409, "exists"), False),
    (BadRequestError(400, "bad"), False),
    (ServerError(500, "boom"), False),
    (KafkaConnectTransportError("no cause"), False),
    (ValueError("other"), False),
])
def test_only_rebalances_and_lost_connections_are_retried(exc: Exception, retry: bool) -> None:
    assert is_retryable(GET, exc) is retry


def test_transport_error_names_the_request_not_the_body() -> None:
    exc = _transport(httpx.ConnectError("[Errno 111] Connection refused"), PUT_CONFIG)
    assert str(exc) == ("PUT /connectors/c/config got no answer: ConnectError: "
                        "[Errno 111] Connection refused")


def test_backoff_is_exponential_capped_and_jittered() -> None:
    policy = RetryPolicy(retry_limit=10, retry_delay=1.0, retry_max_delay=5.0)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        waits = {policy.backoff(attempt) for _ in range(50)}
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert len(waits) > 1  # jitter
    assert RetryPolicy(3, 0.0, 0.0).backoff(3) == 0.0


@pytest.mark.parametrize("kwargs", [{"retry_limit": -1}, {"retry_delay": -0.1},
                                    {"retry_max_delay": -1}])
def test_retry_policy_rejects_negative_values(kwargs: dict[str, float]) -> None:
    with pytest.raises(KafkaConnectConfigError):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


# --- client settings ------------------------------------------------------------------------

def test_client_kwargs_carry_the_connection() -> None:
    settings = ConnectionSettings(base_url="https://c:8083", auth=("u", "p"), timeout=7.5)
    kwargs = client_kwargs(settings)
    assert kwargs["base_url"] == "https://c:8083"
    assert isinstance(kwargs["auth"], httpx.BasicAuth)
    assert kwargs["timeout"] == httpx.Timeout(7.5)
    assert kwargs["verify"] is True
    assert kwargs["headers"] == HEADERS
    assert HEADERS["Accept"] == HEADERS["Content-Type"] == "application/json"
    assert client_kwargs(ConnectionSettings(base_url="http://c:1"))["auth"] is None


def test_verify_false_disables_certificate_checks() -> None:
    assert ssl_config(ConnectionSettings(base_url="https://c", verify=False)) is False


def test_ca_bundle_becomes_the_trust_store(pki: Pki) -> None:
    context = ssl_config(ConnectionSettings(base_url="https://c", ca_bundle=str(pki.ca)))
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [dict(i[0] for i in ca["subject"])["commonName"]
            for ca in context.get_ca_certs()] == ["test-ca"]


def test_client_certificate_is_loaded_with_or_without_verification(pki: Pki) -> None:
    for verify in (True, False):
        context = ssl_config(ConnectionSettings(
            base_url="https://c", verify=verify, client_cert=str(pki.client_cert),
            client_key=str(pki.client_key)))
        assert isinstance(context, ssl.SSLContext)
        assert (context.verify_mode == ssl.CERT_REQUIRED) is verify


@pytest.mark.parametrize("field", ["ca_bundle", "client_cert"])
def test_missing_tls_files_are_config_errors(field: str) -> None:
    settings = ConnectionSettings(base_url="https://c", **{field: "/nonexistent/x.pem"})
    with pytest.raises(KafkaConnectConfigError, match="TLS files"):
        ssl_config(settings)
