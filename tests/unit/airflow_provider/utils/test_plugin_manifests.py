"""``connect-plugin-path --json`` output as typed results: the contract's shapes parse and
render back unchanged for XCom; anything else is refused naming the command and the
problem."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from airflow_provider.exceptions import PluginPathOutputError
from airflow_provider.utils.plugin_manifests import (
    ENTRY_POINT_GROUPS,
    ManifestChange,
    ManifestSync,
    parse_listing,
    parse_sync,
)
from tests.unit.airflow_provider._fake_cli import (
    LISTING,
    PROVIDER,
    SOURCE,
    change,
    sync_output,
)


def test_listing_parses_and_renders_back() -> None:
    listing = parse_listing(json.dumps(LISTING))
    assert listing.to_dict() == LISTING
    json.dumps(listing.to_dict())
    builtin, ours, broken = listing.plugins
    assert (ours.class_name, ours.version, ours.type, ours.location) == (
        SOURCE, "1.2.0", "source", "/plugins/acme-tickets")
    assert ours.aliases == ("TicketSource", "TicketSourceConnector")
    assert ours.needs_manifest and not builtin.needs_manifest and not broken.needs_manifest
    assert listing.without_manifest == [ours]
    assert listing.not_loadable == [broken] and "requests" in (broken.error or "")
    assert [loc.kind for loc in listing.locations] == ["classpath", "modules", "distributions"]
    assert listing.locations[2].errors[0].startswith("broken/__init__.py")


def test_an_empty_listing_is_fine() -> None:
    listing = parse_listing('{"plugins": [], "locations": []}\n')
    assert listing.plugins == () and listing.without_manifest == []


def test_sync_parses_and_renders_back() -> None:
    result = parse_sync(sync_output(dry_run=True))
    assert result.to_dict() == json.loads(sync_output(dry_run=True))
    assert result.dry_run and not result.applied and not result.empty
    assert [c.action for c in result.changes] == ["create-shim", "add", "add"]
    assert result.added_classes() == [SOURCE, PROVIDER]
    # Config providers are not in GET /connector-plugins: not waited for.
    assert result.classes_workers_list() == [SOURCE]
    assert result.counts() == {"add": 2, "create-shim": 1}
    assert result.changes[1].describe() == (
        f"add             connect_plane.source_connector: {SOURCE} = "
        "acme_tickets:TicketSourceConnector in "
        "/plugins/acme-tickets/acme_tickets_shim-0.0.0.dist-info/entry_points.txt")
    assert result.changes[0].describe() == (
        "create-shim     /plugins/acme-tickets/acme_tickets_shim-0.0.0.dist-info/entry_points.txt")


def test_an_empty_plan() -> None:
    result = parse_sync(sync_output(dry_run=False, changes=[]))
    assert result.empty and not result.applied and result.counts() == {}
    assert result.added_classes() == [] and result.classes_workers_list() == []


def test_removals_add_nothing_to_wait_for() -> None:
    result = ManifestSync(False, True, (
        ManifestChange.from_json(change("remove", entry="gone.X = gone:X", cls="gone.X",
                                        type_="source")),
        ManifestChange.from_json(change("delete-manifest"))))
    assert result.added_classes() == [] and result.counts() == {"remove": 1,
                                                                "delete-manifest": 1}


def test_a_plugin_type_this_provider_does_not_know_is_kept_and_waited_for() -> None:
    body = {"dry_run": False, "applied": True, "changes": [
        change("add", entry="a.Fancy = a:Fancy", cls="a.Fancy", type_="fancy_plugin",
               group="connect_plane.fancy")]}
    result = parse_sync(json.dumps(body))
    assert "fancy_plugin" not in ENTRY_POINT_GROUPS
    assert result.classes_workers_list() == ["a.Fancy"]
    assert result.to_dict() == body


def _broken(path: list[Any], value: Any, base: dict[str, Any]) -> str:
    body = copy.deepcopy(base)
    target: Any = body
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return json.dumps(body)


@pytest.mark.parametrize(("stdout", "detail"), [
    ("", "printed nothing on stdout"),
    ("Plugins:\n  acme.Source  1.2.0", "did not print JSON; it printed: 'Plugins:"),
    ("[]", "the listing is not a JSON object"),
    ('{"plugins": []}', "the listing: 'locations' is missing or not a JSON array"),
    (_broken(["plugins", 1, "scanned"], "yes", LISTING),
     f"plugin '{SOURCE}': 'scanned' is missing or not a boolean"),
    (_broken(["plugins", 1, "manifest"], KeyError, LISTING),
     f"plugin '{SOURCE}': 'manifest' is missing or not a boolean"),
    (_broken(["plugins", 0, "class"], None, LISTING), "a plugin: 'class' is missing"),
    (_broken(["plugins", 1, "aliases"], [1], LISTING),
     f"plugin '{SOURCE}': 'aliases' is not a list of strings"),
    (_broken(["locations", 1, "errors"], "boom", LISTING),
     "location '/plugins/acme-tickets': 'errors' is missing or not a JSON array"),
])
def test_malformed_listings_are_refused(stdout: str, detail: str) -> None:
    with pytest.raises(PluginPathOutputError) as caught:
        parse_listing(stdout, "connect-plugin-path list --plugin-path /p --json")
    assert str(caught.value).startswith("connect-plugin-path list --plugin-path /p --json ")
    assert detail in str(caught.value)


SYNC = json.loads(sync_output(dry_run=False))


@pytest.mark.parametrize(("stdout", "detail"), [
    (json.dumps({"dry_run": False, "changes": []}), "'applied' is missing or not a boolean"),
    (json.dumps({"dry_run": True, "applied": True, "changes": []}),
     "a dry run says it applied changes"),
    (_broken(["changes", 1, "action"], "rename", SYNC),
     "unknown action 'rename' (expected one of add, remove, create-shim, delete-manifest)"),
    (_broken(["changes", 1, "manifest"], None, SYNC), "'manifest' is missing or not a string"),
    (_broken(["changes", 1, "class"], 7, SYNC), "a change: 'class' is not a string"),
    (_broken(["changes"], {}, SYNC), "'changes' is missing or not a JSON array"),
])
def test_malformed_sync_results_are_refused(stdout: str, detail: str) -> None:
    with pytest.raises(PluginPathOutputError, match="unexpected JSON") as caught:
        parse_sync(stdout)
    assert detail in str(caught.value)


def test_long_non_json_output_is_cut_in_the_error() -> None:
    with pytest.raises(PluginPathOutputError) as caught:
        parse_sync("x" * 5000)
    assert len(str(caught.value)) < 400 and str(caught.value).endswith("...'")

