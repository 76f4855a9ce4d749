"""The ``docker/`` stack, checked structurally: there is no Docker engine on the development
machines, so nothing is built or started here (docs/docker.md, "What is untested").

``docker/compose.yaml`` is read with ``yaml.safe_load`` and validated against the Compose
Specification's JSON schema (vendored in ``docker/schema/``: no network at test time); the
workers' properties files go through the worker's own loader and ``DistributedConfig``
(what ``connect-distributed`` does), and the Airflow connections through Airflow and the
hooks that use them. The images must agree on what crosses between them: Python minor
version (PySpark driver and executors), uid (the shared pipeline-output volume) and Java
major version (spark-submit and the Spark cluster).
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from worker.compose import worker_id
from worker.config.properties import load_properties
from worker.config.worker_config import DistributedConfig
from worker.rest.server import parse_listeners

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
COMPOSE_FILE = DOCKER / "compose.yaml"
DOCS = REPO / "docs" / "docker.md"
COMPOSE_SCHEMA = DOCKER / "schema" / "compose-spec.json"

CONNECT_SERVICES = ("connect-1", "connect-2", "connect-3")
#: service → {host port: container port}; docs/docker.md documents the same.
HOST_PORTS = {
    "kafka": {29092: 29092},
    "connect-1": {8083: 8083},
    "connect-2": {8084: 8083},
    "connect-3": {8085: 8083},
    "airflow": {8080: 8080},
    "spark-master": {8081: 8080},
    "spark-worker": {8082: 8081},
}
WORKER_PROPERTIES = "/etc/connect/worker.properties"
INTERNAL_TOPICS = {"config.storage.topic": "connect-configs",
                   "offset.storage.topic": "connect-offsets",
                   "status.storage.topic": "connect-status"}
SPARK_MASTER_URL = "spark://spark-master:7077"
#: The uid of the ``airflow`` user in the apache/airflow images (Airflow's docs: "the
#: default uid 50000"); the Spark image's user must have it too (pipeline-output volume).
AIRFLOW_IMAGE_UID = 50000
#: Java majors Spark 4 runs on.
SPARK_JAVA_MAJORS = {17, 21}


# --- reading the files ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def _ports(service: dict[str, Any]) -> list[tuple[str | None, int, int]]:
    """(host IP, host port, container port) of each published port (short or long syntax)."""
    out = []
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            out.append((entry.get("host_ip"), int(entry["published"]), int(entry["target"])))
            continue
        parts = str(entry).split("/")[0].split(":")
        assert len(parts) in (2, 3), f"port {entry!r} should publish a host port explicitly"
        host_ip = parts[0] if len(parts) == 3 else None
        out.append((host_ip, int(parts[-2]), int(parts[-1])))
    return out


def _volumes(service: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(type, source, target, read_only) of each mount; type is ``bind`` or ``volume``."""
    out = []
    for entry in service.get("volumes", []):
        if isinstance(entry, dict):
            out.append((entry["type"], entry["source"], entry["target"],
                        bool(entry.get("read_only"))))
            continue
        source, target, *mode = str(entry).split(":")
        kind = "bind" if source.startswith((".", "/", "~")) else "volume"
        out.append((kind, source, target, "ro" in (mode[0].split(",") if mode else [])))
    return out


def _dockerfile(service: dict[str, Any]) -> Path | None:
    build = service.get("build")
    if build is None:
        return None
    if isinstance(build, str):
        build = {"context": build}
    context = (DOCKER / build.get("context", ".")).resolve()
    return context / build.get("dockerfile", "Dockerfile")


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in dockerfile.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical, pending = pending + line, ""
        word, _, args = logical.partition(" ")
        out.append((word.upper(), args.strip()))
    assert not pending, f"{dockerfile.name} ends in a continuation line"
    return out


def _exec_form(args: str) -> list[str]:
    return json.loads(args) if args.startswith("[") else shlex.split(args)


def _copy_sources(dockerfile: Path) -> list[str]:
    sources = []
    for word, args in _instructions(dockerfile):
        if word not in ("COPY", "ADD"):
            continue
        parts = _exec_form(args)
        if any(p.startswith("--from") for p in parts):
            continue  # from another stage or image, not the build context
        paths = [p for p in parts if not p.startswith("--")]
        assert len(paths) >= 2, f"{word} {args}: no source or destination"
        sources.extend(paths[:-1])
    return sources


def _has_healthcheck(service: dict[str, Any]) -> bool:
    check = service.get("healthcheck")
    if check is not None:
        return not check.get("disable", False) and check.get("test") not in (["NONE"], "NONE")
    dockerfile = _dockerfile(service)
    if dockerfile is None:
        return False
    return any(word == "HEALTHCHECK" and args.split()[0].upper() != "NONE"
               for word, args in _instructions(dockerfile))


def _worker_config(service: dict[str, Any]) -> DistributedConfig:
    """The worker's config from the file mounted at /etc/connect/worker.properties, loaded
    exactly as ``connect-distributed`` loads it."""
    mounts = [(source, read_only) for kind, source, target, read_only in _volumes(service)
              if kind == "bind" and target == WORKER_PROPERTIES]
    assert len(mounts) == 1, f"one file should be mounted at {WORKER_PROPERTIES}"
    source, read_only = mounts[0]
    assert read_only, "the worker file should be mounted read-only"
    return DistributedConfig(load_properties(DOCKER / source))


# --- the services ---------------------------------------------------------------------------

def test_compose_file_is_valid_against_the_compose_specification(
        compose: dict[str, Any]) -> None:
    schema = json.loads(COMPOSE_SCHEMA.read_text(encoding="utf-8"))
    # The schema says draft-07 in a spelling jsonschema does not look up ("...draft-07/schema"
    # without "#"): name the validator instead of letting it fall back to the latest draft.
    assert "draft-07" in schema["$schema"]
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(compose), key=lambda e: e.json_path)
    assert not errors, "\n".join(f"{e.json_path}: {e.message}" for e in errors)


def test_compose_schema_is_vendored_with_its_license() -> None:
    readme = (COMPOSE_SCHEMA.parent / "README.md").read_text(encoding="utf-8")
    assert re.search(r"commit\s+`[0-9a-f]{40}`", readme), "record the schema's commit"
    assert "Apache License" in (COMPOSE_SCHEMA.parent / "LICENSE").read_text(encoding="utf-8")
    assert (COMPOSE_SCHEMA.parent / "NOTICE").is_file()


def test_the_stack_has_the_documented_services(compose: dict[str, Any]) -> None:
    assert "version" not in compose  # the Compose spec has no version key
    assert set(compose["services"]) == set(HOST_PORTS)


def test_every_service_has_a_comment_saying_what_it_is_for() -> None:
    lines = COMPOSE_FILE.read_text(encoding="utf-8").splitlines()
    for name in HOST_PORTS:
        index = lines.index(f"  {name}:")
        assert lines[index - 1].strip().startswith("#"), f"no comment above service {name}"


def test_host_ports_are_unique_local_and_as_documented(
        services: dict[str, dict[str, Any]]) -> None:
    published = {name: _ports(service) for name, service in services.items()}
    host_ports = [port for ports in published.values() for _, port, _ in ports]
    assert len(host_ports) == len(set(host_ports)), f"host port used twice: {host_ports}"
    for name, ports in published.items():
        assert {host: container for _, host, container in ports} == HOST_PORTS[name], name
        # Nothing in the stack has authentication: publish on loopback only.
        assert {ip for ip, _, _ in ports} <= {"127.0.0.1"}, name
    docs = DOCS.read_text(encoding="utf-8").splitlines()
    for name, ports in HOST_PORTS.items():
        rows = [line for line in docs if line.startswith(f"| `{name}` |")]
        assert len(rows) == 1, f"docs/docker.md should have one table row for {name}"
        for host in ports:
            assert str(host) in rows[0], f"docs/docker.md: {name} row lacks port {host}"


def test_bind_mounted_paths_exist(services: dict[str, dict[str, Any]]) -> None:
    binds = [(name, source) for name, service in services.items()
             for kind, source, _, _ in _volumes(service) if kind == "bind"]
    assert binds
    for name, source in binds:
        assert not Path(source).is_absolute(), f"{name}: {source} is a host-specific path"
        assert (DOCKER / source).exists(), f"{name}: bind mount source {source} is missing"


def test_named_volumes_are_declared_and_used(compose: dict[str, Any],
                                             services: dict[str, dict[str, Any]]) -> None:
    used = {source for service in services.values()
            for kind, source, _, _ in _volumes(service) if kind == "volume"}
    declared = set(compose.get("volumes") or {})
    assert used <= declared, f"undeclared volumes: {used - declared}"
    assert declared <= used, f"declared but unused volumes: {declared - used}"


def test_depends_on_waits_for_defined_services_that_have_healthchecks(
        services: dict[str, dict[str, Any]]) -> None:
    for name, service in services.items():
        depends_on = service.get("depends_on") or {}
        if isinstance(depends_on, list):
            depends_on = {dep: {"condition": "service_started"} for dep in depends_on}
        for dep, spec in depends_on.items():
            assert dep in services, f"{name} depends on undefined service {dep}"
            if spec.get("condition") == "service_healthy":
                assert _has_healthcheck(services[dep]), f"{name} waits for {dep}'s health"


# --- Kafka and the workers ------------------------------------------------------------------

def test_kafka_runs_kraft_with_a_network_and_a_host_listener(
        services: dict[str, dict[str, Any]]) -> None:
    env = services["kafka"]["environment"]
    assert services["kafka"]["image"].startswith("apache/kafka:")
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    advertised = dict(item.split("://") for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    assert advertised == {"PLAINTEXT": "kafka:9092", "EXTERNAL": "127.0.0.1:29092"}
    assert "127.0.0.1:29092" in DOCS.read_text(encoding="utf-8")
    assert str(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"]) == "1"
    assert str(env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"]) == "1"
    assert "kafka-broker-api-versions.sh" in " ".join(services["kafka"]["healthcheck"]["test"])


def test_worker_files_are_valid_for_connect_distributed_and_form_one_cluster(
        services: dict[str, dict[str, Any]]) -> None:
    advertised = set()
    for name in CONNECT_SERVICES:
        service = services[name]
        config = _worker_config(service)
        # Every key is one our worker reads (nothing "supplied but isn't a known config").
        assert config.unused == [], f"{name}: keys the worker does not use: {config.unused}"
        assert config.group_id == "connect-plane"
        assert {key: config.get(key) for key in INTERNAL_TOPICS} == INTERNAL_TOPICS
        for key in ("config", "offset", "status"):
            assert config.get(f"{key}.storage.replication.factor") == 1  # one broker
        assert config.get("bootstrap.servers") == ["kafka:9092"]
        assert config.get("scheduled.rebalance.max.delay.ms") > 0
        assert "JsonConverter" in config.get("value.converter")
        # Advertised under the service name, so the others can forward to it.
        assert config.get("rest.advertised.host.name") == name == service["hostname"]
        listener = parse_listeners(config.listeners)[0]
        assert worker_id(config) == f"{name}:{listener.port}"
        assert [container for _, _, container in _ports(service)] == [listener.port]
        advertised.add(worker_id(config))
        assert ("volume", "connect-data", "/data", False) in _volumes(service)
        assert service["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert len(advertised) == len(CONNECT_SERVICES)


def test_worker_image_runs_connect_distributed_on_the_mounted_file(
        services: dict[str, dict[str, Any]]) -> None:
    dockerfiles = {_dockerfile(services[name]) for name in CONNECT_SERVICES}
    assert dockerfiles == {DOCKER / "worker.Dockerfile"}
    instructions = _instructions(DOCKER / "worker.Dockerfile")
    last = {word: args for word, args in instructions}
    assert last["FROM"].startswith("python:3.11-slim")
    assert _exec_form(last["CMD"]) == ["connect-distributed", WORKER_PROPERTIES]
    assert last["USER"] not in ("root", "0")
    assert last["EXPOSE"] == "8083"
    health_check = _exec_form(last["HEALTHCHECK"].split(" CMD ", 1)[1])
    assert health_check[:2] == ["python", "-c"]
    assert "urlopen('http://127.0.0.1:8083/health'" in health_check[2]
    run = " ".join(args for word, args in instructions if word == "RUN")
    assert "pip install -c constraints.txt ." in run
    assert "pip check" in run


# --- images ---------------------------------------------------------------------------------

def test_dockerfile_copy_sources_exist_and_are_not_ignored(
        services: dict[str, dict[str, Any]]) -> None:
    dockerfiles = {_dockerfile(service) for service in services.values()} - {None}
    assert dockerfiles == set(DOCKER.glob("*.Dockerfile")), "every Dockerfile is used"
    for service in services.values():
        if "build" in service:
            assert (DOCKER / service["build"]["context"]).resolve() == REPO
    for dockerfile in sorted(dockerfiles):
        ignore_file = dockerfile.with_name(dockerfile.name + ".dockerignore")
        patterns = [line.strip().rstrip("/") for line in
                    ignore_file.read_text(encoding="utf-8").splitlines()
                    if line.strip() and not line.startswith("#")]
        assert {".venv", ".git", "tests", ".demo"} <= set(patterns), ignore_file.name
        sources = _copy_sources(dockerfile)
        assert {"pyproject.toml", "constraints.txt", "README.md", "worker/",
                "airflow_provider/"} <= set(sources), dockerfile.name
        for source in sources:
            assert (REPO / source).exists(), f"{dockerfile.name}: COPY {source} is missing"
            parts = Path(source).parts
            for pattern in patterns:
                if pattern.startswith("**/"):
                    assert not any(fnmatch.fnmatch(p, pattern[3:]) for p in parts), source
                else:
                    assert not fnmatch.fnmatch(parts[0], pattern), f"{source} ignored"


def _stages(dockerfile: Path) -> list[tuple[str, str | None]]:
    """(image, stage name) of each FROM, in order; the last one is the image built."""
    out = []
    for word, args in _instructions(dockerfile):
        if word == "FROM":
            parts = [p for p in args.split() if not p.startswith("--")]
            out.append((parts[0], parts[2] if len(parts) == 3 else None))
    return out


def _java_major(dockerfile: Path) -> int:
    """The Java major of the JRE the image copies from its ``eclipse-temurin`` stage (and
    puts first on PATH as JAVA_HOME)."""
    stages = {name: image for image, name in _stages(dockerfile) if name}
    instructions = _instructions(dockerfile)
    copies = [_exec_form(args) for word, args in instructions if word == "COPY"
              and args.startswith("--from=")]
    assert len(copies) == 1, f"{dockerfile.name}: one COPY --from=<java stage>"
    stage = copies[0][0].removeprefix("--from=")
    match = re.fullmatch(r"eclipse-temurin:(\d+)-jre(-[a-z]+)?", stages[stage])
    assert match, f"{dockerfile.name}: the Java stage is {stages[stage]}"
    assert copies[0][1:] == ["/opt/java/openjdk", "/opt/java/openjdk"]
    env = " ".join(args for word, args in instructions if word == "ENV")
    assert "JAVA_HOME=/opt/java/openjdk" in env
    assert 'PATH="/opt/java/openjdk/bin:${PATH}"' in env
    run = " ".join(args for word, args in instructions if word == "RUN")
    assert "jre" not in run and "jdk" not in run, f"{dockerfile.name}: a second Java"
    return int(match.group(1))


def _python_minor(image: str) -> str:
    match = re.search(r"python:?(3\.\d+)", image)
    assert match, f"no Python version in the image tag {image}"
    return match.group(1)


def test_airflow_image_has_the_airflow_and_spark_extras_and_java() -> None:
    dockerfile = DOCKER / "airflow.Dockerfile"
    instructions = _instructions(dockerfile)
    assert _stages(dockerfile)[-1] == ("apache/airflow:3.3.2-python3.11", None)
    run = " ".join(args for word, args in instructions if word == "RUN")
    # The image's own packages are held at their installed versions (pip freeze as
    # constraints); new ones come from constraints.txt; conflicts fail the build.
    assert "pip freeze --all" in run
    assert '-c /tmp/image.txt -c /tmp/new.txt ".[airflow,spark]"' in run
    assert "--upgrade" not in run and "--force-reinstall" not in run
    assert run.index("pip install") < run.index("pip check")
    assert _java_major(dockerfile) in SPARK_JAVA_MAJORS
    users = [args for word, args in instructions if word == "USER"]
    assert users[-1] == "airflow"


def test_images_agree_on_python_uid_and_java(services: dict[str, dict[str, Any]]) -> None:
    """Driver (airflow) and executors (spark-*) exchange pickled Python and run one Java
    cluster; they share the pipeline-output volume. The worker image runs the same
    Python as the others."""
    requires = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    python = re.search(r">=\s*(3\.\d+)", requires["project"]["requires-python"])
    assert python
    dockerfiles = {_dockerfile(service) for service in services.values()} - {None}
    for dockerfile in dockerfiles:
        assert dockerfile is not None
        assert _python_minor(_stages(dockerfile)[-1][0]) == python.group(1), dockerfile.name
    spark_images = {_dockerfile(services[name]) for name in
                    ("airflow", "spark-master", "spark-worker")}
    assert spark_images == {DOCKER / "airflow.Dockerfile", DOCKER / "spark.Dockerfile"}
    assert _java_major(DOCKER / "airflow.Dockerfile") == _java_major(DOCKER / "spark.Dockerfile")
    # The Spark image's user has the Airflow image's uid and gid 0.
    instructions = _instructions(DOCKER / "spark.Dockerfile")
    run = " ".join(args for word, args in instructions if word == "RUN")
    user = [args for word, args in instructions if word == "USER"][-1]
    assert re.search(rf"useradd --uid {AIRFLOW_IMAGE_UID} --gid 0 .* {user}(\s|$)", run)
    assert [args for word, args in _instructions(DOCKER / "airflow.Dockerfile")
            if word == "USER"][-1] == "airflow"


def test_docs_name_127_0_0_1_for_ports_published_on_ipv4_only() -> None:
    """Host ports are published on 127.0.0.1 only; ``localhost`` may resolve to ::1 first,
    where nothing listens."""
    published = {port for ports in HOST_PORTS.values() for port in ports}
    for path in (DOCS, REPO / "README.md", COMPOSE_FILE):
        text = path.read_text(encoding="utf-8")
        bad = [m.group(0) for m in re.finditer(r"localhost:(\d+)", text)
               if int(m.group(1)) in published]
        assert not bad, f"{path.name}: use 127.0.0.1 for {bad}"


# --- Airflow and Spark ----------------------------------------------------------------------

def test_airflow_kafka_connect_connection_points_at_the_cluster(
        services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk import BaseHook

    from airflow_provider.hooks.connection import ConnectionSettings

    airflow = services["airflow"]
    assert airflow["command"] == "standalone"
    env = airflow["environment"]
    assert str(env["AIRFLOW__CORE__LOAD_EXAMPLES"]).lower() == "false"
    raw = env["AIRFLOW_CONN_KAFKA_CONNECT_DEFAULT"]
    assert json.loads(raw)["conn_type"] == "kafka_connect"
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_CONNECT_DEFAULT", raw)
    conn = BaseHook.get_connection("kafka_connect_default")
    assert conn.conn_type == "kafka_connect"
    settings = ConnectionSettings.from_connection(conn)
    assert settings.base_url == "http://connect-1:8083"
    assert settings.bootstrap_servers == "kafka:9092"
    status_topic = _worker_config(services["connect-1"]).get("status.storage.topic")
    assert settings.status_topic == status_topic


def test_airflow_spark_connection_and_the_spark_cluster_agree(
        services: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    raw = services["airflow"]["environment"]["AIRFLOW_CONN_SPARK_DEFAULT"]
    assert json.loads(raw)["conn_type"] == "spark"
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", raw)
    assert SparkSubmitHook(conn_id="spark_default")._connection["master"] == SPARK_MASTER_URL
    master = services["spark-master"]["command"]
    assert master[:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert master[master.index("--host") + 1] == services["spark-master"]["hostname"]
    assert master[master.index("--port") + 1] == "7077"
    worker = services["spark-worker"]["command"]
    assert worker[:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
    assert worker[-1] == SPARK_MASTER_URL
    # Executors connect back to the driver (in the Airflow container) by its host name.
    assert services["airflow"]["hostname"] == "airflow"


def test_pipeline_output_is_shared_by_airflow_and_spark(
        services: dict[str, dict[str, Any]]) -> None:
    env = services["airflow"]["environment"]
    output = env["CONNECT_PLANE_PIPELINE_OUTPUT"]
    for name in ("airflow", "spark-master", "spark-worker"):
        assert ("volume", "pipeline-output", output, False) in _volumes(services[name]), name
    assert env["CONNECT_PLANE_KAFKA_BOOTSTRAP"] == "kafka:9092"
    assert ("bind", "../dags", "/opt/airflow/dags", False) in _volumes(services["airflow"])
