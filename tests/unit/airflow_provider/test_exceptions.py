"""The provider's errors are Airflow's: the hierarchy, the built-in bases, and Airflow's
``serialize()`` round trip."""

from __future__ import annotations

import inspect

import pytest
from airflow.exceptions import AirflowException as CoreAirflowException
from airflow.sdk.exceptions import AirflowException

from airflow_provider import exceptions
from airflow_provider.exceptions import (
    WAIT_OUT_ERRORS,
    BadRequestError,
    CertificateNotServedError,
    ConnectorFailedError,
    InvalidConnectorConfigError,
    InvalidWorkerConfigError,
    KafkaConnectConfigError,
    KafkaConnectError,
    KafkaConnectTransportError,
    KeystoreError,
    MalformedResponseError,
    NotFoundError,
    OffsetsShapeError,
    PluginPathCliError,
    PluginPathOutputError,
    PluginsNotListedError,
    RebalanceInProgressError,
    StateTimeoutError,
    TlsHandshakeError,
    UntrustedWorkerUrlError,
)

ERRORS = [cls for _, cls in inspect.getmembers(exceptions, inspect.isclass)
          if issubclass(cls, KafkaConnectError)]


def test_every_error_is_an_airflow_exception() -> None:
    assert len(ERRORS) == 25
    assert CoreAirflowException is AirflowException  # airflow.exceptions re-exports the SDK's
    for cls in ERRORS:
        assert issubclass(cls, AirflowException), cls
        assert cls.__name__ in (exceptions.__doc__ or ""), f"{cls} missing from the tree"


@pytest.mark.parametrize(("error", "builtin"), [
    (StateTimeoutError("late"), TimeoutError),
    (OffsetsShapeError("bad"), ValueError),
    (InvalidConnectorConfigError("c", ["a: b"]), ValueError),
    (MalformedResponseError("odd"), ValueError),
    (InvalidWorkerConfigError(["k: bad"]), ValueError),
    (KeystoreError("cannot read"), ValueError),
    (CertificateNotServedError("late"), TimeoutError),
    (TlsHandshakeError("refused"), KafkaConnectTransportError),
    (UntrustedWorkerUrlError("refused"), KafkaConnectConfigError),
    (PluginPathOutputError("not JSON"), ValueError),
    (PluginsNotListedError("late"), TimeoutError),
])
def test_builtin_bases_still_catch(error: Exception, builtin: type[Exception]) -> None:
    with pytest.raises(builtin):
        raise error
    with pytest.raises(AirflowException):
        raise error


@pytest.mark.parametrize("error", [
    KafkaConnectTransportError("GET / got no answer"),
    StateTimeoutError("RUNNING not reached"),
    BadRequestError(400, "invalid", method="PUT", path="/connectors/c/config",
                    error_code=40001, body={"error_code": 40001, "message": "invalid"}),
    ConnectorFailedError("c", "connector 'c': task 0 is FAILED", trace="java.lang.Boom"),
    InvalidConnectorConfigError("c", ["tasks.max: Invalid value x"]),
    MalformedResponseError("the server info is not a JSON object", method="GET", path="/"),
    InvalidWorkerConfigError(["listeners.https.ssl.keystore.password: wrong password"]),
    CertificateNotServedError("1 of 2 worker(s) did not serve it",
                              served={"https://w1:8443": "ab" * 32}),
    PluginPathCliError("connect-plugin-path list --plugin-path /p --json", 1,
                       "Traceback ...\nValueError: bad"),
    PluginPathCliError("connect-plugin-path list --json", None, "(stopped after 5 s)"),
    PluginsNotListedError("1 of 1 worker(s) did not list them",
                          missing={"http://w1:8083": ["a.B"]}),
    UntrustedWorkerUrlError("refusing to send the connection's credentials to "
                            "https://rogue:8443/", urls=["https://rogue:8443/"]),
])
def test_serialize_rebuilds_the_same_error(error: AirflowException) -> None:
    name, args, kwargs = error.serialize()
    assert name == f"airflow_provider.exceptions.{type(error).__name__}"
    rebuilt = type(error)(*args, **kwargs)
    assert str(rebuilt) == str(error) and vars(rebuilt) == vars(error)


def test_wait_out_errors() -> None:
    assert WAIT_OUT_ERRORS == (NotFoundError, RebalanceInProgressError,
                               KafkaConnectTransportError)
