"""Config providers on a worker: building them from its properties, resolving placeholders.

Kafka's worker properties (KIP-297)::

    config.providers=file,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.file.param.allowed.paths=/etc/kafka/secrets
    config.providers.env.class=EnvVarConfigProvider

name the providers; a value anywhere may then hold ``${provider:[path:]key}`` placeholders,
found as Kafka's pattern (``ConfigTransformer.DEFAULT_PATTERN``) finds them, in linear time:
the provider name up to the first ``:``, an optional path up to the next ``:``, the key up to
``}``. Replacement is a single pass (a resolved value is never scanned again) and each
``(provider, path)`` is read once per map, with all the keys wanted from it.

Unlike Kafka, which leaves a placeholder it cannot resolve in the value as written, every
placeholder must resolve: an unknown provider, a path that cannot be read or is not allowed,
a missing key is a :class:`~worker.errors.ConfigError` naming the config key and the
placeholder as written (``docs/limitations.md``). Messages never hold a resolved value.

Any REST user can have a map resolved (validating a connector config does), so what one
map costs is bounded, where Kafka bounds nothing: at most :data:`MAX_LOOKUPS` distinct
``(provider, path)`` reads, and :data:`MAX_RESOLVED_CHARS` characters of resolved values;
a placeholder past either limit does not resolve, with an error saying which.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from worker.api.config_provider import ConfigProvider
from worker.api.exceptions import ConfigException
from worker.errors import ConfigError, PluginNotFoundError
from worker.util.props import strip_prefix
from worker.util.secrets import KNOWN_SECRETS

if TYPE_CHECKING:
    from worker.plugins.registry import PluginRegistry

log = logging.getLogger(__name__)

CONFIG_PROVIDERS = "config.providers"
PREFIX = CONFIG_PROVIDERS + "."

#: Kafka's ``ConfigTransformer.DEFAULT_PATTERN``, character for character; matched by
#: :data:`PLACEHOLDER`, never by ``re`` (see :class:`PlaceholderSyntax`).
KAFKA_PATTERN = r"\$\{([^}]*?):(([^}]*?):)?([^}]*?)\}"

#: The most characters of resolved values one map may take: what the providers returned
#: for it and what its placeholders expand to, counted together. One placeholder repeated
#: would otherwise multiply a value (a 1 MiB file, 50,000 times in a 1 MiB body).
MAX_RESOLVED_CHARS = 4 * 1024 * 1024
#: The most ``(provider, path)`` pairs one map may read: each is a read of the file system
#: (or a secret store), and one file can be named in many ways (``/a/b``, ``/a//b``,
#: ``/a/./b``), 14,000 of them in a 1 MiB body.
MAX_LOOKUPS = 256


@dataclass(frozen=True)
class Placeholder:
    """One ``${provider:[path:]key}``; ``text`` is the placeholder as written."""

    provider: str
    path: str
    key: str
    text: str


def _scan(value: str) -> Iterator[tuple[int, int, Placeholder]]:
    """Each match of :data:`KAFKA_PATTERN` in ``value``, with its start and end.

    No group may hold ``}``, so a match runs from ``${`` to the first ``}`` after it, and
    needs a ``:`` in between; Kafka's lazy groups then split it at the first ``:``
    (provider) and, when there is one, the second (path), the key taking the rest. When a
    ``${`` has no ``:`` before its ``}``, no ``${`` before that ``}`` has one either:
    scanning resumes after it, so each character is looked at a bounded number of times.
    """
    pos = 0
    while True:
        start = value.find("${", pos)
        if start < 0:
            return
        end = value.find("}", start + 2)
        if end < 0:
            return
        pos = end + 1
        first = value.find(":", start + 2, end)
        if first < 0:
            continue
        second = value.find(":", first + 1, end)
        provider = value[start + 2:first]
        if second < 0:
            path, key = "", value[first + 1:end]
        else:
            path, key = value[first + 1:second], value[second + 1:end]
        yield start, pos, Placeholder(provider, path, key, value[start:pos])


class PlaceholderSyntax:
    """Kafka's placeholder pattern with the part of ``re.Pattern``'s interface this
    project uses, in linear time.

    Python's backtracking ``re`` takes cubic time on :data:`KAFKA_PATTERN` (2,000
    characters of ``${a:`` took 100 s of CPU, holding the GIL), and any REST user can have
    a value scanned by validating a config, so the pattern is matched by :func:`_scan`,
    with the same results (``tests/unit/worker/config/test_providers.py`` compares them).
    """

    pattern = KAFKA_PATTERN

    def finditer(self, value: str) -> Iterator[Placeholder]:
        return (found for _, _, found in _scan(value))

    def search(self, value: str) -> Placeholder | None:
        return next(self.finditer(value), None)

    def sub(self, repl: str | Callable[[Placeholder], str], value: str) -> str:
        """``value`` with each placeholder replaced by ``repl`` (a string taken as it is,
        or called with the placeholder)."""
        parts: list[str] = []
        pos = 0
        for start, end, found in _scan(value):
            parts.append(value[pos:start])
            parts.append(repl if isinstance(repl, str) else repl(found))
            pos = end
        if not parts:
            return value
        parts.append(value[pos:])
        return "".join(parts)


PLACEHOLDER = PlaceholderSyntax()


def placeholders(value: str) -> list[Placeholder]:
    """The placeholders in ``value``, in order."""
    return list(PLACEHOLDER.finditer(value))


def has_placeholders(value: str | None) -> bool:
    return value is not None and PLACEHOLDER.search(value) is not None


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving a map: ``data`` holds every key, resolved where that
    worked and as written where it did not; ``errors`` maps each key that did not resolve
    to the reason (naming the placeholder). ``substituted`` maps each placeholder that
    resolved to its value, for :meth:`redact`."""

    data: dict[str, str]
    errors: dict[str, str] = field(default_factory=dict)
    substituted: dict[str, str] = field(default_factory=dict)

    def redact(self, text: str) -> str:
        """``text`` with every resolved value written back as its placeholder.

        For messages built from resolved values (validation errors quote values). A value
        is replaced where it stands as a whole token, so a short value does not mangle
        the words around it; the longest values go first, each once (however many ways
        its placeholder was spelled).
        """
        by_value: dict[str, str] = {}
        for placeholder, value in self.substituted.items():
            by_value.setdefault(value, placeholder)
        for value, placeholder in sorted(by_value.items(), key=lambda item: -len(item[0])):
            if value.strip():
                pattern = rf"(?<!\w){re.escape(value)}(?!\w)"
                # In a replacement string only backslashes are special.
                text = re.sub(pattern, placeholder.replace("\\", "\\\\"), text)
        return text

    def __repr__(self) -> str:
        # Resolved values are secrets.
        return f"Resolution(keys={sorted(self.data)}, errors={self.errors})"


def restore_placeholders(configs: list[dict[str, str]], written: Mapping[str, str]
                         ) -> list[dict[str, str]]:
    """Kafka's ``AbstractHerder.reverseTransform``: in task configs generated from a
    resolved connector config, every key whose value in the connector config as
    ``written`` holds a placeholder gets that written value back, so that what is stored
    (the config topic, the SQL store) holds the placeholder, never the secret."""
    with_placeholders = {k: v for k, v in written.items() if has_placeholders(v)}
    return [{k: with_placeholders.get(k, v) for k, v in config.items()}
            for config in configs]


@dataclass(frozen=True)
class _Failed:
    """A lookup that failed, and why (names the path, never a value)."""

    reason: str


_Lookups = dict[tuple[str, str], dict[str, str] | _Failed]


class _Budget:
    """What is left of :data:`MAX_RESOLVED_CHARS` (or the transformer's own limit) while
    one map is resolved."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    def take(self, size: int) -> bool:
        if self.used + size > self.limit:
            return False
        self.used += size
        return True

    @property
    def reason(self) -> str:
        return (f"the values resolved for this config would take more than {self.limit} "
                "characters")


def _substitute(found: Placeholder, looked_up: _Lookups, substituted: dict[str, str],
                problems: list[str], budget: _Budget) -> str:
    """The value of one placeholder; or the placeholder itself, with the problem noted."""
    values = looked_up[(found.provider, found.path)]
    if isinstance(values, _Failed):
        problems.append(f"cannot resolve {found.text}: {values.reason}")
    elif found.key not in values:
        where = f" at path {found.path}" if found.path else ""
        problems.append(f"cannot resolve {found.text}: config provider '{found.provider}' "
                        f"has no key '{found.key}'{where}")
    elif not budget.take(len(values[found.key])):
        problems.append(f"cannot resolve {found.text}: {budget.reason}")
    else:
        substituted[found.text] = values[found.key]
        return values[found.key]
    return found.text


class ConfigTransformer:
    """Resolves the placeholders of string maps with a worker's config providers.

    Thread-safe as far as the providers are (Kafka requires it of them). One map may
    resolve to at most ``max_resolved_chars`` characters (:data:`MAX_RESOLVED_CHARS`).
    """

    def __init__(self, providers: Mapping[str, ConfigProvider] | None = None, *,
                 max_resolved_chars: int = MAX_RESOLVED_CHARS) -> None:
        self.providers: dict[str, ConfigProvider] = dict(providers or {})
        self.max_resolved_chars = max_resolved_chars

    def transform(self, configs: Mapping[str, str]) -> dict[str, str]:
        """``configs`` with every placeholder resolved.

        Raises ConfigError naming the first key (in key order) whose value holds a
        placeholder that does not resolve, and that placeholder.
        """
        resolution = self.resolve(configs)
        if resolution.errors:
            key = min(resolution.errors)
            raise ConfigError(key, resolution.errors[key])
        return resolution.data

    def resolve(self, configs: Mapping[str, str]) -> Resolution:
        """Resolve what resolves; report the rest per key instead of raising."""
        wanted: dict[tuple[str, str], set[str]] = {}
        for value in configs.values():
            for found in placeholders(value) if value is not None else ():
                wanted.setdefault((found.provider, found.path), set()).add(found.key)
        budget = _Budget(self.max_resolved_chars)
        too_many = _Failed(f"this config names more than {MAX_LOOKUPS} provider paths")
        looked_up = {where: self._lookup(*where, keys, budget) if n < MAX_LOOKUPS
                     else too_many for n, (where, keys) in enumerate(wanted.items())}
        data: dict[str, str] = {}
        errors: dict[str, str] = {}
        substituted: dict[str, str] = {}
        for key, value in configs.items():
            problems: list[str] = []
            resolved = value if not has_placeholders(value) else PLACEHOLDER.sub(
                partial(_substitute, looked_up=looked_up, substituted=substituted,
                        problems=problems, budget=budget), value)
            data[key] = value if problems else resolved
            if problems:
                errors[key] = problems[0]
        # Every config a worker uses passes here: remember its secrets, so that logs and
        # status traces never show them (a resolved value shows as its placeholder).
        KNOWN_SECRETS.add_config(data)
        KNOWN_SECRETS.add_resolved(substituted)
        return Resolution(data, errors, substituted)

    def _lookup(self, name: str, path: str, keys: set[str], budget: _Budget
                ) -> dict[str, str] | _Failed:
        """The provider's values for ``keys`` at ``path`` (only those), or why they cannot
        be had."""
        provider = self.providers.get(name)
        if provider is None:
            listed = ", ".join(sorted(self.providers)) or "none"
            return _Failed(f"no config provider named '{name}' ({CONFIG_PROVIDERS} of this "
                           f"worker: {listed})")
        try:
            found = provider.get(path, set(keys))
        except ConfigException as exc:
            return _Failed(exc.reason)
        except Exception as exc:  # noqa: BLE001 - provider code: report, never crash
            # Its message is not shown: a provider may put anything there, even a secret.
            return _Failed(f"config provider '{name}' failed with {type(exc).__name__}")
        values = {str(k): str(v) for k, v in found.data.items() if k in keys}
        if not budget.take(sum(len(v) for v in values.values())):
            return _Failed(budget.reason)
        return values

    def close(self) -> None:
        """Close every provider (a failing close is logged, never raised)."""
        for name, provider in self.providers.items():
            try:
                provider.close()
            except Exception:  # noqa: BLE001 - provider code
                log.warning("Config provider %s failed to close", name)


@dataclass
class ProviderSettings:
    """What ``config.providers*`` keys of a worker's properties set up."""

    providers: dict[str, ConfigProvider]
    used_keys: set[str]


def provider_names(props: Mapping[str, str]) -> list[str]:
    """The names listed in ``config.providers``, in order, without duplicates."""
    names = [n.strip() for n in props.get(CONFIG_PROVIDERS, "").split(",")]
    return list(dict.fromkeys(n for n in names if n))


def build_providers(props: Mapping[str, str], registry: PluginRegistry) -> ProviderSettings:
    """Create and configure the providers ``props`` (as written) list.

    A provider's class resolves like any plugin: Kafka's class name, an alias
    (``FileConfigProvider``, ``File``) or a Python import path. Its parameters are the
    ``config.providers.<name>.param.*`` keys, as written (never resolved). Raises
    ConfigError naming the key for a missing or unknown class or a rejected parameter; the
    providers built until then are closed.
    """
    from worker.plugins.registry import PluginType

    names = provider_names(props)
    used = {CONFIG_PROVIDERS} if CONFIG_PROVIDERS in props else set()
    built: dict[str, ConfigProvider] = {}
    try:
        for name in names:
            class_key = f"{PREFIX}{name}.class"
            param_prefix = f"{PREFIX}{name}.param."
            class_name = props.get(class_key, "").strip()
            if not class_name:
                raise ConfigError(class_key, f"config provider '{name}' is listed in "
                                             f"{CONFIG_PROVIDERS} but has no class")
            try:
                desc = registry.resolve(class_name, PluginType.CONFIG_PROVIDER)
            except PluginNotFoundError as exc:
                raise ConfigError(class_key, f"Class {class_name} could not be found. "
                                             f"{exc}") from None
            provider = desc.plugin_class()
            built[name] = provider
            params = strip_prefix(props, param_prefix)
            try:
                provider.configure(params)
            except ConfigException as exc:
                key = param_prefix + exc.name if exc.name in params else class_key
                raise ConfigError(key, exc.reason) from None
            except Exception as exc:  # noqa: BLE001 - provider code; message not shown
                raise ConfigError(class_key, f"config provider '{name}' failed to "
                                             f"configure ({type(exc).__name__})") from None
            used.add(class_key)
            used.update(param_prefix + p for p in params)
            log.info("Config provider %s: %s", name, desc.class_name)
    except BaseException:
        ConfigTransformer(built).close()
        raise
    return ProviderSettings(built, used)
