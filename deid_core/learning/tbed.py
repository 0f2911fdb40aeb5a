"""Transformation-based error-driven rule learning (TBED; paper 003, in the style of Brill).

The learner looks at the merged system's *own* errors on training notes it
did not train on (out-of-fold predictions, ``folds`` models), and learns an
ordered list of readable transformations (``deid_core.engine.transforms``)
that correct them:

1. every error proposes candidates: a span whose boundaries match a gold
   span of another label proposes ``relabel``; a span that touches no gold
   PHI proposes ``delete``; a span one token short of or past a gold span of
   its label proposes ``extend_*`` / ``shrink_*``; a one-token gold span that
   no prediction touches proposes ``add``. Each is instantiated with every
   template (words, shapes and labels in a window of two tokens, alone and in
   pairs);
2. each candidate is scored on *all* its firings in the training notes:
   ``gain = 2 * (strict true positives gained) - (spans added) - (gold
   tokens uncovered)``, so a rule that fixes three errors and breaks two
   gains little, and one that uncovers PHI pays for it (recall first);
3. the best candidate (ties: fewer conditions, then its text) is applied to
   the training predictions and the scores of the notes it changed are
   updated; this repeats until the best gain falls below ``min_gain``.

The candidate pool comes from the errors of the first pass; errors that
only later rules create do not propose new candidates (a simplification of
Brill's learner that keeps one pass over the corpus per rule).
"""

from __future__ import annotations

import logging
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from deid_core.engine.model import DeidModel, TrainConfig, train_model
from deid_core.engine.tokenize import Token, tokenize
from deid_core.engine.transforms import TokenView, Transform, TransformSet, act, apply_one
from deid_core.schemes import LabelScheme
from deid_core.spans import Document, Span

log = logging.getLogger(__name__)
Progress = Callable[[str, float], None]

#: Condition templates: (position, field) pairs, alone and in pairs (paper 003's window of words, shapes, labels).
SPAN_TEMPLATES: tuple[tuple[tuple[str, str], ...], ...] = (
    (("first", "word"),), (("last", "word"),), (("before1", "word"),), (("after1", "word"),),
    (("first", "shape"),), (("last", "shape"),), (("before1", "shape"),), (("after1", "shape"),),
    (("before1", "label"),), (("after1", "label"),),
    (("before2", "word"), ("before1", "word")), (("after1", "word"), ("after2", "word")),
    (("before1", "word"), ("first", "word")), (("last", "word"), ("after1", "word")),
    (("before1", "word"), ("after1", "word")), (("before1", "word"), ("first", "shape")),
    (("first", "word"), ("last", "word")),
)
TOKEN_TEMPLATES: tuple[tuple[tuple[str, str], ...], ...] = (
    (("token", "word"),), (("token", "word"), ("before1", "word")), (("token", "word"), ("after1", "word")),
    (("token", "shape"), ("before1", "word")), (("token", "shape"), ("after1", "word")),
    (("token", "shape"), ("before2", "word"), ("before1", "word")),
    (("token", "shape"), ("before1", "label")), (("token", "shape"), ("after1", "label")),
    (("token", "word"), ("before1", "label")),
)


@dataclass(frozen=True)
class TBEDConfig:
    folds: int = 2  # out-of-fold models that produce the errors to learn from
    min_gain: int = 3  # stop when the best transformation gains less than this
    max_rules: int = 60
    min_precision: float = 0.6  # of a transformation's firings, the share that must fix an error
    seed: int = 0

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ValueError(f"TBED needs at least 2 folds, got {self.folds}")
        if self.min_gain < 1:
            raise ValueError(f"min_gain must be >= 1, got {self.min_gain}")


Key = tuple[str, str | None, tuple[tuple[str, str, str], ...]]  # (target, span label, conditions)
Action = tuple[str, str | None]  # (action, to)


@dataclass
class _Note:
    tokens: tuple[Token, ...]
    gold_exact: dict[tuple[int, int], str]
    gold_token: list[bool]  # token inside a gold span
    spans: list[Span]
    starts: list[int]
    ends: list[int]


def _span_keys(view: TokenView, k: int) -> list[Key]:
    label = view.spans[k].label
    out = []
    for tpl in SPAN_TEMPLATES:
        conds = tuple(sorted((p, f, view.value(view.span_index(k, p), f)) for p, f in tpl))
        out.append(("span", label, conds))
    return out


def _token_keys(view: TokenView, k: int) -> list[Key]:
    out = []
    for tpl in TOKEN_TEMPLATES:
        conds = tuple(sorted((p, f, view.value(view.token_index(k, p), f)) for p, f in tpl))
        out.append(("token", None, conds))
    return out


def _is_tp(note: _Note, s: Span | None) -> bool:
    return s is not None and note.gold_exact.get((s.start, s.end)) == s.label


def _covered_gold(note: _Note, s: Span | None) -> int:
    """Gold PHI tokens lying wholly inside ``s``."""
    if s is None:
        return 0
    i = bisect_left(note.starts, s.start)
    j = bisect_right(note.ends, s.end)
    return sum(note.gold_token[i:j])


def _delta(note: _Note, view: TokenView, t: Transform, k: int) -> int:
    """Change of the utility (2 TP - predicted spans - uncovered gold tokens) if ``t`` fires at ``k``."""
    if t.target == "token":
        new = act(t, view, k)
        return 2 * _is_tp(note, new) - 1
    old = view.spans[k]
    new = act(t, view, k)
    if new == old:
        return 0
    lost = _covered_gold(note, old) - _covered_gold(note, new)
    return 2 * (_is_tp(note, new) - _is_tp(note, old)) - ((new is not None) - 1) - max(0, lost)


def _corrections(note: _Note, view: TokenView) -> list[tuple[str, int, Action]]:
    """The error-fixing actions at each anchor: ("span"|"token", anchor index, action)."""
    out: list[tuple[str, int, Action]] = []
    toks = view.tokens
    for k, s in enumerate(view.spans):
        if _is_tp(note, s):
            continue
        a, b = view.first[k], view.last[k]
        if a > b:
            continue
        gold = note.gold_exact.get((s.start, s.end))
        if gold is not None:
            out.append(("span", k, ("relabel", gold)))
            continue
        if not any(note.gold_token[a : b + 1]):
            out.append(("span", k, ("delete", None)))
            continue
        if a > 0 and note.gold_exact.get((toks[a - 1].start, s.end)) == s.label:
            out.append(("span", k, ("extend_left", None)))
        if b + 1 < len(toks) and note.gold_exact.get((s.start, toks[b + 1].end)) == s.label:
            out.append(("span", k, ("extend_right", None)))
        if b > a and note.gold_exact.get((toks[a + 1].start, s.end)) == s.label:
            out.append(("span", k, ("shrink_left", None)))
        if b > a and note.gold_exact.get((s.start, toks[b - 1].end)) == s.label:
            out.append(("span", k, ("shrink_right", None)))
    for m, tok in enumerate(toks):
        label = note.gold_exact.get((tok.start, tok.end))
        if label is not None and view.owner[m] < 0:
            out.append(("token", m, ("add", label)))
    return out


def _transform(key: Key, action: Action, name: str = "candidate", gain: int = 0, precision: float = 1.0) -> Transform:
    target, label, conds = key
    return Transform(name, target, label, conds, action[0], action[1], gain, precision)


def _note_stats(
    note: _Note, pool: dict[Key, list[Action]]
) -> dict[tuple[Key, Action], tuple[int, int, int]]:
    """Per candidate firing in this note: (utility gain, firings that fix, firings in all)."""
    view = TokenView(note.tokens, note.spans)
    out: dict[tuple[Key, Action], list[int]] = defaultdict(lambda: [0, 0, 0])
    anchors = [("span", k, _span_keys(view, k)) for k in range(len(view.spans)) if view.first[k] <= view.last[k]]
    anchors += [("token", m, _token_keys(view, m)) for m in range(len(view.tokens)) if view.owner[m] < 0]
    for _target, k, keys in anchors:
        for key in keys:
            actions = pool.get(key)
            if not actions:
                continue
            for action in actions:
                d = _delta(note, view, _transform(key, action), k)
                cell = out[(key, action)]
                cell[0] += d
                cell[1] += d > 0
                cell[2] += 1
    return {k: (v[0], v[1], v[2]) for k, v in out.items()}


def learn_transforms(
    docs: Sequence[Document],
    predictions: Sequence[Sequence[Span]],
    *,
    lang: str,
    config: TBEDConfig | None = None,
    tokens: Sequence[Sequence[Token]] | None = None,
    progress: Progress | None = None,
) -> TransformSet:
    """Learn an ordered transformation list from ``predictions`` (out-of-fold) against ``docs``' gold."""
    config = config or TBEDConfig()
    if len(docs) != len(predictions):
        raise ValueError(f"{len(docs)} documents but {len(predictions)} predictions")
    notes = []
    for i, doc in enumerate(docs):
        toks = tuple(tokens[i]) if tokens is not None else tokenize(doc.text, lang).tokens
        gold_exact = {(s.start, s.end): s.label for s in doc.spans}
        starts = [t.start for t in toks]
        ends = [t.end for t in toks]
        gold_token = [False] * len(toks)
        for g in doc.spans:
            for m in range(bisect_right(ends, g.start), bisect_left(starts, g.end)):
                gold_token[m] = True
        notes.append(_Note(toks, gold_exact, gold_token, list(predictions[i]), starts, ends))
    # 1. candidates from the errors
    proposals: Counter[tuple[Key, Action]] = Counter()
    for note in notes:
        view = TokenView(note.tokens, note.spans)
        for target, k, action in _corrections(note, view):
            keys = _span_keys(view, k) if target == "span" else _token_keys(view, k)
            for key in keys:
                proposals[(key, action)] += 1
    pool: dict[Key, list[Action]] = defaultdict(list)
    for (key, action), n in sorted(proposals.items(), key=lambda kv: repr(kv[0])):
        if n >= config.min_gain:
            pool[key].append(action)
    log.info("TBED: %d candidate transformations from %d notes", sum(map(len, pool.values())), len(notes))
    # 2. score every candidate on all its firings
    per_note = [_note_stats(note, pool) for note in notes]
    totals: dict[tuple[Key, Action], list[int]] = defaultdict(lambda: [0, 0, 0])
    for stats in per_note:
        for cand, (g, good, n) in stats.items():
            cell = totals[cand]
            cell[0] += g
            cell[1] += good
            cell[2] += n
    learned: list[Transform] = []
    while len(learned) < config.max_rules:
        best = None
        for cand, (g, good, n) in totals.items():
            if g < config.min_gain or n == 0 or good / n < config.min_precision:
                continue
            rank = (-g, len(cand[0][2]), repr(cand))
            if best is None or rank < best[0]:
                best = (rank, cand, g, good, n)
        if best is None:
            break
        _, (key, action), g, good, n = best
        t = _transform(key, action, f"tbed-{len(learned) + 1:03d}", g, good / n)
        learned.append(t)
        if progress is not None:
            progress(f"TBED rule {len(learned)} (gain {g})", len(learned) / config.max_rules)
        # 3. apply it, and rescore the notes it changed
        for i, note in enumerate(notes):
            view = TokenView(note.tokens, note.spans)
            new = apply_one(t, view)
            if new == note.spans:
                continue
            for cand, (dg, dgood, dn) in per_note[i].items():
                cell = totals[cand]
                cell[0] -= dg
                cell[1] -= dgood
                cell[2] -= dn
            note.spans = new
            per_note[i] = _note_stats(note, pool)
            for cand, (dg, dgood, dn) in per_note[i].items():
                cell = totals[cand]
                cell[0] += dg
                cell[1] += dgood
                cell[2] += dn
    meta = {"notes": len(docs), "candidates": sum(map(len, pool.values())), "min_gain": config.min_gain}
    return TransformSet(tuple(learned), meta)


# -- out-of-fold predictions and training ----------------------------------------------


def out_of_fold_predictions(
    docs: Sequence[Document],
    *,
    lang: str,
    scheme: LabelScheme | None,
    config: TrainConfig,
    folds: int = 2,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[list[Span]]:
    """Each note tagged (merged and filtered, no transformations) by a model trained without it."""
    fold_of = np.random.default_rng(seed).permutation(len(docs)) % folds
    out: list[list[Span]] = [[] for _ in docs]
    for f in range(folds):
        train = [d for i, d in enumerate(docs) if fold_of[i] != f]
        held = [i for i in range(len(docs)) if fold_of[i] == f]
        if not train or not held:
            continue

        def report(message: str, fraction: float, f: int = f) -> None:
            if progress is not None:
                progress(f"fold {f + 1}/{folds}: {message}", (f + fraction) / folds)

        model = train_model(train, lang=lang, scheme=scheme, config=config, progress=report)
        model.transforms = None
        for i in held:
            out[i] = list(model.predict(docs[i]).spans)
    return out


def train_with_transforms(
    docs: Sequence[Document],
    *,
    lang: str,
    scheme: LabelScheme | None = None,
    config: TrainConfig | None = None,
    tbed: TBEDConfig | None = None,
    progress: Progress | None = None,
) -> DeidModel:
    """Train the model on all notes and a TBED transformation list on its out-of-fold errors."""
    config = config or TrainConfig()
    tbed = tbed or TBEDConfig(seed=config.seed)

    def part(lo: float, hi: float) -> Progress | None:
        if progress is None:
            return None
        return lambda m, f: progress(m, lo + (hi - lo) * f)

    predictions = out_of_fold_predictions(
        docs, lang=lang, scheme=scheme, config=config, folds=tbed.folds, seed=tbed.seed,
        progress=part(0.0, 0.45),
    )
    transforms = learn_transforms(docs, predictions, lang=lang, config=tbed, progress=part(0.45, 0.55))
    model = train_model(docs, lang=lang, scheme=scheme, config=config, progress=part(0.55, 1.0))
    model.transforms = transforms
    model.metadata["tbed"] = {**transforms.meta, "rules": len(transforms), "config": _asdict(tbed)}
    return model


def _asdict(cfg: TBEDConfig) -> dict[str, Any]:
    return {k: getattr(cfg, k) for k in ("folds", "min_gain", "max_rules", "min_precision", "seed")}


__all__ = [
    "TBEDConfig",
    "learn_transforms",
    "out_of_fold_predictions",
    "train_with_transforms",
]
