"""What ``connect-plugin-path ... --json`` prints (KIP-898's tool), as typed results.

``connect-plugin-path list --json`` prints a :class:`PluginListing` (every plugin found on
the plugin path and in the worker's own environment, with whether scanning finds it and
whether a manifest declares it); ``connect-plugin-path sync-manifests [--dry-run] --json``
prints a :class:`ManifestSync` (the manifest changes planned or made). :func:`parse_listing`
and :func:`parse_sync` check the documented shape and raise
:class:`~airflow_provider.exceptions.PluginPathOutputError` naming what is wrong. As for
REST answers, ``to_dict()`` is the JSON as the tool printed it, for XCom.

The manifests are Python entry points: one group per plugin type in a distribution's
``entry_points.txt`` (:data:`ENTRY_POINT_GROUPS`), each entry ``<canonical class name> =
<module>:<Class>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from airflow_provider.exceptions import MalformedResponseError, PluginPathOutputError
from airflow_provider.utils.answers import (
    ConnectAnswer,
    check_bool,
    check_list,
    check_object,
    check_opt_str,
    check_str,
)

#: Plugin types as Kafka spells them (``PluginType.toString()``), each with its
#: entry-point group. The list stays open: a type this provider does not know is kept.
ENTRY_POINT_GROUPS = {
    "source": "connect_plane.source_connector",
    "sink": "connect_plane.sink_connector",
    "converter": "connect_plane.converter",
    "header_converter": "connect_plane.header_converter",
    "transformation": "connect_plane.transformation",
    "predicate": "connect_plane.predicate",
    "configprovider": "connect_plane.config_provider",
    "rest_extension": "connect_plane.rest_extension",
}
#: The types ``GET /connector-plugins?connectorsOnly=false`` lists: as in Kafka, config
#: providers and REST extensions are worker plugins that no REST endpoint reports.
REST_LISTED_TYPES = frozenset({"source", "sink", "converter", "header_converter",
                               "transformation", "predicate"})
#: What ``sync-manifests`` does to a manifest.
ACTIONS = ("add", "remove", "create-shim", "delete-manifest")
#: Actions that make a plugin visible to ``plugin.discovery=service_load``.
ADDING = frozenset({"add", "create-shim"})


def _str_list(data: Any, key: str, what: str) -> tuple[str, ...]:
    values = check_list(data, key, what)
    if not all(isinstance(value, str) for value in values):
        raise MalformedResponseError(f"{what}: {key!r} is not a list of strings")
    return tuple(values)


# --------------------------------------------------------------------------- list


@dataclass(frozen=True)
class PluginEntry(ConnectAnswer):
    """One plugin of ``list``: its canonical class name (``class`` in the JSON), aliases,
    version, type, whether scanning finds it (``scanned``) and a manifest declares it
    (``manifest``), whether it loads (else ``error`` says why) and its location (a path,
    or ``classpath`` for the worker's own environment)."""

    class_name: str
    type: str
    location: str
    aliases: tuple[str, ...] = ()
    version: str | None = None
    scanned: bool = False
    manifest: bool = False
    loadable: bool = True
    error: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> PluginEntry:
        what = "a plugin"
        data = check_object(body, what)
        name = check_str(data, "class", what)
        what = f"plugin {name!r}"
        return cls(name, check_str(data, "type", what), check_str(data, "location", what),
                   _str_list(data, "aliases", what), check_opt_str(data, "version", what),
                   check_bool(data, "scanned", what), check_bool(data, "manifest", what),
                   check_bool(data, "loadable", what), check_opt_str(data, "error", what),
                   raw=data)

    @property
    def needs_manifest(self) -> bool:
        """Found by scanning, loadable, but in no manifest: invisible to
        ``plugin.discovery=service_load`` until ``sync-manifests`` adds it."""
        return self.scanned and self.loadable and not self.manifest

    def _fields(self) -> dict[str, Any]:
        return {"class": self.class_name, "aliases": list(self.aliases),
                "version": self.version, "type": self.type, "scanned": self.scanned,
                "manifest": self.manifest, "loadable": self.loadable, "error": self.error,
                "location": self.location}


@dataclass(frozen=True)
class PluginLocation(ConnectAnswer):
    """A plugin location: its path, kind (``wheel``, ``zip``, ``distributions``,
    ``modules`` or ``classpath``) and what went wrong reading it."""

    path: str
    kind: str
    errors: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> PluginLocation:
        data = check_object(body, "a location")
        what = f"location {data.get('path')!r}"
        return cls(check_str(data, "path", what), check_str(data, "kind", what),
                   _str_list(data, "errors", what), raw=data)

    def _fields(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "errors": list(self.errors)}


@dataclass(frozen=True)
class PluginListing(ConnectAnswer):
    """``connect-plugin-path list --json``."""

    plugins: tuple[PluginEntry, ...] = ()
    locations: tuple[PluginLocation, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> PluginListing:
        data = check_object(body, "the listing")
        return cls(tuple(PluginEntry.from_json(p) for p in check_list(data, "plugins",
                                                                          "the listing")),
                   tuple(PluginLocation.from_json(loc)
                         for loc in check_list(data, "locations", "the listing")), raw=data)

    @property
    def without_manifest(self) -> list[PluginEntry]:
        """Loadable plugins that scanning finds and no manifest declares."""
        return [plugin for plugin in self.plugins if plugin.needs_manifest]

    @property
    def not_loadable(self) -> list[PluginEntry]:
        return [plugin for plugin in self.plugins if not plugin.loadable]

    def _fields(self) -> dict[str, Any]:
        return {"plugins": [p.to_dict() for p in self.plugins],
                "locations": [loc.to_dict() for loc in self.locations]}


# --------------------------------------------------------------------------- sync


@dataclass(frozen=True)
class ManifestChange(ConnectAnswer):
    """One change of ``sync-manifests``: ``action`` (``add`` or ``remove`` an entry,
    ``create-shim``: a generated ``.dist-info`` for a location without one,
    ``delete-manifest``: a manifest left empty) on the ``manifest`` file of ``location``;
    ``group``, ``entry`` (``name = module:Class``), ``class_name`` and ``type`` of the
    plugin where the change concerns one (a change of a whole file may have none)."""

    action: str
    location: str
    manifest: str
    group: str | None = None
    entry: str | None = None
    class_name: str | None = None
    type: str | None = None

    @classmethod
    def from_json(cls, body: Any) -> ManifestChange:
        what = "a change"
        data = check_object(body, what)
        action = check_str(data, "action", what)
        if action not in ACTIONS:
            raise MalformedResponseError(f"{what}: unknown action {action!r} (expected one "
                                         f"of {', '.join(ACTIONS)})")
        return cls(action, check_str(data, "location", what), check_str(data, "manifest", what),
                   check_opt_str(data, "group", what), check_opt_str(data, "entry", what),
                   check_opt_str(data, "class", what), check_opt_str(data, "type", what),
                   raw=data)

    def describe(self) -> str:
        """One line for logs: ``add connect_plane.source_connector: a.B = a:B in <file>``."""
        what = ": ".join(part for part in (self.group, self.entry) if part)
        return f"{self.action:<15} {what + ' in ' if what else ''}{self.manifest}"

    def _fields(self) -> dict[str, Any]:
        return {"action": self.action, "location": self.location, "manifest": self.manifest,
                "group": self.group, "entry": self.entry, "class": self.class_name,
                "type": self.type}


@dataclass(frozen=True)
class ManifestSync(ConnectAnswer):
    """``connect-plugin-path sync-manifests [--dry-run] --json``: the plan (``dry_run``)
    or what was done (``applied``: something was written)."""

    dry_run: bool
    applied: bool
    changes: tuple[ManifestChange, ...] = ()

    @classmethod
    def from_json(cls, body: Any) -> ManifestSync:
        what = "the sync result"
        data = check_object(body, what)
        dry_run, applied = check_bool(data, "dry_run", what), check_bool(data, "applied", what)
        if dry_run and applied:
            raise MalformedResponseError(f"{what}: a dry run says it applied changes")
        return cls(dry_run, applied, tuple(ManifestChange.from_json(change)
                                           for change in check_list(data, "changes", what)),
                   raw=data)

    @property
    def empty(self) -> bool:
        """True when every manifest is in sync: nothing to do (or nothing was done)."""
        return not self.changes

    def added_classes(self) -> list[str]:
        """The plugin classes the changes declare (``add``, ``create-shim``), in order."""
        return list(dict.fromkeys(change.class_name for change in self.changes
                                  if change.action in ADDING and change.class_name))

    def classes_workers_list(self) -> list[str]:
        """The added classes that ``GET /connector-plugins?connectorsOnly=false`` reports
        (not config providers and REST extensions; a type this provider does not know is
        assumed to be listed)."""
        unlisted = set(ENTRY_POINT_GROUPS) - REST_LISTED_TYPES
        types = {change.class_name: change.type for change in self.changes}
        return [name for name in self.added_classes() if types.get(name) not in unlisted]

    def counts(self) -> dict[str, int]:
        """How many changes of each action."""
        return {action: sum(change.action == action for change in self.changes)
                for action in ACTIONS if any(change.action == action
                                             for change in self.changes)}

    def _fields(self) -> dict[str, Any]:
        return {"dry_run": self.dry_run, "applied": self.applied,
                "changes": [change.to_dict() for change in self.changes]}


# --------------------------------------------------------------------------- parsing


def _parse(stdout: str, command: str) -> Any:
    text = stdout.strip()
    if not text:
        raise PluginPathOutputError(f"{command} printed nothing on stdout (expected JSON)")
    try:
        return json.loads(text)
    except ValueError:
        start = text[:200] + ("..." if len(text) > 200 else "")
        raise PluginPathOutputError(f"{command} did not print JSON; it printed: "
                                    f"{start!r}") from None


def parse_listing(stdout: str, command: str = "connect-plugin-path list --json"
                  ) -> PluginListing:
    """``list --json``'s stdout as a :class:`PluginListing`; ``command`` names it in
    errors."""
    body = _parse(stdout, command)
    try:
        return PluginListing.from_json(body)
    except MalformedResponseError as exc:
        raise PluginPathOutputError(f"{command} printed unexpected JSON: {exc.detail}") from None


def parse_sync(stdout: str, command: str = "connect-plugin-path sync-manifests --json"
               ) -> ManifestSync:
    """``sync-manifests --json``'s stdout as a :class:`ManifestSync`; ``command`` names it
    in errors."""
    body = _parse(stdout, command)
    try:
        return ManifestSync.from_json(body)
    except MalformedResponseError as exc:
        raise PluginPathOutputError(f"{command} printed unexpected JSON: {exc.detail}") from None
