"""Fixtures shared by the integration modules that run against one worker per module.

``worker``: a standalone worker subprocess shared by the module's tests; a module sets
``WORKER_OVERRIDES`` (worker properties) to configure it, or defines its own ``worker``.
``client``: that worker's httpx client.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration._rest_helpers import shared_worker
from tests.support import WorkerProcess


@pytest.fixture(scope="module")
def worker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           kafka_bootstrap: str) -> Iterator[WorkerProcess]:
    overrides = getattr(request.module, "WORKER_OVERRIDES", None)
    with shared_worker(request, tmp_path_factory, kafka_bootstrap, overrides) as started:
        yield started


@pytest.fixture
def client(worker: WorkerProcess) -> httpx.Client:
    return worker.client
