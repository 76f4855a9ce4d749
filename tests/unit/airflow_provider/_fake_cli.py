"""A stand-in ``connect-plugin-path`` for unit tests: a real executable script (run as a
subprocess, as the operator runs the real one) that records its arguments and answers
from a script of outputs per subcommand; and well-formed outputs of the contract.

The real tool is tested against real plugin paths in
tests/integration/test_plugin_manifest_sync.py.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

_PROGRAM = '''\
import json, sys, time
from pathlib import Path

here = Path(__file__).parent
args = sys.argv[1:]
with (here / "calls.jsonl").open("a", encoding="utf-8") as calls:
    calls.write(json.dumps(args) + "\\n")
key = args[0] if args else ""
if key == "sync-manifests" and "--dry-run" in args:
    key = "dry-run"
answer = json.loads((here / "script.json").read_text(encoding="utf-8")).get(key)
if answer is None:
    print(f"usage: connect-plugin-path {{list,sync-manifests}} ... (no answer for {key!r})",
          file=sys.stderr)
    sys.exit(2)
time.sleep(answer.get("sleep", 0))
sys.stderr.write(answer.get("stderr", ""))
sys.stdout.write(answer.get("stdout", ""))
sys.exit(answer.get("exit", 0))
'''

LOCATION = "/plugins/acme-tickets"
SHIM = f"{LOCATION}/acme_tickets_shim-0.0.0.dist-info/entry_points.txt"
SOURCE = "acme_tickets.TicketSourceConnector"
PROVIDER = "acme_tickets.VaultConfigProvider"

LISTING: dict[str, Any] = {
    "plugins": [
        {"class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
         "aliases": ["FileStreamSource", "FileStreamSourceConnector"], "version": "4.0.0",
         "type": "source", "scanned": True, "manifest": True, "loadable": True, "error": None,
         "location": "classpath"},
        {"class": SOURCE, "aliases": ["TicketSource", "TicketSourceConnector"],
         "version": "1.2.0", "type": "source", "scanned": True, "manifest": False,
         "loadable": True, "error": None, "location": LOCATION},
        {"class": "broken.Connector", "aliases": [], "version": None, "type": "source",
         "scanned": False, "manifest": True, "loadable": False,
         "error": "ModuleNotFoundError: No module named 'requests'",
         "location": "/plugins/broken"},
    ],
    "locations": [
        {"path": "classpath", "kind": "classpath", "errors": []},
        {"path": LOCATION, "kind": "modules", "errors": []},
        {"path": "/plugins/broken", "kind": "distributions",
         "errors": ["broken/__init__.py: ModuleNotFoundError: No module named 'requests'"]},
    ],
}


def change(action: str, *, entry: str | None = None, cls: str | None = None,
           type_: str | None = None, group: str | None = "connect_plane.source_connector"
           ) -> dict[str, Any]:
    return {"action": action, "location": LOCATION, "manifest": SHIM, "group": group,
            "entry": entry, "class": cls, "type": type_}


PLAN_CHANGES = [
    change("create-shim", group=None),  # a whole file: no group (as the real tool says)
    change("add", entry=f"{SOURCE} = acme_tickets:TicketSourceConnector", cls=SOURCE,
           type_="source"),
    change("add", entry=f"{PROVIDER} = acme_tickets:VaultConfigProvider", cls=PROVIDER,
           type_="configprovider", group="connect_plane.config_provider"),
]


def sync_output(*, dry_run: bool, changes: list[dict[str, Any]] | None = None) -> str:
    changes = PLAN_CHANGES if changes is None else changes
    return json.dumps({"dry_run": dry_run, "applied": bool(changes) and not dry_run,
                       "changes": changes})


class FakeCli:
    """The script at :attr:`path`; :meth:`answer` sets what a subcommand prints
    (``list``, ``dry-run`` for ``sync-manifests --dry-run``, ``sync-manifests``);
    :attr:`calls` are the argument lists it was run with."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dir = directory
        self.path = directory / "connect-plugin-path"
        self.path.write_text(f"#!{sys.executable}\n{_PROGRAM}", encoding="utf-8")
        self.path.chmod(0o755)
        self._script: dict[str, dict[str, Any]] = {}
        self._save()

    def answer(self, subcommand: str, stdout: str | dict[str, Any] = "", *, stderr: str = "",
               exit: int = 0, sleep: float = 0) -> FakeCli:
        text = stdout if isinstance(stdout, str) else json.dumps(stdout)
        self._script[subcommand] = {"stdout": text, "stderr": stderr, "exit": exit,
                                    "sleep": sleep}
        self._save()
        return self

    def _save(self) -> None:
        (self.dir / "script.json").write_text(json.dumps(self._script), encoding="utf-8")

    @property
    def calls(self) -> list[list[str]]:
        log = self.dir / "calls.jsonl"
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def on_path(monkeypatch: Any, directory: Path) -> None:
    """Put ``directory`` first on ``PATH``."""
    monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ.get('PATH', '')}")
