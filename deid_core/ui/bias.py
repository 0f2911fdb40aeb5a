"""The O-label bias page's numbers: re-decode reviewed notes and score them.

Paper 002 ("Trading Off Precision and Recall") adds a bias to the O label's
score at every token; a negative bias makes the CRF mark more PHI. The admin
picks the bias by looking at what it does to the *reviewed* documents (used as
gold). Notes are encoded once (features and emissions, the slow part) and each
slider move only re-runs the decoder, which is why ``Encoded`` exists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from deid_core.evaluation import char_prf, strict_prf
from deid_core.spans import Document

BIAS_MIN = -5.0
BIAS_MAX = 3.0
BIAS_STEP = 0.5

Progress = Callable[[str, float], None]


class Decoder(Protocol):
    """What this module needs from ``deid_core.engine.model.DeidModel``."""

    def decode(self, encoded: Any, bias: float = 0.0) -> Any: ...


@dataclass(frozen=True, slots=True)
class BiasPoint:
    bias: float
    strict: dict[str, float]
    char: dict[str, float]
    n_pred_spans: int

    @property
    def missed_char_share(self) -> float:
        """Expected share of PHI characters a release at this bias would leak."""
        return 1.0 - float(self.char["recall"])

    def as_row(self) -> dict[str, float]:
        return {
            "bias": self.bias,
            "strict_precision": float(self.strict["precision"]),
            "strict_recall": float(self.strict["recall"]),
            "strict_f1": float(self.strict["f1"]),
            "char_precision": float(self.char["precision"]),
            "char_recall": float(self.char["recall"]),
            "char_f1": float(self.char["f1"]),
            "missed_char_share": self.missed_char_share,
            "pred_spans": self.n_pred_spans,
        }


def model_recall_bias(model: Any) -> float | None:
    """The recall bias a model recorded on its own dev notes (starters do), within the slider's range.

    ``None`` when the model records none; the Bias page then offers only the slider.
    """
    return recall_bias_on_slider(getattr(model, "metadata", {}))


def recall_bias_on_slider(metadata: Mapping[str, Any]) -> float | None:
    """:func:`model_recall_bias` from a model's metadata (``training.json``) alone."""
    from deid_core.engine.recall_bias import recall_bias_or_none

    value = recall_bias_or_none(metadata)
    if value is None:
        return None
    return float(min(BIAS_MAX, max(BIAS_MIN, round(value * 4) / 4)))


def bias_grid(step: float = BIAS_STEP, lo: float = BIAS_MIN, hi: float = BIAS_MAX) -> list[float]:
    n = int(round((hi - lo) / step))
    return [round(lo + i * step, 6) for i in range(n + 1)]


def decode_layer(
    model: Decoder, gold: Sequence[Document], encoded: Sequence[Any], bias: float
) -> list[Document]:
    """The model's spans for each reviewed note at ``bias``, as documents beside the gold."""
    return [g.with_spans(model.decode(e, bias).spans) for g, e in zip(gold, encoded)]


def metrics_at_bias(
    model: Decoder, gold: Sequence[Document], encoded: Sequence[Any], bias: float
) -> BiasPoint:
    if len(gold) != len(encoded):
        raise ValueError("gold documents and encodings must pair up")
    pred = decode_layer(model, gold, encoded, bias)
    return BiasPoint(
        float(bias),
        strict_prf(gold, pred),
        char_prf(gold, pred),
        sum(len(d.spans) for d in pred),
    )


def _batched_paths(model: Any, encoded: Sequence[Any], grid: Sequence[float]) -> list[list[Any]]:
    """Viterbi paths of every note at every bias of the sorted ``grid``: ``[note][bias]``.

    All sentences of all notes go through the engine's sweep together:
    batching across notes is what makes the curve fast.
    """
    import numpy as np

    from deid_core.engine.decoder import sweep_paths

    sents = [(n, a, b) for n, e in enumerate(encoded) for a, b in e.sentences]
    views = [encoded[n].emissions[a:b] for n, a, b in sents]
    paths = sweep_paths(views, model.weights.transitions, grid, model.o_index)
    by_note: list[list[int]] = [[] for _ in encoded]
    for k, (n, _a, _b) in enumerate(sents):
        by_note[n].append(k)
    empty = np.zeros(0, dtype=np.intp)
    return [
        [np.concatenate([paths[i][k] for k in ks]) if ks else empty for i in range(len(grid))]
        for ks in by_note
    ]


def corpus_sweep_spans(
    model: Any, encoded: Sequence[Any], biases: Sequence[float]
) -> list[list[tuple[Any, ...]]]:
    """The model's spans for every note at every bias: ``[note][bias]``, biases as given.

    Spans depend only on the Viterbi path (rule merge and filters do not see
    the bias) and a note has only a handful of distinct paths across a grid,
    so each distinct path is turned into spans once (``DeidModel.decode_paths``).
    Models without the engine's internals fall back to ``decode_many``/``decode``.
    """
    decode_paths = getattr(model, "decode_paths", None)
    if decode_paths is None or getattr(model, "weights", None) is None:
        out = []
        for e in encoded:
            many = getattr(model, "decode_many", None)
            preds = many(e, biases) if many is not None else [model.decode(e, b) for b in biases]
            out.append([tuple(p.spans) for p in preds])
        return out
    order = sorted(range(len(biases)), key=lambda i: biases[i])
    grid = [float(biases[i]) for i in order]
    note_paths = _batched_paths(model, encoded, grid)
    result = []
    for e, paths in zip(encoded, note_paths):
        spans_sorted = [tuple(p.spans) for p in decode_paths(e, paths, grid)]
        per_bias: list[tuple[Any, ...]] = [()] * len(biases)
        for rank, i in enumerate(order):
            per_bias[i] = spans_sorted[rank]
        result.append(per_bias)
    return result


def sweep_spans(model: Any, encoded: Any, biases: Sequence[float]) -> list[tuple[Any, ...]]:
    """One note's spans at every bias (see :func:`corpus_sweep_spans`)."""
    return corpus_sweep_spans(model, [encoded], biases)[0]


def bias_curve(
    model: Decoder,
    gold: Sequence[Document],
    encoded: Sequence[Any],
    grid: Sequence[float] | None = None,
    progress: Progress | None = None,
) -> list[BiasPoint]:
    """One point per bias of ``grid`` (default -5..+3 by 0.5), sorted by bias.

    The engine's sweep re-decodes only sentences whose best path can change
    between biases (:func:`sweep_spans`).
    """
    if len(gold) != len(encoded):
        raise ValueError("gold documents and encodings must pair up")
    biases = sorted(bias_grid() if grid is None else grid)
    per_bias: list[list[Document]] = [[] for _ in biases]
    if progress is not None:
        progress(f"decoding {len(gold)} notes at {len(biases)} biases", 0.05)
    for g, note_spans in zip(gold, corpus_sweep_spans(model, encoded, biases)):
        for k, spans in enumerate(note_spans):
            per_bias[k].append(g.with_spans(spans))
    if progress is not None:
        progress("scoring", 0.9)
    out = [
        BiasPoint(float(b), strict_prf(gold, preds), char_prf(gold, preds),
                  sum(len(d.spans) for d in preds))
        for b, preds in zip(biases, per_bias)
    ]
    if progress is not None:
        progress("scored every bias", 1.0)
    return out


def largest_bias_reaching(points: Sequence[BiasPoint], char_recall: float = 0.99) -> float | None:
    """The most precision-friendly bias whose character recall reaches the target."""
    ok = [p.bias for p in points if p.char["recall"] >= char_recall]
    return max(ok) if ok else None


def curve_chart(points: Sequence[BiasPoint], current: BiasPoint | None = None) -> Any:
    """Altair: precision against recall over the bias range, the current bias ringed in red.

    Left: the P/R curve (strict spans and PHI characters); right: the measures
    against the bias, with a rule at the current value.
    """
    import altair as alt
    import pandas as pd

    rows = []
    for p in points:
        r = p.as_row()
        rows.append({"bias": r["bias"], "measure": "strict spans",
                     "precision": r["strict_precision"], "recall": r["strict_recall"]})
        rows.append({"bias": r["bias"], "measure": "PHI characters",
                     "precision": r["char_precision"], "recall": r["char_recall"]})
    frame = pd.DataFrame(rows)
    scale = alt.Scale(domain=[0, 1])

    def zoom(values: Any) -> Any:
        # Recall-first models live near the top right: zoom to the data, in 0.05 steps.
        low = min(float(v) for v in values) if len(values) else 0.0
        return alt.Scale(domain=[max(0.0, math.floor((low - 0.02) * 20) / 20), 1.0])

    colour = alt.Color("measure:N", title=None, legend=alt.Legend(orient="bottom"))
    pr = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("recall:Q", scale=zoom(frame["recall"]), title="recall"),
            y=alt.Y("precision:Q", scale=zoom(frame["precision"]), title="precision"),
            color=colour,
            order="bias:Q",
            tooltip=["bias:Q", "measure:N", alt.Tooltip("precision:Q", format=".3f"),
                     alt.Tooltip("recall:Q", format=".3f")],
        )
        .properties(title="Precision / recall over the bias range", width=320, height=300)
    )
    long = pd.DataFrame(
        [{"bias": p.bias, "measure": m, "value": v}
         for p in points
         for m, v in (("strict precision", p.strict["precision"]),
                      ("strict recall", p.strict["recall"]),
                      ("PHI char recall", p.char["recall"]))]
    )
    lines = (
        alt.Chart(long)
        .mark_line()
        .encode(
            x=alt.X("bias:Q", title="O-label bias (negative = more PHI marked)"),
            y=alt.Y("value:Q", scale=scale, title=None),
            color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="bottom")),
        )
        .properties(title="Measures against the bias", width=320, height=300)
    )
    if current is not None:
        cur = pd.DataFrame([
            {"bias": current.bias, "measure": "strict spans",
             "precision": current.strict["precision"], "recall": current.strict["recall"]},
            {"bias": current.bias, "measure": "PHI characters",
             "precision": current.char["precision"], "recall": current.char["recall"]},
        ])
        pr = pr + alt.Chart(cur).mark_point(size=220, color="red", filled=False, strokeWidth=3).encode(
            x="recall:Q", y="precision:Q"
        )
        lines = lines + alt.Chart(pd.DataFrame([{"bias": current.bias}])).mark_rule(
            color="red", strokeWidth=2
        ).encode(x="bias:Q")
    return alt.hconcat(pr, lines).resolve_scale(color="independent")
