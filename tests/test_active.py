"""Query strategies on toy pools whose right answer is obvious, and the modAL workarounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from sklearn.base import BaseEstimator

from deid_core.confidence import logprob_per_span
from deid_core.errors import UnsupportedFormat
from deid_core.learning.active import (
    STRATEGIES,
    DocumentLearner,
    as_object_array,
    confidence_measures,
    diversify,
    get_strategy,
    rank_pool,
    score_entropy,
    score_least_confident,
    score_least_confident_span,
    score_margin,
    score_phi_mass,
    select,
    strategy_descriptions,
)
from deid_core.spans import Document, Span

TAGS = ("O", "B-NAME", "I-NAME")


@dataclass(frozen=True)
class FakePrediction:
    """Just the fields strategies read from deid_core.engine.model.Prediction."""

    doc_id: str
    marginals: np.ndarray
    tag_names: tuple[str, ...] = TAGS
    logprob_per_token: float = 0.0
    spans: tuple[Span, ...] = ()

    @property
    def n_tokens(self) -> int:
        return int(self.marginals.shape[0])


class FakeModel:
    """Returns canned predictions by document id, as DeidModel.predict_many would."""

    def __init__(self, preds: dict[str, FakePrediction]) -> None:
        self.preds = preds
        self.calls = 0

    def predict_many(self, docs, bias=0.0, progress=False):  # noqa: ANN001
        self.calls += 1
        return [self.preds[d.id] for d in docs]


def confident(n: int = 4) -> np.ndarray:
    return np.tile([0.98, 0.01, 0.01], (n, 1))


def doc(i: int, text: str | None = None) -> Document:
    return Document(f"d{i}", text if text is not None else f"note number {i} about topic {i}")


# The toy pool: d0 is confident everywhere, d1 has one near-tie token, d2 is
# uniformly unsure, d3 is confident but full of PHI, d4 has a low sequence probability.
def toy_pool() -> tuple[list[Document], dict[str, FakePrediction]]:
    tie = confident()
    tie[2] = [0.5, 0.49, 0.01]
    unsure = np.tile([0.4, 0.3, 0.3], (4, 1))
    phi = np.tile([0.02, 0.9, 0.08], (4, 1))
    preds = {
        "d0": FakePrediction("d0", np.tile([0.999, 0.0005, 0.0005], (4, 1)), logprob_per_token=-0.01),
        "d1": FakePrediction("d1", tie, logprob_per_token=-0.2),
        "d2": FakePrediction("d2", unsure, logprob_per_token=-0.9),
        "d3": FakePrediction("d3", phi, logprob_per_token=-0.1),
        "d4": FakePrediction("d4", confident(), logprob_per_token=-3.0),
    }
    return [doc(i) for i in range(5)], preds


@pytest.mark.parametrize(
    ("strategy", "expected_first"),
    [
        ("least_confident", "d4"),
        ("entropy", "d2"),
        ("margin", "d1"),
        ("phi_mass", "d3"),
    ],
)
def test_strategy_picks_the_obvious_note(strategy: str, expected_first: str) -> None:
    pool, preds = toy_pool()
    idx, scores = get_strategy(strategy).function(FakeModel(preds), pool, 1)
    assert [pool[i].id for i in idx] == [expected_first]
    assert scores.shape == (1,)


@pytest.mark.parametrize("strategy", [s for s in STRATEGIES if s != "random"])
def test_strategy_never_prefers_the_confident_note(strategy: str) -> None:
    pool, preds = toy_pool()
    idx, scores = get_strategy(strategy).function(FakeModel(preds), pool, 4)
    assert "d0" not in [pool[i].id for i in idx]
    assert list(scores) == sorted(scores, reverse=True)


@pytest.mark.parametrize(
    ("scorer", "marginals", "logprob", "expected"),
    [
        (score_entropy, np.array([[1.0, 0.0, 0.0]]), 0.0, 0.0),
        (score_entropy, np.array([[0.5, 0.5, 0.0]] * 2), 0.0, 2 * np.log(2)),
        (score_margin, np.array([[0.9, 0.1, 0.0], [0.6, 0.4, 0.0]]), 0.0, 0.8),
        (score_phi_mass, np.array([[0.75, 0.25, 0.0], [0.5, 0.25, 0.25]]), 0.0, 0.75),
        (score_least_confident, np.array([[1.0, 0.0, 0.0]]), -0.7, 0.7),
        (score_entropy, np.zeros((0, 3)), 0.0, 0.0),
        (score_margin, np.zeros((0, 3)), 0.0, 0.0),
        (score_phi_mass, np.zeros((0, 3)), 0.0, 0.0),
        (score_least_confident, np.zeros((0, 3)), -5.0, 0.0),
    ],
)
def test_scorer_values(scorer, marginals, logprob, expected) -> None:  # noqa: ANN001
    pred = FakePrediction("x", marginals, logprob_per_token=logprob)
    assert scorer(pred) == pytest.approx(expected)


def test_least_confident_span_divides_by_one_plus_the_predicted_spans() -> None:
    # Two notes of 4 tokens. "many": log P -6 over 5 predicted spans (-1 per span);
    # "few": log P -4 over 1 span (-2 per span). Raw and per-token log P call
    # "many" less sure; per span, "few" is: one likely error among 1 PHI span
    # costs its F1 more than 1.5 among 5.
    spans = tuple(Span(k, k + 1, "NAME", "crf:t", 0.9) for k in range(0, 10, 2))
    many = FakePrediction("many", confident(), logprob_per_token=-6.0 / 4, spans=spans)
    few = FakePrediction("few", confident(), logprob_per_token=-4.0 / 4, spans=spans[:1])
    assert score_least_confident_span(many) == pytest.approx(1.0)
    assert score_least_confident_span(few) == pytest.approx(2.0)
    assert score_least_confident(many) > score_least_confident(few)
    pool = [Document("many", "m"), Document("few", "f")]
    idx, scores = get_strategy("least_confident_span").function(
        FakeModel({"many": many, "few": few}), pool, 2)
    assert [pool[i].id for i in idx] == ["few", "many"]
    assert rank_pool("least_confident_span", pool, predictions=[many, few]) == pytest.approx(
        {"many": 1.0, "few": 2.0})
    assert confidence_measures(few)["logprob_per_span"] == pytest.approx(-2.0)
    assert score_least_confident_span(FakePrediction("e", np.zeros((0, 3)), spans=spans)) == 0.0


def test_logprob_per_span_rejects_impossible_input() -> None:
    assert logprob_per_span(-3.0, 0) == -3.0
    with pytest.raises(ValueError, match="-1 predicted spans"):
        logprob_per_span(-3.0, -1)
    with pytest.raises(ValueError, match="finite"):
        logprob_per_span(float("nan"), 2)


def test_phi_mass_needs_an_outside_column() -> None:
    pred = FakePrediction("x", confident(), tag_names=("B-NAME", "I-NAME", "E-NAME"))
    with pytest.raises(ValueError, match="'x'"):
        score_phi_mass(pred)


@pytest.mark.parametrize(
    ("scores", "n", "expected"),
    [
        ([0.1, 0.9, 0.5], 2, [1, 2]),
        ([0.3, 0.3, 0.3, 0.1], 2, [0, 1]),  # ties go to the lowest index
        ([0.2, 0.4], 5, [1, 0]),  # asking for more than the pool gives the pool
        ([0.2, 0.4], 0, []),
        ([], 3, []),
    ],
)
def test_select_is_best_first_and_deterministic(scores, n, expected) -> None:  # noqa: ANN001
    idx, vals = select(np.array(scores, dtype=float), n)
    assert idx.tolist() == expected
    assert vals.tolist() == [scores[i] for i in expected]


def test_random_is_seeded() -> None:
    pool = [doc(i) for i in range(30)]
    fn = get_strategy("random").function
    a, _ = fn(None, pool, 5, rng=np.random.default_rng(7))
    b, _ = fn(None, pool, 5, rng=np.random.default_rng(7))
    c, _ = fn(None, pool, 5, rng=np.random.default_rng(8))
    assert a.tolist() == b.tolist()
    assert a.tolist() != c.tolist()
    assert len(set(a.tolist())) == 5


def test_strategy_returns_a_tuple_even_for_one_document() -> None:
    pool, preds = toy_pool()
    out = get_strategy("entropy").function(FakeModel(preds), pool[:1], 1)
    assert isinstance(out, tuple) and len(out) == 2


def test_strategy_reuses_given_predictions() -> None:
    pool, preds = toy_pool()
    model = FakeModel(preds)
    idx, _ = get_strategy("phi_mass").function(model, pool, 1, predictions=[preds[d.id] for d in pool])
    assert model.calls == 0
    assert pool[idx[0]].id == "d3"


def test_unknown_strategy_names_the_choices() -> None:
    with pytest.raises(UnsupportedFormat, match="least_confident"):
        get_strategy("most_fun")


def test_descriptions_cover_every_strategy() -> None:
    names = [d["name"] for d in strategy_descriptions()]
    assert names == list(STRATEGIES)
    assert all(d["description"] and d["title"] for d in strategy_descriptions())


DUP = "Patient seen in clinic today for follow up of diabetes and hypertension, stable."


@pytest.mark.parametrize(
    ("texts", "ranked", "n", "expected"),
    [
        # two near-copies at the top: the second is skipped for a distinct note
        ([DUP, DUP + " Yes.", "Fracture of the left wrist after a fall.", "Chest pain."], [0, 1, 2, 3], 2, [0, 2]),
        # nothing distinct left: the batch is topped up in rank order
        ([DUP, DUP, DUP], [2, 0, 1], 2, [2, 0]),
        # all distinct: rank order unchanged
        (["alpha beta", "gamma delta", "epsilon zeta"], [1, 2, 0], 3, [1, 2, 0]),
        (["", ""], [0, 1], 1, [0]),
    ],
)
def test_diversify_skips_near_duplicates(texts, ranked, n, expected) -> None:  # noqa: ANN001
    assert diversify(texts, ranked, n, threshold=0.8) == expected


def test_strategy_with_diversity_avoids_duplicate_notes() -> None:
    pool = [doc(0, DUP), doc(1, DUP + " Again."), doc(2, "Fracture of the wrist after a fall.")]
    unsure = np.tile([0.4, 0.3, 0.3], (4, 1))
    preds = {
        "d0": FakePrediction("d0", unsure),
        "d1": FakePrediction("d1", np.tile([0.45, 0.3, 0.25], (4, 1))),
        "d2": FakePrediction("d2", confident()),
    }
    fn = get_strategy("entropy").function
    plain, _ = fn(FakeModel(preds), pool, 2)
    diverse, _ = fn(FakeModel(preds), pool, 2, diversity=0.8)
    assert sorted(plain.tolist()) == [0, 1]
    assert sorted(diverse.tolist()) == [0, 2]


def test_rank_pool_scores_by_id() -> None:
    pool, preds = toy_pool()
    ranks = rank_pool("least_confident", pool, predictions=list(preds.values()))
    assert max(ranks, key=ranks.get) == "d4"
    assert set(ranks) == {d.id for d in pool}
    assert rank_pool("random", pool) == rank_pool("random", pool)


def test_rank_pool_reports_missing_predictions() -> None:
    pool, preds = toy_pool()
    with pytest.raises(ValueError, match="no prediction"):
        rank_pool("entropy", pool, predictions=[preds["d0"]])


class CountingEstimator(BaseEstimator):
    """Records what modAL hands to fit(), so the object-array workaround is visible."""

    def fit(self, X, y=None):  # noqa: ANN001
        self.seen_ = [d.id for d in X]
        self.labels_ = [d.id for d in y]
        return self

    def predict_many(self, docs, bias=0.0):  # noqa: ANN001
        n = len(docs)
        return [FakePrediction(d.id, confident(1 + i), logprob_per_token=-float(i)) for i, d in enumerate(docs)][:n]


def test_learner_teaches_ragged_documents_and_queries() -> None:
    docs = [doc(i, "x" * (i + 1)) for i in range(6)]
    learner = DocumentLearner(
        estimator=CountingEstimator(),
        query_strategy=get_strategy("least_confident").function,
        X_training=as_object_array(docs[:2]),
        y_training=as_object_array(docs[:2]),
    )
    assert learner.estimator.seen_ == ["d0", "d1"]
    learner.teach(as_object_array(docs[2:4]), as_object_array(docs[2:4]))
    assert learner.estimator.seen_ == ["d0", "d1", "d2", "d3"]
    pool = as_object_array(docs[4:])
    idx, chosen = learner.query(pool, 1)
    assert idx.tolist() == [1] and chosen[0].id == "d5"
    learner.fit(as_object_array(docs[:1]))
    assert learner.estimator.seen_ == ["d0"] and learner.estimator.labels_ == ["d0"]


def test_learner_rejects_mismatched_labels() -> None:
    docs = [doc(i) for i in range(3)]
    learner = DocumentLearner(estimator=CountingEstimator(), query_strategy=get_strategy("random").function)
    with pytest.raises(ValueError, match="3 documents but 1 labels"):
        learner.teach(as_object_array(docs), as_object_array(docs[:1]))


def test_as_object_array_keeps_documents_whole() -> None:
    docs = [Document("a", "abc", (Span(0, 1, "X"),)), Document("b", "")]
    arr = as_object_array(docs)
    assert arr.shape == (2,) and arr[0] is docs[0]


def test_confidence_measures_are_oriented_higher_is_surer() -> None:
    from deid_core.learning.active import confidence_measures

    o = TAGS.index("O")
    sure = np.zeros((3, len(TAGS)))
    sure[:, o] = 1.0
    unsure = np.full((3, len(TAGS)), 1.0 / len(TAGS))
    a = confidence_measures(FakePrediction("a", sure, logprob_per_token=-0.01))
    b = confidence_measures(FakePrediction("b", unsure, logprob_per_token=-1.0))
    assert set(a) == {"expected_span_f1", "logprob", "logprob_per_token", "logprob_per_span", "neg_expected_errors",
                      "neg_expected_errors_per_token", "min_span_marginal", "neg_phi_mass"}
    for key in a:
        assert a[key] >= b[key], key
    assert a["neg_expected_errors"] == 0.0 and a["min_span_marginal"] == 1.0
    assert b["neg_expected_errors"] == pytest.approx(-3 * (1 - 1.0 / len(TAGS)))
    assert b["logprob"] == pytest.approx(-3.0)
