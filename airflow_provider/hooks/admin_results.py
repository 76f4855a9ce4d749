"""Typed answers of connect-plane's ``/admin/`` extensions: the dynamic worker
configuration, what one worker serves, and the cluster's members.

``/admin/dynamic-worker-config`` values are raw strings, ``${provider:[path:]key}``
placeholders included; a value stored in clear may be a password, so these answers never
show values in their ``repr`` (only keys). ``to_dict()`` is the body as the worker sent it,
for XCom (which therefore holds whatever the worker returned).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider.exceptions import MalformedResponseError
from airflow_provider.utils.answers import (
    ConnectAnswer,
    check_bool,
    check_config,
    check_int,
    check_list,
    check_object,
    check_opt_str,
    check_str,
)

#: ``listeners.https.ssl.`` and ``admin.listeners.https.ssl.``: the prefixes of the TLS
#: settings of the REST listeners (the phase-1 whitelist of the dynamic configuration).
LISTENER_SSL_PREFIX = "listeners.https.ssl."
ADMIN_LISTENER_SSL_PREFIX = "admin.listeners.https.ssl."


def _keys_only(name: str, values: Mapping[str, Any]) -> str:
    return f"{name}(keys={sorted(values)})"


def _optional_int(data: Mapping[str, Any], key: str, what: str) -> int | None:
    if data.get(key) is None:
        return None
    return check_int(data, key, what)


# --------------------------------------------------------------------------- dynamic config


@dataclass(frozen=True, repr=False)
class WorkerConfigOverrides(ConnectAnswer):
    """``GET`` and ``PATCH /admin/dynamic-worker-config``: the overrides in force (not the
    static properties), values raw. ``repr`` lists the keys only."""

    overrides: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Any) -> WorkerConfigOverrides:
        what = "the dynamic worker config"
        return cls(check_config(body, what), raw=check_object(body, what))

    def __repr__(self) -> str:
        return _keys_only(type(self).__name__, self.overrides)

    def _fields(self) -> dict[str, Any]:
        return dict(self.overrides)


@dataclass(frozen=True)
class DynamicConfigValidation(ConnectAnswer):
    """``POST /admin/dynamic-worker-config/validate``: ``messages`` maps each key in error
    to its messages (which name the problem, never a secret); :attr:`errors` lists them as
    ``"key: message"``."""

    error_count: int
    messages: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, body: Any) -> DynamicConfigValidation:
        what = "the validation result"
        data = check_object(body, what)
        errors = check_object(data.get("errors", {}), f"{what}'s errors")
        messages: dict[str, tuple[str, ...]] = {}
        for key, listed in errors.items():
            if not isinstance(listed, list) or not all(isinstance(m, str) for m in listed):
                raise MalformedResponseError(f"{what}: the errors of {key!r} are not a list "
                                             "of strings")
            messages[key] = tuple(listed)
        return cls(check_int(data, "error_count", what), messages, raw=data)

    @property
    def errors(self) -> list[str]:
        """Every error, as ``"key: message"``."""
        return [f"{key}: {message}" for key, listed in self.messages.items()
                for message in listed]

    @property
    def ok(self) -> bool:
        """True when the change would be accepted."""
        return self.error_count == 0 and not self.errors

    def _fields(self) -> dict[str, Any]:
        return {"error_count": self.error_count,
                "errors": {key: list(listed) for key, listed in self.messages.items()}}


# --------------------------------------------------------------------------- one worker


@dataclass(frozen=True)
class CertificateInfo(ConnectAnswer):
    """The certificate a listener serves: ``sha256`` is 64 lowercase hex characters, the
    SHA-256 of the DER leaf certificate; names in RFC 4514 form; dates ISO-8601 UTC."""

    sha256: str
    subject: str
    issuer: str
    serial: str
    not_before: str
    not_after: str

    @classmethod
    def from_json(cls, body: Any) -> CertificateInfo:
        what = "a listener's certificate"
        data = check_object(body, what)
        info = cls(*(check_str(data, key, what) for key in (
            "sha256", "subject", "issuer", "serial", "not_before", "not_after")), raw=data)
        for when in (info.not_before, info.not_after):
            _datetime(when, what)
        return info

    @property
    def expires_at(self) -> dt.datetime:
        """``not_after`` as an aware datetime."""
        return _datetime(self.not_after, "a listener's certificate")

    def _fields(self) -> dict[str, Any]:
        return {"sha256": self.sha256, "subject": self.subject, "issuer": self.issuer,
                "serial": self.serial, "not_before": self.not_before,
                "not_after": self.not_after}


def _datetime(text: str, what: str) -> dt.datetime:
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise MalformedResponseError(f"{what}: {text!r} is not an ISO-8601 date") from None
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class WorkerListener(ConnectAnswer):
    """One REST listener of a worker: its URL, protocol (``http``/``https``), whether it
    is an ``admin.listeners`` listener, and the certificate it serves (https only)."""

    url: str
    protocol: str
    admin: bool = False
    certificate: CertificateInfo | None = None

    @classmethod
    def from_json(cls, body: Any) -> WorkerListener:
        what = "a listener"
        data = check_object(body, what)
        cert = data.get("certificate")
        return cls(check_str(data, "url", what), check_str(data, "protocol", what),
                   check_bool(data, "admin", what),
                   None if cert is None else CertificateInfo.from_json(cert), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"url": self.url, "protocol": self.protocol, "admin": self.admin,
                "certificate": None if self.certificate is None else self.certificate.to_dict()}


@dataclass(frozen=True)
class LastValidation(ConnectAnswer):
    """How this worker's last local validation of the dynamic configuration went:
    ``status`` ``ok``, ``failed`` (``message`` says why) or ``none``; ``timestamp`` in ms
    since the epoch."""

    status: str
    message: str | None = None
    timestamp: int | None = None

    @classmethod
    def from_json(cls, body: Any) -> LastValidation:
        what = "the last validation"
        data = check_object(body, what)
        return cls(check_str(data, "status", what), check_opt_str(data, "message", what),
                   _optional_int(data, "timestamp", what), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "timestamp": self.timestamp}


@dataclass(frozen=True, repr=False)
class AppliedWorkerConfig(ConnectAnswer):
    """The dynamic configuration a worker applied: ``version`` grows with every change
    (distributed: the config-topic offset of the record applied, -1 for none; standalone:
    the revision of the stored overrides, 0 for none)."""

    version: int
    overrides: Mapping[str, str] = field(default_factory=dict)
    last_validation: LastValidation = field(default_factory=lambda: LastValidation("none"))

    @classmethod
    def from_json(cls, body: Any) -> AppliedWorkerConfig:
        what = "the worker's dynamic config"
        data = check_object(body, what)
        return cls(check_int(data, "version", what),
                   check_config(data.get("overrides", {}), f"{what}'s overrides"),
                   LastValidation.from_json(data.get("last_validation")), raw=data)

    def __repr__(self) -> str:
        return (f"AppliedWorkerConfig(version={self.version}, keys={sorted(self.overrides)}, "
                f"last_validation={self.last_validation.status!r})")

    def _fields(self) -> dict[str, Any]:
        return {"version": self.version, "overrides": dict(self.overrides),
                "last_validation": self.last_validation.to_dict()}


@dataclass(frozen=True)
class WorkerReport(ConnectAnswer):
    """``GET /admin/worker``: what this one worker applied and serves."""

    worker_id: str
    url: str
    dynamic_config: AppliedWorkerConfig
    listeners: tuple[WorkerListener, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> WorkerReport:
        what = "the worker report"
        data = check_object(body, what)
        return cls(check_str(data, "worker_id", what), check_str(data, "url", what),
                   AppliedWorkerConfig.from_json(data.get("dynamic_config")),
                   tuple(WorkerListener.from_json(item)
                         for item in check_list(data, "listeners", what)), raw=data)

    def https_listeners(self, admin: bool | None = None) -> list[WorkerListener]:
        """The https listeners; ``admin`` True/False keeps only the ``admin.listeners`` /
        the other ones."""
        return [listener for listener in self.listeners if listener.protocol == "https"
                and (admin is None or listener.admin is admin)]

    def _fields(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "url": self.url,
                "dynamic_config": self.dynamic_config.to_dict(),
                "listeners": [listener.to_dict() for listener in self.listeners]}


# --------------------------------------------------------------------------- the cluster


@dataclass(frozen=True)
class ClusterMember(ConnectAnswer):
    """A worker of the cluster: its id and advertised URL."""

    worker_id: str
    url: str

    @classmethod
    def from_json(cls, body: Any) -> ClusterMember:
        data = check_object(body, "a cluster member")
        return cls(check_str(data, "worker_id", "a cluster member"),
                   check_str(data, "url", "a cluster member"), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"worker_id": self.worker_id, "url": self.url}


@dataclass(frozen=True)
class ClusterMembers(ConnectAnswer):
    """``GET /admin/cluster``: the members and the leader's URL (standalone: the worker
    itself, as leader)."""

    leader_url: str | None
    members: tuple[ClusterMember, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> ClusterMembers:
        what = "the cluster"
        data = check_object(body, what)
        return cls(check_opt_str(data, "leader_url", what),
                   tuple(ClusterMember.from_json(item)
                         for item in check_list(data, "members", what)), raw=data)

    @property
    def urls(self) -> list[str]:
        """The members' advertised URLs."""
        return [member.url for member in self.members]

    def _fields(self) -> dict[str, Any]:
        return {"leader_url": self.leader_url,
                "members": [member.to_dict() for member in self.members]}
