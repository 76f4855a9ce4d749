"""The lock tests' helpers: a second worker's refusal, and another process holding the lock.

The child takes the lock, says so on stdout, then blocks reading its stdin: it holds the
lock until the test kills it (the case under test: no clean-up runs) or, at the latest,
until the test ends and closes the pipe.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

from worker.storage.sql.lock import StateInUseError, StateLock, acquire_state_lock

#: The REST URL the holder records (what a refusal must name).
HOLDER_URL = "http://holder.example:9"
#: The REST URLs of the first and the second worker of :func:`second_refused`.
FIRST_URL = "http://worker-a.example:8083"
SECOND_URL = "http://worker-b.example:8084"

_HOLDER = textwrap.dedent("""
    import sys
    from worker.storage.sql.lock import acquire_state_lock
    acquire_state_lock(sys.argv[1], rest_url=sys.argv[2])
    print("locked", flush=True)
    sys.stdin.read()
""")


@contextmanager
def lock_holder(url: str) -> Iterator[subprocess.Popen[str]]:
    """A process holding the lock on ``url`` until killed (or until the block ends)."""
    child = subprocess.Popen([sys.executable, "-c", _HOLDER, url, HOLDER_URL],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        yield child
    finally:
        child.kill()
        child.wait(10)


def second_refused(url: str, first_type: type[StateLock]) -> StateInUseError:
    """What a second worker on ``url`` is refused with while a first (a ``first_type``
    lock, recorded as :data:`FIRST_URL`) holds it; the first is released afterwards."""
    first = acquire_state_lock(url, rest_url=FIRST_URL)
    try:
        assert isinstance(first, first_type)
        try:
            acquire_state_lock(url, rest_url=SECOND_URL)
        except StateInUseError as refused:
            return refused
        raise AssertionError(f"a second lock on {url} was granted")
    finally:
        first.release()
