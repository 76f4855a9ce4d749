"""Nightly plugin-manifest sync of a Kafka Connect plugin path (KIP-898), checked against
the workers.

Workers running ``plugin.discovery=service_load`` see only plugins that a manifest (an
``entry_points.txt`` entry) declares; a connector dropped into ``plugin.path`` without one
stays invisible. ``kafka_connect_plugin_manifest_sync`` runs nightly:

1. ``plan`` runs ``connect-plugin-path sync-manifests --dry-run`` (writes nothing) on the
   plugin path (``plugin_path``, or the ``plugin.path`` of the worker config
   ``worker_config``);
2. ``should_sync`` goes on only when the plan is not empty — and says why it skips;
3. ``sync`` (:class:`KafkaConnectSyncPluginManifestsOperator`, deferred while it waits)
   writes the manifests, then waits until every worker (``worker_urls``, or every member
   of the ``kafka_connect_default`` connection's cluster) lists each added plugin in
   ``GET /connector-plugins`` — connect-plane workers re-read their manifests when a
   lookup misses, so no restart is needed;
4. ``check_workers`` asks every worker once more and reports which version of each synced
   plugin it runs.

Defaults come from ``CONNECT_PLANE_PLUGIN_PATH`` (comma-separated) and
``CONNECT_PLANE_WORKER_CONFIG``; the task must run where the plugin path is (a shared
volume, or the workers' host) with ``connect-plugin-path`` installed (the ``connect-plane``
distribution).
"""

from __future__ import annotations

import datetime
import logging
import os
from typing import Any, cast

from airflow.sdk import DAG, Param, task

from airflow_provider.operators.plugins import KafkaConnectSyncPluginManifestsOperator

START = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
# Deferred tasks: one retry. Airflow <= 3.3.2's scheduler can fail a task whose trigger
# fires within seconds of its deferral, before the scheduler has seen the deferring
# process exit (apache/airflow#67287, #72716: fixed there for the "scheduled" state only).
# Every task here is safe to run again: its end state is the same.
RETRY = {"retries": 1, "retry_delay": datetime.timedelta(seconds=5)}
PLUGIN_PATH = [entry.strip() for entry in os.environ.get("CONNECT_PLANE_PLUGIN_PATH",
                                                         "").split(",") if entry.strip()]
WORKER_CONFIG = os.environ.get("CONNECT_PLANE_WORKER_CONFIG") or None
# Airflow routes the "airflow.task" loggers into the task log (a module logger would be
# filtered out by the default level).
log = logging.getLogger("airflow.task")
Value = dict[str, Any]

# [START howto_operator_kafka_connect_plugin_manifest_sync]
with DAG(
    "kafka_connect_plugin_manifest_sync",
    default_args=RETRY,
    schedule="@daily",
    start_date=START,
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,
    tags=["kafka-connect", "plugins"],
    params={
        # plugin.path entries, and/or a worker config whose plugin.path is read.
        "plugin_path": Param(PLUGIN_PATH or None, type=["array", "null"]),
        "worker_config": Param(WORKER_CONFIG, type=["string", "null"]),
        # The workers to check; by default every member of the connection's cluster.
        "worker_urls": Param(None, type=["array", "null"]),
        # Keep manifest entries whose class cannot be found (else they are removed).
        "keep_not_found": Param(False, type="boolean"),
    },
):
    sources: dict[str, Any] = {"plugin_path": "{{ params.plugin_path }}",
                               "worker_configs": "{{ params.worker_config }}",
                               "keep_not_found": "{{ params.keep_not_found }}"}

    plan = KafkaConnectSyncPluginManifestsOperator(task_id="plan", mode="dry_run", **sources)

    @task.short_circuit
    def should_sync(planned: dict[str, Any]) -> bool:
        """Go on only when the dry run planned a change; log why not otherwise."""
        if not planned["changes"]:
            log.info("Nothing to sync: every plugin on the plugin path is declared in a "
                     "manifest and every manifest entry names a class that exists")
            return False
        log.info("%d manifest change(s) planned %s; plugins to declare: %s",
                 len(planned["changes"]), planned["counts"],
                 ", ".join(planned["classes"]) or "none (removals only)")
        return True

    sync = KafkaConnectSyncPluginManifestsOperator(
        task_id="sync",
        mode="sync",
        **sources,
        wait_for_workers=True,
        worker_urls="{{ params.worker_urls }}",
        wait_timeout=300,
        deferrable=True,
    )

    @task
    def check_workers(synced: dict[str, Any]) -> dict[str, Any]:
        """Every worker lists every synced plugin: ``{url: {class: version}}``."""
        from airflow_provider.hooks.kafka_connect import KafkaConnectHook
        from airflow_provider.utils.plugin_manifests import ManifestSync

        wanted = ManifestSync.from_json(synced).classes_workers_list()
        report: dict[str, dict[str, str | None]] = {}
        missing: dict[str, list[str]] = {}
        # The workers the sync task asked: given to it, or discovered within the
        # connection's credential scope; the credentials may go to them again.
        with KafkaConnectHook(trusted_worker_urls=list(synced["workers"])) as hook:
            for url in synced["workers"]:
                listed = {plugin.class_name: plugin.version for plugin in
                          hook.list_connector_plugins(connectors_only=False, worker_url=url)}
                report[url] = {name: listed[name] for name in wanted if name in listed}
                if len(report[url]) < len(wanted):
                    missing[url] = [name for name in wanted if name not in listed]
        if missing:
            raise RuntimeError(f"workers do not list the synced plugins: {missing}")
        log.info("%d worker(s) list the %d synced plugin(s): %s", len(report), len(wanted),
                 report)
        return {"workers": report, "classes": wanted, "changes": len(synced["changes"])}

    # TaskFlow takes the XComArgs here and passes their values at run time; the functions
    # are typed for the values.
    should_sync(cast(Value, plan.output)) >> sync
    check_workers(cast(Value, sync.output))
# [END howto_operator_kafka_connect_plugin_manifest_sync]
