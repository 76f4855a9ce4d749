"""``connect-plugin-path {list|sync-manifests}``: Kafka's plugin-path tool (KIP-898).

::

    connect-plugin-path list           [--plugin-location P]... [--plugin-path P]...
                                       [--worker-config F]... [--json]
    connect-plugin-path sync-manifests [--plugin-location P]... [--plugin-path P]...
                                       [--worker-config F]... [--dry-run] [--keep-not-found]
                                       [--json]

At least one of ``--plugin-location`` (one location), ``--plugin-path`` (Kafka's
``plugin.path`` syntax) or ``--worker-config`` (its ``plugin.path``, as written). ``list``
prints every plugin of those locations and of the worker's environment (``classpath``);
``sync-manifests`` makes every loadable plugin declared by a manifest (``worker/plugins/
sync.py``). Usage errors exit 2, failures 1 with the details on stderr, success 0. The
tool imports plugin modules to scan them, but writes no bytecode: ``list`` and
``--dry-run`` leave the plugin path byte for byte as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from worker.config.properties import load_properties
from worker.errors import ConfigError
from worker.plugins.inventory import LocationInventory, take_inventory
from worker.plugins.locations import (
    PluginLocation,
    classpath_location,
    location_at,
    plugin_locations,
)
from worker.plugins.sync import plan_sync
from worker.util.logs import configure_logging

log = logging.getLogger("worker.cli.plugin_path")

LIST_COLUMNS = ("pluginName", "firstAlias", "secondAlias", "pluginVersion", "pluginType",
                "isLoadable", "hasManifest", "isScanned", "pluginLocation")
NO_ALIAS = "N/A"


class CommandError(Exception):
    """A failure to report on stderr with exit code 1."""


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="connect-plugin-path",
                                   description="Manage plugins on the Connect plugin.path")
    commands = root.add_subparsers(dest="command", required=True, metavar="{list,sync-manifests}")
    list_command = commands.add_parser(
        "list", help="List the plugins of the given plugin locations and of the classpath")
    sync_command = commands.add_parser(
        "sync-manifests", help="Make the plugins of the given locations compatible with "
                               "plugin.discovery=service_load")
    for sub in (list_command, sync_command):
        group = sub.add_argument_group("plugin providers")
        group.add_argument("--plugin-location", action="append", default=[], metavar="P",
                           help="A single plugin location (wheel, zip or directory)")
        group.add_argument("--plugin-path", action="append", default=[], metavar="P",
                           help="A comma-delimited list of locations containing plugins")
        group.add_argument("--worker-config", action="append", default=[], metavar="F",
                           help="A Connect worker configuration file (its plugin.path)")
        sub.add_argument("--json", action="store_true", help="Print JSON on stdout")
    sync_command.add_argument("--dry-run", action="store_true",
                              help="Print the changes, write nothing")
    sync_command.add_argument("--keep-not-found", action="store_true",
                              help="Keep manifest entries whose class cannot be found")
    return root


def parse_locations(args: argparse.Namespace) -> list[PluginLocation]:
    """The locations the arguments name, in order, without duplicates (Kafka's
    ``ConnectPluginPath.parseLocations``)."""
    raw_paths = list(args.plugin_path)
    for config_file in args.worker_config:
        try:
            props = load_properties(config_file)
        except ConfigError as exc:
            raise CommandError(f"Unable to read worker config at {config_file}: {exc}") \
                from exc
        if props.get("plugin.path", "").strip():
            raw_paths.append(props["plugin.path"])
    locations: dict[Path | None, PluginLocation] = {}
    for raw in raw_paths:
        try:
            found = plugin_locations(raw.split(","), fail_fast=True)
        except OSError as exc:
            raise CommandError(f"Unable to parse plugin path {raw}: "
                               f"{plugin_path_problem(exc)}") from exc
        for location in found:
            locations.setdefault(location.path, location)
    for raw in args.plugin_location:
        path = Path(raw).absolute()
        if not path.exists():
            raise CommandError(f"Specified location {path} does not exist")
        single = location_at(path)
        if single is None:
            raise CommandError(f"Specified location {path} is not a plugin location (a "
                               "directory, a .whl or a .zip)")
        locations.setdefault(single.path, single)
    return list(locations.values())


def plugin_path_problem(exc: OSError) -> str:
    """What is wrong with a plugin path entry, in words (Kafka's tool prints the Java
    exception, e.g. ``java.io.FileNotFoundException: /nonexistent``)."""
    where = exc.filename if exc.filename is not None else "an entry"
    if isinstance(exc, FileNotFoundError):
        return f"{where} does not exist"
    return f"{where} cannot be listed: {exc.strerror or exc}"


def main(argv: Sequence[str] | None = None) -> int:
    root = parser()
    args = root.parse_args(argv)
    if not (args.plugin_location or args.plugin_path or args.worker_config):
        root.error("Must specify at least one --plugin-location, --plugin-path, or "
                   "--worker-config")  # exits 2
    configure_logging(logging.WARNING)  # the worker's format, on stderr (worker/util/logs.py)
    # Scanning imports plugin modules: no __pycache__ may appear in the plugin path, and
    # whatever a module prints at import must not end up in the JSON on stdout.
    sys.dont_write_bytecode = True
    try:
        locations = parse_locations(args)
        with contextlib.redirect_stdout(sys.stderr):
            inventories = take_inventory([classpath_location(), *locations])
        if args.command == "list":
            print_list(inventories, as_json=args.json)
        else:
            sync(inventories, args)
    except CommandError as exc:
        print(f"connect-plugin-path: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader went away (`connect-plugin-path list | head`): no traceback. stdout
        # now points at /dev/null, so that the interpreter's last flush stays quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - any failure: details on stderr, exit 1
        traceback.print_exc()
        print(f"connect-plugin-path: unexpected error while running {args.command}: {exc}",
              file=sys.stderr)
        return 1
    return 0


def print_list(inventories: Sequence[LocationInventory], *, as_json: bool) -> None:
    rows = [row for inventory in inventories for row in inventory.rows]
    if as_json:
        document = {"plugins": [row.to_json() for row in rows],
                    "locations": [inventory.to_json() for inventory in inventories]}
        print(json.dumps(document, indent=2))
        return
    print("\t".join(LIST_COLUMNS))
    for row in rows:
        aliases = [*row.aliases, NO_ALIAS, NO_ALIAS]
        print("\t".join(str(v) for v in (
            row.class_name, aliases[0], aliases[1], row.version, row.type.value,
            _flag(row.loadable), _flag(row.manifest), _flag(row.scanned),
            row.location.name)))
    print()
    isolated = [row for row in rows if row.location.path is not None]
    print(f"Total plugins:      \t{len(isolated)}")
    print(f"Loadable plugins:   \t{sum(row.loadable for row in isolated)}")
    print(f"Compatible plugins: \t{sum(row.loadable and row.manifest for row in isolated)}")
    problems = [(i.location.name, e) for i in inventories for e in i.location.errors]
    problems += [(row.location.name, f"{row.class_name} ({row.type.value}) is not loadable: "
                                     f"{row.error}") for row in rows if not row.loadable]
    if problems:
        print("\nProblems:")
        for where, problem in problems:
            print(f"  {where}: {problem}")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def sync(inventories: Sequence[LocationInventory], args: argparse.Namespace) -> None:
    plans = plan_sync(inventories, keep_not_found=args.keep_not_found)
    changes = [change for plan in plans for change in plan.changes]
    notes = [note for plan in plans for note in plan.notes]
    applied = False
    if changes and not args.dry_run:
        try:
            for plan in plans:
                applied = plan.apply() or applied
        except OSError as exc:
            raise CommandError(f"Sync incomplete due to {exc}; plugin path may be corrupted. "
                               "Discard the contents of the plugin.path before retrying.") \
                from exc
    for note in notes:
        print(f"connect-plugin-path: {note}", file=sys.stderr)
    if args.json:
        document: dict[str, Any] = {"dry_run": args.dry_run, "applied": applied,
                                    "changes": [change.to_json() for change in changes]}
        print(json.dumps(document, indent=2))
        return
    if args.dry_run:
        print("Dry run started: No changes will be committed.")
    print("Scanning for plugins...")
    for plan in plans:
        for manifest in sorted({c.manifest for c in plan.changes}):
            mine = [c for c in plan.changes if c.manifest == manifest]
            added = [c for c in mine if c.action == "add"]
            removed = [c for c in mine if c.action == "remove"]
            print(f"{'Dry Run ' if args.dry_run else ''}Sync\t{manifest} Add {len(added)} "
                  f"Remove {len(removed)}")
            for change in mine:
                label = {"add": "Add", "remove": "Remove", "create-shim": "Create",
                         "delete-manifest": "Delete"}[change.action]
                print(f"\t{label}\t{change.entry or change.manifest}")
    if not changes:
        print("No changes required.")
    elif args.dry_run:
        print("Dry run passed: All above changes can be committed to disk if re-run with dry "
              "run disabled.")
    else:
        print("Writing changes to plugins...")
        print("All loadable plugins have accurate ServiceLoader manifests.")


if __name__ == "__main__":
    sys.exit(main())
