"""The note confidence that orders the review queue by default.

``logprob_per_span(logprob, n_spans) = log P(y*|x) / (1 + number of predicted spans)``.

Why this measure (issue 13, ``bench/queue_order.py``, docs/active.md "Queue
order"): a note's strict F1 is about ``1 - errors / (2 x spans)``, and
``-log P(y*|x)`` grows with the number of errors the model expects, so
dividing by the spans puts expected errors on F1's scale. The raw
log-probability instead ranks long notes first whatever their PHI density
(English dev families: Spearman with note F1 0.544 raw, 0.670 per span), and
per token dilutes a note's PHI errors in its narrative (MEDDOCAN dev: 0.645
per token, 0.666 per span, 0.659 raw). No measure is best on every set
(presidio-synth dev: 0.590 per span, 0.615 raw); per span's worst loss is the
smallest. The ``+ 1`` keeps a note without predicted spans finite and its
score equal to its log-probability.

Lives in the ground layer because the store (queue column), the learning
strategies and the benches all compute it and must agree.
"""

from __future__ import annotations

import math

__all__ = ["logprob_per_span"]


def logprob_per_span(logprob: float, n_spans: int) -> float:
    """``logprob / (1 + n_spans)``; higher = more confident (it is at most 0)."""
    if n_spans < 0:
        raise ValueError(f"a note cannot have {n_spans} predicted spans")
    if not math.isfinite(logprob):
        raise ValueError(f"log-probability must be finite, got {logprob!r}")
    return float(logprob) / (1 + int(n_spans))
