"""Per-document counts for the i2b2 criteria, and the fast P/R/F functions built on them.

Everything is computed from ``(tp, fp, fn)`` counts per document and label,
because those counts add up: micro, macro, per-category, HIPAA and the
approximate-randomization test all reuse them without matching spans again.
The bias sweep calls ``strict_prf``/``token_prf``/``char_prf`` thousands of
times, so they use plain sets, Counters and bisect, and never re-tokenise when
given a token cache.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from deid_core.engine.tokenize import Token, Tokenized, tokenize
from deid_core.errors import DocumentMismatch
from deid_core.spans import Document, Span

# label -> [tp, fp, fn]
LabelCounts = dict[str, list[int]]
# Token start and end offsets, in text order: all the token criterion needs.
TokenBounds = tuple[list[int], list[int]]
TokenSource = TokenBounds | Tokenized | Sequence[Token]
Progress = Callable[[str, float], None]


def prf(tp: int, fp: int, fn: int) -> dict[str, float]:
    """Precision, recall and F1 from counts.

    A ratio with a zero denominator is 1.0 when gold and prediction are both
    empty (nothing to find, nothing found) and 0.0 otherwise; this is the same
    convention as the per-document F1 used for the Spearman correlation.
    """
    both_empty = tp == 0 and fp == 0 and fn == 0
    precision = tp / (tp + fp) if tp + fp else (1.0 if both_empty else 0.0)
    recall = tp / (tp + fn) if tp + fn else (1.0 if both_empty else 0.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def prf_counts(tp: int, fp: int, fn: int) -> dict[str, float | int]:
    out: dict[str, float | int] = dict(prf(tp, fp, fn))
    out.update(tp=tp, fp=fp, fn=fn)
    return out


def pair_documents(
    gold: Sequence[Document], pred: Sequence[Document]
) -> list[tuple[Document, Document | None]]:
    """Match predictions to gold documents by id, in gold order.

    A gold document without a prediction counts as one with no spans (its PHI
    is all missed). A prediction without gold, a duplicate id, or a prediction
    whose text differs from its gold raises ``DocumentMismatch`` naming the
    id and the first differing offset, never the text.
    """
    by_id: dict[str, Document] = {}
    for doc in pred:
        if doc.id in by_id:
            raise DocumentMismatch(f"document {doc.id!r} appears twice in the predictions")
        by_id[doc.id] = doc
    seen: set[str] = set()
    pairs: list[tuple[Document, Document | None]] = []
    for g in gold:
        if g.id in seen:
            raise DocumentMismatch(f"document {g.id!r} appears twice in the gold corpus")
        seen.add(g.id)
        p = by_id.get(g.id)
        if p is not None and p.text is not g.text and p.text != g.text:
            raise DocumentMismatch(
                f"document {g.id!r}: predicted text differs from gold text"
                f" (lengths {len(p.text)} and {len(g.text)},"
                f" first difference at offset {_first_difference(g.text, p.text)})"
            )
        pairs.append((g, p))
    extra = [doc_id for doc_id in by_id if doc_id not in seen]
    if extra:
        more = f" and {len(extra) - 1} more" if len(extra) > 1 else ""
        raise DocumentMismatch(f"prediction for document {extra[0]!r}{more} has no gold document")
    return pairs


def _first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _spans(doc: Document | None, labels: Collection[str] | None) -> Sequence[Span]:
    if doc is None:
        return ()
    if labels is None:
        return doc.spans
    return [s for s in doc.spans if s.label in labels]


def _add(counts: LabelCounts, label: str, i: int, n: int = 1) -> None:
    row = counts.get(label)
    if row is None:
        row = counts[label] = [0, 0, 0]
    row[i] += n


# ---------------------------------------------------------------- strict


def strict_counts(gold: Sequence[Span], pred: Sequence[Span]) -> LabelCounts:
    """Exact (start, end, label) matches; duplicates count as a multiset."""
    g = Counter(s.key for s in gold)
    p = Counter(s.key for s in pred)
    counts: LabelCounts = {}
    for key, n in g.items():
        hit = min(n, p.get(key, 0))
        if hit:
            _add(counts, key[2], 0, hit)
        if n > hit:
            _add(counts, key[2], 2, n - hit)
    for key, n in p.items():
        extra = n - min(n, g.get(key, 0))
        if extra:
            _add(counts, key[2], 1, extra)
    return counts


# ---------------------------------------------------------------- relaxed


def relaxed_counts(gold: Sequence[Span], pred: Sequence[Span], relaxed_chars: int = 2) -> LabelCounts:
    """Same label and start, end within ``relaxed_chars``; each span matched at most once.

    Pairs are taken greedily, closest ends first (exact matches before
    near ones), so a gold span never credits two predictions.
    """
    gold_ends: dict[tuple[int, str], list[int]] = {}
    for s in gold:
        gold_ends.setdefault((s.start, s.label), []).append(s.end)
    pred_ends: dict[tuple[int, str], list[int]] = {}
    for s in pred:
        pred_ends.setdefault((s.start, s.label), []).append(s.end)
    counts: LabelCounts = {}
    for key, g_ends in gold_ends.items():
        label = key[1]
        p_ends = pred_ends.get(key, [])
        matched = _greedy_pairs(g_ends, p_ends, relaxed_chars) if p_ends else 0
        if matched:
            _add(counts, label, 0, matched)
        if len(g_ends) > matched:
            _add(counts, label, 2, len(g_ends) - matched)
        if len(p_ends) > matched:
            _add(counts, label, 1, len(p_ends) - matched)
    for key, p_ends in pred_ends.items():
        if key not in gold_ends:
            _add(counts, key[1], 1, len(p_ends))
    return counts


def _greedy_pairs(g_ends: list[int], p_ends: list[int], tolerance: int) -> int:
    if len(g_ends) == 1 and len(p_ends) == 1:
        return int(abs(g_ends[0] - p_ends[0]) <= tolerance)
    candidates = sorted(
        (abs(ge - pe), gi, pi)
        for gi, ge in enumerate(g_ends)
        for pi, pe in enumerate(p_ends)
        if abs(ge - pe) <= tolerance
    )
    used_g: set[int] = set()
    used_p: set[int] = set()
    for _, gi, pi in candidates:
        if gi not in used_g and pi not in used_p:
            used_g.add(gi)
            used_p.add(pi)
    return len(used_g)


# ---------------------------------------------------------------- token


def token_bounds(tokens: TokenSource) -> TokenBounds:
    """Normalise a tokenisation (``Tokenized``, tokens, or bounds) to start/end lists."""
    if isinstance(tokens, Tokenized):
        tokens = tokens.tokens
    if isinstance(tokens, tuple) and len(tokens) == 2 and isinstance(tokens[0], list):
        return tokens  # already bounds
    toks = list(tokens)
    return [t.start for t in toks], [t.end for t in toks]  # type: ignore[union-attr]


def tokenize_corpus(
    docs: Iterable[Document], lang: str = "en", progress: Progress | None = None
) -> dict[str, TokenBounds]:
    """Tokenise once; pass the result as ``tokens=`` to ``token_prf``/``evaluate``."""
    docs = list(docs)
    out: dict[str, TokenBounds] = {}
    for i, doc in enumerate(docs):
        out[doc.id] = token_bounds(tokenize(doc.text, lang))
        if progress is not None and (i % 50 == 0 or i == len(docs) - 1):
            progress("tokenising", (i + 1) / len(docs))
    return out


def token_labels(bounds: TokenBounds, spans: Sequence[Span]) -> dict[int, str]:
    """Token index -> label of the span covering it (partly covering is enough).

    When spans overlap, a token takes the label of the span that covers most
    of its characters (the earlier span on ties). A span covering only
    whitespace touches no token and is invisible to this criterion.
    """
    starts, ends = bounds
    out: dict[int, str] = {}
    cover: dict[int, int] = {}
    for span in sorted(spans, key=lambda s: (s.start, s.end, s.label)):
        i = bisect_right(ends, span.start)
        j = bisect_left(starts, span.end)
        for k in range(i, j):
            if k in out:
                covered = min(ends[k], span.end) - max(starts[k], span.start)
                if covered <= cover[k]:
                    continue
                cover[k] = covered
            else:
                cover[k] = min(ends[k], span.end) - max(starts[k], span.start)
            out[k] = span.label
    return out


def token_counts(bounds: TokenBounds, gold: Sequence[Span], pred: Sequence[Span]) -> LabelCounts:
    """Label-aware counts over non-O tokens: a wrong label is one fp and one fn."""
    g = token_labels(bounds, gold)
    p = token_labels(bounds, pred)
    counts: LabelCounts = {}
    for k, label in g.items():
        if p.get(k) == label:
            _add(counts, label, 0)
        else:
            _add(counts, label, 2)
    for k, label in p.items():
        if g.get(k) != label:
            _add(counts, label, 1)
    return counts


# ---------------------------------------------------------------- characters


def merge_intervals(spans: Iterable[Span]) -> list[tuple[int, int]]:
    """Union of span extents as sorted, disjoint [start, end) intervals."""
    out: list[tuple[int, int]] = []
    for s, e in sorted((sp.start, sp.end) for sp in spans):
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        else:
            out.append((s, e))
    return out


def covered_length(intervals: list[tuple[int, int]], starts: list[int], start: int, end: int) -> int:
    """Characters of [start, end) inside the disjoint sorted ``intervals``."""
    i = max(bisect_right(starts, start) - 1, 0)
    total = 0
    while i < len(intervals):
        s, e = intervals[i]
        if s >= end:
            break
        lo, hi = max(s, start), min(e, end)
        if hi > lo:
            total += hi - lo
        i += 1
    return total


def char_counts(gold: Sequence[Span], pred: Sequence[Span]) -> tuple[int, int, int]:
    """(overlap, gold, predicted) character counts, whatever the labels.

    Every character inside a span counts, whitespace included: a span is the
    unit a reviewer accepts and an exporter redacts.
    """
    g = merge_intervals(gold)
    p = merge_intervals(pred)
    gold_chars = sum(e - s for s, e in g)
    pred_chars = sum(e - s for s, e in p)
    overlap = 0
    i = j = 0
    while i < len(g) and j < len(p):
        lo = max(g[i][0], p[j][0])
        hi = min(g[i][1], p[j][1])
        if hi > lo:
            overlap += hi - lo
        if g[i][1] < p[j][1]:
            i += 1
        else:
            j += 1
    return overlap, gold_chars, pred_chars


def char_label_recall(gold: Sequence[Span], pred: Sequence[Span]) -> dict[str, list[int]]:
    """Gold label -> [gold chars, chars covered by any prediction]: where the leaks are."""
    p = merge_intervals(pred)
    p_starts = [s for s, _ in p]
    out: dict[str, list[int]] = {}
    for span in gold:
        row = out.setdefault(span.label, [0, 0])
        row[0] += span.end - span.start
        if p:
            row[1] += covered_length(p, p_starts, span.start, span.end)
    return out


# ---------------------------------------------------------------- public P/R/F


def _sum_counts(per_doc: Iterable[LabelCounts]) -> tuple[int, int, int]:
    tp = fp = fn = 0
    for counts in per_doc:
        for a, b, c in counts.values():
            tp += a
            fp += b
            fn += c
    return tp, fp, fn


def strict_prf(
    gold: Sequence[Document], pred: Sequence[Document], *, labels: Collection[str] | None = None
) -> dict[str, float | int]:
    """Micro P/R/F and counts under the strict criterion; ``labels`` restricts (e.g. HIPAA)."""
    pairs = pair_documents(gold, pred)
    return prf_counts(
        *_sum_counts(strict_counts(_spans(g, labels), _spans(p, labels)) for g, p in pairs)
    )


def relaxed_prf(
    gold: Sequence[Document],
    pred: Sequence[Document],
    *,
    relaxed_chars: int = 2,
    labels: Collection[str] | None = None,
) -> dict[str, float | int]:
    pairs = pair_documents(gold, pred)
    return prf_counts(
        *_sum_counts(
            relaxed_counts(_spans(g, labels), _spans(p, labels), relaxed_chars) for g, p in pairs
        )
    )


def token_prf(
    gold: Sequence[Document],
    pred: Sequence[Document],
    *,
    lang: str = "en",
    tokens: Mapping[str, TokenSource] | None = None,
    labels: Collection[str] | None = None,
) -> dict[str, float | int]:
    """Token-level micro P/R/F; ``tokens`` (doc id -> tokenisation) avoids re-tokenising.

    Documents missing from ``tokens`` are tokenised with ``lang``.
    """
    pairs = pair_documents(gold, pred)
    tokens = tokens or {}
    per_doc = []
    for g, p in pairs:
        src = tokens.get(g.id)
        bounds = token_bounds(src) if src is not None else token_bounds(tokenize(g.text, lang))
        per_doc.append(token_counts(bounds, _spans(g, labels), _spans(p, labels)))
    return prf_counts(*_sum_counts(per_doc))


def char_prf(gold: Sequence[Document], pred: Sequence[Document]) -> dict[str, float | int]:
    """The leak view: share of PHI characters covered by any prediction, whatever the label.

    ``missed_share`` = 1 - recall is the share of PHI characters that would
    leak if the predictions were redacted as they stand.
    """
    pairs = pair_documents(gold, pred)
    overlap = gold_chars = pred_chars = 0
    for g, p in pairs:
        o, gc, pc = char_counts(g.spans, _spans(p, None))
        overlap += o
        gold_chars += gc
        pred_chars += pc
    return char_result(overlap, gold_chars, pred_chars)


def char_result(overlap: int, gold_chars: int, pred_chars: int) -> dict[str, float | int]:
    out: dict[str, float | int] = dict(prf(overlap, pred_chars - overlap, gold_chars - overlap))
    out.update(
        gold_chars=gold_chars,
        pred_chars=pred_chars,
        overlap_chars=overlap,
        missed_chars=gold_chars - overlap,
        missed_share=(gold_chars - overlap) / gold_chars if gold_chars else 0.0,
    )
    return out
