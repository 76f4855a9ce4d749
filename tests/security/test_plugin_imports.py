"""Class names in connector configs import nothing but plugins (issue #41, item 6).

A class-typed key (``connector.class``, the converters, ``transforms.<a>.type``,
``predicates.<a>.type``) used to be imported as a Python path whatever module it named:
validating ``connector.class=this.s`` printed the Zen of Python into the worker's log, and
any module of the standard library or site-packages ran its import-time code. Now a name
resolves among the registered plugins (Java names, Kafka's aliases, their Python paths) and
imports only inside the packages of installed plugins and of ``plugin.import.packages``;
any other name is Kafka's "Failed to find any class that implements ..." error, without an
import.

Against a real ``connect-standalone`` subprocess over HTTP. The marker module lies on the
worker's ``PYTHONPATH`` (importable, not on ``plugin.path``) and writes a file when
imported; ``BROWSER`` points the web browser ``antigravity`` opens at a script that writes
another; ``this`` prints the Zen of Python. The last test lists the marker's package in
``plugin.import.packages`` and sees it imported: the markers do detect an import.
"""

from __future__ import annotations

import os
import stat
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import WorkerProcess, unique_name

pytestmark = pytest.mark.integration

MARKER = "cp_import_marker"
ZEN = "Beautiful is better than ugly."
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
NOT_FOUND = "Failed to find any class that implements"


class Markers:
    """The files a forbidden import would leave, and the worker's environment that makes
    the marker module and the browser script importable / runnable."""

    def __init__(self, root: Path) -> None:
        self.imported = root / "marker-imported"
        self.browser_opened = root / "browser-opened"
        modules = root / "modules"
        modules.mkdir()
        (modules / f"{MARKER}.py").write_text(textwrap.dedent(f"""\
            from pathlib import Path

            Path({str(self.imported)!r}).write_text("imported")
            print("cp_import_marker imported")
        """), encoding="utf-8")
        browser = root / "browser.sh"
        browser.write_text(f"#!/bin/sh\necho \"$@\" > '{self.browser_opened}'\n",
                           encoding="utf-8")
        browser.chmod(browser.stat().st_mode | stat.S_IXUSR)
        python_path = [str(modules), *filter(None, [os.environ.get("PYTHONPATH")])]
        self.env = {"PYTHONPATH": os.pathsep.join(python_path), "BROWSER": str(browser),
                    "DISPLAY": ""}

    def left(self) -> list[Path]:
        return [path for path in (self.imported, self.browser_opened) if path.exists()]


@pytest.fixture
def markers(tmp_path: Path) -> Markers:
    return Markers(tmp_path)


def start(standalone_worker: Callable[..., WorkerProcess], markers: Markers,
          import_packages: str | None = None) -> WorkerProcess:
    # None removes the fixture's own value: the default (empty) setting.
    return standalone_worker({"plugin.import.packages": import_packages}, env=markers.env)


def source(**extra: str) -> dict[str, str]:
    return {"name": unique_name("imports"), "connector.class": "FileStreamSource",
            "topic": unique_name("imports"), "file": "/dev/null", **extra}


def validate(client: httpx.Client, plugin: str, config: dict[str, str]) -> httpx.Response:
    return client.put(f"/connector-plugins/{plugin}/config/validate", json=config)


def errors_of(body: dict[str, Any]) -> dict[str, list[str]]:
    return {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]
            if c["value"]["errors"]}


def create_both_ways(client: httpx.Client, config: dict[str, str]) -> list[httpx.Response]:
    """POST /connectors and PUT /connectors/{c}/config with the same config."""
    name = config["name"]
    return [client.post("/connectors", json={"name": name, "config": config}),
            client.put(f"/connectors/{name}/config", json=config)]


def assert_nothing_imported(worker: WorkerProcess, markers: Markers) -> None:
    assert markers.left() == []
    log = worker.log_tail(5000)
    for text in (ZEN, "cp_import_marker imported"):
        assert text not in log


def test_an_unknown_connector_class_is_refused_without_an_import(
        standalone_worker: Callable[..., WorkerProcess], markers: Markers) -> None:
    worker = start(standalone_worker, markers)
    client = worker.client
    for class_name in ("this.s", f"{MARKER}.Connector", f"{MARKER}:Connector",
                       "antigravity.X", f"{MARKER}.sub.Connector"):
        expected = (f"{NOT_FOUND} Connector and which name matches {class_name}, available "
                    "connectors are: ")
        config = source(**{"connector.class": class_name})
        # As Kafka 4's AbstractHerder: a connector class that cannot be loaded is a 400, on
        # validation and on create alike.
        response = validate(client, class_name, config)
        assert response.status_code == 400, response.text
        assert response.json()["message"].startswith(expected)
        assert FILE_SOURCE in response.json()["message"]
        for created in create_both_ways(client, config):
            assert created.status_code == 400, created.text
            assert created.json()["message"].startswith(expected)
        # Describing a plugin resolves its name the same way.
        described = client.get(f"/connector-plugins/{class_name}/config")
        assert described.status_code == 404, described.text
        assert described.json()["message"].startswith(NOT_FOUND)
    assert client.get("/connectors").json() == []
    assert_nothing_imported(worker, markers)


def test_unknown_transforms_predicates_and_converters_are_errors_without_an_import(
        standalone_worker: Callable[..., WorkerProcess], markers: Markers) -> None:
    worker = start(standalone_worker, markers)
    client = worker.client
    bad = {
        "transforms": "x,m", "transforms.x.type": "antigravity.X",
        "transforms.m.type": f"{MARKER}.Transform",
        "predicates": "p,q", "predicates.p.type": "this.P",
        "predicates.q.type": f"{MARKER}:Predicate",
        "key.converter": "antigravity.Foo", "value.converter": f"{MARKER}.Converter",
        "header.converter": "this.HeaderConverter",
    }
    expected = {
        "transforms.x.type": f"{NOT_FOUND} Transformation and which name matches "
                             "antigravity.X",
        "transforms.m.type": f"{NOT_FOUND} Transformation and which name matches "
                             f"{MARKER}.Transform",
        "predicates.p.type": f"{NOT_FOUND} Predicate and which name matches this.P",
        "predicates.q.type": f"{NOT_FOUND} Predicate and which name matches "
                             f"{MARKER}:Predicate",
        "key.converter": f"{NOT_FOUND} Converter",
        "value.converter": f"{NOT_FOUND} Converter",
        "header.converter": f"{NOT_FOUND} Converter",
    }

    # Validation answers 200 with the errors on their keys, as Kafka's does.
    response = validate(client, "FileStreamSource", source(**bad))
    assert response.status_code == 200, response.text
    errors = errors_of(response.json())
    assert set(errors) == set(expected), errors
    for key, prefix in expected.items():
        [message] = errors[key]
        assert message.startswith(prefix), (key, message)
    assert response.json()["error_count"] == len(expected)
    # Create refuses the config with Kafka's summary of the same errors.
    for created in create_both_ways(client, source(**bad)):
        assert created.status_code == 400, created.text
        message = created.json()["message"]
        assert message.startswith("Connector configuration is invalid and contains the "
                                  f"following {len(expected)} error(s):")
        assert f"{NOT_FOUND} Transformation and which name matches antigravity.X" in message
    assert client.get("/connectors").json() == []
    assert_nothing_imported(worker, markers)


def test_registered_plugins_resolve_by_java_name_alias_and_python_path(
        standalone_worker: Callable[..., WorkerProcess], markers: Markers) -> None:
    worker = start(standalone_worker, markers)
    for class_name in (FILE_SOURCE, "FileStreamSource", "FileStreamSourceConnector",
                       "worker.builtin.connectors.file_stream.FileStreamSourceConnector",
                       "worker.builtin.connectors.file_stream:FileStreamSourceConnector"):
        check_registered(worker.client, class_name)
    assert_nothing_imported(worker, markers)


def check_registered(client: httpx.Client, class_name: str) -> None:
    config = source(**{
        "connector.class": class_name, "transforms": "route,insert",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "(.*)", "transforms.route.replacement": "$1-copy",
        "transforms.route.predicate": "always",
        "transforms.insert.type": "worker.builtin.transforms.insert_field.InsertFieldValue",
        "transforms.insert.static.field": "f", "transforms.insert.static.value": "v",
        "predicates": "always", "predicates.always.type": "TopicNameMatches",
        "predicates.always.pattern": ".*",
        "key.converter": "StringConverter",
        "value.converter": "worker.builtin.converters.json_converter:JsonConverter",
        "value.converter.schemas.enable": "false"})

    response = validate(client, "FileStreamSource", config)
    assert response.status_code == 200, response.text
    assert response.json()["name"] == FILE_SOURCE
    assert errors_of(response.json()) == {}
    name = config["name"]
    created = client.put(f"/connectors/{name}/config", json=config)
    assert created.status_code == 201, created.text
    assert client.get(f"/connectors/{name}").json()["type"] == "source"


def test_a_package_listed_in_plugin_import_packages_is_imported(
        standalone_worker: Callable[..., WorkerProcess], markers: Markers) -> None:
    # The deliberate way to name a class of the environment that no manifest declares;
    # it also shows the marker gives an import away.
    worker = start(standalone_worker, markers, import_packages=MARKER)
    response = validate(worker.client, "FileStreamSource",
                        source(**{"transforms": "m", "transforms.m.type": f"{MARKER}.Nope"}))
    assert response.status_code == 200, response.text
    [message] = errors_of(response.json())["transforms.m.type"]
    assert message.startswith(f"{NOT_FOUND} Transformation and which name matches "
                              f"{MARKER}.Nope")
    assert markers.left() == [markers.imported]
    # Other modules stay out of reach.
    refused = validate(worker.client, "this.s", source(**{"connector.class": "this.s"}))
    assert refused.status_code == 400, refused.text
    assert ZEN not in worker.log_tail(5000)
