"""Query strategies and a modAL learner over whole clinical notes.

A reviewer's hour is best spent on the notes the model is least sure about
(paper 002: CRF log-probability ranks records by their F-measure, and the
learning curve flattens quickly, so choosing *which* notes to label matters).

Strategies are plain functions in modAL's shape,
``strategy(model, pool, n, *, rng=None) -> (indices, scores)``, with scoring
(a pure function of a prediction's marginals) kept apart from selection
(``modAL.utils.selection.multi_argmax``). ``model`` is anything with
``predict_many(docs)`` (a ``DeidModel``), or a modAL learner whose estimator
has one, because modAL passes the learner itself to the strategy.

modAL 0.4.2 needs two workarounds (see CONVENTIONS.md): ``ActiveLearner``'s
``fit``/``teach`` call ``check_X_y(force_all_finite=...)``, which
scikit-learn >= 1.8 rejects, and ``data_vstack`` cannot stack ragged document
lists. :class:`DocumentLearner` keeps documents in a 1-D numpy object array
and overrides both entry points.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from modAL.models import ActiveLearner
from modAL.utils.selection import multi_argmax
from sklearn.base import BaseEstimator

from deid_core.confidence import logprob_per_span
from deid_core.errors import UnsupportedFormat
from deid_core.spans import Document

__all__ = [
    "STRATEGIES",
    "CRFEstimator",
    "DocumentLearner",
    "PredictionLike",
    "StrategyInfo",
    "as_object_array",
    "diversify",
    "get_strategy",
    "pool_predictions",
    "rank_pool",
    "score_entropy",
    "score_least_confident",
    "score_least_confident_span",
    "score_margin",
    "score_phi_mass",
    "select",
    "strategy_descriptions",
]

_EPS = 1e-12


class PredictionLike(Protocol):
    """What a strategy reads from ``deid_core.engine.model.Prediction``."""

    doc_id: str
    marginals: Any  # numpy array (n_tokens, n_tags)
    tag_names: tuple[str, ...]
    logprob_per_token: float
    n_tokens: int


# --------------------------------------------------------------------------- scoring
# Each scorer maps one prediction to "how much would labelling this note teach
# the model": higher is more informative. They are pure and cheap, so the app
# can re-rank its queue without re-running the CRF.


def _marginals(pred: PredictionLike) -> np.ndarray:
    m = np.asarray(pred.marginals, dtype=float)
    if m.ndim != 2:
        raise ValueError(f"document {pred.doc_id!r}: marginals must be 2-D, got shape {m.shape}")
    return m


def score_least_confident(pred: PredictionLike) -> float:
    """Negative length-normalised log P(y*|x) (paper 002).

    Normalising by length stops the strategy from simply picking the longest
    notes, whose raw log-probability is always lowest.
    """
    if pred.n_tokens == 0:
        return 0.0
    return float(-pred.logprob_per_token)


def score_least_confident_span(pred: Any) -> float:
    """Negative log P(y*|x) per predicted span, ``-logprob / (1 + spans)``.

    The review queue's default order (``deid_core.confidence``): of the
    measures compared in docs/active.md "Queue order" it ranks notes by their
    F1 most robustly across MEDDOCAN and English notes; per token dilutes PHI
    errors in narrative text and the raw value picks long notes.
    """
    if pred.n_tokens == 0:
        return 0.0
    logprob = float(getattr(pred, "logprob", pred.logprob_per_token * pred.n_tokens))
    return -logprob_per_span(logprob, len(getattr(pred, "spans", ()) or ()))


def score_entropy(pred: PredictionLike) -> float:
    """Total token entropy: the expected number of nats still to learn from this note."""
    m = _marginals(pred)
    if m.size == 0:
        return 0.0
    return float(-(m * np.log(np.clip(m, _EPS, 1.0))).sum())


def score_margin(pred: PredictionLike) -> float:
    """One minus the smallest margin between a token's two most likely tags.

    A single near-tie is enough to make a note worth reviewing: that is where
    a PHI token may be about to be missed.
    """
    m = _marginals(pred)
    if m.shape[0] == 0 or m.shape[1] < 2:
        return 0.0
    top2 = np.sort(m, axis=1)[:, -2:]
    return float(1.0 - (top2[:, 1] - top2[:, 0]).min())


def _outside_column(pred: PredictionLike) -> int:
    try:
        return list(pred.tag_names).index("O")
    except ValueError:
        raise ValueError(f"document {pred.doc_id!r}: prediction has no 'O' tag column") from None


def score_phi_mass(pred: PredictionLike) -> float:
    """Expected number of PHI tokens: the sum of the non-O marginals.

    Recall comes first in de-identification, so notes likely to hold much PHI
    are worth a reviewer's time even when the model is fairly sure.
    """
    m = _marginals(pred)
    if m.shape[0] == 0:
        return 0.0
    return float((1.0 - m[:, _outside_column(pred)]).sum())


def confidence_measures(pred: Any) -> dict[str, float]:
    """Document confidence measures, oriented so that higher = more confident.

    For ranking the queue by expected errors (``bench/queue_order.py`` compares
    them against each note's F1): log-probability raw, per token and per
    predicted span (``logprob_per_span``, the queue's default), minus the
    expected number of wrongly tagged tokens (sum of 1 - max marginal, raw and
    per token), the smallest marginal of a token on a predicted PHI tag, and
    minus the expected number of PHI tokens.
    """
    m = _marginals(pred)
    n = m.shape[0]
    if n == 0:
        return {"expected_span_f1": 1.0, "logprob": 0.0, "logprob_per_token": 0.0, "logprob_per_span": 0.0,
                "neg_expected_errors": 0.0,
                "neg_expected_errors_per_token": 0.0, "min_span_marginal": 1.0, "neg_phi_mass": 0.0}
    errors = float((1.0 - m.max(axis=1)).sum())
    phi = float((1.0 - m[:, _outside_column(pred)]).sum())
    names = list(pred.tag_names)
    tags = list(getattr(pred, "tags", ()) or ())
    span_marginals = [m[k, names.index(t)] for k, t in enumerate(tags) if t != "O"]
    logprob = float(getattr(pred, "logprob", pred.logprob_per_token * n))
    # Expected strict F1 of the note: predicted spans count as correct with the
    # product of their tokens' path marginals (an approximation of the span's
    # marginal), gold spans expected = the sum of B- marginals.
    span_probs: list[float] = []
    for k, t in enumerate(tags):
        p_tag = float(m[k, names.index(t)])
        if t.startswith("B-") or (t.startswith("I-") and (k == 0 or tags[k - 1] == "O")):
            span_probs.append(p_tag)
        elif t.startswith("I-") and span_probs:
            span_probs[-1] *= p_tag
    begins = [j for j, name in enumerate(names) if name.startswith("B-")]
    expected_gold = float(m[:, begins].sum()) if begins else 0.0
    denom = len(span_probs) + expected_gold
    expected_f1 = 2.0 * sum(span_probs) / denom if denom > 1e-9 else 1.0
    return {
        "expected_span_f1": expected_f1,
        "logprob": logprob,
        "logprob_per_token": float(pred.logprob_per_token),
        "logprob_per_span": logprob_per_span(logprob, len(getattr(pred, "spans", ()) or ())),
        "neg_expected_errors": -errors,
        "neg_expected_errors_per_token": -errors / n,
        "min_span_marginal": float(min(span_marginals)) if span_marginals else 1.0,
        "neg_phi_mass": -phi,
    }


# --------------------------------------------------------------------------- selection


def select(scores: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``n`` by score via modAL's ``multi_argmax``, returned best first.

    Ties are broken by pool index so that a run is reproducible.
    """
    scores = np.asarray(scores, dtype=float)
    n = min(int(n), scores.shape[0])
    if n <= 0:
        return np.empty(0, dtype=int), np.empty(0, dtype=float)
    # multi_argmax picks an arbitrary member among tied scores at the cut; we
    # want the lowest index there, so rank first and take the head.
    idx, _ = multi_argmax(scores, n_instances=scores.shape[0])
    order = np.lexsort((idx, -scores[idx]))
    chosen = idx[order][:n].astype(int)
    return chosen, scores[chosen]


def diversify(
    texts: Sequence[str],
    ranked: Sequence[int],
    n: int,
    *,
    threshold: float = 0.8,
) -> list[int]:
    """Greedy batch from best-ranked notes, skipping near-duplicates of notes already taken.

    Template-generated notes (discharge letters from one clinic) often differ
    only in their PHI; labelling five of them teaches little more than one.
    Near-duplicate means TF-IDF cosine similarity above ``threshold``. When too
    few distinct notes remain, the batch is topped up from the skipped ones in
    rank order so its size is always ``min(n, len(ranked))``.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    ranked = [int(i) for i in ranked]
    n = min(int(n), len(ranked))
    if n <= 0:
        return []
    candidates = [texts[i] for i in ranked]
    try:
        vectors = TfidfVectorizer(sublinear_tf=True).fit_transform(candidates)
    except ValueError:  # every note empty or stop words only: nothing to compare
        return ranked[:n]
    taken: list[int] = []  # positions in ``ranked``
    skipped: list[int] = []
    for pos in range(len(ranked)):
        if len(taken) == n:
            break
        if taken:
            sims = (vectors[taken] @ vectors[pos].T).toarray().ravel()
            if sims.max() > threshold:
                skipped.append(pos)
                continue
        taken.append(pos)
    for pos in skipped:
        if len(taken) == n:
            break
        taken.append(pos)
    return [ranked[p] for p in taken]


# --------------------------------------------------------------------------- strategies


def pool_predictions(model: Any, pool: Sequence[Document]) -> list[PredictionLike]:
    """Predictions for a pool from a ``DeidModel``, a :class:`CRFEstimator` or a modAL learner."""
    docs = list(pool)
    target = model
    if not hasattr(target, "predict_many"):
        target = getattr(model, "estimator", model)
    if hasattr(target, "predict_many"):
        return list(target.predict_many(docs))
    raise TypeError(f"{type(model).__name__} cannot predict: it has no predict_many()")


def _texts(pool: Sequence[Document]) -> list[str]:
    return [d.text for d in pool]


def _scored_strategy(
    scorer: Callable[[PredictionLike], float],
) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    def strategy(
        model: Any,
        pool: Sequence[Document],
        n: int = 1,
        *,
        rng: np.random.Generator | None = None,
        predictions: Sequence[PredictionLike] | None = None,
        diversity: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        preds = list(predictions) if predictions is not None else pool_predictions(model, pool)
        if len(preds) != len(pool):
            raise ValueError(f"{len(preds)} predictions for a pool of {len(pool)} documents")
        scores = np.array([scorer(p) for p in preds], dtype=float)
        return _finish(scores, pool, n, diversity)

    strategy.__name__ = scorer.__name__.replace("score_", "")
    strategy.__doc__ = scorer.__doc__
    return strategy


def _finish(
    scores: np.ndarray, pool: Sequence[Document], n: int, diversity: float | None
) -> tuple[np.ndarray, np.ndarray]:
    if diversity is None:
        return select(scores, n)
    ranked, _ = select(scores, scores.shape[0])
    chosen = np.array(diversify(_texts(pool), ranked, n, threshold=diversity), dtype=int)
    return chosen, scores[chosen]


def random_strategy(
    model: Any,
    pool: Sequence[Document],
    n: int = 1,
    *,
    rng: np.random.Generator | None = None,
    predictions: Sequence[PredictionLike] | None = None,
    diversity: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random choice: the baseline every other strategy must beat.

    Without ``rng`` a fixed seed is used, so the same pool gives the same queue.
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    scores = rng.random(len(pool))
    return _finish(scores, pool, n, diversity)


least_confident = _scored_strategy(score_least_confident)
least_confident_span = _scored_strategy(score_least_confident_span)
entropy = _scored_strategy(score_entropy)
margin = _scored_strategy(score_margin)
phi_mass = _scored_strategy(score_phi_mass)


@dataclass(frozen=True)
class StrategyInfo:
    name: str
    title: str
    description: str
    function: Callable[..., tuple[np.ndarray, np.ndarray]]
    scorer: Callable[[PredictionLike], float] | None  # None: needs no model


STRATEGIES: dict[str, StrategyInfo] = {
    info.name: info
    for info in (
        StrategyInfo(
            "least_confident_span",
            "Least confident per span",
            "Notes whose most likely tagging has the lowest log-probability per predicted"
            " PHI span: the most robust ranking of notes by their F1 (the review queue's default order).",
            least_confident_span,
            score_least_confident_span,
        ),
        StrategyInfo(
            "least_confident",
            "Least confident",
            "Notes whose most likely tagging has the lowest length-normalised"
            " log-probability (paper 002: this ranks notes by how many errors they hold).",
            least_confident,
            score_least_confident,
        ),
        StrategyInfo(
            "entropy",
            "Token entropy",
            "Notes with the largest total token entropy of the CRF marginals:"
            " many uncertain tokens, favouring longer notes.",
            entropy,
            score_entropy,
        ),
        StrategyInfo(
            "margin",
            "Smallest margin",
            "Notes holding the token with the smallest gap between its two most"
            " likely tags: a single near-tie is enough.",
            margin,
            score_margin,
        ),
        StrategyInfo(
            "phi_mass",
            "Expected PHI",
            "Notes with the most expected PHI tokens (sum of non-O marginals):"
            " recall-first, reviews where leaks would be.",
            phi_mass,
            score_phi_mass,
        ),
        StrategyInfo(
            "random",
            "Random",
            "Uniform random order with a fixed seed: the baseline to beat.",
            random_strategy,
            None,
        ),
    )
}


def get_strategy(name: str) -> StrategyInfo:
    try:
        return STRATEGIES[name]
    except KeyError:
        raise UnsupportedFormat(
            f"unknown query strategy {name!r}: use one of {', '.join(STRATEGIES)}"
        ) from None


def strategy_descriptions() -> list[dict[str, str]]:
    """Name, title and description of every strategy, for the app's strategy choice."""
    return [
        {"name": s.name, "title": s.title, "description": s.description}
        for s in STRATEGIES.values()
    ]


def rank_pool(
    name: str,
    pool: Sequence[Document],
    *,
    model: Any = None,
    predictions: Sequence[PredictionLike] | None = None,
    rng: np.random.Generator | None = None,
) -> dict[str, float]:
    """Score of every pool document by id, for strategy-ordered review queues.

    Higher means "review sooner". ``predictions`` may be passed when the app
    already holds them, so the queue is re-ranked without re-running the CRF.
    """
    info = get_strategy(name)
    if info.scorer is None:
        rng = rng if rng is not None else np.random.default_rng(0)
        scores = rng.random(len(pool))
    else:
        preds = list(predictions) if predictions is not None else pool_predictions(model, pool)
        by_id = {p.doc_id: p for p in preds}
        missing = [d.id for d in pool if d.id not in by_id]
        if missing:
            raise ValueError(f"no prediction for {len(missing)} documents, e.g. {missing[0]!r}")
        scores = np.array([info.scorer(by_id[d.id]) for d in pool], dtype=float)
    return {d.id: float(s) for d, s in zip(pool, scores)}


# --------------------------------------------------------------------------- learner


def as_object_array(docs: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of documents (``np.array`` would try to unpack them)."""
    arr = np.empty(len(docs), dtype=object)
    for i, d in enumerate(docs):
        arr[i] = d
    return arr


class DocumentLearner(ActiveLearner):
    """modAL ``ActiveLearner`` whose samples are whole documents.

    ``fit``/``teach`` skip ``check_X_y`` (its ``force_all_finite`` keyword is
    gone from scikit-learn >= 1.8) and concatenate object arrays instead of
    ``data_vstack``, which fails on ragged documents.
    """

    def _add_training_data(self, X: Any, y: Any) -> None:
        X = as_object_array(list(X))
        y = as_object_array(list(y)) if y is not None else X
        if len(X) != len(y):
            raise ValueError(f"{len(X)} documents but {len(y)} labels")
        if self.X_training is None:
            self.X_training, self.y_training = X, y
        else:
            self.X_training = np.concatenate([self.X_training, X])
            self.y_training = np.concatenate([self.y_training, y])

    def fit(self, X: Any, y: Any = None, bootstrap: bool = False, **fit_kwargs: Any) -> DocumentLearner:
        self.X_training = None
        self.y_training = None
        self._add_training_data(X, y)
        self._fit_to_known(bootstrap=bootstrap, **fit_kwargs)
        return self


class CRFEstimator(BaseEstimator):
    """scikit-learn face of ``deid_core.engine.model.train_model`` for modAL.

    ``X`` holds documents; ``y``, when given, holds the reviewed versions of
    the same documents (their spans are the labels); otherwise ``X``'s own
    spans are used.
    """

    def __init__(
        self,
        lang: str = "en",
        scheme: Any = None,
        config: Any = None,
        progress: Callable[[str, float], None] | None = None,
    ) -> None:
        self.lang = lang
        self.scheme = scheme
        self.config = config
        self.progress = progress

    def fit(self, X: Any, y: Any = None) -> CRFEstimator:
        from deid_core.engine.model import train_model

        docs = list(y) if y is not None else list(X)
        if len(docs) != len(X):
            raise ValueError(f"{len(X)} documents but {len(docs)} labels")
        self.model_ = train_model(
            docs, lang=self.lang, scheme=self.scheme, config=self.config, progress=self.progress
        )
        return self

    def _check_fitted(self) -> Any:
        model = getattr(self, "model_", None)
        if model is None:
            raise RuntimeError("CRFEstimator is not fitted: call fit() or teach() first")
        return model

    def predict_many(self, docs: Sequence[Document], bias: float = 0.0) -> list[Any]:
        return list(self._check_fitted().predict_many(list(docs), bias=bias))

    def predict(self, X: Any) -> np.ndarray:
        return as_object_array(self.predict_many(list(X)))
