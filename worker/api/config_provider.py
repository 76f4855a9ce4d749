"""Config providers: where ``${provider:[path:]key}`` placeholders get their values.

The counterpart of Kafka's ``org.apache.kafka.common.config.provider.ConfigProvider``
(KIP-297). A worker lists its providers in its properties::

    config.providers=file,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.env.class=EnvVarConfigProvider
    config.providers.env.param.allowlist.pattern=^DB_.*

and every value may then hold placeholders such as ``${file:/etc/secrets.properties:password}``
or ``${env:DB_PASSWORD}``; the worker resolves them where a value is used and never stores,
logs or reports the resolved value.

A provider is built once per worker (no arguments), configured once with its
``config.providers.<name>.param.*`` settings, and then called from several threads at once:
implementations must be safe for concurrent ``get`` calls. Provider code runs in the worker
process, so a provider must never log or raise a value it returns.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from worker.api.connector import DEFAULT_VERSION


@dataclass(frozen=True)
class ConfigData:
    """What a provider found at a path: ``data`` maps keys to values.

    ``ttl_ms`` is how long the values stay valid (Kafka's ``ConfigData.ttl()``), or None
    when they do not expire. A key the provider does not have is simply absent from
    ``data``; the worker reports it as a missing key.
    """

    data: dict[str, str] = field(default_factory=dict)
    ttl_ms: int | None = None

    def __repr__(self) -> str:
        # Values are secrets: a repr in a log or a traceback shows the keys only.
        return f"ConfigData(keys={sorted(self.data)}, ttl_ms={self.ttl_ms})"


class ConfigProvider(ABC):
    """A source of configuration values, addressed by path and key."""

    def version(self) -> str:
        return DEFAULT_VERSION

    def configure(self, params: dict[str, str]) -> None:
        """Take the ``config.providers.<name>.param.*`` settings (prefix removed).

        Called once, before any ``get``. Raise ``worker.api.ConfigException`` naming the
        parameter for a bad setting. The default accepts anything.
        """

    @abstractmethod
    def get(self, path: str, keys: set[str] | None = None) -> ConfigData:
        """The values at ``path`` (``""`` when the placeholder has no path): only ``keys``
        when given, else everything there.

        Raise ``worker.api.ConfigException`` when the path cannot be read (the message
        names the path, never a value).
        """

    def close(self) -> None:
        """Release what the provider holds; called when the worker stops."""
