"""Retraining that builds on the starting model: corpus records, weighting, the reviewer winning."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from deid_core.corpus import file_corpus_reference, write_jsonl
from deid_core.engine.crf import fold_domain_weights
from deid_core.engine.features import DOMAIN_PREFIX
from deid_core.engine.model import DeidModel, TrainConfig, train_model, with_config
from deid_core.errors import ModelError
from deid_core.learning.registry import RetrainPolicy
from deid_core.learning.retrain import make_trainer, retrain_round, training_corpus
from deid_core.schemes import load_scheme
from deid_core.spans import Document, Span
from deid_core.synthetic import generate_notes

# No rule layer: these toys test what the CRF learns (the built-in phone rules would
# find the starter-only PHONE label without any learning).
SMALL = with_config(TrainConfig(max_iterations=30), features={"rules": False})
# lbfgs keeps these tests deterministic (crfsuite's ap/pa shuffle with an unseeded rand()).
POLICY = RetrainPolicy(loop_algorithm="lbfgs", loop_iterations=30, folds=2)
SCHEME = load_scheme("i2b2_2014")

NAMES = ["Alice Moreno", "Brian Okafor", "Carla Jensen", "David Novak", "Elena Rossi",
         "Frank Dubois", "Grace Lindqvist", "Hugo Tanaka", "Irene Walsh", "Jonas Keller",
         "Karen Osei", "Liam Petrov", "Maria Santos", "Nadia Haddad"]


def _note(i: int, *, room_is_phi: bool, phone: bool = False, prefix: str = "n") -> Document:
    """'Seen <name> in Room <n> on <date>.' with the room labelled or not, a phone or not."""
    name = NAMES[i % len(NAMES)]
    room = str(200 + 17 * i)
    date = f"0{1 + i % 9}/1{i % 9}/2021"
    parts = [("Seen ", None), (name, "PATIENT"), (" in Room ", None),
             (room, "LOCATION-OTHER" if room_is_phi else None), (" on ", None), (date, "DATE"),
             (". Stable, plan to continue current medication.", None)]
    if phone:
        parts += [(" Call ", None), (f"555-01{i % 10}{(i * 3) % 10}", "PHONE"), (" with results.", None)]
    text, spans = "", []
    for piece, label in parts:
        if label is not None:
            spans.append(Span(len(text), len(text) + len(piece), label, "gold"))
        text += piece
    return Document(f"{prefix}{i}", text, tuple(spans))


def _starter(docs: list[Document], corpus: dict | None = None) -> DeidModel:
    return train_model(docs, lang="en", scheme=SCHEME, config=SMALL, corpus=corpus)


def _labels(model: DeidModel, doc: Document) -> dict[str, str]:
    return {doc.text[s.start:s.end]: s.label for s in model.predict(doc).spans}


# -- corpus records -------------------------------------------------------------------


def test_synthetic_corpus_is_rebuilt_exactly() -> None:
    ref = {"kind": "synthetic", "lang": "en", "n": 4, "seed": 5, "options": {"notes_per_patient": [1, 2]}}
    docs = training_corpus({"corpus": ref})
    again = generate_notes(4, seed=5, notes_per_patient=(1, 2))
    assert [(d.id, d.text, d.spans) for d in docs] == [(d.id, d.text, d.spans) for d in again]
    assert training_corpus({}) == []


def test_file_corpus_is_rebuilt_and_refused_when_changed(tmp_path) -> None:  # noqa: ANN001
    docs = generate_notes(6, seed=2)
    path = tmp_path / "train.jsonl"
    write_jsonl(path, docs)
    model = _starter(docs, corpus=file_corpus_reference(path, len(docs)))
    saved = DeidModel.load(model.save(tmp_path / "m"))
    ref = saved.metadata["corpus"]
    assert ref["kind"] == "file" and ref["documents"] == 6 and len(ref["sha256"]) == 64
    assert [d.id for d in training_corpus(saved)] == [d.id for d in docs]
    write_jsonl(path, docs[:5])
    with pytest.raises(ModelError, match="train.jsonl.*changed"):
        training_corpus(saved)
    path.unlink()
    with pytest.raises(ModelError, match="train.jsonl.*gone"):
        training_corpus(saved)


def test_cli_train_records_the_training_file(tmp_path) -> None:  # noqa: ANN001
    from deid_core.cli import main

    path = tmp_path / "train.jsonl"
    write_jsonl(path, generate_notes(5, seed=4))
    assert main(["train", "--data", str(path), "--out", str(tmp_path / "m"), "--max-iterations", "5"]) == 0
    meta = json.loads((tmp_path / "m" / "training.json").read_text("utf-8"))
    assert meta["corpus"]["kind"] == "file" and meta["corpus"]["documents"] == 5
    assert meta["corpus"]["path"] == str(path.resolve())


# -- feature augmentation -------------------------------------------------------------


def test_fold_adds_the_in_domain_copy_to_the_general_weight() -> None:
    import scipy.sparse as sp

    from deid_core.engine.crf import CRFWeights

    attrs = ["a", DOMAIN_PREFIX + "a", DOMAIN_PREFIX + "b", "c"]
    state = sp.csr_matrix(np.array([[1.0, 0.0], [0.5, -1.0], [0.0, 2.0], [3.0, 3.0]]))
    folded = fold_domain_weights(CRFWeights(["O", "B-X"], attrs, state, np.zeros((2, 2))), DOMAIN_PREFIX)
    rows = dict(zip(folded.attributes, folded.state.toarray().tolist()))
    assert rows == {"a": [1.5, -1.0], "c": [3.0, 3.0], "b": [0.0, 2.0]}


def test_augmented_model_saves_and_tags_the_same_after_loading(tmp_path) -> None:  # noqa: ANN001
    docs = generate_notes(8, seed=1)
    cfg = replace(SMALL, feature_augmentation=True)
    model = train_model(docs, lang="en", scheme=SCHEME, config=cfg, in_domain=[i % 2 == 0 for i in range(8)])
    loaded = DeidModel.load(model.save(tmp_path / "aug"))
    assert loaded.config.feature_augmentation
    assert not any(a.startswith(DOMAIN_PREFIX) for a in loaded.weights.attributes)
    probe = generate_notes(10, seed=9)[-1]
    assert model.predict(probe).spans == loaded.predict(probe).spans
    with pytest.raises(ModelError, match="feature_augmentation"):
        train_model(docs, lang="en", scheme=SCHEME, config=SMALL, in_domain=[True] * 8)


# -- what the candidate learns --------------------------------------------------------


@pytest.mark.parametrize("adaptation", ["augment", "duplicate"])
def test_candidate_keeps_a_label_seen_only_in_starter_data(adaptation: str) -> None:
    base = [_note(i, room_is_phi=True, phone=True, prefix="s") for i in range(24)]
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(30, 36)]
    starter = _starter(base)
    probe = _note(50, room_is_phi=True, phone=True, prefix="p")
    phone = probe.text[probe.spans[-1].start:probe.spans[-1].end]
    assert _labels(starter, probe).get(phone) == "PHONE"
    policy = replace(POLICY, adaptation=adaptation, reviewed_weight=3 if adaptation == "duplicate" else 1)
    trainer = make_trainer(base, lang="en", scheme=SCHEME, config=SMALL, policy=policy)
    candidate = trainer(reviewed, None)
    assert _labels(candidate, probe).get(phone) == "PHONE"
    # trained on the reviewed notes alone, the label is lost: the test can fail
    alone = make_trainer([], lang="en", scheme=SCHEME, config=SMALL, policy=policy)(reviewed, None)
    assert _labels(alone, probe).get(phone) != "PHONE"


def test_reviewer_wins_a_contradiction() -> None:
    # The starter counts room numbers as PHI; this site's reviewers never do.
    base = [_note(i, room_is_phi=True, prefix="s") for i in range(24)]
    reviewed = [_note(i, room_is_phi=False, prefix="r") for i in range(30, 38)]
    starter = _starter(base)
    probe = _note(60, room_is_phi=False, prefix="p")
    room = probe.text.split("Room ")[1].split(" ")[0]
    assert _labels(starter, probe).get(room) == "LOCATION-OTHER"
    candidate = make_trainer(base, lang="en", scheme=SCHEME, config=SMALL, policy=POLICY)(reviewed, None)
    labels = _labels(candidate, probe)
    assert room not in labels
    # and what the two agree on stays
    assert labels.get(NAMES[60 % len(NAMES)]) == "PATIENT"
    # Its general weights alone still read the base corpus's convention (the recall bias is measured so).
    general = candidate.general_domain()
    assert _labels(general, probe).get(room) == "LOCATION-OTHER"
    assert general.version == candidate.version and _labels(candidate, probe) == labels  # candidate untouched
    assert starter.general_domain() is starter  # no in-domain copy


def test_retrain_round_builds_on_the_starter_corpus(tmp_path) -> None:  # noqa: ANN001
    base = [_note(i, room_is_phi=True, phone=True, prefix="s") for i in range(16)]
    path = tmp_path / "starter.jsonl"
    write_jsonl(path, base)
    starter = _starter(base, corpus=file_corpus_reference(path, len(base)))
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(30, 36)]
    result = retrain_round(reviewed, active_model=starter, policy=POLICY, lang="en")
    cand = result.model
    assert cand.metadata["corpus"] == starter.metadata["corpus"]  # the next round builds on the same base
    assert cand.metadata["adaptation"]["base_documents"] == 16
    assert cand.metadata["adaptation"]["reviewed_documents"] == 6
    assert cand.config.feature_augmentation and cand.config.algorithm == "lbfgs"
    assert result.metrics["n_base_docs"] == 16
    assert result.decision.comparison.method == "kfold"
    assert result.decision.comparison.active is not None
    assert sorted(result.train_ids) == sorted(d.id for d in reviewed)


def test_training_cache_gives_the_same_models_as_training_afresh():
    """A round's trainings share tokens and features; the models must not change for it."""
    from deid_core.engine.model import TrainingCache

    docs = generate_notes(24, seed=11)
    config = TrainConfig(max_iterations=15)  # rules and gazetteer folds on, as in the app
    cache = TrainingCache()
    # Overlapping note sets, as a k-fold round's trainings are; the gazetteer differs per set.
    for subset in (docs[:18], docs[6:], docs):
        cached = train_model(subset, lang="en", config=config, cache=cache)
        fresh = train_model(subset, lang="en", config=config)
        assert cached._crf_bytes == fresh._crf_bytes
        assert cached.metadata["gazetteer_entries"] == fresh.metadata["gazetteer_entries"]
    assert len(cache) == len(docs)
    # An edited note is a different note to the cache.
    edited = [replace(docs[0], spans=docs[0].spans[1:]), *docs[1:]]
    assert (train_model(edited, lang="en", config=config, cache=cache)._crf_bytes
            == train_model(edited, lang="en", config=config)._crf_bytes)
    assert len(cache) == len(docs) + 1


def test_training_cache_refuses_another_feature_configuration():
    from deid_core.engine.model import TrainingCache

    docs = generate_notes(4, seed=3)
    cache = TrainingCache()
    train_model(docs, lang="en", config=replace(SMALL, max_iterations=2), cache=cache)
    with pytest.raises(ModelError, match="one language, feature configuration"):
        train_model(docs, lang="en", config=replace(TrainConfig(), max_iterations=2), cache=cache)


def test_shared_training_cache_keeps_only_the_shared_notes_and_gives_the_same_model():
    """The generated corpus's work outlives a round; a reviewed note's never does."""
    from deid_core.engine.model import TrainingCache

    base = generate_notes(12, seed=5)
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(4)]
    config = TrainConfig(max_iterations=10)
    kept = TrainingCache()
    first = train_model(base + reviewed, lang="en", config=config, cache=TrainingCache(kept, base))
    assert len(kept) == len(base)  # the reviewed notes stayed in the round's own cache
    second = TrainingCache(kept, base)
    again = train_model(base + reviewed, lang="en", config=config, cache=second)
    assert again._crf_bytes == first._crf_bytes == train_model(base + reviewed, lang="en", config=config)._crf_bytes
    assert len(second) == len(reviewed) and len(kept) == len(base)
    # A round under another configuration starts the kept cache over instead of refusing.
    other = replace(config, max_iterations=2, features=replace(config.features, rules=False))
    train_model(base, lang="en", config=other, cache=TrainingCache(kept, base[:5]))
    assert len(kept) == 5


def test_in_loop_base_is_a_fixed_sample_within_the_budget():
    from deid_core.learning.retrain import in_loop_base

    docs = generate_notes(40, seed=9)
    total = sum(len(d.text) for d in docs)
    assert in_loop_base(docs, None) == docs and in_loop_base(docs, total) == docs
    half = in_loop_base(docs, total // 2)
    assert sum(len(d.text) for d in half) <= total // 2
    assert len(half) > len(docs) // 4
    assert half == in_loop_base(list(docs), total // 2)  # the same notes every round
    order = {d.id: i for i, d in enumerate(docs)}
    assert [order[d.id] for d in half] == sorted(order[d.id] for d in half)  # in corpus order
    assert half != docs[: len(half)]  # a spread sample, not the corpus's head
    assert len(in_loop_base(docs, 1)) == 1  # never empty


def test_round_trains_on_the_in_loop_sample_and_the_full_round_on_everything() -> None:
    base = [_note(i, room_is_phi=True, phone=True, prefix="s") for i in range(16)]
    starter = _starter(base, corpus=None)
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(30, 36)]
    budget = sum(len(d.text) for d in base) // 2
    policy = replace(POLICY, loop_base_chars=budget)
    fast = retrain_round(reviewed, active_model=starter, policy=policy, lang="en", base_docs=base)
    assert fast.metrics["n_base_corpus"] == 16
    assert 0 < fast.metrics["n_base_docs"] < 16
    assert fast.model.metadata["adaptation"]["base_documents"] == fast.metrics["n_base_docs"]
    assert policy.full().loop_base_chars is None
    full = retrain_round(reviewed, active_model=starter, policy=policy.full(), lang="en", base_docs=base)
    assert full.metrics["n_base_docs"] == 16
    with pytest.raises(ValueError, match="loop_base_chars"):
        RetrainPolicy(loop_base_chars=0)


# -- a k-fold round's models trained together ------------------------------------------


def _with_word(doc: Document, word: str) -> Document:
    """``doc`` with a sentence naming the patient ``word`` appended (a PATIENT span)."""
    text = doc.text + " Seen by "
    return Document(doc.id, text + word + ".", (*doc.spans, Span(len(text), len(text) + len(word), "PATIENT", "gold")))


def test_models_trained_together_leave_their_fold_out():
    from deid_core.engine.model import train_models

    docs = generate_notes(18, seed=13)
    docs[4] = _with_word(_with_word(docs[4], "Quillfeather"), "Quillfeather")  # twice: harvested
    docs[9] = _with_word(docs[9], "Zabriskie")
    config = TrainConfig(max_iterations=10)  # rules and gazetteer folds on, as in the app
    folds = [[1, 4, 7], [9, 12]]
    full, without_a, without_b = train_models(docs, lang="en", config=config, leave_out=folds)
    assert full._crf_bytes == train_model(docs, lang="en", config=config)._crf_bytes
    attrs = [set(m.weights.attributes) for m in (full, without_a, without_b)]
    assert "0:w=quillfeather" in attrs[0] and "0:w=zabriskie" in attrs[0]
    assert "0:w=quillfeather" not in attrs[1] and "0:w=zabriskie" in attrs[1]
    assert "0:w=zabriskie" not in attrs[2] and "0:w=quillfeather" in attrs[2]
    # What a model tags with comes from its own notes: the left-out surname is not in its gazetteer.
    alone = train_model([d for i, d in enumerate(docs) if i not in folds[0]], lang="en", config=config)
    assert without_a.metadata["documents"] == 15 and without_b.metadata["documents"] == 16
    assert without_a.metadata["gazetteer_entries"] == alone.metadata["gazetteer_entries"]
    assert without_a.rule_mapping == alone.rule_mapping
    assert without_a.metadata["tokens"] == alone.metadata["tokens"]
    assert without_a.gazetteer.marks_at(["Quillfeather"]) == alone.gazetteer.marks_at(["Quillfeather"])
    assert full.gazetteer.marks_at(["Quillfeather"]) != without_a.gazetteer.marks_at(["Quillfeather"])
    with pytest.raises(ModelError, match="leave_out"):
        train_models(docs, lang="en", config=config, leave_out=[[1, 2], [2, 3]])


def test_kfold_round_trains_candidate_and_folds_together() -> None:
    base = [_note(i, room_is_phi=True, phone=True, prefix="s") for i in range(16)]
    starter = _starter(base)
    reviewed = [_note(i, room_is_phi=False, prefix="r") for i in range(30, 39)]
    trainer = make_trainer(base, lang="en", scheme=SCHEME, config=SMALL, policy=POLICY)
    calls: list[int] = []
    one_by_one = make_trainer(base, lang="en", scheme=SCHEME, config=SMALL, policy=POLICY)

    def counting(docs, progress=None):  # noqa: ANN001, ANN202
        calls.append(len(docs))
        return one_by_one(docs, progress)

    from deid_core.learning.registry import retrain

    together = retrain(reviewed, trainer=trainer, active_model=starter, active_train_ids=set(), policy=POLICY)
    apart = retrain(reviewed, trainer=counting, active_model=starter, active_train_ids=set(), policy=POLICY)
    assert together.decision.comparison.method == apart.decision.comparison.method == "kfold"
    assert calls == [9, 4, 5]  # without batch: the candidate, then one training per fold
    assert together.model.metadata["trained_together"] == 3
    assert together.model._crf_bytes == apart.model._crf_bytes  # the candidate itself is the same
    assert together.decision.comparison.eval_ids == apart.decision.comparison.eval_ids
    assert together.decision.comparison.n_docs == 9


def test_versions_table_says_how_much_of_the_starter_corpus_a_version_used():
    from deid_core.ui.learning import starter_notes

    assert starter_notes({"n_base_docs": 348, "n_base_corpus": 700}) == "348 of 700"
    assert starter_notes({"n_base_docs": 700, "n_base_corpus": 700}) == "700"
    assert starter_notes({"n_base_docs": 16}) == "16"  # versions from before the sample
    assert starter_notes({}) is None and starter_notes(None) is None


def test_a_character_crf_round_trains_its_fold_stand_ins_one_by_one() -> None:
    from deid_core.engine.charcrf import CharCRFConfig

    base = [_note(i, room_is_phi=True, prefix="s") for i in range(10)]
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(30, 36)]
    config = replace(SMALL, max_iterations=5, charcrf=CharCRFConfig(max_iterations=5))
    trainer = make_trainer(base, lang="en", scheme=SCHEME, config=config, policy=POLICY)
    candidate, stand_ins = trainer.batch(reviewed, [reviewed[:3], reviewed[3:]])
    assert candidate.char is not None and "trained_together" not in candidate.metadata
    assert [m.metadata["adaptation"]["reviewed_documents"] for m in stand_ins] == [3, 3]
    assert [m.metadata["documents"] for m in stand_ins] == [13, 13]


# -- each model's own recall bias ----------------------------------------------------


def test_a_round_gives_its_candidate_a_recall_bias_chosen_as_the_starters_was() -> None:
    from deid_core.engine.recall_bias import RECALL_BIAS_INFO_KEY, RECALL_BIAS_KEY
    from deid_core.evaluation.bias_sweep import choose_recall_bias
    from deid_core.learning.retrain import CHOICE_GRID, RecallBiasChoice

    base = [_note(i, room_is_phi=True, phone=True, prefix="s") for i in range(16)]
    starter = _starter(base)
    record = {"kind": "synthetic", "lang": "en", "n": 3, "seed": 5, "options": {}}
    starter.metadata[RECALL_BIAS_KEY] = -1.25
    starter.metadata[RECALL_BIAS_INFO_KEY] = {"bias": -1.25, "target": 0.9, "dev_corpus": record}
    choice = RecallBiasChoice.of(starter)
    assert choice is not None and choice.fallback == -1.25 and choice.target == 0.9
    assert [d.text for d in choice.dev] == [d.text for d in generate_notes(3, seed=5, lang="en")]
    # On dev notes like the training notes: the bias is this model's own, chosen on the slider's range.
    dev = [_note(i, room_is_phi=True, phone=True, prefix="d") for i in range(40, 46)]
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(30, 36)]
    trainer = make_trainer(base, lang="en", scheme=SCHEME, config=SMALL, policy=POLICY,
                           recall_bias=RecallBiasChoice(dev, 0.99, record, -1.25))
    candidate = trainer(reviewed)
    expected = choose_recall_bias(candidate.general_domain(), dev, target=0.99, grid=CHOICE_GRID)
    assert expected["reached"]
    assert candidate.metadata[RECALL_BIAS_KEY] == expected["bias"]
    assert candidate.metadata[RECALL_BIAS_INFO_KEY]["dev_corpus"] == record
    # A target no bias reaches keeps the active model's recall bias, and says so.
    unreachable = make_trainer(base, lang="en", scheme=SCHEME, config=SMALL, policy=POLICY,
                               recall_bias=RecallBiasChoice(dev, 1.01, record, -1.25))(reviewed)
    assert unreachable.metadata[RECALL_BIAS_KEY] == -1.25
    assert "not reached" in unreachable.metadata[RECALL_BIAS_INFO_KEY]["inherited"]
    # A k-fold stand-in decodes at its candidate's choice.
    stand_in = RecallBiasChoice.share(candidate, _starter(base[:8]))
    assert stand_in.metadata[RECALL_BIAS_KEY] == candidate.metadata[RECALL_BIAS_KEY]


def test_retrain_round_records_the_candidates_recall_bias_and_compares_at_it() -> None:
    from deid_core.engine.recall_bias import RECALL_BIAS_KEY

    base = [_note(i, room_is_phi=True, phone=True, prefix="s") for i in range(16)]
    starter = _starter(base)
    starter.metadata[RECALL_BIAS_KEY] = -1.25  # no dev record: candidates inherit it
    reviewed = [_note(i, room_is_phi=True, prefix="r") for i in range(30, 36)]
    result = retrain_round(reviewed, active_model=starter, policy=POLICY, lang="en", base_docs=base,
                           bias="recall")
    assert result.model.metadata[RECALL_BIAS_KEY] == -1.25
    assert result.metrics["compared_at_biases"] == {"candidate": -1.25, "active": -1.25}
    plain = retrain_round(reviewed, active_model=_starter(base), policy=POLICY, lang="en", base_docs=base)
    assert RECALL_BIAS_KEY not in plain.model.metadata  # a model without one gives none


def test_versions_table_says_at_which_bias_a_version_was_compared():
    from deid_core.ui.learning import compared_bias

    assert compared_bias({"compared_at_bias": -1.25}) == -1.25
    assert compared_bias({"compared_at_bias": "recall",
                          "compared_at_biases": {"candidate": -2.5, "active": -1.25}}) == -2.5
    assert compared_bias({"note": "starter model"}) is None and compared_bias(None) is None
