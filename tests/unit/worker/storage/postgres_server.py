"""A throw-away PostgreSQL server for tests: ``initdb`` in a temporary directory, started
with ``pg_ctl`` on a free loopback port, stopped and removed afterwards.

``postgres_server()`` skips the test (``pytest.skip``) when the server binaries or the
``psycopg`` driver are missing. PostgreSQL refuses to run as root, so under root the
server runs as the ``postgres`` user (``runuser``), which the Debian package creates.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from worker.testing import free_port

START_TIMEOUT_S = 30


def _bin_dir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(candidates[-1]).parent if candidates else None


@contextmanager
def postgres_server() -> Iterator[str]:
    """A running server; yields the SQLAlchemy URL of its ``postgres`` database."""
    pytest.importorskip("psycopg", reason="the psycopg driver is not installed")
    bin_dir = _bin_dir()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    runner: list[str] = []
    user: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run the server")
        runner = ["runuser", "-u", "postgres", "--"]
    base = Path(tempfile.mkdtemp(prefix="connect-pg-"))
    if user is not None:
        os.chown(base, user.pw_uid, user.pw_gid)
    data = base / "data"

    def run(*args: str) -> None:
        done = subprocess.run([*runner, *args], capture_output=True, text=True,
                              timeout=START_TIMEOUT_S, check=False)
        if done.returncode != 0:
            log = base / "server.log"
            raise RuntimeError(f"{Path(args[0]).name} exited with {done.returncode}: "
                               f"{done.stderr.strip()}"
                               + (f"\n{log.read_text()[-2000:]}" if log.exists() else ""))

    port = free_port()
    started = False
    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
            "-E", "UTF8", "--no-sync")
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(base / "server.log"), "-w",
            "-t", str(START_TIMEOUT_S), "-o",
            f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        started = True
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        if started:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)
