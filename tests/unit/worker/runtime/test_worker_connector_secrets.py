"""A started connector's PASSWORD-typed values join the secrets the worker scrubs."""

from __future__ import annotations

from collections.abc import Mapping

from worker.api import ConfigDef, Importance, SourceConnector, SourceTask, Type
from worker.runtime.worker_connector import _remember_secrets
from worker.util.secrets import KNOWN_SECRETS


class _Typed(SourceConnector):
    def config(self) -> ConfigDef:
        return ConfigDef().define("login.key", Type.PASSWORD, None, Importance.HIGH, "Key.")

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def task_class(self) -> type[SourceTask]:
        raise NotImplementedError

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return []

    def stop(self) -> None:
        pass


class _BrokenConfig(_Typed):
    def config(self) -> ConfigDef:
        raise RuntimeError("broken config()")


def test_password_typed_values_are_remembered() -> None:
    value = "typed-login-key-4e2a91"  # its name says nothing: only the type counts
    _remember_secrets(_Typed(), {"login.key": value, "topic": "orders-2f8c"})
    assert KNOWN_SECRETS.redact(f"{value} orders-2f8c") == "[hidden] orders-2f8c"


def test_a_broken_config_method_is_no_failure() -> None:
    _remember_secrets(_BrokenConfig(), {"login.key": "never-remembered-9d1b"})
    assert KNOWN_SECRETS.redact("never-remembered-9d1b") == "never-remembered-9d1b"
