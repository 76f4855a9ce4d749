"""The dynamic worker configuration as this worker applies it (``/admin/dynamic-worker-config``).

:class:`DynamicConfigManager` holds the parts of the worker that can take changed settings
at run time (:class:`~worker.config.reconfigurable.Reconfigurable`, e.g. the REST server's
TLS listeners) and applies the overrides the cluster stores:

* the keys it accepts (the *whitelist*) are the union of the registered parts'
  ``reconfigurable_configs()``;
* the *effective* configuration is the static worker properties as written, merged with
  the overrides, ``${provider:[path:]key}`` placeholders resolved here, on this worker;
* a change is validated by every part on the whole effective configuration before any part
  is reconfigured; a part that fails to reconfigure anyway has the parts already changed
  put back on the previous configuration, so that the worker keeps serving as before;
* it records what this worker applied: the version, the overrides, and the outcome of the
  last validation of a configuration it tried to apply (``ok``/``failed``/``none``).

Messages name keys and problems; values never appear in them nor in logs (passwords and
resolved placeholders are secrets). The parts' messages are written that way; as a second
line of defence every message a part gives is scrubbed here before it is returned, logged
or recorded: a resolved value written whole goes back to its placeholder, and every piece
of a resolved or secret value (an element of a list, a trimmed value, in any case)
becomes ``[hidden]`` (:class:`~worker.util.secrets.Redactor`).

What is *shown* of the overrides is :func:`shown`: a secret's value as ``[hidden]``
(Kafka's masking of ``PASSWORD`` values) unless it only names where the secret is (a
placeholder), or the reader may see secrets (an admin principal, decided by the REST layer).

Calls come from the herder thread (apply), REST threads (validate, state) and the
composition root (register); one lock orders them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from worker.config.providers import (
    CONFIG_PROVIDERS,
    PLACEHOLDER,
    ConfigTransformer,
    Resolution,
)
from worker.config.reconfigurable import Reconfigurable
from worker.errors import BadRequestError, ConfigError, ConfigValidationError
from worker.util.secrets import HIDDEN, Redactor, is_secret

if TYPE_CHECKING:
    from worker.config.worker_config import WorkerConfig

log = logging.getLogger(__name__)

#: A change of the overrides as the API takes it: a None value removes that override.
Patch = Mapping[str, str | None]


class ValidationStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    NONE = "none"  # this worker has not tried to apply any dynamic configuration yet


@dataclass(frozen=True)
class LastValidation:
    """The outcome of the last validation of a configuration this worker tried to apply;
    ``timestamp`` in ms since the epoch."""

    status: ValidationStatus = ValidationStatus.NONE
    message: str | None = None
    timestamp: int | None = None


@dataclass(frozen=True)
class DynamicConfigState:
    """What this worker applied: the version (the store's), the overrides (raw values)."""

    version: int
    overrides: dict[str, str] = field(default_factory=dict)
    last_validation: LastValidation = field(default_factory=LastValidation)


def merge(current: Mapping[str, str], patch: Patch) -> dict[str, str]:
    """``current`` with ``patch`` applied: a value replaces, None removes."""
    merged = {**current, **patch}
    return {key: value for key, value in merged.items() if value is not None}


def is_reference(value: str) -> bool:
    """Whether ``value`` is nothing but ``${provider:...}`` placeholders: it names where a
    secret is, and shows none of it."""
    return PLACEHOLDER.search(value) is not None and not PLACEHOLDER.sub("", value).strip()


def shown(overrides: Mapping[str, str], *, reveal_secrets: bool) -> dict[str, str]:
    """``overrides`` as a reader may see them: the value of a secret key (a password, a
    private key: :func:`~worker.util.secrets.is_secret`) is ``[hidden]``, as Kafka shows
    ``PASSWORD`` values, unless it is only placeholders or ``reveal_secrets``."""
    return {key: value if reveal_secrets or not is_secret(key) or is_reference(value)
            else HIDDEN
            for key, value in overrides.items()}


def _provider_setting(key: str) -> bool:
    # Used as written, as WorkerConfig does: a provider's settings cannot use providers.
    return key == CONFIG_PROVIDERS or key.startswith(CONFIG_PROVIDERS + ".")


class DynamicConfigManager:
    """The registered reconfigurable parts of this worker and the overrides they apply.

    ``static`` are the worker properties as written (placeholders unresolved);
    ``transformer`` resolves placeholders with the worker's config providers.
    """

    def __init__(self, static: Mapping[str, str], transformer: ConfigTransformer | None = None,
                 *, clock: Callable[[], float] = time.time) -> None:
        self._static = dict(static)
        self._transformer = transformer or ConfigTransformer()
        self._clock = clock
        self._lock = threading.RLock()
        self._components: list[Reconfigurable] = []
        self._version = -1
        self._offered = -1  # the newest version offered to apply(), applied or not
        self._overrides: dict[str, str] = {}
        self._effective: dict[str, str] | None = None  # resolved; None: the static config
        self._last = LastValidation()

    @classmethod
    def for_worker(cls, config: WorkerConfig) -> DynamicConfigManager:
        """The manager of the worker configured by ``config``."""
        return cls(config.raw, config.transformer)

    # --- the parts -----------------------------------------------------------------------

    def register(self, component: Reconfigurable) -> None:
        """Add ``component``; it takes the overrides in force at once. If they do not
        validate for it, it keeps its static configuration and the failure is recorded."""
        with self._lock:
            self._components.append(component)
            if not self._overrides:
                return
            errors = self._check([component], self._overrides, self.whitelist())
            if errors:
                self._failed(self._version, _summary(errors))
                return
            component.reconfigure(self._effective_now())

    def whitelist(self) -> frozenset[str]:
        """The keys the registered parts can change at run time."""
        with self._lock:
            components = list(self._components)
        return frozenset().union(*(c.reconfigurable_configs() for c in components))

    # --- validation ----------------------------------------------------------------------

    def check_request(self, patch: Patch, stored: Mapping[str, str]) -> None:
        """BadRequestError naming every key of ``patch`` outside the whitelist. Removing an
        override that is stored (a None value) is always allowed, so that one written by
        another worker or version can be cleaned up."""
        allowed = self.whitelist()
        refused = sorted(key for key, value in patch.items()
                         if key not in allowed and not (value is None and key in stored))
        if refused:
            raise BadRequestError(
                f"Not a dynamically reconfigurable worker configuration: "
                f"{', '.join(refused)}. This worker can change at run time: "
                f"{', '.join(sorted(allowed)) or 'nothing'}")

    def validate(self, overrides: Mapping[str, str]) -> dict[str, list[str]]:
        """Errors per key of the effective configuration with ``overrides`` (every
        override replacing the stored ones); empty when every part accepts it."""
        with self._lock:
            components = list(self._components)
        return self._check(components, overrides)

    def validate_or_raise(self, overrides: Mapping[str, str]) -> None:
        """ConfigValidationError (400) listing every problem, unless ``overrides`` validate."""
        errors = self.validate(overrides)
        if errors:
            count = sum(len(messages) for messages in errors.values())
            raise ConfigValidationError(
                f"Worker configuration is invalid and contains the following {count} "
                f"error(s):\n{_summary(errors, separator=chr(10))}", errors)

    def _check(self, components: list[Reconfigurable], overrides: Mapping[str, str],
               allowed: frozenset[str] | None = None) -> dict[str, list[str]]:
        """Errors of ``overrides``: keys outside ``allowed`` (default: what ``components``
        declare), placeholders that do not resolve, then each component's validation."""
        if allowed is None:
            allowed = frozenset().union(*(c.reconfigurable_configs() for c in components))
        errors: dict[str, list[str]] = {
            key: [f"Invalid value for configuration {key}: not a dynamically "
                  "reconfigurable worker configuration"]
            for key in sorted(overrides) if key not in allowed}
        effective, resolution = self._effective_of(overrides)
        for key, reason in sorted(resolution.errors.items()):
            errors.setdefault(key, []).append(str(ConfigError(key, reason)))
        if errors:
            return errors  # the parts would only report the same keys, less clearly
        scrub = _scrubber(effective, resolution)
        for component in components:
            try:
                component.validate_reconfiguration(effective)
            except ConfigError as exc:
                errors.setdefault(exc.key, []).append(scrub(str(exc)))
        return errors

    def _effective_of(self, overrides: Mapping[str, str]
                      ) -> tuple[dict[str, str], Resolution]:
        """The resolved effective configuration, and how its placeholders resolved (the
        keys whose placeholders failed are in the resolution's ``errors``).

        Static placeholders are resolved again each time: a provider's source (a file, a
        secret) may have changed since the worker started, and a change applies its
        current values, as a restart would."""
        merged = {**self._static, **overrides}
        resolution = self._transformer.resolve(
            {k: v for k, v in merged.items() if not _provider_setting(k)})
        return {**merged, **resolution.data}, resolution

    def _effective_now(self) -> dict[str, str]:
        if self._effective is None:
            self._effective = self._effective_of(self._overrides)[0]
        return self._effective

    # --- applying ------------------------------------------------------------------------

    def load(self, version: int, overrides: Mapping[str, str]) -> None:
        """At startup: the stored overrides, applied if there are any (with none, the
        static configuration every part started with is already in force)."""
        with self._lock:
            if overrides:
                self.apply(version, overrides)
            else:
                self._version = self._offered = version

    def apply(self, version: int, overrides: Mapping[str, str]) -> bool:
        """Validate then apply ``overrides`` stored as ``version``; whether it was applied.

        A version not newer than the last one offered is ignored (the leader applies its
        own write, then reads the same record back). On failure every part keeps (or gets
        back) its previous configuration and the failure is recorded and logged.
        """
        with self._lock:
            if version <= self._offered:
                return version == self._version
            self._offered = version
            try:
                errors = self._check(list(self._components), overrides)
            except Exception as exc:  # a part's bug: keep serving, report it
                log.error("Validating dynamic worker configuration version %d failed",
                          version, exc_info=exc)
                errors = {"": [f"unexpected {type(exc).__name__} while validating"]}
            if errors:
                self._failed(version, _summary(errors))
                return False
            effective, resolution = self._effective_of(overrides)
            if not self._reconfigure_all(version, effective, _scrubber(effective, resolution)):
                return False
            self._version, self._overrides = version, dict(overrides)
            self._effective = effective
            self._last = LastValidation(ValidationStatus.OK, None, self._now())
        log.info("Applied dynamic worker configuration version %d (overridden keys: %s)",
                 version, ", ".join(sorted(overrides)) or "none")
        return True

    def _reconfigure_all(self, version: int, effective: dict[str, str],
                         scrub: Callable[[str], str]) -> bool:
        done: list[Reconfigurable] = []
        for component in self._components:
            try:
                component.reconfigure(effective)
            except Exception as exc:
                log.error("%s could not apply dynamic worker configuration version %d",
                          type(component).__name__, version, exc_info=exc)
                self._roll_back(done)
                reason = (scrub(str(exc)) if isinstance(exc, ConfigError)
                          else type(exc).__name__)
                self._failed(version, f"{type(component).__name__} failed to reconfigure: "
                                      f"{reason}")
                return False
            done.append(component)
        return True

    def _roll_back(self, components: list[Reconfigurable]) -> None:
        previous = self._effective_now()
        for component in components:
            try:
                component.reconfigure(previous)
            except Exception as exc:  # best effort: the original failure is what matters
                log.error("%s could not be put back on the previous worker configuration",
                          type(component).__name__, exc_info=exc)

    def _failed(self, version: int, message: str) -> None:
        self._last = LastValidation(ValidationStatus.FAILED, message, self._now())
        log.warning("Dynamic worker configuration version %d was not applied on this worker, "
                    "which keeps its current configuration: %s", version, message)

    def _now(self) -> int:
        return int(self._clock() * 1000)

    # --- reporting -----------------------------------------------------------------------

    @property
    def version(self) -> int:
        """The version applied here (-1 before the store was read)."""
        with self._lock:
            return self._version

    def state(self) -> DynamicConfigState:
        with self._lock:
            return DynamicConfigState(self._version, dict(self._overrides), self._last)


def _scrubber(effective: Mapping[str, str], resolution: Resolution
              ) -> Callable[[str], str]:
    """What scrubs a part's message: resolved values back to their placeholders, then
    every piece of a resolved or secret value hidden (see the module docstring)."""
    secrets = [value for key, value in effective.items() if is_secret(key)]
    redactor = Redactor([*resolution.substituted.values(), *secrets])
    return lambda message: redactor(resolution.redact(message))


def _summary(errors: Mapping[str, list[str]], separator: str = "; ") -> str:
    return separator.join(message for messages in errors.values() for message in messages)
