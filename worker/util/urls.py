"""URL paths that reach the resource they name.

An HTTP client (httpx included) and any proxy on the way resolve ``.`` and ``..`` path
segments, percent-encoded ones too once decoded, so a name is put in a path as one segment
with everything but unreserved characters percent-encoded and the dots of a dot-only segment
encoded as well.
"""

from __future__ import annotations

from urllib.parse import quote

_DOT_SEGMENTS = (".", "..")


def encode_dot_segment(segment: str) -> str:
    """``segment`` itself, unless it is ``.`` or ``..``: then percent-encoded."""
    return "%2E" * len(segment) if segment in _DOT_SEGMENTS else segment


def path_segment(name: str) -> str:
    """``name`` as one path segment (``/`` encoded, dot segments encoded)."""
    return encode_dot_segment(quote(name, safe=""))
