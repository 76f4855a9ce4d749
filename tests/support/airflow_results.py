"""Reading what a ``dag.test()`` run left in the Airflow metadata database."""

from __future__ import annotations

from typing import Any


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


def task_state_now(dag_id: str, task_id: str) -> str | None:
    """The newest task instance's state in the DB, read while a run may be in progress."""
    from airflow.models.taskinstance import TaskInstance
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        state = session.execute(
            select(TaskInstance.state).where(TaskInstance.dag_id == dag_id,
                                             TaskInstance.task_id == task_id)
            .order_by(TaskInstance.start_date.desc().nulls_last()).limit(1)).scalar()
        return str(state) if state else None
