"""Scores of one model at many biases: the ``bias-sweep`` contract, and the recall bias a
model records (the largest bias reaching a character-recall target on its dev notes).

It lives with the metrics rather than the model so that detection never
imports evaluation (the engine sits below it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from deid_core.engine.model import DeidModel, ProgressFn
from deid_core.errors import EmptyInput
from deid_core.evaluation.metrics import char_prf, strict_prf, token_bounds, token_prf
from deid_core.evaluation.visible_chars import visible_char_prf
from deid_core.spans import Document

DEFAULT_TARGET = 0.97
#: Candidate recall biases, most precision-friendly first.
DEFAULT_GRID = tuple(round(-0.25 * i, 2) for i in range(0, 33))  # 0 .. -8


def bias_sweep(
    model: DeidModel,
    gold: Sequence[Document],
    biases: Sequence[float],
    *,
    progress: ProgressFn | None = None,
    recall_target: float = 0.99,
) -> dict[str, Any]:
    """Strict, token and character P/R/F at each bias (the ``bias-sweep --json`` contract).

    ``first_bias_char_recall_0_99`` is the largest bias (the most
    precision-friendly end) whose character-level PHI recall reaches
    ``recall_target``; null when none does. Each note is encoded once.
    """

    if not gold:
        # With nothing to miss, every bias has recall 1.0 and the sweep picks the riskiest.
        raise EmptyInput("no gold documents to sweep the bias over")
    grid = sorted(float(b) for b in biases)
    per_bias: list[list[Document]] = [[] for _ in grid]
    token_src: dict[str, Any] = {}
    n = max(1, len(gold))
    for i, doc in enumerate(gold):
        encoded = model.encode(doc)
        token_src[doc.id] = token_bounds(encoded.tokens)
        for k, pred in enumerate(model.decode_many(encoded, grid)):
            per_bias[k].append(pred.to_document(doc))
        if progress is not None:
            progress(f"decoded {i + 1} of {len(gold)}", 0.8 * (i + 1) / n)
    points = []
    for k, b in enumerate(grid):
        preds = per_bias[k]
        strict = strict_prf(gold, preds)
        token = token_prf(gold, preds, lang=model.lang, tokens=token_src)
        char = char_prf(gold, preds)
        points.append({
            "bias": b,
            "strict": {m: strict[m] for m in ("precision", "recall", "f1")},
            "token": {m: token[m] for m in ("precision", "recall", "f1")},
            "char": {m: char[m] for m in ("precision", "recall", "f1")},
        })
        if progress is not None:
            progress(f"scored bias {b:g}", 0.8 + 0.2 * (k + 1) / len(grid))
    reaching = [p["bias"] for p in points if p["char"]["recall"] >= recall_target]
    return {
        "points": points,
        "first_bias_char_recall_0_99": max(reaching) if reaching else None,
        "model_version": model.version,
        "documents": len(gold),
    }


def choose_recall_bias(
    model: Any,
    dev: Sequence[Document],
    *,
    target: float = DEFAULT_TARGET,
    grid: Sequence[float] = DEFAULT_GRID,
    progress: ProgressFn | None = None,
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
    points = [{"bias": b, **visible_char_prf(dev, preds)} for b, preds in zip(biases, per_bias)]
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
