"""Group membership of a distributed worker, through Kafka's group coordinator.

librdkafka only joins groups of protocol type ``consumer`` with its built-in assignors, so
workers use kafka-python's group client (``BaseCoordinator``), exactly as Kafka Connect's
``WorkerGroupMember`` uses the Java one: the coordinator keeps the member list, detects
failures by heartbeats (``session.timeout.ms``), elects the leader and runs the
JoinGroup/SyncGroup rounds; the leader computes the assignment (``assign`` callback).

Threads: kafka-python runs its network loop on its own thread (heartbeats keep flowing
while the herder thread is busy). Its callbacks (``_perform_assignment``, join
complete) run there too; they only compute or record, and the herder thread picks the
result up in ``poll()``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from kafka import errors as kafka_errors
from kafka.coordinator.base import BaseCoordinator
from kafka.net.compat import KafkaNetClient
from kafka.structs import MemberState

from worker.config.worker_config import DistributedConfig
from worker.errors import WorkerError
from worker.herder.distributed.protocol import (
    PROTOCOL,
    PROTOCOL_TYPE,
    MemberMetadata,
    ProtocolError,
    WorkerAssignment,
)

log = logging.getLogger(__name__)

#: Leader callback: (leader member id, {member id: metadata}) -> {member id: assignment}.
AssignFn = Callable[[str, dict[str, MemberMetadata]], dict[str, WorkerAssignment]]

BOOTSTRAP_TIMEOUT_MS = 30000
LEAVE_TIMEOUT_MS = 5000
#: How long a stopping leader waits for its heartbeat loop to end (one heartbeat in flight).
HEARTBEAT_STOP_TIMEOUT_MS = 2000


def client_settings(config: DistributedConfig) -> dict[str, Any]:
    """kafka-python settings from the worker's (librdkafka-named) client properties."""
    props = config.originals
    settings: dict[str, Any] = {
        "bootstrap_servers": config.bootstrap_servers.split(","),
        "client_id": f"{config.get('client.id') or 'connect'}-{config.group_id}-member",
        "security_protocol": props.get("security.protocol", "PLAINTEXT").upper(),
    }
    optional = {"ssl.ca.location": "ssl_cafile", "ssl.certificate.location": "ssl_certfile",
                "ssl.key.location": "ssl_keyfile", "ssl.key.password": "ssl_password",
                "sasl.mechanism": "sasl_mechanism", "sasl.mechanisms": "sasl_mechanism",
                "sasl.username": "sasl_plain_username",
                "sasl.password": "sasl_plain_password"}
    for key, name in optional.items():
        if props.get(key):
            settings[name] = props[key]
    return settings


class _Coordinator(BaseCoordinator):
    def __init__(self, client: KafkaNetClient, membership: GroupMembership,
                 **configs: Any) -> None:
        super().__init__(client, **configs)
        self._membership = membership

    def protocol_type(self) -> str:
        return PROTOCOL_TYPE

    def group_protocols(self) -> list[tuple[str, bytes]]:
        return [(PROTOCOL, self._membership.metadata().encode())]

    async def _on_join_prepare_async(self, generation: int, member_id: str,
                                     timeout_ms: int | None = None) -> None:
        log.info("Rebalance started (previous generation %d)", generation)
        if self._membership.on_rebalance is not None:
            self._membership.on_rebalance()

    def _perform_assignment(self, leader_id: str, protocol: str, members: list[Any]
                            ) -> dict[str, bytes]:
        decoded: dict[str, MemberMetadata] = {}
        for member in members:
            try:
                decoded[member.member_id] = MemberMetadata.decode(member.metadata)
            except ProtocolError as exc:
                # Such a member gets no work; the others carry on.
                log.error("Group member %s sent unreadable metadata: %s", member.member_id,
                          exc)
        self._membership.leading()  # leader of the round being formed, before its sync
        result = self._membership.assign_fn(leader_id, decoded)
        return {member.member_id: result[member.member_id].encode()
                if member.member_id in result else b"" for member in members}

    async def _on_join_complete_async(self, generation: int, member_id: str, protocol: str,
                                      member_assignment_bytes: bytes) -> None:
        self._membership.joined(generation, member_id, member_assignment_bytes)


class GroupMembership:
    """This worker's membership in the cluster's group (herder thread API)."""

    def __init__(self, config: DistributedConfig, metadata: Callable[[], MemberMetadata],
                 assign_fn: AssignFn, on_rebalance: Callable[[], None] | None = None) -> None:
        self.config = config
        #: Told when a rebalance starts (the rebalance metrics), on the coordinator's thread.
        self.on_rebalance = on_rebalance
        self.metadata = metadata
        self.assign_fn = assign_fn
        self._client: KafkaNetClient | None = None
        self._coordinator: _Coordinator | None = None
        self._lock = threading.Lock()
        self._joined: tuple[int, str, WorkerAssignment | None] | None = None
        #: Rejoins asked for (sent in the metadata, so that each one starts a new round).
        self.rejoins = 0
        #: Whether the last join (completed, or being formed) made this worker the leader.
        self._leader = False

    def start(self) -> None:
        settings = client_settings(self.config)
        client = KafkaNetClient(**settings)
        client._net.start()
        try:
            client._manager.bootstrap(BOOTSTRAP_TIMEOUT_MS)
        except kafka_errors.KafkaError as exc:
            client._net.stop()
            raise WorkerError(f"Could not join group {self.config.group_id}: {exc}") from exc
        self._client = client
        self._coordinator = _Coordinator(
            client, self, group_id=self.config.group_id,
            session_timeout_ms=self.config.get("session.timeout.ms"),
            heartbeat_interval_ms=self.config.get("heartbeat.interval.ms"),
            max_poll_interval_ms=self.config.get("rebalance.timeout.ms"),
            api_version=client._manager.broker_version)

    def stop(self) -> None:
        """Leave the group (others rebalance at once, not after the session timeout) —
        unless this worker leads the group: it then lets its session expire.

        Tansu keeps a leader that leaves while the group is forming a new generation as
        that generation's leader, so the remaining members' SyncGroups fail forever (a
        leader that stops heartbeating is dropped and replaced after
        ``session.timeout.ms``). The leader cannot tell whether another member's
        JoinGroup has already started a round (its own view is still stable until its
        next heartbeat), and a follow-up round right after a membership change is the
        common case, so it never sends LeaveGroup. On Kafka this delays the rebalance after
        a leader stops by ``session.timeout.ms``, far below the
        ``scheduled.rebalance.max.delay.ms`` a departed worker's tasks wait anyway.
        """
        coordinator, client = self._coordinator, self._client
        self._coordinator = self._client = None
        if coordinator is not None and self._leader:
            log.info("Leaving group %s by session expiry (%d ms): this worker leads it",
                     self.config.group_id, self.config.get("session.timeout.ms"))
            _stop_heartbeat(coordinator)
            coordinator = None
        if coordinator is not None:
            try:
                coordinator.close(timeout_ms=LEAVE_TIMEOUT_MS)
            except kafka_errors.KafkaError as exc:
                log.warning("Leaving group %s failed: %s", self.config.group_id, exc)
        if client is not None:
            client._net.stop(LEAVE_TIMEOUT_MS)
            client.close()

    # --- herder thread ---------------------------------------------------------------------

    def poll(self, timeout_s: float) -> tuple[int, str, WorkerAssignment | None] | None:
        """Drive joining; return (generation, member id, assignment) once a join completed.

        Returns at once while the membership is stable; blocks through a rebalance.

        The assignment is None if the leader's answer did not parse (the caller rejoins).
        Raises WorkerError for a non-retriable group error (e.g. a Java worker in the
        group); the caller backs off and retries.
        """
        coordinator = self._require()
        coordinator.heartbeat.poll()  # we are alive: keeps max.poll.interval satisfied
        if coordinator.need_rejoin() or not coordinator.stable():
            # Once a join starts, wait for its outcome (bounded by the rebalance timeout),
            # as Kafka's herder does: kafka-python 3.0.12 discards a join that completes
            # between two calls and sends a new JoinGroup, costing a whole round.
            wait_ms = max(int(timeout_s * 1000), self.config.get("rebalance.timeout.ms"))
            try:
                coordinator.ensure_active_group(timeout_ms=wait_ms)
            except kafka_errors.KafkaError as exc:
                raise WorkerError(f"Group {self.config.group_id}: {exc}") from exc
        with self._lock:
            joined, self._joined = self._joined, None
        return joined

    def joined(self, generation: int, member_id: str, raw: bytes) -> None:
        """kafka-python's join-complete callback (its network thread)."""
        try:
            assignment: WorkerAssignment | None = WorkerAssignment.decode(raw)
        except ProtocolError as exc:
            log.error("Unreadable assignment for generation %d: %s", generation, exc)
            assignment = None
        with self._lock:
            self._joined = (generation, member_id, assignment)
            self._leader = assignment is not None and assignment.leader == member_id

    def leading(self) -> None:
        """kafka-python elected this worker the leader of the round being formed."""
        with self._lock:
            self._leader = True

    def request_rejoin(self) -> None:
        """Start a new round: ``metadata()`` should differ from the last join's (see
        ``protocol``), which the herder ensures with its rejoin counter."""
        self.rejoins += 1
        self._require().request_rejoin()

    @property
    def stable(self) -> bool:
        coordinator = self._coordinator
        return (coordinator is not None and coordinator.stable()
                and not coordinator.need_rejoin())

    @property
    def member_id(self) -> str:
        return str(self._require().group_metadata().member_id)

    def lost(self) -> bool:
        """True when the group no longer counts us as a member: kicked out (generation
        reset) or, while not rebalancing, no heartbeat answered for a session timeout.

        (During a JoinGroup round heartbeats pause; a member expelled meanwhile learns it
        from the JoinGroup answer, which resets the generation.)"""
        coordinator = self._coordinator
        if coordinator is None or coordinator.state is MemberState.UNJOINED:
            return True
        return bool(coordinator.state is MemberState.STABLE
                    and coordinator.heartbeat.session_timeout_expired())

    def _require(self) -> _Coordinator:
        if self._coordinator is None:
            raise WorkerError("Not a member of the group (not started or stopped)")
        return self._coordinator


def _stop_heartbeat(coordinator: _Coordinator) -> None:
    """End the heartbeat loop without leaving the group, before the network loop it runs
    on stops: a loop cancelled by that stop logs "Unhandled Heartbeat loop error" at ERROR
    (kafka-python's ``close()``, which a leaving member calls, ends it the same way)."""
    coordinator._close_heartbeat()
    task = coordinator._heartbeat_loop_future
    if task is None or task.is_done:
        return
    try:
        coordinator._manager.run(coordinator._manager.wait_for, task,
                                 HEARTBEAT_STOP_TIMEOUT_MS)
    except Exception as exc:  # noqa: BLE001 - a timeout or the loop's own error: stop anyway
        log.debug("Heartbeat loop did not end cleanly: %r", exc)
