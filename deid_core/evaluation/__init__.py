"""i2b2-style evaluation: strict, relaxed and token criteria, the character leak view,
the error taxonomy of paper 004, approximate randomization and the log-probability
Spearman correlation of paper 002. Definitions are in docs/evaluation.md.
"""

from __future__ import annotations

from deid_core.evaluation.metrics import (
    TokenBounds,
    char_prf,
    pair_documents,
    prf,
    relaxed_prf,
    strict_prf,
    token_bounds,
    token_prf,
    tokenize_corpus,
)
from deid_core.evaluation.report import (
    criterion_report,
    evaluate,
    format_report,
    spearman_logprob_f1,
)
from deid_core.evaluation.significance import (
    METRICS,
    approximate_randomization,
    document_counts,
    format_significance,
)
from deid_core.evaluation.taxonomy import classify_document, error_report

__all__ = [
    "METRICS",
    "TokenBounds",
    "approximate_randomization",
    "char_prf",
    "classify_document",
    "criterion_report",
    "document_counts",
    "error_report",
    "evaluate",
    "format_report",
    "format_significance",
    "pair_documents",
    "prf",
    "relaxed_prf",
    "spearman_logprob_f1",
    "strict_prf",
    "token_bounds",
    "token_prf",
    "tokenize_corpus",
]
