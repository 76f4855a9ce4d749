"""Typed worker configuration: a worker's properties parsed against its keys.

The keys, with their types, defaults and docs, are in ``worker.config.worker_keys``. Keys we
do not use are logged and ignored; a key we use with a bad value fails startup with a
ConfigError that names it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from worker.api.config_def import (
    ConfigDef,
)
from worker.api.exceptions import ConfigException
from worker.clients.properties import ROLES, ClientPropertyError, translate
from worker.config import crypto
from worker.config.providers import (
    CONFIG_PROVIDERS,
    ConfigTransformer,
    build_providers,
    has_placeholders,
    provider_names,
)
from worker.config.rest_limits import RestLimits
from worker.config.worker_keys import (
    COMMON,
    DISTRIBUTED,
    KNOWN_UNUSED,
    PASSTHROUGH_PREFIXES,
    REMOVED_REST_KEYS,
    STANDALONE,
    removed_rest_keys_warning,
)
from worker.errors import ConfigError
from worker.util.props import strip_prefix
from worker.util.secrets import KNOWN_SECRETS

if TYPE_CHECKING:
    from worker.plugins.registry import PluginRegistry

log = logging.getLogger(__name__)


class WorkerConfig:
    """A parsed, validated worker config.

    ``raw`` holds the properties as written; ``originals`` the same with every
    ``${provider:[path:]key}`` placeholder resolved by the config providers the properties
    set up (``config.providers``), and the typed values come from ``originals``.
    ``get(key)`` returns the typed value; ``originals`` is what client configs and plugin
    settings read; ``prefixed("consumer.")`` strips a prefix; ``transformer`` resolves any
    other map the same way (connector configs, the dynamic worker configuration).

    ``registry`` resolves provider classes (default: the built-in plugins, built only when
    ``config.providers`` is set). A provider that cannot be built and a placeholder that
    does not resolve fail with a ConfigError naming the key and the placeholder as written.
    """

    definition: ConfigDef = COMMON

    def __init__(self, props: Mapping[str, str],
                 registry: PluginRegistry | None = None) -> None:
        self.raw: dict[str, str] = {str(k): str(v) for k, v in props.items()}
        provider_keys = {CONFIG_PROVIDERS} & self.raw.keys()
        self.transformer = ConfigTransformer()
        if provider_names(self.raw):
            if registry is None:
                from worker.plugins.registry import builtin_registry
                registry = builtin_registry()
            settings = build_providers(self.raw, registry)
            self.transformer = ConfigTransformer(settings.providers)
            provider_keys = settings.used_keys
        try:
            self.originals: dict[str, str] = self._resolved(self.raw)
            try:
                self._values: dict[str, Any] = self.definition.parse(self.originals)
            except ConfigException as exc:
                # Its message quotes the value: not kept as the cause for a resolved one.
                cause = None if has_placeholders(self.raw.get(exc.name)) else exc
                raise ConfigError(exc.name, self._reason(exc)) from cause
        except BaseException:
            self.transformer.close()
            raise
        # Resolving remembered the secrets known by name; these are the PASSWORD-typed.
        KNOWN_SECRETS.add_config(self.originals,
                                 {k.name: k.type for k in self.definition.keys.values()},
                                 pin=True)
        try:
            self._check_client_keys()
        except BaseException:
            self.transformer.close()
            raise
        self._report_unused(provider_keys)

    def _check_client_keys(self) -> None:
        """Kafka's Java client keys (``producer.``/``consumer.``/``admin.``, and the
        top-level ``security.``/``sasl.``/``ssl.`` keys of the internal clients) that
        cannot be honoured fail the start with an error naming the key
        (``worker.clients.properties``)."""
        tls = self.originals.get("security.protocol", "").upper() in ("SSL", "SASL_SSL")
        top = {k: v for k, v in self.originals.items()
               if k.startswith(("security.", "sasl.")) or (tls and k.startswith("ssl."))}
        for role in ROLES:
            own = {k: v for k, v in self.prefixed(f"{role}.").items()
                   if role != "admin" or not (k == "listeners" or k.startswith("listeners."))}
            for props in (own, {**top, **own}):
                try:
                    translate(props, role)
                except ClientPropertyError as exc:
                    raise ConfigError(f"{role}.{exc.key}" if exc.key in own else exc.key,
                                      str(exc)) from None

    def _resolved(self, raw: dict[str, str]) -> dict[str, str]:
        # The config.providers* keys set the providers up and are used as written (a
        # provider's parameters cannot come from a provider), as in Kafka.
        own = {k: v for k, v in raw.items()
               if k == CONFIG_PROVIDERS or k.startswith(CONFIG_PROVIDERS + ".")}
        resolved = self.transformer.transform({k: v for k, v in raw.items() if k not in own})
        return {k: own[k] if k in own else resolved[k] for k in raw}

    def _reason(self, exc: ConfigException) -> str:
        # The parser's reason never holds the value; say where a resolved value came from.
        written = self.raw.get(exc.name)
        if has_placeholders(written):
            return f"{exc.reason} (the value of {written})"
        return exc.reason

    def _report_unused(self, provider_keys: set[str]) -> None:
        defined = set(self.definition.names())
        self.unused = sorted(k for k in self.raw
                             if k not in defined and k not in provider_keys
                             and not k.startswith(PASSTHROUGH_PREFIXES))
        removed = removed_rest_keys_warning(self.raw)
        if removed is not None:
            # A host name and a port, as written: the one place a value is logged.
            log.warning("%s", removed)
        for key in self.unused:
            # Logged, not fatal: a Kafka worker.properties must start unchanged. Values are
            # never logged (they may be secrets).
            if key in REMOVED_REST_KEYS:
                continue
            if key in KNOWN_UNUSED:
                log.info("Worker config key %s is not used by connect-plane; ignoring it",
                         key)
            else:
                log.warning("The configuration '%s' was supplied but isn't a known config.",
                            key)

    def close(self) -> None:
        """Close the config providers (when the worker stops)."""
        self.transformer.close()

    def get(self, key: str) -> Any:
        return self._values[key]

    def prefixed(self, prefix: str) -> dict[str, str]:
        return strip_prefix(self.originals, prefix)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(self.get("bootstrap.servers"))

    @property
    def listeners(self) -> list[str]:
        return list(self.get("listeners"))

    @property
    def rest_limits(self) -> RestLimits:
        """What one REST request and connection may cost (``worker.config.rest_limits``)."""
        return RestLimits.from_values(self.get)


class StandaloneConfig(WorkerConfig):
    definition = STANDALONE

    @property
    def sql_url(self) -> str:
        url = self.get("storage.sql.url")
        if url:
            return str(url)
        offsets_file = self.get("offset.storage.file.filename")
        path = Path(f"{offsets_file}.db") if offsets_file else Path("connect-standalone.db")
        return f"sqlite:///{path.resolve()}"


class DistributedConfig(WorkerConfig):
    definition = DISTRIBUTED

    def __init__(self, props: Mapping[str, str],
                 registry: PluginRegistry | None = None) -> None:
        super().__init__(props, registry)
        try:
            self._check_inter_worker_keys()
        except BaseException:
            self.close()
            raise

    def _check_inter_worker_keys(self) -> None:
        """Kafka's ``validateInterWorkerKeyConfigs``: a key generator can be made with the
        size asked for, and the signature algorithm is one the verifiers accept."""
        algorithm = self.get("inter.worker.key.generation.algorithm")
        size = self.get("inter.worker.key.size")
        generator = crypto.hmac_algorithm(algorithm)
        assert generator is not None  # validated by the definition
        if size is not None and (size < generator.min_key_bits or size <= 0):
            reason = (f"Key length must be at least {generator.min_key_bits} bits"
                      if generator.min_key_bits else "Key length must be positive")
            raise ConfigError("inter.worker.key.size",
                              f"Unable to create key generator with algorithm {algorithm} "
                              f"and key size {size}: {reason}")
        signature = self.get("inter.worker.signature.algorithm")
        if signature not in self.get("inter.worker.verification.algorithms"):
            raise ConfigError("inter.worker.signature.algorithm",
                              "Signature algorithm must be present in "
                              "inter.worker.verification.algorithms list")

    @property
    def group_id(self) -> str:
        return str(self.get("group.id"))
