"""Small helpers over string property maps (worker and connector configs)."""

from __future__ import annotations

from collections.abc import Mapping


def strip_prefix(props: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The keys starting with ``prefix``, without it (``consumer.`` → client settings)."""
    return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}
