"""Exceptions that connector authors raise and catch (Kafka's ``connect.errors``)."""

from __future__ import annotations

from worker.util.secrets import HIDDEN, is_secret


class ConnectException(Exception):
    """A connector, task, converter or transformation failed."""


class RetriableException(ConnectException):
    """A transient failure: the runtime retries the operation instead of failing the task."""


class DataException(ConnectException):
    """A record could not be converted or transformed."""


class ConfigException(ConnectException, ValueError):
    """A config value is missing or invalid; ``name`` is the offending key."""

    def __init__(self, name: str, value: object = None, message: str | None = None) -> None:
        self.name = name
        self.value = value
        self.reason = message or "Invalid value"
        # Kafka hides PASSWORD values (their str() is "[hidden]"); keys that hold secrets
        # by name (client passwords under any prefix, db.password...) are hidden too.
        shown = HIDDEN if is_secret(name) else value
        super().__init__(f"Invalid value {shown} for configuration {name}: {self.reason}")

    @classmethod
    def missing(cls, name: str) -> ConfigException:
        """A required key without default is absent; worded exactly as Kafka words it."""
        exc = cls(name, None, f'Missing required configuration "{name}" which has no '
                              "default value.")
        exc.args = (exc.reason,)
        return exc

