"""Builds plugin locations for tests, with the standard library only: plain-module
directories, directories of installed distributions (``*.dist-info`` beside packages),
wheels (a zip holding packages and a ``.dist-info``) and zips.

Plugin modules are generated from templates: a source connector whose task produces
``records`` records to the topic in its config (so a test can see it run), a sink connector,
a converter, a module that fails to import, one that needs a missing dependency. Module names
are made unique by the caller (``unique()``) so tests never share ``sys.modules`` entries.
"""

from __future__ import annotations

import base64
import hashlib
import textwrap
import uuid
import zipfile
from collections.abc import Mapping
from pathlib import Path

# group -> {entry name: "module:Class"}
EntryPoints = Mapping[str, Mapping[str, str]]

SOURCE = "connect_plane.source_connector"
SINK = "connect_plane.sink_connector"
CONVERTER = "connect_plane.converter"


def unique(prefix: str) -> str:
    """A module name no other test uses."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def source_module(cls: str, version: str = "1.2.3", records: int = 5,
                  imports: str = "") -> str:
    """A source connector ``cls`` (task ``cls + 'Task'``) producing ``records`` string
    records ``<cls>-<n>`` to its config's ``topic``, then idling."""
    return textwrap.dedent(f'''\
        import threading
        {imports}
        from worker.api import SourceConnector, SourceRecord, SourceTask


        class {cls}Task(SourceTask):
            def start(self, props):
                self.topic = props["topic"]
                self.sent = 0
                self.stopping = threading.Event()

            def poll(self):
                if self.sent >= {records}:
                    self.stopping.wait(0.1)
                    return None
                self.sent += 1
                return [SourceRecord({{"p": 0}}, {{"n": self.sent}}, self.topic,
                                     value="{cls}-" + str(self.sent))]

            def stop(self):
                self.stopping.set()


        class {cls}(SourceConnector):
            def version(self):
                return "{version}"

            def start(self, props):
                self.props = dict(props)

            def task_class(self):
                return {cls}Task

            def task_configs(self, max_tasks):
                return [dict(self.props)]

            def stop(self):
                pass
        ''')


def sink_module(cls: str, version: str = "2.0.0") -> str:
    return textwrap.dedent(f'''\
        from worker.api import SinkConnector, SinkTask


        class {cls}Task(SinkTask):
            def start(self, props):
                pass

            def put(self, records):
                pass

            def stop(self):
                pass


        class {cls}(SinkConnector):
            def version(self):
                return "{version}"

            def start(self, props):
                self.props = dict(props)

            def task_class(self):
                return {cls}Task

            def task_configs(self, max_tasks):
                return [dict(self.props)]

            def stop(self):
                pass
        ''')


def converter_module(cls: str, version: str = "3.0.0") -> str:
    return textwrap.dedent(f'''\
        from worker.api import Converter, SchemaAndValue


        class {cls}(Converter):
            def version(self):
                return "{version}"

            def from_connect_data(self, topic, schema, value):
                return None if value is None else str(value).encode()

            def to_connect_data(self, topic, data):
                return SchemaAndValue(None, None if data is None else data.decode())
        ''')


BROKEN_SYNTAX = "from worker.api import SourceConnector\n\nclass Broken(SourceConnector:\n"
RAISES_AT_IMPORT = "raise RuntimeError('this plugin refuses to load')\n"


def needs_missing_dependency(cls: str) -> str:
    return "import cp_no_such_dependency_xyz\n\n" + source_module(cls)


def write_modules(root: Path, modules: Mapping[str, str]) -> None:
    """Write ``{"pkg/mod.py": source}`` files under ``root``."""
    for relative, source in modules.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")


def entry_points_text(entry_points: EntryPoints) -> str:
    return "".join(f"[{group}]\n" + "".join(f"{name} = {value}\n"
                                            for name, value in entries.items()) + "\n"
                   for group, entries in entry_points.items())


def _dist_files(dist_name: str, version: str, modules: Mapping[str, str],
                entry_points: EntryPoints | None) -> dict[str, bytes]:
    """A distribution's files, RECORD included: ``{relative path: content}``."""
    info = f"{dist_name.replace('-', '_')}-{version}.dist-info"
    files = {relative: source.encode() for relative, source in modules.items()}
    files[f"{info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {dist_name}\n"
                                 f"Version: {version}\n").encode()
    files[f"{info}/top_level.txt"] = "".join(
        sorted({r.split("/")[0].removesuffix(".py") + "\n" for r in modules})).encode()
    if entry_points is not None:
        files[f"{info}/entry_points.txt"] = entry_points_text(entry_points).encode()
    record = "".join(f"{path},sha256={_digest(data)},{len(data)}\n"
                     for path, data in files.items())
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\n").encode()
    return files


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def modules_location(parent: Path, name: str, modules: Mapping[str, str]) -> Path:
    """A directory of plain modules (no metadata)."""
    location = parent / name
    location.mkdir(parents=True)
    write_modules(location, modules)
    return location


def distributions_location(parent: Path, name: str, dist_name: str, modules: Mapping[str, str],
                           entry_points: EntryPoints | None, version: str = "1.0.0") -> Path:
    """A directory holding one installed distribution (as ``pip install --target``)."""
    location = parent / name
    location.mkdir(parents=True)
    for relative, data in _dist_files(dist_name, version, modules, entry_points).items():
        path = location / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return location


def wheel_location(parent: Path, dist_name: str, modules: Mapping[str, str],
                   entry_points: EntryPoints | None, version: str = "1.0.0") -> Path:
    """A wheel: a zip of the packages and their ``.dist-info``."""
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / f"{dist_name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for relative, data in _dist_files(dist_name, version, modules, entry_points).items():
            archive.writestr(relative, data)
    return path


def zip_location(parent: Path, name: str, modules: Mapping[str, str]) -> Path:
    """A plain zip of modules, no metadata."""
    parent.mkdir(parents=True, exist_ok=True)
    path = parent / f"{name}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for relative, source in modules.items():
            archive.writestr(relative, source)
    return path


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (and the set of directories): for
    byte-identical checks."""
    out = {}
    for path in sorted(root.rglob("*")):
        key = str(path.relative_to(root))
        out[key] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out
