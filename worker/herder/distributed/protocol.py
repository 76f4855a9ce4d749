"""The group protocol of distributed workers: what members and the leader exchange.

Workers join one Kafka group (``group.id``) with protocol type ``connect`` — the type Apache
Kafka Connect uses, so the coordinator refuses a mix of Java and Python workers in one group
(``INCONSISTENT_GROUP_PROTOCOL``) instead of letting them misread each other — and the
protocol name ``PROTOCOL``. Metadata and assignments are JSON:

* member metadata (JoinGroup): ``{"version", "url", "worker_id", "config_offset",
  "owned": {"connectors", "tasks"}, "rejoin", "protocol"}`` — ``owned`` is what the member runs now,
  which makes the rebalance incremental (KIP-415); ``rejoin`` counts the rejoins this
  member asked for, so a rejoin always carries changed metadata and the coordinator runs a
  new round (a coordinator may otherwise answer an unchanged member with the current
  generation, as Tansu does even for the leader); ``protocol`` is the member's
  ``connect.protocol`` (``eager``, ``compatible`` or ``sessioned``);
* assignment (SyncGroup): ``{"version", "error", "leader", "leader_url", "config_offset",
  "assigned", "revoked", "delay_ms", "cluster", "protocol", "held"}`` — ``cluster`` lists
  every member's URL, worker id and assignment, so any worker can forward a request to the
  owner of a connector or task; ``protocol`` is the lowest of the members' protocols,
  as Kafka's group settles on the highest protocol every member supports; ``held`` lists
  the work the leader holds for workers that left (``worker_id``, ``url``, ``assignment``,
  ``until``: epoch ms), so that every worker's ``GET /admin/cluster`` shows it (absent:
  none).

Rebalancing is the same whatever ``protocol`` says; it decides one thing, as in Kafka:
internal requests are signed and checked (KIP-507) only while the group is
``sessioned``. A member or assignment without the field (an older connect-plane worker,
which does not sign) counts as ``compatible``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from worker.herder.distributed.assignor import Assignment
from worker.storage.base import TaskId

PROTOCOL_TYPE = "connect"
PROTOCOL = "connect-plane-v1"
VERSION = 1

#: Kafka's ConnectProtocolCompatibility modes, lowest first.
PROTOCOLS = ("eager", "compatible", "sessioned")
SESSIONED = "sessioned"
#: What a member or assignment that does not say counts as.
UNSPECIFIED_PROTOCOL = "compatible"

NO_ERROR = 0
#: The leader could not read the config topic up to the offset some member had read.
CONFIG_MISMATCH = 1


class ProtocolError(ValueError):
    """Metadata or an assignment that does not parse."""


@dataclass(frozen=True)
class MemberMetadata:
    url: str
    worker_id: str
    config_offset: int
    owned: Assignment = field(default_factory=Assignment)
    rejoin: int = 0
    protocol: str = SESSIONED

    def encode(self) -> bytes:
        return _dump({"version": VERSION, "url": self.url, "worker_id": self.worker_id,
                      "config_offset": self.config_offset, "owned": self.owned.to_dict(),
                      "rejoin": self.rejoin, "protocol": self.protocol})

    @classmethod
    def decode(cls, raw: bytes) -> MemberMetadata:
        body = _load(raw)
        try:
            return cls(str(body["url"]), str(body["worker_id"]), int(body["config_offset"]),
                       Assignment.from_dict(body.get("owned") or {}),
                       int(body.get("rejoin", 0)), _protocol(body))
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed member metadata: {exc}") from exc


@dataclass(frozen=True)
class ClusterMember:
    url: str
    worker_id: str
    assignment: Assignment


@dataclass(frozen=True)
class HeldWork:
    """Work the leader holds for a worker that left, until ``until_ms`` (epoch ms)."""

    worker_id: str
    url: str
    assignment: Assignment
    until_ms: int


@dataclass(frozen=True)
class WorkerAssignment:
    """What the leader sent this member for one generation."""

    error: int
    leader: str
    leader_url: str
    config_offset: int
    assigned: Assignment = field(default_factory=Assignment)
    revoked: Assignment = field(default_factory=Assignment)
    delay_ms: int = 0
    cluster: tuple[ClusterMember, ...] = ()
    protocol: str = SESSIONED
    held: tuple[HeldWork, ...] = ()

    @property
    def sessioned(self) -> bool:
        """Whether internal requests are signed in this generation (KIP-507)."""
        return self.protocol == SESSIONED

    def owner_url(self, item: str | TaskId) -> str | None:
        """URL of the worker that runs a connector (name) or task, if any."""
        for member in self.cluster:
            owned = (member.assignment.tasks if isinstance(item, TaskId)
                     else member.assignment.connectors)
            if item in owned:
                return member.url
        return None

    def encode(self) -> bytes:
        return _dump({
            "version": VERSION, "error": self.error, "leader": self.leader,
            "leader_url": self.leader_url, "config_offset": self.config_offset,
            "assigned": self.assigned.to_dict(), "revoked": self.revoked.to_dict(),
            "delay_ms": self.delay_ms,
            "cluster": [{"url": m.url, "worker_id": m.worker_id,
                         "assignment": m.assignment.to_dict()} for m in self.cluster],
            "protocol": self.protocol,
            "held": [{"worker_id": h.worker_id, "url": h.url,
                      "assignment": h.assignment.to_dict(), "until": h.until_ms}
                     for h in self.held]})

    @classmethod
    def decode(cls, raw: bytes) -> WorkerAssignment:
        body = _load(raw)
        try:
            cluster = tuple(ClusterMember(str(m["url"]), str(m["worker_id"]),
                                          Assignment.from_dict(m["assignment"]))
                            for m in body.get("cluster", []))
            held = tuple(HeldWork(str(h["worker_id"]), str(h["url"]),
                                  Assignment.from_dict(h["assignment"]), int(h["until"]))
                         for h in body.get("held", []))
            return cls(int(body["error"]), str(body["leader"]), str(body["leader_url"]),
                       int(body["config_offset"]), Assignment.from_dict(body["assigned"]),
                       Assignment.from_dict(body["revoked"]), int(body.get("delay_ms", 0)),
                       cluster, _protocol(body), held)
        except (KeyError, TypeError, ValueError) as exc:
            raise ProtocolError(f"malformed assignment: {exc}") from exc


def group_protocol(members: list[str]) -> str:
    """The protocol a group of members with these protocols runs: the lowest."""
    return min(members, key=PROTOCOLS.index, default=SESSIONED)


def _protocol(body: dict[str, Any]) -> str:
    protocol = body.get("protocol", UNSPECIFIED_PROTOCOL)
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}")
    return str(protocol)


def _dump(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), sort_keys=True).encode()


def _load(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ProtocolError(f"not JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise ProtocolError("not a JSON object")
    return body
