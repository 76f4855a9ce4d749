"""The cyclic garbage collector's settings in a worker process.

Each batch a task moves builds thousands of objects that the collector tracks (a record
per message, the tuples around it), and they live until the batch is put or sent. With
CPython's default first-generation threshold, a collection every 700 net allocations, a
2,000-record batch runs several collections while it is built; each walks the batch's
live records, moves them to an older generation, where the next collections walk them
again. That was 8-15 % of a task thread's CPU per record (docs/benchmarks.md, "The
cyclic collector's threshold"). At ``FIRST_GENERATION_THRESHOLD`` the youngest
generation is collected about once per five such batches, when most of their records are
already gone, and the older generations proportionally less often.

What the process built before it started serving (modules, plugins, the app) lives as
long as the process: ``gc.freeze()`` keeps it out of every collection, which otherwise
stall request threads in full passes (p99 of ``GET /connectors/{c}/status``: 40 ms ->
9 ms, docs/benchmarks.md).
"""

from __future__ import annotations

import gc

#: Net allocations of tracked objects between two collections of the youngest generation
#: in a worker process (CPython's default: 700).
FIRST_GENERATION_THRESHOLD = 10_000


def settle_collector() -> None:
    """Once the worker has started: freeze what exists and collect the youngest
    generation every ``FIRST_GENERATION_THRESHOLD`` allocations (the older generations'
    thresholds are kept)."""
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(FIRST_GENERATION_THRESHOLD, second, third)
