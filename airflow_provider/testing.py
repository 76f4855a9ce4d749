"""Reading what a ``dag.test()`` run left in the Airflow metadata database.

Helpers for tests and demos of DAGs that use this provider: task states and XComs of a
run, Asset events of a topic and the runs they queued. They read the metadata database
directly, so they work in the process that ran ``dag.test()`` (not through the API).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow.triggers.base import BaseTrigger


def task_states(dag_run: Any) -> dict[str, str | None]:
    """``{task_id: state}`` of the run's task instances."""
    from airflow.utils.session import create_session

    with create_session() as session:
        dag_run = session.merge(dag_run)
        return {ti.task_id: (str(ti.state) if ti.state else None)
                for ti in dag_run.get_task_instances(session=session)}


def xcom(dag_run: Any, task_id: str, key: str = "return_value") -> Any:
    """The XCom value a task of the run pushed under ``key`` (``None`` if absent)."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        row = session.execute(
            select(XComModel).where(XComModel.run_id == dag_run.run_id,
                                    XComModel.dag_id == dag_run.dag_id,
                                    XComModel.task_id == task_id,
                                    XComModel.key == key)).scalar()
        return None if row is None else XComModel.deserialize_value(row)


def asset_events(uri: str) -> list[dict[str, Any]]:
    """Every Asset event recorded for ``uri``: ``[{"source_task_id", "source_run_id",
    "extra"}]`` in creation order."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetEvent.source_task_id, AssetEvent.source_run_id, AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == uri).order_by(AssetEvent.id)).all()
        return [{"source_task_id": t, "source_run_id": r, "extra": e} for t, r, e in rows]


def queued_asset_runs(dag_id: str) -> list[str]:
    """URIs of the Asset events waiting to start a run of ``dag_id`` (Airflow queues them
    for DAGs scheduled on those Assets; a scheduler would create the run)."""
    from airflow.models.asset import AssetDagRunQueue, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        return list(session.scalars(
            select(AssetModel.uri).join(AssetDagRunQueue,
                                        AssetDagRunQueue.asset_id == AssetModel.id)
            .where(AssetDagRunQueue.target_dag_id == dag_id).order_by(AssetModel.uri)))


def record_trigger_runs(monkeypatch: Any, trigger_cls: type[BaseTrigger]
                        ) -> tuple[list[dict[str, Any]], threading.Event]:
    """Record every run of ``trigger_cls`` (``dag.test()`` runs triggers inline, in this
    process): returns the serialized kwargs of each run and an event set when one starts,
    i.e. once a task has really deferred."""
    runs: list[dict[str, Any]] = []
    started = threading.Event()
    original = trigger_cls.run

    async def run(self: Any) -> Any:
        runs.append(self.serialize()[1])
        started.set()
        async for event in original(self):
            yield event

    monkeypatch.setattr(trigger_cls, "run", run)
    return runs, started
