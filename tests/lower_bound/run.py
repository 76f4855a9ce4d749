"""``make lower-bound``: prove the lower bounds that pyproject.toml declares.

The project's dependency specifiers are ranges (``>=oldest proven, <next major``);
constraints.txt pins what ``make venv`` installs, at the top of those ranges. This script
checks the bottom: it builds the project's wheel, creates a fresh virtualenv in a
temporary directory, installs the wheel with its ``airflow`` and ``spark`` extras while
holding every direct dependency at the version its ``>=`` names (transitive dependencies
are left to pip), runs ``pip check``, and runs the provider's unit tests
(``tests/unit/airflow_provider``), the Spark data source's (``tests/unit/spark_kafka_source``)
and the worker's (``tests/unit/worker``) against the installed wheel -- not the source tree.

Run it with any Python that has ``packaging`` (the project's .venv has it); the new
virtualenv uses ``--python`` (default: the interpreter running this script). Downloads go
through pip's usual cache (``PIP_CACHE_DIR``, default ``~/.cache/pip``), never the
repository. ``--keep`` leaves the temporary directory for inspection.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
#: The extras installed into the lower-bound environment (broker: the worker tests that
#: need Kafka use the embedded broker).
EXTRAS = ("airflow", "spark", "broker")
#: The provider's and the Spark data source's unit tests, and the worker's (the worker's
#: own dependencies sit at their lower bounds too), run against the installed wheel.
TESTS = ("tests/unit/airflow_provider", "tests/unit/spark_kafka_source", "tests/unit/worker")
#: Test runners, at the versions constraints.txt pins (they are not under test).
RUNNERS = ("pytest", "pytest-timeout", "pytest-xdist")
#: What the report lists after the install (the direct dependencies and Airflow's parts).
REPORTED = re.compile(r"^(apache-airflow|apache-airflow-core|apache-airflow-task-sdk|"
                      r"apache-airflow-providers-apache-spark|confluent-kafka|fastapi|"
                      r"starlette|uvicorn|httptools|uvloop|pydantic|sqlalchemy|httpx|"
                      r"cryptography|kafka-python|pyspark|pyspark-client|pyarrow|pandas|"
                      r"numpy)==", re.IGNORECASE)


def lower_bounds(pyproject: dict, extras: tuple[str, ...]) -> list[str]:
    """``name==version`` for every direct dependency (base + ``extras``): the version of
    its ``>=`` clause. A dependency without one is an error: every range needs a floor."""
    project = pyproject["project"]
    specs = list(project["dependencies"])
    for extra in extras:
        specs += project["optional-dependencies"][extra]
    pins: dict[str, str] = {}
    for spec in specs:
        req = Requirement(spec)
        floors = [s.version for s in req.specifier if s.operator in (">=", "==", "~=")]
        if len(floors) != 1:
            raise SystemExit(f"pyproject.toml: {spec!r} needs exactly one lower bound (>=)")
        pins[req.name] = f"{req.name}=={floors[0]}"
    return sorted(pins.values(), key=str.lower)


def pinned(names: tuple[str, ...]) -> list[str]:
    """The lines of constraints.txt for ``names``."""
    wanted = {n.lower() for n in names}
    lines = (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines()
    out = [line.strip() for line in lines
           if line.split("==")[0].strip().lower() in wanted]
    assert len(out) == len(wanted), f"constraints.txt lacks one of {names}"
    return out


def run(cmd: list[str], **kwargs: object) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run(cmd, check=True, **kwargs)  # type: ignore[call-overload]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default=sys.executable,
                        help="interpreter for the fresh virtualenv (default: this one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("pytest_args", nargs="*",
                        help="extra pytest arguments, after --: e.g. -- -n 2 --dist loadgroup")
    args = parser.parse_args()

    started = time.monotonic()
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    tmp = Path(tempfile.mkdtemp(prefix="connect-plane-lower-bound-"))
    try:
        lower = tmp / "lower-bounds.txt"
        lower.write_text("\n".join(lower_bounds(pyproject, EXTRAS)) + "\n", encoding="utf-8")
        print(f"== lower bounds ({lower}):\n{lower.read_text(encoding='utf-8')}", flush=True)

        # The wheel, built from a copy of the sources so the tree gets no build/ or egg-info.
        src = tmp / "src"
        shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
            ".git", ".venv", ".demo", "build", "dist", "*.egg-info", "__pycache__",
            ".pytest_cache", ".ruff_cache", ".mypy_cache", "tests", "dags", "docs"))
        run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp / "dist"),
             str(src)])
        wheel = next((tmp / "dist").glob("connect_plane-*.whl"))

        venv = tmp / "venv"
        run([args.python, "-m", "venv", str(venv)])
        py = venv / "bin" / "python"
        run([str(py), "-m", "pip", "install", "--progress-bar", "off", "-c", str(lower),
             f"{wheel}[{','.join(EXTRAS)}]", *pinned(RUNNERS)])
        run([str(py), "-m", "pip", "check"])
        freeze = subprocess.run([str(py), "-m", "pip", "freeze"], check=True,
                                capture_output=True, text=True).stdout.splitlines()
        print("== installed:\n" + "\n".join(line for line in freeze if REPORTED.match(line)),
              flush=True)

        # The tests run from a copy of tests/ with a minimal pytest config, so that
        # airflow_provider and worker are imported from the installed wheel.
        work = tmp / "work"
        shutil.copytree(REPO / "tests", work / "tests",
                        ignore=shutil.ignore_patterns("__pycache__", "bench"))
        (work / "pytest.ini").write_text(
            "[pytest]\npythonpath = .\ntimeout = 300\n"
            "addopts = -ra --import-mode=importlib -p no:cacheprovider\n"
            "markers =\n    integration: needs Kafka\n    slow: long-running\n",
            encoding="utf-8")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("AIRFLOW", "CONNECT_PLANE_TEST"))}
        run([str(py), "-m", "pytest", "-q", "-p", "no:randomly", *TESTS, *args.pytest_args],
            cwd=work, env=env)
        code = subprocess.run(
            [str(py), "-c", "import airflow_provider, sys; "
             "sys.exit(not airflow_provider.__file__.startswith(sys.prefix))"],
            cwd=work, env=env, check=False).returncode
        if code:
            raise SystemExit("airflow_provider was not imported from the installed wheel")
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"== lower bounds hold ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
