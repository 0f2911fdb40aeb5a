"""The score scale of margin-trained models: fitted by likelihood, kept on disk, bias-0 tags unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from deid_core.engine.calibration import fit_scale, negative_log_likelihood
from deid_core.engine.model import SCORE_SCALE_KEY, DeidModel, TrainConfig, train_model
from deid_core.learning.registry import RetrainPolicy
from deid_core.learning.retrain import calibration_notes, in_loop_base, retrain_round
from deid_core.schemes import load_scheme
from deid_core.synthetic import generate_notes

SCHEME = load_scheme("i2b2_2014")


def test_fit_recovers_a_known_temperature() -> None:
    # One token per sentence and no transitions: gold drawn from softmax(3 * emissions).
    rng = np.random.default_rng(0)
    n, k, true_scale = 6000, 5, 3.0
    emissions = rng.normal(size=(n, k))
    p = np.exp(true_scale * emissions)
    p /= p.sum(axis=1, keepdims=True)
    gold = np.array([rng.choice(k, p=row) for row in p])
    bounds = [(i, i + 1) for i in range(n)]
    scale = fit_scale([(emissions, bounds, gold)], np.zeros((k, k)))
    assert scale == pytest.approx(true_scale, rel=0.1)


def test_fitted_scale_is_the_minimum_with_transitions() -> None:
    rng = np.random.default_rng(1)
    k = 4
    transitions = rng.normal(scale=0.01, size=(k, k))
    notes = []
    for _ in range(40):
        emissions = rng.normal(scale=0.05, size=(30, k))
        # a margin model's picture: small weights, gold mostly on top
        gold = (emissions + rng.gumbel(scale=0.02, size=emissions.shape)).argmax(axis=1)
        notes.append((emissions, [(0, 15), (15, 30)], gold))
    scale = fit_scale(notes, transitions)
    best = negative_log_likelihood(scale, notes, transitions)
    assert scale > 4  # small weights, gold on top: the fit scales them up
    for other in (scale / 1.2, scale * 1.2):
        assert best <= negative_log_likelihood(other, notes, transitions)


def test_no_gold_tokens_keeps_scale_one() -> None:
    assert fit_scale([], np.zeros((3, 3))) == 1.0


def without_scale(model: DeidModel) -> DeidModel:
    """The same CRF and files with no score scale recorded (as a fast-round model was before)."""
    return DeidModel(
        crf_bytes=model._crf_bytes, lang="en", scheme=model.scheme, config=model.config,
        gazetteer=model.gazetteer, rule_mapping=model.rule_mapping,
        metadata={k: v for k, v in model.metadata.items() if not k.startswith(SCORE_SCALE_KEY)},
        rules_text=model.rules_text, filters_text=model.filters_text,
    )


@pytest.fixture(scope="module")
def notes():
    return generate_notes(80, seed=7, lang="en")


@pytest.fixture(scope="module")
def pa_model(notes) -> DeidModel:
    return train_model(notes[:60], lang="en", scheme=SCHEME,
                       config=TrainConfig(algorithm="pa", max_iterations=5), calibration=notes[60:])


def test_margin_model_is_scaled_and_keeps_its_bias_zero_tags(pa_model, notes, tmp_path) -> None:
    scale = pa_model.metadata[SCORE_SCALE_KEY]
    assert scale > 2  # `pa` weights are far smaller than a likelihood fit's
    assert pa_model.metadata["score_scale_info"]["held_out"] is True
    unscaled = without_scale(pa_model)
    held = notes[60:]
    for doc in held:
        assert pa_model.predict(doc).tags == unscaled.predict(doc).tags
    # Unscaled, no CRF span is sure enough to seed propagation (score >= 0.9): the defect.
    sure = [
        [s.score >= m.config.propagate_min_score for d in held for s in m.predict(d).spans
         if s.source.startswith("crf:")]
        for m in (pa_model, unscaled)
    ]
    assert np.mean(sure[0]) > 0.25 and not any(sure[1])
    # The unscaled model's token marginals are near uniform; the scaled one is sure of its tags.
    mean_best = [
        float(np.mean([m.predict(d).marginals.max(axis=1).mean() for d in held])) for m in (pa_model, unscaled)
    ]
    assert mean_best[0] > 0.9 > mean_best[1]
    pa_model.save(tmp_path / "m")
    loaded = DeidModel.load(tmp_path / "m")
    assert loaded.metadata[SCORE_SCALE_KEY] == scale
    np.testing.assert_allclose(loaded.weights.transitions, pa_model.weights.transitions)


def test_bias_means_what_it_means_for_a_likelihood_model(pa_model, notes) -> None:
    """The defect: an unscaled `pa` model tags most tokens as PHI at bias -1."""
    held = notes[60:]

    def phi_share(model: DeidModel, bias: float) -> float:
        preds = [model.predict(d, bias) for d in held]
        return sum(sum(t != "O" for t in p.tags) for p in preds) / sum(len(p.tags) for p in preds)

    gold_share = phi_share(pa_model, 0.0)
    assert phi_share(pa_model, -1.0) < 2 * gold_share
    unscaled = without_scale(pa_model)
    assert phi_share(unscaled, -1.0) > 2 * gold_share


def test_likelihood_models_are_not_scaled(notes) -> None:
    model = train_model(notes[:30], lang="en", scheme=SCHEME, config=TrainConfig(max_iterations=10))
    assert SCORE_SCALE_KEY not in model.metadata


def test_fast_round_fits_the_scale_on_corpus_notes_it_did_not_train_on(notes) -> None:
    starter = train_model(notes[:60], lang="en", scheme=SCHEME, config=TrainConfig(max_iterations=10))
    budget = sum(len(d.text) for d in notes[:60]) // 2
    policy = RetrainPolicy(loop_algorithm="pa", loop_iterations=5, loop_base_chars=budget, folds=2)
    sample = in_loop_base(notes[:60], budget)
    held = calibration_notes(notes[:60], sample)
    assert held and not {d.id for d in held} & {d.id for d in sample}
    assert calibration_notes(notes[:60], notes[:60]) is None
    reviewed = [replace(d, id=f"r{d.id}") for d in notes[60:75]]
    result = retrain_round(reviewed, active_model=starter, policy=policy, lang="en", base_docs=notes[:60])
    info = result.model.metadata["score_scale_info"]
    assert info["held_out"] is True and info["documents"] > 0
    assert result.model.metadata[SCORE_SCALE_KEY] > 1


def test_notes_a_model_separates_keep_the_scale_bounded(notes) -> None:
    """A few training notes fit perfectly: the likelihood wants an infinite scale."""
    from deid_core.engine.calibration import MAX_WEIGHT

    model = train_model(notes[:4], lang="en", scheme=SCHEME, config=TrainConfig(algorithm="ap", max_iterations=10))
    assert model.metadata["score_scale_info"]["held_out"] is False
    largest = max(np.abs(model.weights.state.data).max(), np.abs(model.weights.transitions).max())
    assert largest <= MAX_WEIGHT * 1.001
    for doc in notes[60:70]:
        assert np.isfinite(model.predict(doc).logprob)


def test_loading_an_unscaled_margin_model_warns(pa_model, tmp_path, caplog) -> None:
    """Fast-round models saved before score scales existed still load, with a warning."""
    import logging

    old = without_scale(pa_model)
    old.save(tmp_path / "old")
    pa_model.save(tmp_path / "new")
    with caplog.at_level(logging.WARNING, logger="deid_core.engine.model"):
        DeidModel.load(tmp_path / "new")
        assert not [r for r in caplog.records if "score scales" in r.getMessage()]
        DeidModel.load(tmp_path / "old")
    assert [r for r in caplog.records if "score scales" in r.getMessage()]


def test_fold_stand_ins_are_scaled_like_the_candidate(notes) -> None:
    """A comparison at the project's bias decodes the k-fold stand-ins at that bias too."""
    from deid_core.engine.model import train_models

    models = train_models(notes[:40], lang="en", scheme=SCHEME, config=TrainConfig(algorithm="pa", max_iterations=5),
                          leave_out=[list(range(30, 35)), list(range(35, 40))], calibration=notes[60:])
    assert len(models) == 3
    assert all(m.metadata[SCORE_SCALE_KEY] > 2 for m in models)
