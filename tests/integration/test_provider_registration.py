"""Airflow recognises the provider: ``provider.yaml`` is what ``get_provider_info()``
returns, every module it lists imports, every module defining a hook, operator, sensor or
trigger is listed, and Airflow's own CLI lists the provider, its connection type, form
fields, extra link and triggers."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from importlib.resources import files

import pytest
import yaml

import airflow_provider

pytestmark = pytest.mark.integration


def provider_yaml() -> dict:
    return yaml.safe_load(files("airflow_provider").joinpath("provider.yaml").read_text())


def test_get_provider_info_is_provider_yaml_and_valid() -> None:
    import jsonschema

    info = airflow_provider.get_provider_info()
    assert info == provider_yaml()
    import airflow

    schema_dir = os.path.dirname(airflow.__file__)
    for name in ("provider_info.schema.json", "provider.yaml.schema.json"):
        with open(os.path.join(schema_dir, name), encoding="utf-8") as schema:
            jsonschema.validate(info, json.load(schema))


def test_every_listed_module_and_class_imports() -> None:
    info = provider_yaml()
    modules = [module for section in ("hooks", "operators", "sensors", "triggers")
               for entry in info[section] for module in entry["python-modules"]]
    assert len(modules) == 15
    for module in modules:
        importlib.import_module(module)
    for path in [c["hook-class-name"] for c in info["connection-types"]] + info["extra-links"]:
        module, _, name = path.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), path


def test_every_hook_operator_sensor_and_trigger_module_is_listed() -> None:
    from airflow.sdk import BaseHook, BaseOperator, BaseSensorOperator
    from airflow.triggers.base import BaseTrigger

    info = provider_yaml()
    bases = {"hooks": BaseHook, "operators": BaseOperator, "sensors": BaseSensorOperator,
             "triggers": BaseTrigger}
    for section, base in bases.items():
        listed = {m for entry in info[section] for m in entry["python-modules"]}
        package = importlib.import_module(f"airflow_provider.{section}")
        defining = set()
        for found in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            if found.name.rpartition(".")[2].startswith("_"):
                continue  # private bases (operators._base) are not listed
            module = importlib.import_module(found.name)
            if any(issubclass(cls, base) and cls.__module__ == module.__name__
                   for _, cls in inspect.getmembers(module, inspect.isclass)):
                defining.add(found.name)
        assert defining == listed, section


def airflow_cli(*args: str) -> list[dict]:
    result = subprocess.run([sys.executable, "-m", "airflow", *args, "--output", "json"],
                            capture_output=True, text=True, timeout=180, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout[result.stdout.index("["):])


def test_airflow_lists_the_provider_and_its_connection_type(airflow_db) -> None:
    providers = {p["package_name"]: p for p in airflow_cli("providers", "list")}
    assert providers["connect-plane"]["version"] == airflow_provider.__version__
    hooks = {h["connection_type"]: h for h in airflow_cli("providers", "hooks")}
    assert hooks["kafka_connect"]["class"] == \
        "airflow_provider.hooks.kafka_connect.KafkaConnectHook"
    assert hooks["kafka_connect"]["hook_name"] == "Kafka Connect"
    widgets = {w["connection_parameter_name"] for w in airflow_cli("providers", "widgets")}
    assert {f"extra__kafka_connect__{field}" for field in (
        "verify", "ca_bundle", "client_cert", "client_key", "timeout", "bootstrap_servers",
        "status_topic", "kafka_config")} <= widgets
    behaviours = {b["field_behaviours"] for b in airflow_cli("providers", "behaviours")}
    assert "kafka_connect" in behaviours
    links = {link["extra_link_class_name"] for link in airflow_cli("providers", "links")}
    assert "airflow_provider.utils.links.ConnectorStatusLink" in links
    triggers = {t["class"] for t in airflow_cli("providers", "triggers")}
    assert {"airflow_provider.triggers.certificates",
            "airflow_provider.triggers.connector_state",
            "airflow_provider.triggers.plugins",
            "airflow_provider.triggers.status_topic"} <= triggers
