"""Policies kept in a project's settings JSON: one way in and out for every policy dataclass."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, TypeVar

P = TypeVar("P", bound="SettingsPolicy")


class SettingsPolicy:
    """Mixin for a (frozen) policy dataclass whose fields live among a project's settings.

    A project's settings hold several policies side by side, so each reads
    only its own fields and ignores the others' keys.
    """

    @classmethod
    def from_settings(cls: type[P], settings: Mapping[str, Any] | None) -> P:
        names = set(cls.__dataclass_fields__)  # type: ignore[attr-defined]
        return cls(**{k: v for k, v in (settings or {}).items() if k in names})

    def to_settings(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]
