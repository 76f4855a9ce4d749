"""What every typed answer shares: its base class and the checks ``from_json`` makes.

:class:`ConnectAnswer` is the base of every answer in :mod:`airflow_provider.hooks.results`
and :mod:`airflow_provider.hooks.admin_results`; the ``check_*`` functions read one field
of a parsed body and raise :class:`~airflow_provider.exceptions.MalformedResponseError`
naming it when it does not have the documented type.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_provider.exceptions import MalformedResponseError


def check_object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise MalformedResponseError(f"{what} is not a JSON object")
    return value


def check_str(data: Mapping[str, Any], key: str, what: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise MalformedResponseError(f"{what}: {key!r} is missing or not a string")
    return value


def check_opt_str(data: Mapping[str, Any], key: str, what: str) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise MalformedResponseError(f"{what}: {key!r} is not a string")
    return value


def check_int(data: Mapping[str, Any], key: str, what: str) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedResponseError(f"{what}: {key!r} is missing or not an integer")
    return value


def check_bool(data: Mapping[str, Any], key: str, what: str) -> bool:
    value = data.get(key)
    if not isinstance(value, bool):
        raise MalformedResponseError(f"{what}: {key!r} is missing or not a boolean")
    return value


def check_list(data: Mapping[str, Any], key: str, what: str) -> list[Any]:
    value = data.get(key)
    if not isinstance(value, list):
        raise MalformedResponseError(f"{what}: {key!r} is missing or not a JSON array")
    return value


def check_config(value: Any, what: str) -> dict[str, str]:
    """A connector or task config: Connect's configs are maps of strings."""
    data = check_object(value, what)
    if not all(isinstance(v, str) for v in data.values()):
        raise MalformedResponseError(f"{what} has values that are not strings")
    return dict(data)


def present(**fields: Any) -> dict[str, Any]:
    """``fields`` without the ``None`` ones: Connect leaves unset optional fields out."""
    return {key: value for key, value in fields.items() if value is not None}


@dataclass(frozen=True)
class ConnectAnswer:
    """Base of the typed answers: ``raw`` is the body as received (not compared, not
    shown), which :meth:`to_dict` starts from."""

    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False,
                                   kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a copy: callers may change it)."""
        return {**copy.deepcopy(dict(self.raw)), **self._fields()}

    def _fields(self) -> dict[str, Any]:
        raise NotImplementedError


