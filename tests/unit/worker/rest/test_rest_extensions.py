"""REST extensions (``rest.extension.classes``): resolution, loading, registration, order,
failures at startup, the cluster state they read, and the app they wrap."""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.unit.worker.rest.conftest import FakeHerder
from worker.api import ConfigException, RestExtension, RestExtensionContext
from worker.api.rest_extension import (
    ASGIApp,
    ConnectorHealth,
    Receive,
    Scope,
    Send,
    is_internal_request,
)
from worker.builtin.rest_extensions.basic_auth import BasicAuthSecurityRestExtension
from worker.config.worker_config import StandaloneConfig
from worker.errors import ConfigError
from worker.plugins.registry import (
    CONNECTOR_CONFIG_TYPES,
    PluginRegistry,
    PluginType,
    builtin_registry,
)
from worker.rest.app import create_app
from worker.rest.security.extensions import RestSecurity, rest_security

BASIC_AUTH_JAVA = ("org.apache.kafka.connect.rest.basic.auth.extension."
                   "BasicAuthSecurityRestExtension")
EVENTS: list[str] = []


class TagMiddleware:
    """Appends its tag to a response header, and records when it saw the request."""

    def __init__(self, app: ASGIApp, tag: str) -> None:
        self.app = app
        self.tag = tag

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            EVENTS.append(f"{self.tag}:{scope['path']}")
        await self.app(scope, receive, send)


class RecordingExtension(RestExtension):
    """Records what the worker gave it; ``tag`` comes from the worker properties."""

    instances: list[RecordingExtension] = []

    def __init__(self) -> None:
        self.configs: Mapping[str, str] = {}
        self.context: RestExtensionContext | None = None
        self.closed = False
        RecordingExtension.instances.append(self)

    def version(self) -> str:
        return "9.9.9"

    def configure(self, configs: Mapping[str, str]) -> None:
        self.configs = dict(configs)

    def register(self, context: RestExtensionContext) -> None:
        self.context = context
        context.add_middleware(TagMiddleware, tag=self.configs.get("test.tag", "first"))

    def close(self) -> None:
        self.closed = True


class SecondExtension(RecordingExtension):
    def register(self, context: RestExtensionContext) -> None:
        context.add_middleware(TagMiddleware, tag="second")


class RejectingExtension(RecordingExtension):
    def configure(self, configs: Mapping[str, str]) -> None:
        raise ConfigException("test.setting", None, "must be set to something sensible")


class CrashingExtension(RecordingExtension):
    def configure(self, configs: Mapping[str, str]) -> None:
        raise RuntimeError("boom with s3cret-value inside")


class FailingRegistration(RecordingExtension):
    def register(self, context: RestExtensionContext) -> None:
        raise RuntimeError("cannot register s3cret-value")


class ExplodingMiddlewareExtension(RecordingExtension):
    def register(self, context: RestExtensionContext) -> None:
        def wrap(app: ASGIApp) -> ASGIApp:
            async def explode(scope: Scope, receive: Receive, send: Send) -> None:
                if scope["type"] == "http":
                    raise RuntimeError("extension bug")
                await app(scope, receive, send)
            return explode

        context.add_middleware(wrap)


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    EVENTS.clear()
    RecordingExtension.instances.clear()
    yield


@pytest.fixture
def registry() -> PluginRegistry:
    registry = builtin_registry()
    for cls in (RecordingExtension, SecondExtension, RejectingExtension, CrashingExtension,
                FailingRegistration, ExplodingMiddlewareExtension):
        registry.register(cls, PluginType.REST_EXTENSION)
    RecordingExtension.instances.clear()  # registration built one of each for its version
    return registry


def load(registry: PluginRegistry, herder: FakeHerder, classes: str,
         **props: str) -> RestSecurity:
    worker_config = StandaloneConfig({"listeners": "http://127.0.0.1:8083",
                                      "rest.extension.classes": classes, **props})
    return rest_security(worker_config, registry, herder, "127.0.0.1:8083")


def name_of(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# --- the plugin type ------------------------------------------------------------------------


def test_the_basic_auth_extension_resolves_by_java_name_alias_and_python_path() -> None:
    registry = builtin_registry()
    desc = registry.resolve(BASIC_AUTH_JAVA, PluginType.REST_EXTENSION)
    assert desc.plugin_class is BasicAuthSecurityRestExtension
    assert desc.type is PluginType.REST_EXTENSION and desc.type.value == "rest_extension"
    for name in ("BasicAuthSecurityRestExtension",
                 "worker.builtin.rest_extensions.basic_auth.BasicAuthSecurityRestExtension",
                 "worker.builtin.rest_extensions.basic_auth:BasicAuthSecurityRestExtension"):
        assert registry.resolve(name, PluginType.REST_EXTENSION) is desc
    assert PluginType.REST_EXTENSION.interface_name == "ConnectRestExtension"


def test_rest_extensions_are_not_connector_plugins() -> None:
    registry = builtin_registry()
    assert PluginType.REST_EXTENSION not in CONNECTOR_CONFIG_TYPES
    assert all(d.type is not PluginType.REST_EXTENSION for d in registry.plugins())
    assert [d.class_name for d in registry.plugins({PluginType.REST_EXTENSION})] == [
        BASIC_AUTH_JAVA]
    with pytest.raises(Exception, match="Failed to find any class that implements a plugin"):
        registry.resolve(BASIC_AUTH_JAVA)  # not without asking for its type
    with pytest.raises(Exception, match="ConnectRestExtension and which name matches Json"):
        registry.resolve("Json", PluginType.REST_EXTENSION)


def test_an_extension_in_a_module_of_its_own_resolves_by_import_path(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cp_test_rest_ext.py").write_text(textwrap.dedent("""
        from worker.api import RestExtension

        class HeaderExtension(RestExtension):
            def register(self, context):
                pass
    """), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    desc = builtin_registry().resolve("cp_test_rest_ext.HeaderExtension",
                                      PluginType.REST_EXTENSION)
    assert desc.class_name == "cp_test_rest_ext.HeaderExtension"


# --- loading ------------------------------------------------------------------------------


def test_configure_gets_the_resolved_worker_properties_and_register_the_cluster(
        registry: PluginRegistry, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CP_TEST_TAG", "from-env")
    herder = FakeHerder()
    herder.add("orders", **{"tasks.max": "2"})
    security = load(registry, herder, name_of(RecordingExtension), **{
        "test.tag": "${env:CP_TEST_TAG}", "config.providers": "env",
        "config.providers.env.class": "EnvVarConfigProvider"})
    [extension] = RecordingExtension.instances
    assert extension.configs["test.tag"] == "from-env"
    assert extension.context is not None and extension.context.worker_id == "127.0.0.1:8083"
    state = extension.context.cluster_state
    assert state.connectors() == ["orders"]
    health = state.connector_health("orders")
    assert isinstance(health, ConnectorHealth)
    assert health.connector_state.state == "RUNNING" and health.type == "source"
    assert sorted(health.tasks_state) == [0, 1]
    assert health.tasks_state[1].task_id == 1
    assert state.connector_config("orders")["tasks.max"] == "2"
    assert state.cluster_details().kafka_cluster_id == "cluster-1"
    with pytest.raises(LookupError, match="missing"):
        state.connector_health("missing")
    with pytest.raises(LookupError, match="missing"):
        state.connector_config("missing")
    assert security.authenticates
    security.close()
    assert extension.closed


def test_no_extension_and_no_principals_change_nothing(registry: PluginRegistry) -> None:
    security = load(registry, FakeHerder(), "")
    assert not security.authenticates and not security.admin_principals
    assert security.extensions == [] and security.middleware == []


@pytest.mark.parametrize("classes", ["com.example.NoSuchExtension",
                                     "org.apache.kafka.connect.json.JsonConverter"])
def test_a_class_that_is_not_an_extension_stops_startup(registry: PluginRegistry,
                                                         classes: str) -> None:
    with pytest.raises(ConfigError, match=r"rest\.extension\.classes: Class "
                                          rf"{classes} could not be found"):
        load(registry, FakeHerder(), classes)


def test_a_rejected_setting_names_its_key_and_the_extension(
        registry: PluginRegistry) -> None:
    with pytest.raises(ConfigError) as failure:
        load(registry, FakeHerder(), f"{name_of(RecordingExtension)},"
                                     f"{name_of(RejectingExtension)}")
    message = str(failure.value)
    assert failure.value.key == "test.setting"
    assert "must be set to something sensible" in message
    assert "rest.extension.classes" in message and "RejectingExtension" in message
    # The extension built before the failing one was closed.
    assert [e.closed for e in RecordingExtension.instances] == [True, True]


def test_an_extension_that_crashes_stops_startup_without_its_message(
        registry: PluginRegistry) -> None:
    with pytest.raises(ConfigError, match=r"rest\.extension\.classes: REST extension "
                                          r".*CrashingExtension failed to configure "
                                          r"\(RuntimeError\)") as failure:
        load(registry, FakeHerder(), name_of(CrashingExtension))
    assert "s3cret" not in str(failure.value) and failure.value.__cause__ is None


def test_a_failed_registration_stops_startup_and_closes_every_extension(
        registry: PluginRegistry) -> None:
    with pytest.raises(ConfigError, match=r"rest\.extension\.classes: REST extension "
                                          r"FailingRegistration failed to register"
                                          ) as failure:
        load(registry, FakeHerder(), f"{name_of(RecordingExtension)},"
                                     f"{name_of(FailingRegistration)}")
    assert "s3cret" not in str(failure.value)
    assert all(e.closed for e in RecordingExtension.instances)


def test_a_placeholder_that_does_not_resolve_names_the_key(registry: PluginRegistry
                                                          ) -> None:
    with pytest.raises(ConfigError, match="rest.basic.auth.credentials.file"):
        load(registry, FakeHerder(), "BasicAuthSecurityRestExtension", **{
            "rest.basic.auth.credentials.file": "${env:CP_TEST_NOT_SET}",
            "config.providers": "env",
            "config.providers.env.class": "EnvVarConfigProvider"})


def test_the_key_of_a_secret_file_from_a_placeholder_is_named_never_its_value(
        registry: PluginRegistry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hidden = tmp_path / "hidden-location-4711" / "users.properties"
    monkeypatch.setenv("CP_TEST_USERS", str(hidden))
    with pytest.raises(ConfigError) as failure:
        load(registry, FakeHerder(), "BasicAuthSecurityRestExtension", **{
            "rest.basic.auth.credentials.file": "${env:CP_TEST_USERS}",
            "config.providers": "env",
            "config.providers.env.class": "EnvVarConfigProvider"})
    message = str(failure.value)
    assert failure.value.key == "rest.basic.auth.credentials.file"
    assert "cannot read the credentials file (No such file or directory)" in message
    assert "(the value of ${env:CP_TEST_USERS})" in message
    assert "hidden-location-4711" not in message


# --- the app they wrap --------------------------------------------------------------------


def test_middleware_runs_in_the_order_listed_for_every_request(
        registry: PluginRegistry) -> None:
    herder = FakeHerder()
    security = load(registry, herder, f"{name_of(SecondExtension)},"
                                      f"{name_of(RecordingExtension)}")
    with TestClient(create_app(herder, security)) as client:
        assert client.get("/connectors/").status_code == 200
        assert client.get("/admin/loggers").status_code == 200
    # The trailing slash was already gone: extensions see the normalized path.
    assert EVENTS == ["second:/connectors", "first:/connectors", "second:/admin/loggers",
                      "first:/admin/loggers"]


def test_an_exception_in_extension_middleware_is_a_500_error_body(
        registry: PluginRegistry, caplog: pytest.LogCaptureFixture) -> None:
    herder = FakeHerder()
    security = load(registry, herder, name_of(ExplodingMiddlewareExtension))
    with caplog.at_level(logging.ERROR), TestClient(create_app(herder, security)) as client:
        response = client.get("/connectors")
    assert response.status_code == 500
    assert response.json() == {"error_code": 500, "message": "extension bug"}


def test_openapi_documents_401_with_an_extension_and_403_with_admin_principals(
        registry: PluginRegistry) -> None:
    herder = FakeHerder()
    plain = TestClient(create_app(herder)).get("/openapi.json").json()
    assert "401" not in plain["paths"]["/connectors"]["get"]["responses"]
    security = load(registry, herder, name_of(RecordingExtension),
                    **{"rest.admin.principals": "alice"})
    document = TestClient(create_app(herder, security)).get("/openapi.json").json()
    paths = document["paths"]
    assert "401" in paths["/connectors"]["get"]["responses"]
    assert "403" not in paths["/connectors"]["get"]["responses"]
    assert "403" in paths["/admin/dynamic-worker-config"]["patch"]["responses"]
    assert "403" in paths["/admin/loggers/{logger}"]["put"]["responses"]
    assert "403" not in paths["/admin/loggers/{logger}"]["get"]["responses"]
    error = paths["/admin/loggers/{logger}"]["put"]["responses"]["403"]
    assert error["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert "ErrorResponse" in document["components"]["schemas"]


@pytest.mark.parametrize(("method", "path", "internal"), [
    ("POST", "/connectors/orders/tasks", True),
    ("POST", "/connectors/orders/tasks/", True),
    ("POST", "/connectors/a%2Fb/tasks", True),
    ("PUT", "/connectors/orders/fence", True),
    ("GET", "/connectors/orders/tasks", False),
    ("POST", "/connectors/orders/tasks/0/restart", False),
    ("POST", "/connectors", False),
    ("PUT", "/connectors/orders/config", False),
])
def test_internal_requests_are_kafkas(method: str, path: str, internal: bool) -> None:
    assert is_internal_request(method, path) is internal


def test_the_extension_spi_has_kafkas_defaults() -> None:
    class Minimal(RestExtension):
        def register(self, context: RestExtensionContext) -> None:
            pass

    extension: Any = Minimal()
    extension.configure({"a": "b"})
    extension.close()
    assert extension.version() == "0.1.0"
