"""StandaloneHerder.start(): the stored connectors start on the herder thread while REST
can already answer; ready (KIP-1017 ``/health``) only once they started."""

from __future__ import annotations

import threading

from tests.support import wait_until
from tests.unit.worker.herder.conftest import GENERATOR, new_standalone_herder
from worker.storage.base import State, TargetState


def test_start_returns_before_the_stored_connectors_start_and_health_waits_for_them(
        ) -> None:
    herder = new_standalone_herder(stored=["stored"])
    # Hold the startup reconcile (the herder thread's first request) until released.
    release = threading.Event()
    reconcile = herder._reconciler.reconcile

    def held_reconcile() -> None:
        assert release.wait(10), "never released"
        reconcile()

    herder._reconciler.reconcile = held_reconcile  # type: ignore[method-assign]
    herder.start()
    try:
        herder.mark_ready()
        # start() and mark_ready() returned while the stored connector waits to start.
        assert herder.health().status == "starting"
        assert herder.worker.connectors == {}
        assert herder.connectors() == ["stored"]  # reads answer from the store meanwhile
        release.set()
        wait_until(lambda: herder.health().status == "healthy", timeout=10,
                   message="healthy once the stored connectors started")
        status = herder.status_store.get_connector("stored")
        assert status is not None and status.state is State.STOPPED
    finally:
        release.set()
        herder.stop()


def test_a_write_during_startup_runs_after_the_stored_connectors() -> None:
    herder = new_standalone_herder(stored=["stored"])
    herder.start()
    try:
        created = herder.put_connector_config(
            "new", GENERATOR, allow_replace=False, initial_state=TargetState.STOPPED)
        assert created.created
        # The write answered after the startup reconcile: both are on the worker.
        assert sorted(herder.worker.connectors) == ["new", "stored"]
    finally:
        herder.stop()
