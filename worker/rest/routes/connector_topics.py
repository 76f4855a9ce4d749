"""Placeholder router; filled in by issue #3."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
