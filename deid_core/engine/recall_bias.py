"""A model's recommended recall bias: chosen on dev notes, recorded in its metadata, used by name.

``--bias recall`` (CLI) and the app's "recall" choice mean "the O-label bias
this model's builder measured to reach its recall target on held-out notes".
The value lives in the model's ``training.json`` under ``recall_bias`` (with
the target and the dev figures under ``recall_bias_info``), so it travels with
the model directory and needs no separate file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from deid_core.errors import ModelError
from deid_core.spans import Document

RECALL_BIAS_KEY = "recall_bias"
RECALL_BIAS_INFO_KEY = "recall_bias_info"
RECALL = "recall"  # the bias argument that names the recorded value
DEFAULT_TARGET = 0.97
#: Candidate biases, most precision-friendly first.
DEFAULT_GRID = tuple(round(-0.25 * i, 2) for i in range(0, 33))  # 0 .. -8

Progress = Callable[[str, float], None]


def parse_bias(text: str) -> float | str:
    """A ``--bias`` value: a number, or ``recall`` (the model's recorded recall bias)."""
    if text.strip().lower() == RECALL:
        return RECALL
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"bias must be a number or {RECALL!r}, got {text!r}") from None


def recorded_recall_bias(metadata: Mapping[str, Any], where: str) -> float:
    value = metadata.get(RECALL_BIAS_KEY)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ModelError(
            f"{where} records no recall bias (no {RECALL_BIAS_KEY!r} in its training.json);"
            " pass a number to --bias, or use a starter model, which records one"
        )
    return float(value)


def resolve_bias(bias: float | str | None, metadata: Mapping[str, Any], where: str) -> float:
    """A bias argument as a number: ``recall`` becomes the model's recorded recall bias."""
    if bias is None:
        return 0.0
    if isinstance(bias, str):
        if bias != RECALL:
            return float(parse_bias(bias))
        return recorded_recall_bias(metadata, where)
    return float(bias)


def resolve_bias_for_dir(bias: float | str | None, model_dir: str | Path) -> float:
    """``resolve_bias`` for a model directory, reading only its ``training.json``."""
    if not isinstance(bias, str):
        return resolve_bias(bias, {}, str(model_dir))
    path = Path(model_dir) / "training.json"
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read ({type(exc).__name__})") from exc
    return resolve_bias(bias, metadata if isinstance(metadata, dict) else {}, f"model {model_dir}")


def nonspace_char_prf(gold: Sequence[Document], pred: Sequence[Document]) -> dict[str, float | int]:
    """PHI character recall and precision over non-whitespace characters, whatever the label.

    Non-whitespace, so that a span that swallows a trailing space or a line
    break is not rewarded or punished for it (how issue 12's targets are set).
    """
    by_id = {d.id: d for d in pred}
    overlap = gold_n = pred_n = 0
    for g in gold:
        p = by_id.get(g.id)
        text = g.text
        gset = {i for s in g.spans for i in range(s.start, s.end) if not text[i].isspace()}
        pset = {i for s in (p.spans if p else ()) for i in range(s.start, s.end) if not text[i].isspace()}
        overlap += len(gset & pset)
        gold_n += len(gset)
        pred_n += len(pset)
    return {
        "recall": overlap / gold_n if gold_n else 1.0,
        "precision": overlap / pred_n if pred_n else 1.0,
        "gold_chars": gold_n,
        "pred_chars": pred_n,
        "overlap_chars": overlap,
    }


def choose_recall_bias(
    model: Any,
    dev: Sequence[Document],
    *,
    target: float = DEFAULT_TARGET,
    grid: Sequence[float] = DEFAULT_GRID,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The largest bias whose non-whitespace char recall on ``dev`` reaches ``target``.

    Each note is encoded once and decoded at every bias. When no bias in the
    grid reaches the target, the one with the highest recall is chosen and
    ``reached`` is False: the value is still the best the model can do, and
    the record says so.
    """
    biases = sorted({float(b) for b in grid}, reverse=True)
    per_bias: list[list[Document]] = [[] for _ in biases]
    n = max(1, len(dev))
    for i, doc in enumerate(dev):
        enc = model.encode(doc)
        for k, pred in enumerate(model.decode_many(enc, biases)):
            per_bias[k].append(pred.to_document(doc))
        if progress is not None and (i % 10 == 0 or i + 1 == len(dev)):
            progress("choosing the recall bias on dev notes", (i + 1) / n)
    points = [{"bias": b, **nonspace_char_prf(dev, preds)} for b, preds in zip(biases, per_bias)]
    reaching = [p for p in points if p["recall"] >= target]
    best = reaching[0] if reaching else max(points, key=lambda p: (p["recall"], p["bias"]))
    default = next((p for p in points if p["bias"] == 0.0), None)
    return {
        "bias": best["bias"],
        "target": target,
        "reached": bool(reaching),
        "dev_documents": len(dev),
        "at_recall_bias": {k: best[k] for k in ("recall", "precision")},
        "at_default_bias": {k: default[k] for k in ("recall", "precision")} if default else None,
        "measure": "char recall/precision over non-whitespace characters",
    }
