"""``connect-plugin-path``: the contract the Airflow side relies on, run as a real process
(``python -m worker.cli.plugin_path``) on plugin paths generated in ``tmp_path``."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.worker.plugins import _builder as b

ROOT = Path(__file__).resolve().parents[4]


def cli(*args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "worker.cli.plugin_path", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == expect, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def cli_json(*args: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(cli(*args, "--json").stdout)
    return document


def plugins_of(document: dict[str, Any], location: Path) -> dict[str, dict[str, Any]]:
    return {p["class"]: p for p in document["plugins"] if p["location"] == str(location)}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """One location of each kind, with and without manifests, plus broken modules."""
    root = tmp_path / "plugins"
    b.modules_location(root, "plain", {"cpt_plain.py": b.source_module("PlainSource")})
    b.distributions_location(root, "dists", "acme-conn", {
        "cpt_acme/__init__.py": "", "cpt_acme/sink.py": b.sink_module("AcmeSink"),
        "cpt_acme/extra.py": b.converter_module("AcmeConverter"),
        "cpt_acme/broken.py": b.RAISES_AT_IMPORT,
    }, {b.SINK: {"com.acme.AcmeSink": "cpt_acme.sink:AcmeSink",
                 "com.acme.Gone": "cpt_acme.gone:Gone"},
        b.SOURCE: {"com.acme.Broken": "cpt_acme.broken:Broken"},
        "console_scripts": {"acme": "cpt_acme.cli:main"}}, version="4.5.6")
    b.wheel_location(root, "wheely", {"cpt_wheely/__init__.py": b.converter_module("WConv")},
                     None)
    b.zip_location(root, "zipped", {"cpt_zipped.py": b.source_module("ZSource"),
                                    "cpt_syntax.py": b.BROKEN_SYNTAX})
    return root


def test_list_json(tree: Path) -> None:
    document = cli_json("list", "--plugin-path", str(tree))
    kinds = {loc["path"]: loc["kind"] for loc in document["locations"]}
    assert kinds == {"classpath": "classpath", str(tree / "plain"): "modules",
                     str(tree / "dists"): "distributions",
                     str(tree / "wheely-1.0.0-py3-none-any.whl"): "wheel",
                     str(tree / "zipped.zip"): "zip"}
    assert set(document["plugins"][0]) == {"class", "aliases", "version", "type", "scanned",
                                           "manifest", "loadable", "error", "location"}
    builtin = plugins_of(document, Path("classpath"))[
        "org.apache.kafka.connect.file.FileStreamSourceConnector"]
    assert builtin | {"version": None} == {
        "class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "aliases": ["FileStreamSourceConnector", "FileStreamSource"], "version": None,
        "type": "source", "scanned": True, "manifest": True, "loadable": True, "error": None,
        "location": "classpath"}
    dists = plugins_of(document, tree / "dists")
    assert dists["com.acme.AcmeSink"] | {"aliases": None} == {
        "class": "com.acme.AcmeSink", "aliases": None, "version": "2.0.0", "type": "sink",
        "scanned": True, "manifest": True, "loadable": True, "error": None,
        "location": str(tree / "dists")}
    assert dists["cpt_acme.extra.AcmeConverter"]["manifest"] is False
    assert dists["com.acme.Gone"]["loadable"] is False
    assert "ModuleNotFoundError" in dists["com.acme.Gone"]["error"]
    assert "refuses to load" in dists["com.acme.Broken"]["error"]
    assert plugins_of(document, tree / "wheely-1.0.0-py3-none-any.whl")[
        "cpt_wheely.WConv"]["aliases"] == ["WConv"]
    zipped = next(loc for loc in document["locations"] if loc["kind"] == "zip")
    assert any("module cpt_syntax is not loadable: SyntaxError" in e for e in zipped["errors"])


def test_list_table_and_summary(tree: Path) -> None:
    out = cli("list", "--plugin-location", str(tree / "plain")).stdout
    lines = out.splitlines()
    assert lines[0].split("\t") == ["pluginName", "firstAlias", "secondAlias", "pluginVersion",
                                    "pluginType", "isLoadable", "hasManifest", "isScanned",
                                    "pluginLocation"]
    assert f"cpt_plain.PlainSource\tPlainSource\tN/A\t1.2.3\tsource\ttrue\tfalse\ttrue\t" \
           f"{tree / 'plain'}" in lines
    assert "Total plugins:      \t1" in lines and "Compatible plugins: \t0" in lines


def test_dry_run_plans_and_writes_nothing(tree: Path) -> None:
    before = b.tree_digest(tree)
    document = cli_json("sync-manifests", "--plugin-path", str(tree), "--dry-run")
    assert (document["dry_run"], document["applied"]) == (True, False)
    actions = {(c["action"], c["class"]) for c in document["changes"]}
    assert {("create-shim", None), ("add", "cpt_plain.PlainSource"),
            ("add", "cpt_acme.extra.AcmeConverter"), ("add", "cpt_wheely.WConv"),
            ("add", "cpt_zipped.ZSource"), ("remove", "com.acme.Gone")} == actions
    assert b.tree_digest(tree) == before  # byte for byte, no __pycache__ either


def test_sync_then_again_changes_nothing(tree: Path) -> None:
    wheel = tree / "wheely-1.0.0-py3-none-any.whl"
    wheel_bytes = wheel.read_bytes()
    first = cli_json("sync-manifests", "--plugin-path", str(tree))
    assert first["applied"] is True and first["changes"]
    after_first = b.tree_digest(tree)
    second = cli_json("sync-manifests", "--plugin-path", str(tree))
    assert (second["applied"], second["changes"]) == (False, [])
    assert b.tree_digest(tree) == after_first
    assert wheel.read_bytes() == wheel_bytes  # archives are never rewritten
    listed = cli_json("list", "--plugin-path", str(tree))["plugins"]
    assert all(p["manifest"] for p in listed if p["loadable"])
    assert "Broken" in {p["class"].rsplit(".", 1)[-1] for p in listed if not p["loadable"]}


def test_adds_into_the_owning_distributions_manifest_and_keeps_record_true(tree: Path
                                                                           ) -> None:
    dists = tree / "dists"
    document = cli_json("sync-manifests", "--plugin-location", str(dists))
    manifest = dists / "acme_conn-4.5.6.dist-info" / "entry_points.txt"
    add = next(c for c in document["changes"] if c["action"] == "add")
    assert add == {"action": "add", "location": str(dists), "manifest": str(manifest),
                   "group": "connect_plane.converter",
                   "entry": "cpt_acme.extra.AcmeConverter = cpt_acme.extra:AcmeConverter",
                   "class": "cpt_acme.extra.AcmeConverter", "type": "converter"}
    remove = next(c for c in document["changes"] if c["action"] == "remove")
    assert (remove["entry"], remove["group"]) == ("com.acme.Gone = cpt_acme.gone:Gone",
                                                  "connect_plane.sink_connector")
    text = manifest.read_text()
    assert "com.acme.Gone" not in text and "com.acme.Broken" in text  # broken: left alone
    assert "[console_scripts]\nacme = cpt_acme.cli:main" in text  # not ours: untouched
    record = {row[0]: row for row in csv.reader(
        (dists / "acme_conn-4.5.6.dist-info" / "RECORD").read_text().splitlines())}
    data = manifest.read_bytes()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    assert record["acme_conn-4.5.6.dist-info/entry_points.txt"][1:] == [f"sha256={digest}",
                                                                        str(len(data))]


def test_keep_not_found_and_empty_manifests(tmp_path: Path) -> None:
    root = tmp_path / "plugins"
    location = b.distributions_location(root, "gone", "gone-dist", {"cpt_gone_mod.py": "x = 1\n"},
                                        {b.SINK: {"com.example.Gone": "cpt_gone_mod:Gone"}})
    manifest = location / "gone_dist-1.0.0.dist-info" / "entry_points.txt"
    kept = cli_json("sync-manifests", "--plugin-path", str(root), "--keep-not-found")
    assert (kept["changes"], manifest.exists()) == ([], True)
    removed = cli_json("sync-manifests", "--plugin-path", str(root))
    assert [c["action"] for c in removed["changes"]] == ["remove", "delete-manifest"]
    assert not manifest.exists()


def test_worker_config_contributes_its_plugin_path_and_no_secret_leaks(tree: Path,
                                                                       tmp_path: Path) -> None:
    secret = "s3cr3t-Pa55word"
    config = tmp_path / "worker.properties"
    config.write_text(f"plugin.path={tree}\nssl.keystore.password={secret}\n")
    done = cli("list", "--worker-config", str(config), "--json")
    locations = [loc["path"] for loc in json.loads(done.stdout)["locations"]]
    assert str(tree / "plain") in locations and len(locations) == 5
    assert secret not in done.stdout + done.stderr


def test_usage_errors_exit_2_and_failures_exit_1(tmp_path: Path) -> None:
    for args in ([], ["list"], ["sync-manifests", "--dry-run"], ["list", "--bogus", "x"],
                 ["frobnicate", "--plugin-path", "x"]):
        done = cli(*args, expect=2)
        assert "usage: connect-plugin-path" in done.stderr
    missing = tmp_path / "nowhere"
    done = cli("list", "--plugin-location", str(missing), expect=1)
    assert f"Specified location {missing} does not exist" in done.stderr
    done = cli("sync-manifests", "--plugin-path", f"{tmp_path},{missing}", expect=1)
    assert (f"Unable to parse plugin path {tmp_path},{missing}: {missing} does not exist\n"
            in done.stderr)
    done = cli("list", "--worker-config", str(missing / "worker.properties"), expect=1)
    assert "Unable to read worker config at" in done.stderr and done.stdout == ""


def test_a_plugin_path_entry_that_cannot_be_listed_is_named() -> None:
    from worker.cli.plugin_path import plugin_path_problem

    denied = PermissionError(13, "Permission denied", "/opt/plugins")
    assert plugin_path_problem(denied) == "/opt/plugins cannot be listed: Permission denied"
    assert plugin_path_problem(FileNotFoundError(2, "x", "/p")) == "/p does not exist"


def test_a_reader_that_goes_away_gets_no_traceback(tree: Path) -> None:
    """`connect-plugin-path list | head -1`: the pipe closes before the table is written."""
    proc = subprocess.Popen([sys.executable, "-m", "worker.cli.plugin_path", "list",
                             "--plugin-path", str(tree)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the tool has scanned anything: its first print fails
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1
    assert "Traceback" not in err and "Broken pipe" not in err


def test_human_sync_output(tree: Path) -> None:
    out = cli("sync-manifests", "--plugin-location", str(tree / "plain"), "--dry-run").stdout
    assert out.startswith("Dry run started: No changes will be committed.\nScanning for "
                          "plugins...\n")
    shim = tree / "plain" / "connect_plugin_path_shim-1.0.0.dist-info" / "entry_points.txt"
    assert f"Dry Run Sync\t{shim} Add 1 Remove 0\n" in out
    assert "\tAdd\tcpt_plain.PlainSource = cpt_plain:PlainSource\n" in out
    cli("sync-manifests", "--plugin-location", str(tree / "plain"))
    again = cli("sync-manifests", "--plugin-location", str(tree / "plain")).stdout
    assert again.endswith("No changes required.\n")
