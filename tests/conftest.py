"""Shared fixtures. Tests never read ../shared/data: they use generated or shipped fixtures."""

from __future__ import annotations
