"""DistributedHerder: one worker of a cluster sharing ``group.id``.

State lives in the three compacted topics (``worker.storage.kafka``); membership, failure
detection and the leader come from Kafka's group coordinator (``GroupMembership``). The
herder thread loops: drive the group (join, heartbeats run on their own thread), apply a
new assignment, react to config-topic updates, run queued requests, reconcile.

* Reads are answered by any worker from its own view of the topics.
* Writes (the operations are ``ThreadedHerder``'s; ``_write`` says how this herder carries
  them out) run on the leader (exactly one config-topic writer); a follower raises
  ``NotLeaderError`` carrying the leader's URL and REST forwards the request (``?forward=``
  as in Kafka). While a rebalance is under way (or one is due: the config changed and
  this worker asked to rejoin) a write waits for it to finish, as Kafka's herder keeps
  requests queued until its member is back in a stable group; only after
  ``REBALANCE_WAIT_S`` does it answer 409 with Kafka's message.
* The leader assigns with ``IncrementalAssignor`` (through ``GroupLeader``): balanced,
  incremental, revoke before reassign; a departed worker's work is held for
  ``scheduled.rebalance.max.delay.ms`` or until that worker rejoins, logged at INFO and
  listed by ``GET /admin/cluster`` (``cluster_info``).
* A worker whose membership lapses (expelled, or no heartbeat answered for a session
  timeout) stops all its connectors and tasks before others may be given them.
* Task configs are computed by the worker running the connector and written by the
  leader (forwarded over REST by a follower, ``POST /connectors/{c}/tasks``).
* The dynamic worker configuration is one ``worker-config`` record, written by the leader
  (which applies it before answering) and applied by every worker as it reads it; it is
  not part of the assignment: no rebalance, no reconcile, no task restart.
* Internal requests are signed (KIP-507) while the group is ``sessioned``: the leader
  keeps a session key in the config topic and replaces it when it expires, checked on
  every tick (``SessionKeys``); task configs go out signed with it and are checked with
  it before anything else (``verify_internal_request``).
"""

from __future__ import annotations

import logging
import ssl
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

from worker.config.worker_config import DistributedConfig
from worker.errors import (
    NotAssignedError,
    NotLeaderError,
    RebalanceNeededError,
    WorkerError,
)
from worker.herder.distributed import cluster_view
from worker.herder.distributed.assignor import Assignment
from worker.herder.distributed.group_leader import GroupLeader
from worker.herder.distributed.membership import GroupMembership
from worker.herder.distributed.protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    SESSIONED,
    MemberMetadata,
    WorkerAssignment,
)
from worker.herder.distributed.session_key import SessionKeys
from worker.herder.distributed.task_config_sender import TaskConfigSender
from worker.herder.health import starting
from worker.herder.models import (
    ClusterInfo,
    ClusterMemberInfo,
    ConnectorOffset,
    ConnectorStateInfo,
    HealthStatus,
    HeldWorkInfo,
    Message,
)
from worker.herder.reconcile import Reconciler, TaskConfigs
from worker.herder.request_signing import InternalRequestSignature
from worker.herder.threaded import REQUEST_TIMEOUT_S, ThreadedHerder
from worker.plugins.registry import PluginRegistry
from worker.runtime.loggers import Loggers
from worker.runtime.metrics.worker import RebalanceMetrics
from worker.runtime.worker import Worker
from worker.storage.base import TargetState, TaskId
from worker.storage.kafka import (
    ConfigUpdate,
    KafkaConfigBackingStore,
    KafkaOffsetBackingStore,
    KafkaStatusBackingStore,
    StatusUpdate,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How long a write waits for a rebalance to finish before answering 409. Rebalances come
#: back to back after a write (new connector, then its task configs) and each may take
#: ``session.timeout.ms / 2`` on Tansu, so this is generous; it stays below the 90 s a
#: follower waits for a forwarded request (``worker.rest.forward``), so that the 409 (or
#: the write's answer) reaches the client through the follower.
REBALANCE_WAIT_S = 60.0
#: Herder-thread poll interval: bounds how late a group event or config update is noticed.
TICK_S = 0.05
ERROR_BACKOFF_S = 1.0
#: How long work that was deleted stays in the assignment before a rebalance drops it.
STALE_REBALANCE_DELAY_S = 5.0


class DistributedHerder(ThreadedHerder):
    def __init__(self, config: DistributedConfig, registry: PluginRegistry, worker: Worker,
                 config_store: KafkaConfigBackingStore, offset_store: KafkaOffsetBackingStore,
                 status_store: KafkaStatusBackingStore, *, url: str,
                 kafka_cluster_id: str | None = None, loggers: Loggers | None = None) -> None:
        super().__init__(config, registry, worker, config_store, offset_store, status_store,
                         kafka_cluster_id, loggers)
        self.dist_config = config
        self.kafka_config_store = config_store
        self.kafka_status_store = status_store
        self.url = url
        self._protocol = str(config.get("connect.protocol")).lower()
        # connect-worker-rebalance-metrics of /metrics: the membership reports a round
        # starting, _on_assignment its end.
        self.rebalance_metrics = RebalanceMetrics(self._protocol, worker.metric_window)
        self.membership = GroupMembership(config, self._metadata, self._assign,
                                          on_rebalance=self.rebalance_metrics.started)
        self._leader = GroupLeader(int(config.get("scheduled.rebalance.max.delay.ms")))
        self._assignment: WorkerAssignment | None = None
        self._member_id = ""
        self._leader_last_round = False
        self._stable = threading.Event()
        self._rejoin_at: float | None = None
        self._cleanup_at: float | None = None
        self._updates: list[ConfigUpdate] = []
        self._updates_lock = threading.Lock()
        self._shape: dict[str, int] = {}
        self._running = False
        self._reconciler = Reconciler(worker, config_store, status_store,
                                      submit=self._submit, schedule=self._timers.schedule,
                                      publish_task_configs=self._publish_task_configs,
                                      owns_connector=self._owns_connector,
                                      owns_task=self._owns_task)
        self._keys = SessionKeys(config, config_store.session_key, config_store.put_session_key)
        self._sender = TaskConfigSender(lambda: self._leader_url(), sign=self._keys.sign)
        if self._protocol != SESSIONED:
            log.warning("Internal request verification will be disabled for this cluster as "
                        "this worker's connect.protocol configuration has been set to '%s'. "
                        "If this is not intentional, either remove the 'connect.protocol' "
                        "configuration from the worker config file or change its value to "
                        "'sessioned'. If this configuration is left as-is, the cluster will be "
                        "insecure (KIP-507).", self._protocol)

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        self.kafka_config_store.set_listener(self._on_config_update)
        self.kafka_status_store.set_listener(self._on_status_update)
        for store in (self.config_store, self.offset_store, self.status_store):
            store.start()
        self._load_worker_config()  # before REST serves: it may hold the TLS settings
        self._shape = self._shape_now()
        self.membership.start()
        self._running = True
        self._thread.start()
        log.info("Distributed herder started: group %s, advertised URL %s",
                 self.dist_config.group_id, self.url)

    def stop(self) -> None:
        if not self._running:
            return
        self._running = False
        self._requests.put(None)
        self._thread.join(REQUEST_TIMEOUT_S)
        self._sender.stop()
        for store in (self.config_store, self.offset_store, self.status_store):
            store.stop()

    def _loop(self) -> None:
        try:
            while self._running:
                try:
                    if not self._tick():
                        break
                except Exception:
                    log.exception("Herder tick failed; retrying")
                    time.sleep(ERROR_BACKOFF_S)
        finally:
            self._stable.clear()
            self._reconciler.stop_all()  # before leaving: no task runs outside the group
            self.membership.stop()

    def health(self) -> HealthStatus:
        if self._assignment is None:
            return starting()  # not yet a member of the group with an assignment
        return super().health()

    # --- the herder thread ---------------------------------------------------------------

    def _tick(self) -> bool:
        joined = self.membership.poll(TICK_S)
        if joined is not None:
            self._on_assignment(*joined)
        if self._assignment is not None and self.membership.lost():
            self._on_membership_lost()
        if self._rejoin_at is not None and time.monotonic() >= self._rejoin_at:
            self._rejoin_at = None
            self.membership.request_rejoin()
        self._process_config_updates()
        if self.is_leader() and self.membership.stable and self._signing_enabled():
            self._keys.rotate_if_due()  # as Kafka's tick: a key expires without a rebalance
        if self._cleanup_at is not None and time.monotonic() >= self._cleanup_at:
            self._cleanup_at = None
            if cluster_view.has_stale_work(self._assignment, self._shape):
                self.membership.request_rejoin()
        if self._assignment is not None and self.membership.stable:
            self._stable.set()
        else:
            self._stable.clear()
        return self._run_requests(TICK_S)

    def _on_assignment(self, generation: int, member_id: str,
                       assignment: WorkerAssignment | None) -> None:
        self._member_id = member_id
        if assignment is None or assignment.error != NO_ERROR:
            if assignment is not None and assignment.error == CONFIG_MISMATCH:
                log.warning("Leader could not read the config topic far enough; rejoining")
            self.membership.request_rejoin()
            return
        self._leader_last_round = assignment.leader == member_id
        if self._leader_last_round:
            self._leader.round_applied()
        try:
            self.kafka_config_store.refresh(self.dist_config.get("worker.sync.timeout.ms")
                                            / 1000)
        except WorkerError:
            log.warning("Could not read the config topic to the end", exc_info=True)
        if self.kafka_config_store.offset < assignment.config_offset:
            log.warning("Config topic behind the leader's offset %d; rejoining",
                        assignment.config_offset)
            self.membership.request_rejoin()
            return
        self.worker.status.generation = generation
        self._log_signing_change(assignment)
        self._assignment = assignment
        log.info("Joined generation %d as %s (leader %s): %d connector(s), %d task(s); "
                 "revoked %d connector(s), %d task(s)", generation,
                 "leader" if self._leader_last_round else "follower", assignment.leader_url,
                 len(assignment.assigned.connectors), len(assignment.assigned.tasks),
                 len(assignment.revoked.connectors), len(assignment.revoked.tasks))
        self._reconciler.reconcile()  # stops revoked work, starts newly assigned work
        self.rebalance_metrics.completed_round(generation, assignment.leader_url)
        self._rejoin_at = None
        if cluster_view.revoked_work_remains(assignment, self._shape_now()):
            self.membership.request_rejoin()  # revoked work may now go elsewhere
        elif assignment.delay_ms > 0 and self._leader_last_round:
            # Only the leader rejoins when the delay ends (the others follow the
            # coordinator): staggered rejoins would cost extra rounds.
            self._rejoin_at = time.monotonic() + assignment.delay_ms / 1000

    def _on_membership_lost(self) -> None:
        log.warning("Lost group membership: stopping all connectors and tasks")
        self._assignment = None
        self._stable.clear()
        self._reconciler.reconcile()  # owns nothing now: everything stops
        self.membership.request_rejoin()

    def _on_config_update(self, update: ConfigUpdate) -> None:
        """Config-store listener (its log thread): queue for the herder thread."""
        with self._updates_lock:
            self._updates.append(update)

    def _process_config_updates(self) -> None:
        with self._updates_lock:
            updates, self._updates = self._updates, []
        if any(u.kind == "session_key" for u in updates):
            log.info("Session key updated")  # used as read: nothing else to do
        config_updates = [u for u in updates if u.kind not in ("worker_config", "session_key")]
        if any(u.kind == "worker_config" for u in updates):
            # Applied by every worker as it reads it. No connector or task depends on it,
            # so it changes neither the shape (no rebalance) nor what runs (no reconcile).
            self._apply_worker_config()
        updates = config_updates
        if not updates:
            return
        shape = self._shape_now()
        if shape != self._shape:
            self._shape = shape
            if cluster_view.has_unassigned_work(self._assignment, shape):
                # New connectors or tasks: every worker asks for a rebalance, as in Kafka,
                # so that nobody waits for the next heartbeat to notice.
                self.membership.request_rejoin()
            elif self._cleanup_at is None:
                # Only deleted work (a STOPPED connector's tasks, a removed connector): its
                # owners stopped it already. Rebalance for the balance a little later, so
                # that stop → reset offsets → resume, which brings the same tasks back to
                # the same workers, needs no rebalance at all.
                self._cleanup_at = time.monotonic() + STALE_REBALANCE_DELAY_S
        for update in updates:
            if update.kind == "restart" and update.restart is not None:
                self._apply_restart(update.restart.connector, update.restart.include_tasks,
                                    update.restart.only_failed)
        if self._assignment is not None:
            self._reconciler.reconcile()

    # --- group protocol callbacks (kafka-python's network thread) -------------------------

    def _metadata(self) -> MemberMetadata:
        assignment = self._assignment
        owned = assignment.assigned if assignment is not None else Assignment()
        return MemberMetadata(self.url, self.worker.worker_id,
                              self.kafka_config_store.offset, owned, self.membership.rejoins,
                              self._protocol)

    def _assign(self, leader_id: str, members: dict[str, MemberMetadata]
                ) -> dict[str, WorkerAssignment]:
        wanted = max((m.config_offset for m in members.values()), default=-1)
        if self.kafka_config_store.offset < wanted:
            # Only when behind (as Kafka's leader): the followers' SyncGroup waits for
            # ours, and a broker such as Tansu fails theirs if ours comes late.
            try:
                self.kafka_config_store.refresh(
                    self.dist_config.get("worker.sync.timeout.ms") / 1000)
            except WorkerError:
                log.warning("Leader could not read the config topic", exc_info=True)
        return self._leader.assign(
            leader_id, members, config_offset=self.kafka_config_store.offset,
            current=self._shape_now(), led_last_round=self._leader_last_round,
            own_url=self.url)

    def _shape_now(self) -> cluster_view.Shape:
        return cluster_view.shape(self.config_store.view())

    # --- ownership -------------------------------------------------------------------------

    def _owns_connector(self, name: str) -> bool:
        assignment = self._assignment
        return assignment is not None and name in assignment.assigned.connectors

    def _owns_task(self, task: TaskId) -> bool:
        assignment = self._assignment
        return assignment is not None and task in assignment.assigned.tasks

    def _leader_url(self) -> str | None:
        assignment = self._assignment
        return assignment.leader_url if assignment is not None else None

    def is_leader(self) -> bool:
        assignment = self._assignment
        return assignment is not None and assignment.leader == self._member_id

    def use_inter_worker_tls(self, context: Callable[[], ssl.SSLContext]) -> None:
        """Composition root, before ``start()``: ``context`` is how this worker reaches an
        https leader with task configs (the REST server's client TLS, which follows the
        dynamic worker configuration)."""
        self._sender = TaskConfigSender(lambda: self._leader_url(), context,
                                        sign=self._keys.sign)

    def cluster_info(self) -> ClusterInfo:
        """The members of the current generation and the work held for workers that left,
        as the leader sent them to everyone."""
        assignment = self._assignment
        if assignment is None:
            return ClusterInfo(None, [])
        members = sorted((ClusterMemberInfo(m.worker_id, m.url) for m in assignment.cluster),
                         key=lambda m: (m.worker_id, m.url))
        held = [HeldWorkInfo(h.worker_id, h.url, sorted(h.assignment.connectors),
                             sorted(h.assignment.tasks),
                             datetime.fromtimestamp(h.until_ms / 1000, UTC))
                for h in assignment.held]
        return ClusterInfo(assignment.leader_url, members, held)

    # --- how a write is carried out ---------------------------------------------------------

    def _require_leader(self) -> None:
        """Herder thread: raise unless this worker is the leader of a stable group."""
        if self._assignment is None or not self.membership.stable:
            raise RebalanceNeededError()
        if not self.is_leader():
            raise NotLeaderError("Cannot complete request because this worker is not the "
                                 "leader", self._leader_url())

    def _when_stable(self, fn: Callable[[], T]) -> T:
        """Caller's thread: run ``fn`` once no rebalance is under way; if one starts before
        ``fn`` got to run (RebalanceNeededError), wait and retry, all within
        ``REBALANCE_WAIT_S``; then give up with Kafka's 409."""
        deadline = time.monotonic() + REBALANCE_WAIT_S
        while True:
            if not self._stable.wait(max(0.0, deadline - time.monotonic())):
                raise RebalanceNeededError()
            try:
                return fn()
            except RebalanceNeededError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(TICK_S)  # the herder thread clears _stable on its next tick

    def _write(self, fn: Callable[[], T], connector: str | None = None) -> T:
        """Run a write on the herder thread, as the leader of a stable group (what runs
        follows once the write comes back through the config topic)."""
        def checked() -> T:
            self._require_leader()
            return fn()
        return self._when_stable(lambda: self._call(checked))

    def _store_target_state(self, name: str, target: TargetState) -> None:
        if target is TargetState.STOPPED:
            # KIP-875: publish an empty task set, then the target state (Kafka's order).
            self.config_store.put_task_configs(name, [])
        super()._store_target_state(name, target)

    def _check_offsets_write(self) -> None:
        """KIP-875 in a cluster: offsets change on the leader of a stable group only."""
        self._require_leader()

    # A rebalance starting mid-request retries it: the connector's alter_offsets hook may
    # then be asked twice (it must not have side effects, as in Kafka's contract).
    def _modify_offsets(self, name: str, requested: list[ConnectorOffset] | None) -> Message:
        return self._when_stable(lambda: super(DistributedHerder, self)
                                 ._modify_offsets(name, requested))

    # --- signed internal requests (KIP-507) -------------------------------------------------

    def _signing_enabled(self) -> bool:
        """Whether the group runs the sessioned protocol (before the first assignment: this
        worker's own connect.protocol, as Kafka's member starts with its configured one)."""
        assignment = self._assignment
        return assignment.sessioned if assignment is not None else self._protocol == SESSIONED

    def _log_signing_change(self, assignment: WorkerAssignment) -> None:
        before = self._assignment
        if before is None or before.sessioned == assignment.sessioned:
            return
        if assignment.sessioned:
            log.info("Internal request validation has been re-enabled")
        else:
            log.warning("The protocol used by this Connect cluster has been downgraded from "
                        "'%s' to '%s' and internal request validation is now disabled. This "
                        "is most likely caused by a new worker joining the cluster with an "
                        "older protocol specified for the connect.protocol configuration; if "
                        "this is not intentional, either remove the connect.protocol "
                        "configuration from that worker's config file, or change its value to "
                        "'sessioned'. If this configuration is left as-is, the cluster will be "
                        "insecure (KIP-507).", before.protocol, assignment.protocol)

    def verify_internal_request(self, signature: InternalRequestSignature | None) -> None:
        """Kafka's check, on whichever worker the request reaches, before anything else."""
        if self._signing_enabled():
            self._keys.verify(signature)

    # --- task configs -------------------------------------------------------------------------

    def put_task_configs(self, name: str, configs: TaskConfigs) -> None:
        """Task configs computed by the worker running the connector (leader writes)."""
        def write() -> None:
            snapshot = self._snapshot_with(name)
            if snapshot.tasks(name) != configs:
                self.config_store.put_task_configs(name, configs)
        self._write(write)

    def _publish_task_configs(self, name: str, configs: TaskConfigs) -> None:
        """Reconciler hook (herder thread): the leader writes, a follower forwards."""
        if self.is_leader() and self.membership.stable:
            self.config_store.put_task_configs(name, configs)
        else:
            self._sender.send(name, configs)

    # --- restarts ----------------------------------------------------------------------------

    def _restart_connector_and_tasks(self, name: str, include_tasks: bool,
                                     only_failed: bool) -> ConnectorStateInfo:
        # Through the config topic: each worker restarts what it runs (_apply_restart).
        self.kafka_config_store.put_restart_request(name, include_tasks, only_failed)
        return cluster_view.restart_plan(self.connector_status(name), include_tasks,
                                         only_failed)

    def _check_assigned(self, name: str, task: TaskId | None) -> None:
        """A plain restart runs on the owner only (REST forwards it there)."""
        owned = self._owns_task(task) if task is not None else self._owns_connector(name)
        if not owned:
            assignment = self._assignment
            owner = assignment.owner_url(task if task is not None else name) \
                if assignment is not None else None
            what = f"task {name}-{task.task}" if task is not None else f"connector {name}"
            raise NotAssignedError(f"Cannot restart {what} since it is not assigned to this "
                                   "member", owner)

    def _apply_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        """A restart request read from the config topic: restart what runs here."""
        if not self.config_store.view().contains(name):
            return
        tasks = ({t: self.status_store.get_task(t) for t in self.worker.task_ids(name)}
                 if include_tasks else {})
        self._queue_restarts(name, self._owns_connector(name), tasks, only_failed)

    # --- KIP-558 ---------------------------------------------------------------------------

    def _on_status_update(self, update: StatusUpdate) -> None:
        """Status-store listener (its log thread). A topic record that is gone (any worker
        reset the connector's topics): running tasks here record their topics again."""
        if update.kind != "topic":
            return
        topics = {t.topic for t in self.status_store.get_topics(update.connector)}
        if update.topic not in topics:
            self._submit(lambda: self.worker.forget_active_topics(update.connector))
