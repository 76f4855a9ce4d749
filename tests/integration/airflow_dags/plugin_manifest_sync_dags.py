"""DAGs of the plugin-manifest operator for tests/integration/test_plugin_manifest_sync.py,
run with ``dag.test(run_conf=...)`` against the ``kafka_connect_default`` connection and
the real ``connect-plugin-path``.

``kc_plugins_<mode>`` runs one mode on ``params.plugin_path`` / ``params.worker_configs``;
the ``sync`` ones wait for the workers (``params.worker_urls``, or the connection's
cluster), in the task or deferred to the trigger; ``_short_wait`` gives up after 3 s.
"""

from __future__ import annotations

import datetime
from typing import Any

from airflow.sdk import DAG

from airflow_provider.operators.plugins import KafkaConnectSyncPluginManifestsOperator

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
COMMON: dict[str, Any] = {"schedule": None, "start_date": START, "catchup": False,
                          "render_template_as_native_obj": True,
                          "params": {"plugin_path": None, "worker_configs": None,
                                     "worker_urls": None}}
ARGS: dict[str, Any] = {"plugin_path": "{{ params.plugin_path }}",
                        "worker_configs": "{{ params.worker_configs }}"}

with DAG("kc_plugins_list", **COMMON):
    KafkaConnectSyncPluginManifestsOperator(task_id="plugins", mode="list", **ARGS)

with DAG("kc_plugins_dry_run", **COMMON):
    KafkaConnectSyncPluginManifestsOperator(task_id="plugins", mode="dry_run", **ARGS)

with DAG("kc_plugins_sync", **COMMON):
    KafkaConnectSyncPluginManifestsOperator(
        task_id="plugins", mode="sync", wait_for_workers=True,
        worker_urls="{{ params.worker_urls }}", wait_timeout=30, poll_interval=0.2, **ARGS)

with DAG("kc_plugins_sync_deferred", **COMMON):
    KafkaConnectSyncPluginManifestsOperator(
        task_id="plugins", mode="sync", wait_for_workers=True,
        worker_urls="{{ params.worker_urls }}", wait_timeout=30, poll_interval=0.2,
        deferrable=True, **ARGS)

with DAG("kc_plugins_sync_short_wait", **COMMON):
    # A worker that never lists the plugin fails the task within 3 s.
    KafkaConnectSyncPluginManifestsOperator(
        task_id="plugins", mode="sync", wait_for_workers=True,
        worker_urls="{{ params.worker_urls }}", wait_timeout=3, poll_interval=0.2, **ARGS)
