"""The Worker: starts and stops connectors and tasks on this process.

It owns no policy: the herder decides what should run; the worker builds the pieces
(plugin instances, converters, transformation chain, Kafka clients) and runs them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from typing import cast

from worker.api.connector import Connector, SinkConnector
from worker.api.converter import Converter
from worker.api.exceptions import ConnectException
from worker.api.headers import HeaderConverter
from worker.api.task import SinkTask, SourceTask
from worker.clients import factories as kafka_clients
from worker.config.providers import restore_placeholders
from worker.config.worker_config import WorkerConfig
from worker.plugins.registry import CONNECTOR_TYPES, PluginRegistry, PluginType
from worker.runtime import topic_creation
from worker.runtime.chain import TransformationChain
from worker.runtime.connector_config import TASKS_MAX_ENFORCE
from worker.runtime.errors.dead_letter_queue import DeadLetterQueueReporter
from worker.runtime.errors.handling import ErrorHandlingConfig
from worker.runtime.fd_budget import FdBudget
from worker.runtime.idle_poller import IdlePoller
from worker.runtime.metrics.sampled_stat import MetricWindow
from worker.runtime.metrics.tasks import TaskMetrics
from worker.runtime.metrics.worker import WorkerMetrics
from worker.runtime.sink_task import WorkerSinkTask
from worker.runtime.source_offsets import StoreOffsetReader
from worker.runtime.source_task import WorkerSourceTask
from worker.runtime.status import StatusReporter
from worker.runtime.worker_connector import WorkerConnector
from worker.runtime.worker_task import WorkerTask
from worker.storage.base import (
    OffsetBackingStore,
    State,
    StatusBackingStore,
    TargetState,
    TaskId,
)
from worker.util.memory import MemoryTrimmer
from worker.util.props import strip_prefix

log = logging.getLogger(__name__)


class TooManyTasksException(ConnectException):
    """A connector generated more task configs than its ``tasks.max`` (KIP-1004)."""

    def __init__(self, connector: str, tasks: int, max_tasks: int) -> None:
        super().__init__(
            f"The connector {connector} has generated {tasks} tasks, which is greater than "
            f"{max_tasks}, the maximum number of tasks it is configured to create. This "
            "behaviour should be considered a bug and is disallowed. If necessary, it can be "
            f"permitted by reconfiguring the connector with '{TASKS_MAX_ENFORCE}' set to "
            "false; however, this option will be removed in a future release of Kafka "
            "Connect.")


def check_tasks_max(connector: str, tasks: int, max_tasks: int,
                    config: Mapping[str, str]) -> None:
    """Kafka's ``tasks.max.enforce``: too many task configs fail the connector (default),
    or, set to false, run with a warning."""
    if tasks <= max_tasks:
        return
    if str(config.get(TASKS_MAX_ENFORCE, "true")).strip().lower() != "false":
        raise TooManyTasksException(connector, tasks, max_tasks)
    log.warning("The connector %s has generated %d tasks, which is greater than %d, the "
                "maximum number of tasks it is configured to create. This behavior should be "
                "considered a bug and will be disallowed in future releases of Kafka "
                "Connect. Please report this to the maintainers of the connector and request "
                "that they adjust their connector's taskConfigs() method to respect the "
                "maxTasks parameter.", connector, tasks, max_tasks)


class Worker:
    def __init__(self, worker_id: str, config: WorkerConfig, registry: PluginRegistry,
                 offset_store: OffsetBackingStore, status_store: StatusBackingStore) -> None:
        self.worker_id = worker_id
        self.config = config
        self.registry = registry
        self.offset_store = offset_store
        self.status = StatusReporter(status_store, worker_id)
        self.connectors: dict[str, WorkerConnector] = {}
        self.tasks: dict[TaskId, WorkerTask] = {}
        # connector → its running task ids: the herder asks once per connector and
        # reconcile, which must not scan every task of the worker (O(N²) at 500 tasks).
        self._task_ids: dict[str, set[TaskId]] = {}
        self._graceful_s = config.get("task.shutdown.graceful.timeout.ms") / 1000
        # /metrics (worker.runtime.metrics.collector): Kafka's metrics.sample.window.ms and
        # metrics.num.samples shape every windowed rate, average and maximum.
        self.metric_window = MetricWindow(config.get("metrics.sample.window.ms") / 1000,
                                          config.get("metrics.num.samples"))
        self.metrics = WorkerMetrics(self.metric_window)
        # Task starts that would leave too few file descriptors fail, naming the limit.
        self.fd_budget = FdBudget(tasks=lambda: len(self.tasks))
        # Idle sink tasks park their consumers here and sleep: one thread polls them all.
        self.idle_poller = IdlePoller()
        # What stopped tasks freed goes back to the operating system once stops settle.
        self.memory = MemoryTrimmer()

    # --- connectors ----------------------------------------------------------------------

    def start_connector(self, name: str, config: Mapping[str, str], target: TargetState,
                        on_reconfiguration: Callable[[str], None]) -> None:
        """Start a connector thread; failures (also of instantiation) are reported as FAILED
        by that thread, never raised here."""
        if name in self.connectors:
            raise RuntimeError(f"Connector {name} is already running on this worker")
        class_name = config.get("connector.class", "")

        def create() -> Connector:
            return self.registry.new_instance(class_name, CONNECTOR_TYPES)

        def reader(connector: Connector) -> StoreOffsetReader | None:
            return (None if isinstance(connector, SinkConnector)
                    else StoreOffsetReader(self.offset_store, name))

        wc = WorkerConnector(name, create, dict(config), target, self.status, reader,
                             on_reconfiguration, resolve=self.config.transformer.transform,
                             on_startup=self.metrics.connector_startup)
        self.connectors[name] = wc
        wc.start()

    def stop_connector(self, name: str) -> None:
        wc = self.connectors.pop(name, None)
        if wc is not None:
            wc.shutdown()
            wc.await_shutdown(self._graceful_s)

    def request_task_configs(self, name: str, max_tasks: int
                             ) -> Future[list[dict[str, str]]] | None:
        """Ask the running connector for task configs (computed on its own thread).

        The result carries ``task.class`` and, for sinks, ``topics``/``topics.regex``, as
        Kafka's task configs do. The connector computed them from its resolved config; as
        Kafka does, every key whose stored connector config value holds a
        ``${provider:...}`` placeholder gets the placeholder back, so that task configs are
        stored without resolved secrets. None if the connector is not on this worker.
        """
        wc = self.connectors.get(name)
        if wc is None:
            return None
        result: Future[list[dict[str, str]]] = Future()

        def decorate(raw: Future[list[dict[str, str]]]) -> None:
            connector = wc.connector  # set by the connector thread before it answers
            try:
                configs = raw.result()
                assert connector is not None
                task_class = connector.task_class()
                check_tasks_max(name, len(configs), max_tasks, wc.config)
            except TooManyTasksException as exc:
                wc.fail(exc)  # as Kafka: the connector FAILED, its tasks left as they are
                result.set_exception(exc)
                return
            except Exception as exc:
                result.set_exception(exc)
                return
            extra = {"task.class": f"{task_class.__module__}.{task_class.__qualname__}"}
            if isinstance(connector, SinkConnector):
                extra.update({k: wc.config[k] for k in ("topics", "topics.regex")
                              if k in wc.config})
            result.set_result(restore_placeholders([{**c, **extra} for c in configs],
                                                   wc.config))

        wc.task_configs(max_tasks).add_done_callback(decorate)
        return result

    def set_connector_target(self, name: str, target: TargetState) -> None:
        wc = self.connectors.get(name)
        if wc is not None and wc.target_state is not target:
            wc.transition_to(target)

    # --- tasks -------------------------------------------------------------------------

    def start_task(self, task_id: TaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], target: TargetState) -> None:
        """Start a task thread; failures are reported as FAILED, never raised.

        ``connector_config`` and ``task_config`` are as stored; the task is built from and
        started with both resolved (``${provider:...}`` placeholders), as Kafka does. A
        placeholder that does not resolve fails the task with an error naming it.
        """
        if task_id in self.tasks:
            raise RuntimeError(f"Task {task_id} is already running on this worker")
        self.status.task(task_id, State.UNASSIGNED)
        try:
            self.fd_budget.check_task_start()
        except ConnectException as exc:  # logged once per shortage by the budget
            self.metrics.task_startup(False)
            self.status.task(task_id, State.FAILED, exc)
            return
        try:
            resolve = self.config.transformer.transform
            resolved = resolve(connector_config)
            worker_task = self._build_task(task_id, resolved, resolve(task_config), target)
            worker_task.header_converter = self._header_converter(resolved)
        except Exception as exc:
            log.error("Cannot create task %s", task_id, exc_info=True)
            self.metrics.task_startup(False)
            self.status.task(task_id, State.FAILED, exc)
            return
        # As stored: the herder compares these with the store to see what changed.
        worker_task.connector_config = dict(connector_config)
        worker_task.stored_task_config = dict(task_config)
        self.tasks[task_id] = worker_task
        self._task_ids.setdefault(task_id.connector, set()).add(task_id)
        worker_task.start()

    def stop_tasks(self, task_ids: list[TaskId]) -> None:
        """Stop tasks in parallel and wait at most the graceful timeout overall."""
        stopping = [self.tasks.pop(t) for t in task_ids if t in self.tasks]
        for worker_task in stopping:
            ids = self._task_ids.get(worker_task.id.connector)
            if ids is not None:
                ids.discard(worker_task.id)
                if not ids:
                    del self._task_ids[worker_task.id.connector]
        for worker_task in stopping:
            worker_task.stop()
        for worker_task in stopping:
            worker_task.await_stop(self._graceful_s)
        if stopping:
            self.memory.request()

    def set_task_target(self, task_id: TaskId, target: TargetState) -> None:
        """Only a change reaches the task: every reconcile pass sets every task's target,
        and a transition wakes the task (a parked sink leaves its poller)."""
        worker_task = self.tasks.get(task_id)
        if worker_task is not None and worker_task.target_state is not target:
            worker_task.transition_to(target)

    def forget_active_topics(self, connector: str) -> None:
        """After a KIP-558 topic reset: the connector's running tasks record each topic
        again on its next use (as Kafka's tasks do, which consult the status store)."""
        for task_id in self.task_ids(connector):
            worker_task = self.tasks.get(task_id)
            if worker_task is not None:
                worker_task.seen_topics = set()  # a new set: the task thread may iterate

    def task_ids(self, connector: str) -> list[TaskId]:
        return sorted(self._task_ids.get(connector, ()))

    def stop(self) -> None:
        self.stop_tasks(list(self.tasks))
        self.memory.close()
        connectors = [self.connectors.pop(name) for name in list(self.connectors)]
        for wc in connectors:  # in parallel: one hung connector must not multiply the wait
            wc.shutdown()
        for wc in connectors:
            wc.await_shutdown(self._graceful_s)

    # --- building ------------------------------------------------------------------------

    def _build_task(self, task_id: TaskId, connector_config: Mapping[str, str],
                    task_config: dict[str, str], target: TargetState) -> WorkerTask:
        # The task class comes from the connector class, as in Kafka (task.class in the
        # stored config is informational and never imported from storage).
        connector = self.registry.new_instance(connector_config["connector.class"],
                                               CONNECTOR_TYPES)
        task = connector.task_class()()
        key_converter = self._converter(connector_config, "key.converter", is_key=True)
        value_converter = self._converter(connector_config, "value.converter", is_key=False)
        chain = TransformationChain.from_config(connector_config, self.registry)
        errors = ErrorHandlingConfig.from_connector_config(connector_config,
                                                           sink=isinstance(task, SinkTask))
        client_id = f"connector-{'consumer' if isinstance(task, SinkTask) else 'producer'}-" \
                    f"{task_id.connector}-{task_id.task}"
        flush_ms = self.config.get("offset.flush.interval.ms")
        on_topic = self._topic_tracker(task_id)
        metrics = TaskMetrics(task_id.connector, task_id.task,
                              "sink" if isinstance(task, SinkTask) else "source",
                              self.metric_window)
        metrics.on_startup = self.metrics.task_startup
        if isinstance(task, SourceTask):
            return WorkerSourceTask(
                task_id, task, task_config, target, self.status,
                producer_config=kafka_clients.producer_config(self.config, connector_config,
                                                              client_id, statistics=True),
                key_converter=key_converter, value_converter=value_converter, chain=chain,
                offset_store=self.offset_store, offset_flush_interval_ms=flush_ms,
                offset_flush_timeout_ms=self.config.get("offset.flush.timeout.ms"),
                error_config=errors, on_topic=on_topic, metrics=metrics,
                topic_creator=topic_creation.creator(  # KIP-158, Kafka's admin client id
                    self.config.get("topic.creation.enable"), connector_config,
                    lambda: {**kafka_clients.admin_config(self.config, connector_config),
                             "client.id": f"connector-adminclient-{task_id.connector}-"
                                          f"{task_id.task}"}))
        if isinstance(task, SinkTask):
            topics = [t.strip() for t in task_config.get("topics", "").split(",") if t.strip()]
            return WorkerSinkTask(
                task_id, task, task_config, target, self.status,
                consumer_config=kafka_clients.consumer_config(
                    self.config, connector_config, task_id.connector, client_id),
                topics=topics, topics_regex=task_config.get("topics.regex", "").strip(),
                key_converter=key_converter, value_converter=value_converter, chain=chain,
                offset_flush_interval_ms=flush_ms, error_config=errors,
                dlq=self._dead_letter_queue(task_id, connector_config, errors, metrics),
                on_topic=on_topic, metrics=metrics,
                max_poll_records=kafka_clients.max_poll_records(self.config, connector_config),
                idle_poller=self.idle_poller)
        raise TypeError(f"{type(task).__name__} is neither a SourceTask nor a SinkTask")

    def _dead_letter_queue(self, task_id: TaskId, connector_config: Mapping[str, str],
                           errors: ErrorHandlingConfig, metrics: TaskMetrics
                           ) -> DeadLetterQueueReporter | None:
        """The sink task's DLQ reporter, its clients configured as Kafka configures them:
        the producer like a source task's (worker ``producer.*``, connector
        ``producer.override.*``), the admin client with ``admin.*`` / ``admin.override.*``.
        The topic and producer are set up on the task's thread when it starts."""
        if not errors.dlq_topic:
            return None
        suffix = f"{task_id.connector}-{task_id.task}"
        return DeadLetterQueueReporter(
            task_id, errors.dlq_topic, errors.dlq_replication_factor,
            errors.dlq_context_headers,
            producer_config=kafka_clients.producer_config(
                self.config, connector_config, f"connector-dlq-producer-{suffix}",
                statistics=True),
            admin_config={**kafka_clients.admin_config(self.config, connector_config),
                          "client.id": f"connector-dlq-adminclient-{suffix}"},
            flush_timeout_s=self.config.get("offset.flush.timeout.ms") / 1000,
            metrics=metrics.errors)

    def _converter(self, connector_config: Mapping[str, str], key: str, is_key: bool,
                   kind: PluginType = PluginType.CONVERTER) -> Converter:
        # A connector-level converter takes its settings from the connector config;
        # otherwise the worker's converter with the worker's settings (as Kafka does).
        if connector_config.get(key):
            name, props = connector_config[key], strip_prefix(connector_config, key + ".")
        else:
            name, props = self.config.get(key), self.config.prefixed(key + ".")
        converter: Converter = self.registry.new_instance(name, kind)
        converter.configure(props, is_key)
        return converter

    def _header_converter(self, connector_config: Mapping[str, str]) -> HeaderConverter:
        """The task's ``header.converter`` (the connector's, else the worker's), configured:
        SimpleHeaderConverter by default, or any plugin with ``from_connect_header`` /
        ``to_connect_header`` (Kafka's converters double as header converters)."""
        # Not necessarily a Converter: SimpleHeaderConverter is a header converter only.
        return cast(HeaderConverter, self._converter(
            connector_config, "header.converter", False, PluginType.HEADER_CONVERTER))

    def _topic_tracker(self, task_id: TaskId) -> Callable[[str], None] | None:
        if not self.config.get("topic.tracking.enable"):
            return None
        return lambda topic: self.status.topic(topic, task_id)
