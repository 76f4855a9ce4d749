"""Test plugins for the secrets tests, loaded by worker subprocesses by import path
(``connector.class=tests.support.secret_plugins.SecretSourceConnector``): connectors with a
``PASSWORD`` key whose code quotes its secrets everywhere it can — in validation messages,
in a DEBUG log line and in the exception that fails its task — so that the tests can check
the worker hides them."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from worker.api import (
    NO_DEFAULT,
    ConfigDef,
    ConfigException,
    ConfigValue,
    ConnectException,
    Importance,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Type,
)

PREFIX = "tests.support.secret_plugins"
SECRET_KEY = "secret.password"
#: A valid ``secret.password`` starts with this; anything else fails validation.
VALID_PREFIX = "pw-"

log = logging.getLogger(__name__)


def _password_rule(name: str, value: object) -> None:
    # The value is a Password: str() shows "[hidden]", .value the secret.
    text = getattr(value, "value", str(value))
    if not text.startswith(VALID_PREFIX):
        raise ConfigException(name, value, f"must start with '{VALID_PREFIX}'")


CONFIG_DEF = (
    ConfigDef()
    .define(SECRET_KEY, Type.PASSWORD, NO_DEFAULT, Importance.HIGH,
            "The password of the (imaginary) system this connector talks to.",
            validator=_password_rule)
    # PASSWORD-typed under a name that does not say "secret": the type alone must count.
    .define("login.key", Type.PASSWORD, None, Importance.MEDIUM,
            "A second credential.")
    .define("fail.on.poll", Type.BOOLEAN, False, Importance.LOW,
            "Fail the task in poll() with a message quoting its config.")
)


def _validate(configs: Mapping[str, str]) -> dict[str, ConfigValue]:
    values = CONFIG_DEF.validate(configs)
    secret = configs.get(SECRET_KEY, "")
    if secret and not secret.startswith(VALID_PREFIX):
        # Careless plugin code: an error message that quotes the secret.
        values[SECRET_KEY].errors.append(f"the server refused the password {secret}")
    return values


class SecretSourceTask(SourceTask):
    """Logs its whole config at DEBUG; with ``fail.on.poll`` fails with an exception whose
    message quotes every value of its config."""

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        self._stop = threading.Event()
        log.debug("SecretSourceTask starting with %s", self._props)

    def poll(self) -> list[SourceRecord] | None:
        if self._props.get("fail.on.poll") == "true":
            raise ConnectException(f"login refused with config {self._props}")
        self._stop.wait(0.1)
        return None

    def stop(self) -> None:
        self._stop.set()


class SecretSourceConnector(SourceConnector):
    """One task per ``tasks.max`` slot, each getting the connector's whole config."""

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        return _validate(connector_configs)

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)
        log.debug("SecretSourceConnector starting with %s", self._props)

    def task_class(self) -> type[SourceTask]:
        return SecretSourceTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass


class SecretSinkTask(SinkTask):
    """Takes records and drops them; logs its config at DEBUG."""

    def start(self, props: Mapping[str, str]) -> None:
        log.debug("SecretSinkTask starting with %s", dict(props))

    def put(self, records: list[SinkRecord]) -> None:
        pass

    def stop(self) -> None:
        pass


class SecretSinkConnector(SinkConnector):
    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> dict[str, ConfigValue]:
        return _validate(connector_configs)

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type[SinkTask]:
        return SecretSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        pass
