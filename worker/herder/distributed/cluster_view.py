"""What a distributed worker derives from an assignment and the config: pure functions.

The *shape* of the config is connector name -> task count: all the assignment depends on.
The assignment's ``cluster`` lists every worker's work and ``held`` the work the leader
holds for workers that left, so each worker can tell whether the config holds work nobody
was given (rebalance now) or the assignment still holds work that was deleted (a rebalance
can wait). Held work counts as given: it waits for its worker, not for a rebalance.
"""

from __future__ import annotations

from worker.herder.distributed.protocol import WorkerAssignment
from worker.herder.models import AbstractState, ConnectorStateInfo, TaskState
from worker.storage.base import ClusterConfigState, State, TaskId

Shape = dict[str, int]


def shape(snapshot: ClusterConfigState) -> Shape:
    return {name: len(snapshot.tasks(name)) for name in snapshot.connector_configs}


def cluster_work(assignment: WorkerAssignment | None) -> tuple[set[str], set[TaskId]]:
    """Everything the generation of ``assignment`` assigned, on any worker, or held."""
    connectors: set[str] = set()
    tasks: set[TaskId] = set()
    if assignment is None:
        return connectors, tasks
    for work in (*(m.assignment for m in assignment.cluster),
                 *(h.assignment for h in assignment.held)):
        connectors |= work.connectors
        tasks |= work.tasks
    return connectors, tasks


def has_unassigned_work(assignment: WorkerAssignment | None, current: Shape) -> bool:
    connectors, tasks = cluster_work(assignment)
    return any(c not in connectors or any(TaskId(c, i) not in tasks for i in range(n))
               for c, n in current.items())


def has_stale_work(assignment: WorkerAssignment | None, current: Shape) -> bool:
    connectors, tasks = cluster_work(assignment)
    return any(c not in current for c in connectors) or any(
        t.connector not in current or t.task >= current[t.connector] for t in tasks)


def revoked_work_remains(assignment: WorkerAssignment, current: Shape) -> bool:
    """Whether revoked work still exists (it must be reassigned: rejoin now). Work revoked
    because it was deleted (a stopped or removed connector's tasks) needs no more rounds."""
    return any(c in current for c in assignment.revoked.connectors) or any(
        t.connector in current and t.task < current[t.connector]
        for t in assignment.revoked.tasks)


def restart_plan(status: ConnectorStateInfo, include_tasks: bool, only_failed: bool
                 ) -> ConnectorStateInfo:
    """The status as Kafka's leader answers a restart: what will restart shows RESTARTING."""
    def planned(state: str, restart: bool) -> str:
        return State.RESTARTING.value if restart else state
    connector = AbstractState(
        planned(status.connector.state,
                not only_failed or status.connector.state == State.FAILED.value),
        status.connector.worker_id, status.connector.trace)
    tasks = [TaskState(planned(t.state, include_tasks and (
        not only_failed or t.state == State.FAILED.value)), t.worker_id, t.trace, t.id)
        for t in status.tasks]
    return ConnectorStateInfo(status.name, connector, tasks, status.type)
