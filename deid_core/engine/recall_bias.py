"""A model's recommended recall bias: chosen on dev notes, recorded in its metadata, used by name.

``--bias recall`` (CLI) and the app's "recall" choice mean "the O-label bias
this model's builder measured to reach its recall target on held-out notes".
The value lives in the model's ``training.json`` under ``recall_bias`` (with
the target and the dev figures under ``recall_bias_info``), so it travels with
the model directory and needs no separate file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deid_core.errors import ModelError

RECALL_BIAS_KEY = "recall_bias"
RECALL_BIAS_INFO_KEY = "recall_bias_info"
RECALL = "recall"  # the bias argument that names the recorded value

def parse_bias(text: str) -> float | str:
    """A ``--bias`` value: a number, or ``recall`` (the model's recorded recall bias)."""
    if text.strip().lower() == RECALL:
        return RECALL
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"bias must be a number or {RECALL!r}, got {text!r}") from None


def bias_or_none(value: Any) -> float | None:
    """A bias read from JSON metadata, or ``None`` when it is missing or not a number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    return float(value)


def recall_bias_or_none(metadata: Mapping[str, Any]) -> float | None:
    """The recorded recall bias, or ``None`` when the model records none (or not a number)."""
    return bias_or_none(metadata.get(RECALL_BIAS_KEY))


def recorded_recall_bias(metadata: Mapping[str, Any], where: str) -> float:
    value = recall_bias_or_none(metadata)
    if value is None:
        raise ModelError(
            f"{where} records no recall bias (no {RECALL_BIAS_KEY!r} in its training.json);"
            " pass a number to --bias, or use a starter model, which records one"
        )
    return value


def resolve_bias(bias: float | str | None, metadata: Mapping[str, Any], where: str) -> float:
    """A bias argument as a number: ``recall`` becomes the model's recorded recall bias."""
    if bias is None:
        return 0.0
    if isinstance(bias, str):
        if bias != RECALL:
            return float(parse_bias(bias))
        return recorded_recall_bias(metadata, where)
    return float(bias)


def training_metadata(model_dir: str | Path) -> dict[str, Any]:
    """A model directory's ``training.json``, without loading the model (its weights are large)."""
    path = Path(model_dir) / "training.json"
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read ({type(exc).__name__})") from exc
    return metadata if isinstance(metadata, dict) else {}


def resolve_bias_for_dir(bias: float | str | None, model_dir: str | Path) -> float:
    """``resolve_bias`` for a model directory, reading only its ``training.json``."""
    if not isinstance(bias, str):
        return resolve_bias(bias, {}, str(model_dir))
    return resolve_bias(bias, training_metadata(model_dir), f"model {model_dir}")
