"""Suite-wide fixtures: one Kafka for the whole session, admin client, worker processes.
Under pytest-xdist (``make test`` runs two processes) each process is a session of its own,
with its own broker and Airflow home; :func:`pytest_collection_modifyitems` groups tests.

Kafka (``docs/architecture.md`` §6), first match wins:

1. ``KAFKA_BOOTSTRAP_SERVERS`` set → that cluster (e.g. Apache Kafka from ``docker/``);
2. a Docker engine answers → Apache Kafka (KRaft) through testcontainers' Kafka module
   (image ``$CONNECT_PLANE_KAFKA_IMAGE``, default ``confluentinc/cp-kafka:7.6.0``; the
   module drives Confluent's image scripts, so it must be a ``cp-kafka`` 7.x image);
3. otherwise the embedded Tansu broker (:class:`worker.testing.EmbeddedBroker`).

``CONNECT_PLANE_TEST_KAFKA=embedded`` (or ``testcontainers``) forces a choice between 2
and 3, e.g. to use the fast embedded broker on a machine that has Docker.

Clients in tests use ``session.timeout.ms=6000``: on Tansu a group join waits about
half the session timeout.
"""

from __future__ import annotations

import logging
import os
import ssl
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.support import (
    WorkerProcess,
    WorkerStartError,
    airflow_env,
    unique_name,
    write_properties,
)
from worker.testing import DISTRIBUTED_MODULE, EmbeddedBroker, free_port

# Before anything imports airflow: the session gets its own AIRFLOW_HOME and SQLite DB.
AIRFLOW_HOME = airflow_env.configure()

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

log = logging.getLogger("tests.kafka")

#: Session timeout for consumer groups in tests (see the module docstring).
TEST_SESSION_TIMEOUT_MS = 6000
#: ``plugin.import.packages`` of test workers: the test plugins (``tests/support/*plugins.py``)
#: are named by import path, and the worker imports only inside the packages listed there.
TEST_IMPORT_PACKAGES = "tests.support"
DEFAULT_KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.0"


@dataclass(frozen=True)
class KafkaCluster:
    """The Kafka the session runs against.

    ``kind`` is ``"env"`` (``KAFKA_BOOTSTRAP_SERVERS``), ``"testcontainers"`` or
    ``"embedded"`` (Tansu: see docs/architecture.md §6 for its deviations from Apache Kafka).
    """

    bootstrap_servers: str
    kind: str


# ---------------------------------------------------------------------------- Kafka


def _docker_available(timeout: float = 3.0) -> bool:
    """True if a Docker engine answers a ping within ``timeout`` seconds."""
    try:
        import docker

        client = docker.from_env(timeout=int(max(timeout, 1)))
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no socket, no daemon, permission denied, ...
        return False


def _wait_for_metadata(bootstrap: str, timeout: float = 15.0) -> None:
    """Fail fast with a clear message when ``bootstrap`` does not answer metadata."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": log})
    try:
        admin.list_topics(timeout=timeout)
    except Exception as exc:
        pytest.fail(f"Kafka at {bootstrap} did not answer a metadata request: {exc}")


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """The session's Kafka: env var, else testcontainers, else embedded Tansu."""
    env_bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "").strip()
    if env_bootstrap:
        _wait_for_metadata(env_bootstrap)
        yield KafkaCluster(env_bootstrap, "env")
        return

    choice = os.environ.get("CONNECT_PLANE_TEST_KAFKA", "auto").strip().lower()
    if choice not in ("auto", "embedded", "testcontainers"):
        pytest.fail(f"CONNECT_PLANE_TEST_KAFKA={choice!r}: use auto, embedded or testcontainers")
    if choice == "testcontainers" or (choice == "auto" and _docker_available()):
        from testcontainers.community.kafka import KafkaContainer

        image = os.environ.get("CONNECT_PLANE_KAFKA_IMAGE", DEFAULT_KAFKA_IMAGE)
        container = KafkaContainer(image).with_kraft()
        try:
            container.start(timeout=180)
            bootstrap = container.get_bootstrap_server()
            _wait_for_metadata(bootstrap, timeout=60.0)
            yield KafkaCluster(bootstrap, "testcontainers")
        finally:
            container.stop()
        return

    broker = EmbeddedBroker(log_dir=tmp_path_factory.mktemp("tansu"))
    broker.start()
    try:
        yield KafkaCluster(broker.bootstrap_servers, "embedded")
    finally:
        broker.stop()


@pytest.fixture
def private_broker(kafka_cluster: KafkaCluster, tmp_path: Path) -> Iterator[EmbeddedBroker]:
    """A broker of this test alone, for faults that would break the session's broker for
    every other test (``pause()``: SIGSTOP). It is the session's kind of broker, Tansu;
    against an outside Kafka (env var, testcontainers) the test skips: it cannot freeze a
    broker process it does not own."""
    if kafka_cluster.kind != "embedded":
        pytest.skip(f"needs a broker process of its own; the session's Kafka is "
                    f"{kafka_cluster.kind}")
    broker = EmbeddedBroker(log_dir=tmp_path / "private-broker")
    broker.start()
    try:
        yield broker
    finally:
        if broker.is_paused:
            broker.resume()
        broker.stop()


@pytest.fixture(scope="session")
def kafka_bootstrap(kafka_cluster: KafkaCluster) -> str:
    """``bootstrap.servers`` of the session's Kafka."""
    return kafka_cluster.bootstrap_servers


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str) -> AdminClient:
    """A confluent-kafka ``AdminClient`` for the session's Kafka (thread-safe, shared)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": kafka_bootstrap, "logger": log})


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> Callable[..., str]:
    """Factory of fresh names: ``unique_topic()`` → ``<test name>-<random>``.

    Topics (and groups, connectors) are never shared between tests or runs, which
    matters against a long-lived ``KAFKA_BOOTSTRAP_SERVERS`` cluster.
    """

    def make(prefix: str = "") -> str:
        return unique_name(prefix or request.node.name)

    return make


# ---------------------------------------------------------------------------- workers

# ---------------------------------------------------------------------------- xdist

#: Test modules that keep both cores busy on their own (3-worker clusters bounced, Spark
#: jobs, the whole demo): under ``make test``'s two xdist processes they run one after
#: another in one process, beside the waiting-bound rest, never against each other.
CPU_HEAVY_MODULES = frozenset({"test_demo.py", "test_distributed_bounce.py",
                               "test_example_dags.py", "test_airflow_processes.py"})


def pytest_unconfigure(config: pytest.Config) -> None:
    """Delete this process's Airflow home, used or not (Airflow writes into it at import)."""
    airflow_env.cleanup()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With pytest-xdist's ``--dist loadgroup``: one scheduling group per test module (its
    module-scoped workers start once), one for the Spark tests (one Spark session) and one
    for :data:`CPU_HEAVY_MODULES`.

    ``tryfirst``: xdist's own hook turns the ``xdist_group`` marks into the node ids'
    ``@group`` suffix its scheduler reads; run after it, the marks are ignored and every
    test is scheduled on its own."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        if item.path.name in CPU_HEAVY_MODULES:
            group = "cpu-heavy"
        elif {"spark", "spark_kafka_source"} & set(item.path.parent.parts):
            group = "spark"
        else:
            group = str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail fast when xdist ignores the groups (it did, silently, with pytest 9.2 and
    xdist 3.8: module-scoped workers then start once per test and the CPU-heavy modules
    run against each other)."""
    if not getattr(session.config.option, "loadgroup", False) or not session.items:
        return
    ungrouped = [item.nodeid for item in session.items if "@" not in item.nodeid]
    if ungrouped:
        raise pytest.UsageError(
            f"--dist loadgroup is not grouping tests (e.g. {ungrouped[0]}): this pytest "
            "and pytest-xdist do not work together; use the versions in constraints.txt")


StandaloneWorkerFactory = Callable[..., WorkerProcess]

_PORT_CLASH_MARKERS = ("address already in use", "errno 98", "address in use")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Remember each phase's report on the item so finalizers can see test failures."""
    report = yield
    setattr(item, f"_report_{report.when}", report)
    return report


def _test_failed(node: pytest.Item | pytest.Collector) -> bool:
    return any(
        getattr(getattr(node, f"_report_{when}", None), "failed", False)
        for when in ("setup", "call")
    )


@pytest.fixture
def standalone_worker(
    kafka_bootstrap: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[StandaloneWorkerFactory]:
    """Factory that starts ``connect-standalone`` workers as subprocesses.

    ``standalone_worker(overrides=None, connector_files=(), *, start=True, env=None,
    startup_timeout=60.0) -> WorkerProcess``

    Each worker gets its own directory under ``tmp_path`` holding ``worker.properties``,
    its SQLite state (``connect.db``) and ``worker.log``, and a free REST port. The base
    properties are ``bootstrap.servers``, ``listeners``, ``storage.sql.url``,
    ``offset.flush.interval.ms=1000``, ``consumer.session.timeout.ms=6000`` and
    ``plugin.import.packages=tests.support`` (the test plugins); ``overrides`` replace or
    add keys (a value of ``None`` removes a key). Every worker is stopped when the test
    ends; the log tails of a failed test's workers are printed.

    HTTPS: ``scheme="https"`` makes the fixture's listener (and the worker's ``url``)
    https; ``ssl_context`` is the test side's client context (``worker.testing.tls``);
    ``extra_listeners`` are appended to ``listeners`` (e.g. an http one beside it).

    Basic auth: ``credentials=(user, password)`` puts them in the worker's ``url``, so the
    readiness probe and ``worker.client`` send them (``docs/security.md``).

    ``nofile``: the worker's ``RLIMIT_NOFILE`` (soft = hard).
    """
    workers: list[WorkerProcess] = []

    def make(
        overrides: Mapping[str, object | None] | None = None,
        connector_files: Sequence[Path] = (),
        *,
        start: bool = True,
        env: Mapping[str, str] | None = None,
        startup_timeout: float = 60.0,
        scheme: str = "http",
        ssl_context: ssl.SSLContext | None = None,
        extra_listeners: Sequence[str] = (),
        credentials: tuple[str, str] | None = None,
        nofile: int | None = None,
    ) -> WorkerProcess:
        workdir = tmp_path / f"worker-{len(workers) + 1}"
        workdir.mkdir()
        # A port picked by free_port() can be taken before the worker binds it: retry.
        for attempt in range(3):
            port = free_port()
            props: dict[str, object | None] = {
                "bootstrap.servers": kafka_bootstrap,
                "listeners": ",".join([f"{scheme}://127.0.0.1:{port}", *extra_listeners]),
                "storage.sql.url": f"sqlite:///{workdir / 'connect.db'}",
                "offset.flush.interval.ms": 1000,
                "consumer.session.timeout.ms": TEST_SESSION_TIMEOUT_MS,
                "plugin.import.packages": TEST_IMPORT_PACKAGES,
                **(overrides or {}),
            }
            props_file = write_properties(
                workdir / "worker.properties",
                {k: v for k, v in props.items() if v is not None},
            )
            worker = WorkerProcess(
                props_file,
                connector_files,
                url=f"{scheme}://{_userinfo(credentials)}127.0.0.1:{port}",
                log_path=workdir / "worker.log",
                startup_timeout=startup_timeout,
                env=env,
                ssl_context=ssl_context,
                nofile=nofile,
            )
            workers.append(worker)
            if not start:
                return worker
            try:
                return worker.start()
            except WorkerStartError as exc:
                clash = any(m in str(exc).lower() for m in _PORT_CLASH_MARKERS)
                if not clash or attempt == 2:
                    raise
        raise AssertionError("unreachable")

    yield make

    failed = _test_failed(request.node)
    for worker in reversed(workers):
        if failed:
            print(f"\n----- {worker!r}: tail of {worker.log_path} -----\n{worker.log_tail(80)}")
        worker.close()


def _userinfo(credentials: tuple[str, str] | None) -> str:
    """``user:password@`` for a URL (httpx sends it as basic auth), or nothing."""
    if credentials is None:
        return ""
    from urllib.parse import quote

    return f"{quote(credentials[0], safe='')}:{quote(credentials[1], safe='')}@"


# ----------------------------------------------------------------- distributed workers

#: Session timeout of test clusters' worker group: failures detected within seconds (on
#: Tansu each JoinGroup round also waits about half of it).
WORKER_SESSION_TIMEOUT_MS = 4000

#: Group timings of test clusters: failures detected within seconds, not minutes.
DISTRIBUTED_TEST_PROPS: dict[str, object] = {
    "session.timeout.ms": WORKER_SESSION_TIMEOUT_MS,
    "heartbeat.interval.ms": 500,
    "rebalance.timeout.ms": 20000,
    "scheduled.rebalance.max.delay.ms": 0,
    "config.storage.replication.factor": 1,
    "offset.storage.replication.factor": 1,
    "status.storage.replication.factor": 1,
    "offset.storage.partitions": 5,
    "status.storage.partitions": 3,
    "offset.flush.interval.ms": 1000,
    "consumer.session.timeout.ms": TEST_SESSION_TIMEOUT_MS,
    "plugin.import.packages": TEST_IMPORT_PACKAGES,
}


@dataclass
class DistributedCluster:
    """Workers of one ``group.id`` (``connect-distributed`` subprocesses)."""

    group_id: str
    workers: list[WorkerProcess]
    add_worker: Callable[[], WorkerProcess]

    def running(self) -> list[WorkerProcess]:
        return [w for w in self.workers if w.is_running]


DistributedClusterFactory = Callable[..., DistributedCluster]


@pytest.fixture
def distributed_cluster(
    kafka_bootstrap: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[DistributedClusterFactory]:
    """Factory: ``distributed_cluster(size=3, overrides=None, *, scheme="http",
    ssl_context=None) -> DistributedCluster``.

    Each cluster gets a unique ``group.id`` and internal topics, each worker a free REST
    port and its own directory under ``tmp_path`` (properties and ``worker.log``); the
    base properties are :data:`DISTRIBUTED_TEST_PROPS`. All workers are stopped when the
    test ends; a failed test prints every worker's log tail. ``scheme="https"`` makes each
    worker's listener https (the TLS settings come in ``overrides``); ``ssl_context`` is the
    test side's client context. ``extra_listeners`` are appended to each worker's
    ``listeners`` (e.g. ``https://127.0.0.1:0``); ``credentials=(user, password)`` go in
    each worker's ``url`` for basic auth, as for ``standalone_worker``.
    """
    workers: list[WorkerProcess] = []

    def make(size: int = 3, overrides: Mapping[str, object | None] | None = None,
             startup_timeout: float = 90.0, *, scheme: str = "http",
             ssl_context: ssl.SSLContext | None = None,
             extra_listeners: Sequence[str] = (),
             credentials: tuple[str, str] | None = None) -> DistributedCluster:
        group = unique_name("cluster")

        def add_worker() -> WorkerProcess:
            workdir = tmp_path / f"{group}-worker-{len(workers) + 1}"
            workdir.mkdir()
            port = free_port()
            props: dict[str, object | None] = {
                "bootstrap.servers": kafka_bootstrap,
                "listeners": ",".join([f"{scheme}://127.0.0.1:{port}", *extra_listeners]),
                "group.id": group,
                "config.storage.topic": f"{group}-configs",
                "offset.storage.topic": f"{group}-offsets",
                "status.storage.topic": f"{group}-status",
                **DISTRIBUTED_TEST_PROPS,
                **(overrides or {}),
            }
            props_file = write_properties(workdir / "worker.properties",
                                          {k: v for k, v in props.items() if v is not None})
            worker = WorkerProcess(props_file,
                                   url=f"{scheme}://{_userinfo(credentials)}127.0.0.1:{port}",
                                   log_path=workdir / "worker.log",
                                   startup_timeout=startup_timeout,
                                   module=DISTRIBUTED_MODULE, ssl_context=ssl_context)
            workers.append(worker)
            return worker

        members = [add_worker() for _ in range(size)]
        for worker in members:  # started together: the group forms once
            worker.launch()
        for worker in members:
            worker.wait_started()
        return DistributedCluster(group, members, add_worker)

    yield make

    failed = _test_failed(request.node)
    for worker in reversed(workers):
        if failed:
            print(f"\n----- {worker!r}: tail of {worker.log_path} -----\n{worker.log_tail(80)}")
        worker.close()


# ---------------------------------------------------------------------------- Airflow


@pytest.fixture(scope="session")
def airflow_db() -> Iterator[Path]:
    """The session's Airflow home with a migrated SQLite metadata database."""
    airflow_env.migrate()
    (AIRFLOW_HOME / "dags").mkdir(exist_ok=True)
    yield AIRFLOW_HOME


@pytest.fixture
def airflow_dag(airflow_db: Path) -> Callable[[Path, str], object]:
    """``load(dag_file, dag_id)``: copy a DAG file's folder into the session's DAG folder
    and return the parsed DAG, ready for ``dag.test()`` (Airflow 3 runs only DAGs of a
    bundle). The whole folder goes, so files a DAG finds beside itself (``dags/pipelines``)
    are there too; DAG files read their settings from the environment as they are parsed."""
    import shutil

    from airflow.dag_processing.dagbag import DagBag

    def load(dag_file: Path, dag_id: str) -> object:
        shutil.copytree(dag_file.parent, airflow_db / "dags", dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
        target = airflow_db / "dags" / dag_file.name
        bag = DagBag(str(target))
        assert not bag.import_errors, bag.import_errors
        dag = bag.get_dag(dag_id)
        assert dag is not None, f"{dag_file} defines no DAG {dag_id!r}"
        return dag

    return load


@pytest.fixture
def kafka_connect_conn(monkeypatch: pytest.MonkeyPatch) -> Callable[..., str]:
    """``define(conn_id, host=..., extra=..., login=..., password=...)``: an Airflow
    ``kafka_connect`` connection for this test (environment variable), returns its id."""

    def define(conn_id: str = "kafka_connect_default", **spec: object) -> str:
        for key, value in airflow_env.connection_env(conn_id, **spec).items():
            monkeypatch.setenv(key, value)
        return conn_id

    return define
