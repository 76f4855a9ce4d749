"""Plugin manifests (KIP-898) from Airflow: list the plugins of a plugin path, plan or
sync their manifests with ``connect-plugin-path``, and wait until the workers list the
synced plugins."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from functools import cached_property
from typing import Any

from airflow.sdk import BaseOperator, Context

from airflow_provider.exceptions import KafkaConnectError, PluginsNotListedError
from airflow_provider.hooks import plugin_path as cli
from airflow_provider.hooks.kafka_connect import KafkaConnectHook
from airflow_provider.triggers.plugins import ConnectorPluginsTrigger
from airflow_provider.utils.deferrable import resolve_deferrable
from airflow_provider.utils.plugin_manifests import ManifestSync, PluginListing

MODES = ("list", "dry_run", "sync")
PLAN_XCOM_KEY = "plan"
#: The sync's result while the trigger waits for the workers (what the task returns).
SUMMARY_XCOM_KEY = "sync_summary"
#: How much longer than ``wait_timeout`` Airflow lets the trigger run before giving up on
#: it (the trigger ends itself at ``wait_timeout``).
DEFERRAL_GRACE_S = 120.0


class KafkaConnectSyncPluginManifestsOperator(BaseOperator):
    """Run ``connect-plugin-path`` on a plugin path and, after a sync, wait until the
    workers list the plugins it declared.

    ``mode``:

    * ``list``: ``connect-plugin-path list --json``; returns ``{"mode", "plugins",
      "locations"}`` — each plugin with its class, aliases, version, type, whether scanning
      finds it and a manifest declares it, whether it loads, its location;
    * ``dry_run``: ``sync-manifests --dry-run --json``, which writes nothing; the plan's
      changes go to XCom ``plan``;
    * ``sync`` (default): ``sync-manifests --json``: missing manifest entries are added
      (a shim ``.dist-info`` is created for a location without one) and, unless
      ``keep_not_found``, entries whose class cannot be found are removed; the changes
      made go to XCom ``plan``. With ``wait_for_workers``, then waits until every worker
      (``worker_urls``, or every member of the connection's cluster from
      ``GET /admin/cluster``) lists each added class in
      ``GET /connector-plugins?connectorsOnly=false``, for at most ``wait_timeout``
      seconds — in the triggerer with ``deferrable=True``
      (:class:`~airflow_provider.triggers.plugins.ConnectorPluginsTrigger`).

    ``dry_run`` and ``sync`` return ``{"mode", "dry_run", "applied", "changes", "counts",
    "classes", "workers"}``: ``classes`` the plugin classes added, ``workers`` URL →
    ``{class: version}`` as each worker listed them (``sync`` with ``wait_for_workers``
    only; else ``None``).

    ``keep_not_found`` (templated) keeps entries whose class cannot be found.

    What to read (templated; at least one): ``plugin_path`` (``plugin.path`` entries: a
    list or a comma-separated string), ``plugin_locations`` (single locations),
    ``worker_configs`` (worker properties files, each contributing its ``plugin.path``).

    A failing tool fails the task with its exit code and the head and tail of its stderr
    (:class:`~airflow_provider.exceptions.PluginPathCliError`); output that is not the
    documented JSON is a :class:`~airflow_provider.exceptions.PluginPathOutputError`.

    :param connect_plugin_path: the executable (a path, or a name on ``PATH``); by default
        ``connect-plugin-path`` on ``PATH``, else next to the Python running Airflow.
    :param cli_timeout: seconds the tool may run (scanning imports every plugin module).
    :param worker_urls: the workers to check (templated; ``http(s)://`` URLs). Given
        here, they may receive the connection's credentials.
    :param allow_discovered_workers: without ``worker_urls``, ask every member ``GET
        /admin/cluster`` advertises with the connection's credentials, whatever its origin
        (another host, http under an https connection) — knowingly. By default a member
        outside the connection's origin and its ``allowed_worker_urls`` extra fails the
        task before the tool runs
        (:class:`~airflow_provider.exceptions.UntrustedWorkerUrlError`).
    """

    template_fields: Sequence[str] = ("plugin_path", "plugin_locations", "worker_configs",
                                      "keep_not_found", "worker_urls")
    ui_color = "#d7e8f5"

    def __init__(self, *, mode: str = "sync", plugin_path: Sequence[str] | str | None = None,
                 plugin_locations: Sequence[str] | str | None = None,
                 worker_configs: Sequence[str] | str | None = None,
                 keep_not_found: bool | str = False, connect_plugin_path: str | None = None,
                 cli_timeout: float = cli.DEFAULT_CLI_TIMEOUT_S,
                 wait_for_workers: bool = False,
                 worker_urls: Sequence[str] | str | None = None, wait_timeout: float = 120.0,
                 poll_interval: float = 1.0,
                 kafka_connect_conn_id: str = "kafka_connect_default",
                 allow_discovered_workers: bool = False,
                 deferrable: bool | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if wait_for_workers and mode != "sync":
            raise ValueError(f"wait_for_workers applies to mode='sync' only (mode={mode!r} "
                             "changes nothing the workers could see)")
        if wait_timeout <= 0 or poll_interval <= 0 or cli_timeout <= 0:
            raise ValueError("wait_timeout, poll_interval and cli_timeout must be > 0")
        self.mode = mode
        self.plugin_path = plugin_path
        self.plugin_locations = plugin_locations
        self.worker_configs = worker_configs
        self.keep_not_found = keep_not_found
        self.connect_plugin_path = connect_plugin_path
        self.cli_timeout = cli_timeout
        self.wait_for_workers = wait_for_workers
        self.worker_urls = worker_urls
        self.wait_timeout = wait_timeout
        self.poll_interval = poll_interval
        self.kafka_connect_conn_id = kafka_connect_conn_id
        self.allow_discovered_workers = allow_discovered_workers
        self.deferrable = resolve_deferrable(deferrable)

    @cached_property
    def hook(self) -> KafkaConnectHook:
        """The connection's hook; the ``worker_urls`` given (rendered by now) may receive
        its credentials."""
        given = cli.given_worker_urls(self.worker_urls) if self.worker_urls else []
        return KafkaConnectHook(kafka_connect_conn_id=self.kafka_connect_conn_id,
                                trusted_worker_urls=given,
                                allow_discovered_workers=self.allow_discovered_workers)

    # ------------------------------------------------------------------ the run

    def execute(self, context: Context) -> dict[str, Any]:
        sources = cli.PluginSources.of(self.plugin_locations, self.plugin_path,
                                       self.worker_configs)
        executable = cli.find_executable(self.connect_plugin_path)
        if self.mode == "list":
            listing, run = cli.list_plugins(executable, sources, self.cli_timeout)
            self._log_stderr(run)
            self._log_listing(listing)
            return {"mode": self.mode, **listing.to_dict()}
        # Before anything is written: a connection that cannot name the workers fails
        # the task with the plugin path untouched.
        urls = self._workers() if self.wait_for_workers else []
        result, run = cli.sync_manifests(
            executable, sources, dry_run=self.mode == "dry_run",
            keep_not_found=cli.as_bool(self.keep_not_found, "keep_not_found"),
            timeout=self.cli_timeout)
        self._log_stderr(run)
        self._log_sync(result)
        context["ti"].xcom_push(key=PLAN_XCOM_KEY,
                                value=[change.to_dict() for change in result.changes])
        summary = {"mode": self.mode, **result.to_dict(), "counts": result.counts(),
                   "classes": result.added_classes(), "workers": None}
        if not self.wait_for_workers:
            return summary
        classes = result.classes_workers_list()
        if not classes:
            self.log.info("No added plugin that GET /connector-plugins lists: nothing to "
                          "wait for on %s", urls)
            return {**summary, "workers": {url: {} for url in urls}}
        self.log.info("Waiting up to %g s for %d worker(s) %s to list %s", self.wait_timeout,
                      len(urls), urls, ", ".join(classes))
        if self.deferrable:
            # In XCom, not the deferral's kwargs: those do not survive every way of
            # resuming (dag.test() resumes with the event alone).
            context["ti"].xcom_push(key=SUMMARY_XCOM_KEY, value=summary)
            self.defer(trigger=ConnectorPluginsTrigger(
                worker_urls=urls, classes=classes,
                kafka_connect_conn_id=self.kafka_connect_conn_id, timeout=self.wait_timeout,
                poll_interval=self.poll_interval), method_name="execute_complete",
                timeout=timedelta(seconds=self.wait_timeout + DEFERRAL_GRACE_S))
        listed = cli.wait_for_plugins(self.hook, urls, classes, timeout=self.wait_timeout,
                                      poll_interval=self.poll_interval)
        return self._listed(summary, listed)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        """Resume after :class:`ConnectorPluginsTrigger`: the sync's result (XCom
        ``sync_summary``) with what each worker listed, else the task fails (the manifests
        stay written)."""
        status = event.get("status")
        if status == "success":
            summary = context["ti"].xcom_pull(key=SUMMARY_XCOM_KEY)
            return self._listed(summary, event.get("listed") or {})
        if status == "timeout":
            raise PluginsNotListedError(str(event.get("message")),
                                        missing=event.get("missing") or {})
        raise KafkaConnectError(f"waiting for the workers to list the synced plugins failed: "
                                f"{event.get('message')}")

    # ------------------------------------------------------------------ helpers

    def _workers(self) -> list[str]:
        if self.worker_urls:
            return cli.given_worker_urls(self.worker_urls)
        return cli.discover_worker_urls(self.hook)

    def _listed(self, summary: dict[str, Any], listed: dict[str, Any]) -> dict[str, Any]:
        self.log.info("Every worker lists the synced plugins: %s", listed)
        return {**summary, "workers": listed}

    def _log_stderr(self, run: cli.CliRun) -> None:
        if run.stderr.strip():  # warnings: modules that do not load, shadowed modules...
            self.log.warning("%s said on stderr:\n%s", run.command,
                             cli.excerpt(run.stderr))

    def _log_listing(self, listing: PluginListing) -> None:
        self.log.info("%d plugin(s) in %d location(s); %d without a manifest, %d not "
                      "loadable", len(listing.plugins), len(listing.locations),
                      len(listing.without_manifest), len(listing.not_loadable))
        for plugin in listing.plugins:
            self.log.info("  %-12s %-60s %-10s scanned=%s manifest=%s %s%s", plugin.type,
                          plugin.class_name, plugin.version or "-", plugin.scanned,
                          plugin.manifest, plugin.location,
                          f" NOT LOADABLE: {plugin.error}" if not plugin.loadable else "")
        for location in listing.locations:
            for error in location.errors:
                self.log.warning("Location %s: %s", location.path, error)

    def _log_sync(self, result: ManifestSync) -> None:
        what = "Plan" if result.dry_run else "Changes made"
        if result.empty:
            self.log.info("%s: none, every manifest is in sync", what)
            return
        self.log.info("%s (%d): %s", what, len(result.changes), result.counts())
        for change in result.changes:
            self.log.info("  %s", change.describe())
