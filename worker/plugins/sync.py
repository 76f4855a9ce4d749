"""``connect-plugin-path sync-manifests``: make every loadable plugin declared by a manifest
(Kafka's ``ManifestWorkspace``), planned in memory, then written.

Per location, for each plugin (``worker.plugins.inventory``):

- loadable, found by scanning, in no manifest → **add** its entry: to the ``entry_points.txt``
  of the installed distribution that owns its module (created if that distribution has
  none); otherwise — plain modules, archives, modules no distribution owns — to the
  location's shim ``.dist-info`` (**create-shim** first when there is none): inside a
  directory location, beside an archive (archives are never rewritten);
- declared, but its class cannot be found (no such module in the location, no such class,
  not of the declared type) → **remove** the entry, unless ``keep_not_found``; a manifest
  left with no entries at all is deleted (**delete-manifest**; a shim goes whole);
- declared, and its class exists but fails to import → left alone: the manifest is right,
  the code or its dependencies are not.

Files are written atomically (temporary file, then rename); ``RECORD`` lines of edited
``entry_points.txt`` files are kept true (hash and size). The classpath is never written.
Running the plan twice changes nothing the second time.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from worker.plugins.inventory import LocationInventory, PluginRow
from worker.plugins.locations import SHIM_DIST_NAME, SHIM_VERSION, LocationKind, PluginLocation
from worker.plugins.manifests import ENTRY_POINTS, ManifestEntry, parse_entry_points
from worker.plugins.types import PluginType


@dataclass(frozen=True)
class Change:
    action: str  # add | remove | create-shim | delete-manifest
    location: str
    manifest: str
    group: str | None = None
    entry: str | None = None
    class_name: str | None = None
    type: PluginType | None = None

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "location": self.location, "manifest": self.manifest,
                "group": self.group, "entry": self.entry, "class": self.class_name,
                "type": None if self.type is None else self.type.value}


class ManifestFile:
    """One ``entry_points.txt`` edited in memory, line by line (what it does not own —
    other groups, comments — stays as it was)."""

    def __init__(self, dist_dir: Path, *, shim: bool) -> None:
        self.dist_dir = dist_dir
        self.path = dist_dir / ENTRY_POINTS
        self.shim = shim
        self.existed = self.path.is_file()
        self.original = self.path.read_text(encoding="utf-8") if self.existed else ""
        self.lines = self.original.splitlines()
        self.modified = False
        self.deleted = False

    def _section(self, group: str) -> tuple[int, int] | None:
        """(header index, end index) of ``[group]``."""
        start = next((i for i, line in enumerate(self.lines)
                      if line.strip() == f"[{group}]"), None)
        if start is None:
            return None
        end = next((i for i in range(start + 1, len(self.lines))
                    if self.lines[i].strip().startswith("[")), len(self.lines))
        return start, end

    def add(self, group: str, name: str, value: str) -> None:
        self.modified = True
        line = f"{name} = {value}"
        section = self._section(group)
        if section is None:
            while self.lines and not self.lines[-1].strip():
                self.lines.pop()
            self.lines += ([""] if self.lines else []) + [f"[{group}]", line]
            return
        start, end = section
        last = max((i for i in range(start, end) if self.lines[i].strip()), default=start)
        self.lines.insert(last + 1, line)

    def remove(self, group: str, name: str) -> bool:
        section = self._section(group)
        if section is None:
            return False
        start, end = section
        for i in range(start + 1, end):
            key, sep, _ = self.lines[i].partition("=")
            if sep and key.strip() == name and not self.lines[i].lstrip().startswith("#"):
                del self.lines[i]
                self.modified = True
                break
        else:
            return False
        start, end = self._section(group) or (start, start)
        if not any("=" in line and not line.lstrip().startswith(("#", ";"))
                   for line in self.lines[start + 1:end]):
            del self.lines[start:end]  # the header, and the blank lines that followed it
        return True

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip("\n") + "\n" if self.lines else ""

    @property
    def empty(self) -> bool:
        return not parse_entry_points(self.text)

    @property
    def changed(self) -> bool:
        return self.deleted or self.modified

    def write(self) -> None:
        if self.deleted:
            if self.shim:
                shutil.rmtree(self.dist_dir)
            else:
                self.path.unlink()
                _update_record(self.dist_dir, None)
            return
        self.dist_dir.mkdir(parents=True, exist_ok=True)
        data = self.text.encode("utf-8")
        _write_atomically(self.path, data)
        if self.shim:
            _write_shim_metadata(self.dist_dir, data)
        else:
            _update_record(self.dist_dir, data)


@dataclass
class LocationPlan:
    """The changes to one location's manifests."""

    location: PluginLocation
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: dict[Path, ManifestFile] = field(default_factory=dict)

    def file(self, dist_dir: Path, *, shim: bool) -> ManifestFile:
        if dist_dir not in self.files:
            self.files[dist_dir] = ManifestFile(dist_dir, shim=shim)
        return self.files[dist_dir]

    def change(self, action: str, manifest: Path, row: PluginRow | None = None,
               entry: ManifestEntry | None = None) -> None:
        self.changes.append(Change(
            action, self.location.name, str(manifest),
            None if row is None else row.type.group,
            None if row is None else (entry.line if entry else f"{row.class_name} = "
                                                                f"{row.value}"),
            None if row is None else row.class_name, None if row is None else row.type))

    def apply(self) -> bool:
        changed = [f for f in self.files.values() if f.changed]
        for manifest in changed:
            manifest.write()
        return bool(changed)


def plan_sync(inventories: Sequence[LocationInventory], *, keep_not_found: bool
              ) -> list[LocationPlan]:
    """What ``sync-manifests`` would change in each plugin location (not the classpath)."""
    plans = []
    for inventory in inventories:
        location = inventory.location
        if location.path is None or location.misplaced:
            continue
        plan = LocationPlan(location)
        for row in inventory.rows:
            if row.loadable and not row.manifest:
                _add(plan, row)
            elif row.manifest and row.not_found and not keep_not_found:
                for entry in row.entries:
                    _remove(plan, row, entry)
        for manifest in plan.files.values():
            if manifest.existed and manifest.changed and manifest.empty:
                manifest.deleted = True
                plan.change("delete-manifest", manifest.path)
        plans.append(plan)
    return plans


def _add(plan: LocationPlan, row: PluginRow) -> None:
    owner = _owner(plan.location, row.module)
    if owner is not None:
        manifest = plan.file(owner, shim=False)
    else:
        manifest = plan.file(plan.location.shim_dir, shim=True)
        if not manifest.existed and not manifest.lines:
            plan.change("create-shim", manifest.path)
    manifest.add(row.type.group, row.class_name, row.value)
    plan.change("add", manifest.path, row)


def _remove(plan: LocationPlan, row: PluginRow, entry: ManifestEntry) -> None:
    dist_dir = Path(entry.manifest).parent
    shim = dist_dir == plan.location.shim_dir
    if plan.location.is_archive and not shim:
        plan.notes.append(f"{entry.line} in {entry.manifest} names a class that cannot be "
                          f"found ({row.error}); it stays: archives are not rewritten")
        return
    manifest = plan.file(dist_dir, shim=shim)
    if manifest.remove(row.type.group, entry.name):
        plan.change("remove", manifest.path, row, entry)


def _owner(location: PluginLocation, module: str) -> Path | None:
    """The distribution of a directory location that installed ``module``'s top level
    (``top_level.txt``, else the paths in ``RECORD``)."""
    if location.kind is not LocationKind.DISTRIBUTIONS:
        return None
    top = module.partition(".")[0]
    for dist in location.distribution_paths():
        if not isinstance(dist, Path) or dist == location.shim_dir:
            continue
        tops: set[str] = set()
        top_level = dist / "top_level.txt"
        if top_level.is_file():
            tops = set(top_level.read_text(encoding="utf-8").split())
        elif (dist / "RECORD").is_file():
            for path in _record_rows(dist):
                first = path[0].split("/", 1)[0]
                tops.add(first[:-3] if first.endswith(".py") else first)
        if top in tops:
            return dist
    return None


def _record_rows(dist_dir: Path) -> list[list[str]]:
    text = (dist_dir / "RECORD").read_text(encoding="utf-8")
    return [row for row in csv.reader(io.StringIO(text)) if row]


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def _update_record(dist_dir: Path, data: bytes | None) -> None:
    """Keep the distribution's ``RECORD`` line for its entry_points.txt true (None: the
    file was deleted). A distribution without a RECORD keeps none."""
    record = dist_dir / "RECORD"
    if not record.is_file():
        return
    name = f"{dist_dir.name}/{ENTRY_POINTS}"
    rows = [row for row in _record_rows(dist_dir) if row[0] != name]
    if data is not None:
        rows.append([name, _record_hash(data), str(len(data))])
    _write_atomically(record, _csv(rows))


def _write_shim_metadata(dist_dir: Path, entry_points: bytes) -> None:
    metadata = (f"Metadata-Version: 2.1\nName: {SHIM_DIST_NAME}\nVersion: {SHIM_VERSION}\n"
                "Summary: Plugin manifests generated by connect-plugin-path\n").encode()
    if not (dist_dir / "METADATA").is_file():
        _write_atomically(dist_dir / "METADATA", metadata)
    metadata = (dist_dir / "METADATA").read_bytes()
    rows = [[f"{dist_dir.name}/METADATA", _record_hash(metadata), str(len(metadata))],
            [f"{dist_dir.name}/{ENTRY_POINTS}", _record_hash(entry_points),
             str(len(entry_points))],
            [f"{dist_dir.name}/RECORD", "", ""]]
    _write_atomically(dist_dir / "RECORD", _csv(rows))


def _csv(rows: list[list[str]]) -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode("utf-8")


def _write_atomically(path: Path, data: bytes) -> None:
    temp = path.with_name(f".{path.name}.connect-plugin-path.tmp")
    temp.write_bytes(data)
    os.replace(temp, path)
