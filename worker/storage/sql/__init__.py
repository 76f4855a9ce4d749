"""SQL storage backend (SQLAlchemy): the standalone default, SQLite file or any SQLAlchemy URL.

Build one ``SqlDatabase(url)`` and hand it to the three stores; they share its engine. A
standalone worker locks its database first, for its whole life (``worker.storage.sql.lock``):
one worker per state database.
"""

from __future__ import annotations

from worker.storage.sql.database import SqlDatabase
from worker.storage.sql.stores import (
    SqlConfigBackingStore,
    SqlOffsetBackingStore,
    SqlStatusBackingStore,
)

__all__ = [
    "SqlConfigBackingStore",
    "SqlDatabase",
    "SqlOffsetBackingStore",
    "SqlStatusBackingStore",
]
