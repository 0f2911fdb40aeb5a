"""Retraining policy: a worse candidate never replaces the active model, and the reason is kept."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from deid_core.errors import ModelError
from deid_core.learning.registry import (
    RetrainPolicy,
    decide,
    is_heldout,
    learning_curve,
    retrain,
    should_retrain,
    split_reviewed,
)
from deid_core.spans import Document, Span


@dataclass(frozen=True)
class FakePrediction:
    doc_id: str
    spans: tuple[Span, ...]

    def to_document(self, doc: Document) -> Document:
        return doc.with_spans(self.spans)


class LabelModel:
    """Finds exactly the gold spans of the labels it was trained on: quality follows data."""

    def __init__(self, labels: set[str], train_ids: list[str]) -> None:
        self.labels = labels
        self.train_ids = train_ids

    def predict_many(self, docs, bias=0.0, progress=False):  # noqa: ANN001
        return [FakePrediction(d.id, tuple(s for s in d.spans if s.label in self.labels)) for d in docs]


def label_trainer(docs, progress=None):  # noqa: ANN001
    if progress:
        progress("training", 1.0)
    return LabelModel({s.label for d in docs for s in d.spans}, [d.id for d in docs])


def blind_trainer(docs, progress=None):  # noqa: ANN001
    """A broken training procedure: learns nothing."""
    return LabelModel(set(), [d.id for d in docs])


#: A scheme holding the labels of ``note``: gold imports refuse labels outside the scheme.
NAME_DATE = str(Path(__file__).parent / "fixtures" / "name_date_scheme.yaml")


def note(i: int, label: str = "NAME") -> Document:
    text = f"Patient Smith{i} seen on 2020-01-{i % 28 + 1:02d} at clinic."
    return Document(f"n{i:03d}", text, (Span(8, 13 + len(str(i)), label), Span(25, 35, "DATE")))


@pytest.mark.parametrize(
    ("cand", "active", "accepted", "fragment"),
    [
        ({"strict_f1": 0.80, "char_recall": 0.90}, None, True, "no active model"),
        ({"strict_f1": 0.85, "char_recall": 0.95}, {"strict_f1": 0.80, "char_recall": 0.90}, True, "better"),
        ({"strict_f1": 0.798, "char_recall": 0.90}, {"strict_f1": 0.80, "char_recall": 0.90}, True, "not worse"),
        ({"strict_f1": 0.70, "char_recall": 0.90}, {"strict_f1": 0.80, "char_recall": 0.90}, False, "strict F1 dropped by 0.1000"),
        ({"strict_f1": 0.90, "char_recall": 0.85}, {"strict_f1": 0.80, "char_recall": 0.90}, False, "character recall dropped"),
    ],
)
def test_decide(cand, active, accepted, fragment) -> None:  # noqa: ANN001
    ok, reason = decide(cand, active, RetrainPolicy(tolerance_f1=0.005, tolerance_recall=0.002))
    assert ok is accepted
    assert fragment in reason


@pytest.mark.parametrize(("new", "n", "expected"), [(0, 20, False), (19, 20, False), (20, 20, True), (3, 1, True)])
def test_should_retrain_after_n_reviewed(new: int, n: int, expected: bool) -> None:
    assert should_retrain(new, RetrainPolicy(retrain_every=n)) is expected


@pytest.mark.parametrize("bad", [{"retrain_every": 0}, {"folds": 1}, {"heldout_share": 1}, {"tolerance_f1": -0.1}])
def test_policy_rejects_nonsense(bad) -> None:  # noqa: ANN001
    with pytest.raises(ValueError):
        RetrainPolicy(**bad)


def test_policy_round_trips_through_settings() -> None:
    p = RetrainPolicy(retrain_every=7, tolerance_f1=0.01)
    assert RetrainPolicy.from_settings({**p.to_settings(), "theme": "dark"}) == p


def test_heldout_split_is_stable_and_about_the_right_size() -> None:
    docs = [note(i) for i in range(400)]
    train, held = split_reviewed(docs, RetrainPolicy(heldout_share=5))
    assert 50 <= len(held) <= 110
    assert {d.id for d in held} == {d.id for d in docs if is_heldout(d.id, 5)}
    assert not {d.id for d in train} & {d.id for d in held}


def test_registry_keeps_the_active_model_when_the_candidate_is_worse_kfold() -> None:
    reviewed = [note(i) for i in range(12)]
    active = label_trainer(reviewed[:8])
    result = retrain(
        reviewed,
        trainer=blind_trainer,
        active_model=active,
        active_train_ids=set(active.train_ids),
        active_trainer=label_trainer,
        policy=RetrainPolicy(folds=3),
    )
    d = result.decision
    assert d.comparison.method == "kfold"
    assert not d.accepted
    assert d.reason.startswith("rejected: character recall dropped") and "strict F1 dropped" in d.reason
    assert d.comparison.candidate["strict_f1"] == 0.0
    assert d.comparison.active["strict_f1"] == 1.0
    audit = d.to_audit()
    assert audit["decision"] == "rejected" and audit["n_eval_docs"] == 12
    assert "Smith" not in repr(audit)  # ids and numbers only


def test_registry_activates_a_better_candidate_kfold() -> None:
    # The active model never saw DATE spans; the candidate procedure, trained on all notes, does.
    reviewed = [note(i) for i in range(10)]
    only_names = [d.with_spans([s for s in d.spans if s.label == "NAME"]) for d in reviewed[:4]]
    active = label_trainer(only_names)
    result = retrain(
        reviewed,
        trainer=label_trainer,
        active_model=active,
        active_train_ids=set(),
        policy=RetrainPolicy(folds=2),
    )
    assert result.decision.accepted, result.decision.reason
    assert result.decision.comparison.candidate["strict_f1"] == 1.0


def test_registry_uses_the_heldout_split_once_it_is_large_enough() -> None:
    reviewed = [note(i) for i in range(200)]
    policy = RetrainPolicy(heldout_share=5, min_heldout=20)
    result = retrain(reviewed, trainer=blind_trainer, active_model=label_trainer(reviewed), active_train_ids=set(), policy=policy)
    held = {d.id for d in reviewed if is_heldout(d.id, 5)}
    assert result.decision.comparison.method == "heldout"
    assert set(result.decision.comparison.eval_ids) == held
    assert not held & set(result.train_ids)  # held-out notes never train the candidate
    assert not result.decision.accepted


def test_heldout_ignores_notes_the_active_model_trained_on() -> None:
    reviewed = [note(i) for i in range(60)]
    held = {d.id for d in reviewed if is_heldout(d.id, 5)}
    active = label_trainer(reviewed)  # trained on everything, held-out notes included
    policy = RetrainPolicy(min_heldout=5, folds=2)
    result = retrain(
        reviewed,
        trainer=label_trainer,
        active_model=active,
        active_train_ids=set(active.train_ids),
        policy=policy,
    )
    # The active model saw the held-out notes: they cannot judge it, so k-fold ...
    assert result.decision.comparison.method == "kfold"
    assert not set(result.decision.comparison.eval_ids) & held
    # ... but the candidate leaves them out, so that once it is active they can.
    assert len(held) >= 5 and not held & set(result.train_ids)
    assert len(result.train_ids) == 60 - len(held)
    nxt = retrain(reviewed, trainer=label_trainer, active_model=result.model,
                  active_train_ids=set(result.train_ids), policy=policy)
    assert nxt.decision.comparison.method == "heldout"
    assert set(nxt.decision.comparison.eval_ids) == held


def test_every_reviewed_note_trains_while_the_heldout_split_is_small() -> None:
    reviewed = [note(i) for i in range(40)]
    held = {d.id for d in reviewed if is_heldout(d.id, 5)}
    result = retrain(reviewed, trainer=label_trainer, policy=RetrainPolicy(min_heldout=20, folds=2))
    assert held and held <= set(result.train_ids)
    assert result.decision.comparison.method == "kfold"


def test_first_model_is_activated_with_its_kfold_scores() -> None:
    result = retrain([note(i) for i in range(6)], trainer=label_trainer, policy=RetrainPolicy(folds=3))
    assert result.decision.accepted
    assert result.decision.comparison.active is None
    assert result.decision.comparison.candidate["strict_f1"] == 1.0
    assert result.metrics["n_train_docs"] == 6 and result.n_train_tokens > 0


def test_retrain_reports_progress_monotonically() -> None:
    seen: list[float] = []
    retrain([note(i) for i in range(6)], trainer=label_trainer, policy=RetrainPolicy(folds=3),
            progress=lambda msg, f: seen.append(f))
    assert seen and seen == sorted(seen) and seen[-1] == 1.0


def test_retrain_needs_documents() -> None:
    with pytest.raises(ValueError, match="no reviewed"):
        retrain([], trainer=label_trainer)


def test_learning_curve_from_model_history() -> None:
    reviewed = [note(i) for i in range(12)]
    first = retrain(reviewed[:6], trainer=label_trainer, policy=RetrainPolicy(folds=3))
    second = retrain(reviewed, trainer=blind_trainer, active_model=first.model,
                     active_train_ids=set(first.train_ids), active_trainer=label_trainer,
                     policy=RetrainPolicy(folds=3))
    curve = learning_curve([{"version": "v1", "metrics": first.metrics},
                            {"version": "v2", "metrics": second.metrics},
                            {"version": "v0", "metrics": {}}])
    assert [(p["version"], p["docs"], p["accepted"]) for p in curve] == [("v1", 6, True), ("v2", 12, False)]
    assert curve[0]["tokens"] < curve[1]["tokens"]
    assert curve[1]["reason"].startswith("rejected")


# --------------------------------------------------------------------------- with the store


def test_retrain_due_counts_reviews_since_the_latest_candidate(store) -> None:  # noqa: ANN001
    from deid_core.learning.registry import retrain_due
    from deid_core.store import repository as repo

    repo.create_project(store, "al", settings={"retrain_every": 3}, scheme=NAME_DATE)
    repo.import_documents(store, "al", [note(i) for i in range(2)], annotations="gold")
    assert not retrain_due(store, "al")  # 2 reviewed, no model yet
    repo.import_documents(store, "al", [note(i) for i in range(2, 4)], annotations="gold")
    assert retrain_due(store, "al")
    first = retrain([note(i) for i in range(4)], trainer=label_trainer, policy=RetrainPolicy(folds=2))
    repo.register_model_version(store, "al", version="v1", artifact_path="/nowhere",
                                metrics=first.metrics, activate=True)
    assert not retrain_due(store, "al")
    repo.import_documents(store, "al", [note(i) for i in range(4, 6)], annotations="gold")
    assert not retrain_due(store, "al")
    # a rejected candidate also resets the count
    repo.import_documents(store, "al", [note(6)], annotations="gold")
    assert retrain_due(store, "al")
    repo.register_model_version(store, "al", version="v2", artifact_path="/nowhere",
                                metrics={"n_reviewed": 7}, parent="v1", activate=False)
    assert not retrain_due(store, "al")


def test_retrain_due_after_a_starter_model_trained_elsewhere(store) -> None:  # noqa: ANN001
    from deid_core.learning.registry import retrain_due
    from deid_core.store import repository as repo

    # The demo's starter model was trained on 300 notes outside the project; none of the
    # project's reviews were used, so they all count towards the next retrain.
    repo.create_project(store, "st", settings={"retrain_every": 3}, scheme=NAME_DATE)
    repo.register_model_version(store, "st", version="starter", artifact_path="/nowhere",
                                n_train_docs=300, metrics={}, activate=True)
    repo.import_documents(store, "st", [note(i) for i in range(2)], annotations="gold")
    assert not retrain_due(store, "st")
    repo.import_documents(store, "st", [note(i) for i in range(2, 3)], annotations="gold")
    assert retrain_due(store, "st")


def test_full_retrain_due_counts_reviews_since_the_last_full_candidate(store) -> None:  # noqa: ANN001
    from deid_core.learning.registry import full_retrain_due
    from deid_core.store import repository as repo

    repo.create_project(store, "fu", settings={"full_every": 3}, scheme=NAME_DATE)
    # The starter was trained with L-BFGS outside the project: its baseline is 0 reviews.
    repo.register_model_version(store, "fu", version="starter", artifact_path="/nowhere",
                                hyperparams={"algorithm": "lbfgs"}, metrics={}, activate=True)
    repo.import_documents(store, "fu", [note(i) for i in range(2)], annotations="gold")
    assert not full_retrain_due(store, "fu")
    repo.import_documents(store, "fu", [note(2)], annotations="gold")
    assert full_retrain_due(store, "fu")
    # fast candidates do not reset the count ...
    repo.register_model_version(store, "fu", version="fast", artifact_path="/nowhere",
                                hyperparams={"algorithm": "lbfgs"},
                                metrics={"n_reviewed": 3, "train_config": {"algorithm": "pa"}}, activate=True)
    assert full_retrain_due(store, "fu")
    # ... a full one does, accepted or rejected
    repo.register_model_version(store, "fu", version="full", artifact_path="/nowhere",
                                metrics={"n_reviewed": 3, "train_config": {"algorithm": "lbfgs"}},
                                activate=False)
    assert not full_retrain_due(store, "fu")
    repo.import_documents(store, "fu", [note(i) for i in range(3, 6)], annotations="gold")
    assert full_retrain_due(store, "fu")
    repo.update_project_settings(store, "fu", {"full_every": 0})
    assert not full_retrain_due(store, "fu")


def test_full_policy_swaps_in_the_full_crfsuite_settings() -> None:
    policy = RetrainPolicy(full_iterations=40).full()
    assert (policy.loop_algorithm, policy.loop_iterations) == ("lbfgs", 40)
    with pytest.raises(ValueError, match="full_every"):
        RetrainPolicy(full_every=-1)


def test_kfold_scores_notes_the_active_model_never_saw_without_retraining_it() -> None:
    reviewed = [note(i) for i in range(24)]
    active = label_trainer(reviewed[:12])
    retrained: list[int] = []

    def counting(docs, progress=None):  # noqa: ANN001, ANN202
        retrained.append(len(docs))
        return label_trainer(docs, progress)

    result = retrain(reviewed, trainer=counting, active_model=active,
                     active_train_ids=set(active.train_ids), policy=RetrainPolicy(folds=3, min_unseen=10))
    c = result.decision.comparison
    assert c.method == "kfold-unseen"
    assert set(c.eval_ids) == {d.id for d in reviewed[12:]}  # only notes the active model never saw
    assert len(retrained) == 1 + 3  # the candidate and its 3 folds; the active procedure is not re-run
    assert result.decision.accepted


def test_only_a_significant_drop_rejects_when_p_values_are_known() -> None:
    cand, active = {"strict_f1": 0.99, "char_recall": 0.993}, {"strict_f1": 0.999, "char_recall": 0.998}
    policy = RetrainPolicy(significance=0.05)
    ok, reason = decide(cand, active, policy, {"strict_f1": 0.4, "char_recall": 0.3})
    assert ok and "not significantly worse" in reason and "p = 0.300" in reason
    ok, reason = decide(cand, active, policy, {"strict_f1": 0.4, "char_recall": 0.01})
    assert not ok and reason.startswith("rejected: character recall dropped") and "p = 0.010" in reason
    ok, _ = decide(cand, active, RetrainPolicy(significance=None), {"strict_f1": 0.4, "char_recall": 0.3})
    assert not ok


def test_kfold_comparison_carries_paired_p_values() -> None:
    reviewed = [note(i) for i in range(12)]
    active = label_trainer(reviewed[:8])
    result = retrain(reviewed, trainer=blind_trainer, active_model=active,
                     active_train_ids=set(active.train_ids), active_trainer=label_trainer,
                     policy=RetrainPolicy(folds=3, significance_trials=199))
    p = result.decision.comparison.p_values
    assert set(p) == {"strict_f1", "char_recall"} and p["strict_f1"] < 0.05  # 0 vs 1 on 12 notes
    assert not result.decision.accepted
    assert result.decision.to_audit()["p_values"] == p


class BiasModel(LabelModel):
    """Finds DATE spans always and NAME spans only at a bias of -1 or below (a recall-leaning project)."""

    def predict_many(self, docs, bias=0.0, progress=False):  # noqa: ANN001
        keep = {"DATE", "NAME"} if bias <= -1 else {"DATE"}
        return [FakePrediction(d.id, tuple(s for s in d.spans if s.label in keep & self.labels)) for d in docs]


def test_candidate_and_active_are_compared_at_the_projects_bias() -> None:
    """A candidate that is as good at bias 0 but misses what the active model finds at the
    project's recall-leaning bias is kept at 0 and rejected at -1.25."""
    reviewed = [note(i) for i in range(200)]
    policy = RetrainPolicy(heldout_share=5, min_heldout=20, significance=None)
    active = BiasModel({"NAME", "DATE"}, [])

    def date_only(docs, progress=None):  # noqa: ANN001, ANN202
        return BiasModel({"DATE"}, [d.id for d in docs])

    at0 = retrain(reviewed, trainer=date_only, active_model=active, active_train_ids=set(), policy=policy)
    low = retrain(reviewed, trainer=date_only, active_model=active, active_train_ids=set(), policy=policy,
                  bias=-1.25)
    assert at0.decision.accepted and at0.metrics["compared_at_bias"] == 0.0
    assert not low.decision.accepted and "character recall dropped" in low.decision.reason
    assert low.metrics["compared_at_bias"] == -1.25


def test_bias_recall_compares_each_model_at_its_own_recall_bias() -> None:
    """A project that follows its model's recall bias: the sharper candidate finds NAME only at
    its own recall bias (-2), not at the active model's (-0.5)."""
    from deid_core.engine.recall_bias import RECALL_BIAS_KEY
    from deid_core.learning.registry import model_bias

    class ShiftedBias(BiasModel):
        def __init__(self, labels, train_ids, recall_bias, shift):  # noqa: ANN001
            super().__init__(labels, train_ids)
            self.metadata = {RECALL_BIAS_KEY: recall_bias}
            self.shift = shift

        def predict_many(self, docs, bias=0.0, progress=False):  # noqa: ANN001
            return super().predict_many(docs, bias + self.shift, progress)

    reviewed = [note(i) for i in range(200)]
    policy = RetrainPolicy(heldout_share=5, min_heldout=20, significance=None)
    active = ShiftedBias({"NAME", "DATE"}, [], -0.5, -0.5)  # NAME from -0.5 on

    def sharper(docs, progress=None):  # noqa: ANN001, ANN202
        return ShiftedBias({"NAME", "DATE"}, [d.id for d in docs], -2.0, 1.0)  # NAME from -2 on

    fixed = retrain(reviewed, trainer=sharper, active_model=active, active_train_ids=set(), policy=policy,
                    bias=-0.5)
    follows = retrain(reviewed, trainer=sharper, active_model=active, active_train_ids=set(), policy=policy,
                      bias="recall")
    assert not fixed.decision.accepted and "character recall dropped" in fixed.decision.reason
    assert follows.decision.accepted, follows.decision.reason
    assert follows.metrics["compared_at_bias"] == "recall"
    assert follows.metrics["compared_at_biases"] == {"candidate": -2.0, "active": -0.5}
    assert model_bias(active, 0.25) == 0.25
    with pytest.raises(ModelError, match="records no recall bias"):
        model_bias(BiasModel({"DATE"}, []), "recall")
