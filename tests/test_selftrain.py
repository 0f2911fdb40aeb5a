"""Self-training: off by default, silver from the most confident notes, kept only if it helps."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from deid_core.learning.registry import RetrainPolicy
from deid_core.learning.selftrain import SelfTrainConfig, select_silver, self_train, silver_trainer
from deid_core.spans import Document, Span


@dataclass(frozen=True)
class FakePrediction:
    doc_id: str
    spans: tuple[Span, ...]
    logprob_per_token: float

    def to_document(self, doc: Document) -> Document:
        return doc.with_spans(self.spans)


class LabelModel:
    """Finds the gold spans of the labels it saw in training; confidence is read from meta."""

    def __init__(self, labels: set[str]) -> None:
        self.labels = labels

    def predict_many(self, docs, bias=0.0, progress=False):  # noqa: ANN001
        return [
            FakePrediction(d.id, tuple(s for s in d.spans if s.label in self.labels), d.meta.get("conf", -0.01))
            for d in docs
        ]


def trainer(docs, progress=None):  # noqa: ANN001
    return LabelModel({s.label for d in docs for s in d.spans})


def note(i: int, date: bool = True, conf: float = -0.01) -> Document:
    text = f"Patient Smith{i} seen on 2020-01-{i % 28 + 1:02d} at clinic."
    spans = [Span(8, 13 + len(str(i)), "NAME")]
    if date:
        spans.append(Span(25, 35, "DATE"))
    return Document(f"n{i:03d}", text, tuple(spans), {"conf": conf})


def test_off_by_default() -> None:
    result = self_train([note(1)], [note(2)], trainer=trainer, base_model=trainer([note(1)]),
                        config=SelfTrainConfig())
    assert not result.kept and result.model is None and "off" in result.reason


@pytest.mark.parametrize(
    ("confs", "n_gold", "cfg", "expected"),
    [
        # most confident first, capped by top_fraction of the unreviewed pool
        ([-0.5, -0.001, -0.02, -0.003, -0.9], 10, SelfTrainConfig(enabled=True, top_fraction=0.4), ["n001", "n003"]),
        # capped by max_share of the gold notes
        ([-0.001, -0.002, -0.003], 2, SelfTrainConfig(enabled=True, top_fraction=1.0, max_share=0.5), ["n000"]),
        # nothing confident enough
        ([-0.5, -0.6], 10, SelfTrainConfig(enabled=True, top_fraction=1.0), []),
    ],
)
def test_select_silver(confs, n_gold, cfg, expected) -> None:  # noqa: ANN001
    pool = [note(i, conf=c) for i, c in enumerate(confs)]
    silver = select_silver(trainer(pool), pool, n_gold, cfg)
    assert [d.id for d in silver] == expected
    assert all(d.meta["silver"] is True for d in silver)


def test_silver_weight_repeats_gold() -> None:
    seen = []

    def recording(docs, progress=None):  # noqa: ANN001
        seen.append([d.id for d in docs])
        return trainer(docs)

    silver_trainer(recording, [note(9)], 2)([note(1), note(2)])
    assert seen == [["n001", "n002", "n001", "n002", "n009"]]


def test_kept_when_silver_teaches_a_label_the_folds_lack() -> None:
    # Only one reviewed note marks a DATE; in k-fold the fold holding it cannot
    # learn DATE from the rest, but silver notes tagged by the base model can.
    reviewed = [note(0)] + [note(i, date=False) for i in range(1, 6)]
    unreviewed = [note(i) for i in range(10, 30)]
    result = self_train(reviewed, unreviewed, trainer=trainer, base_model=trainer(reviewed),
                        config=SelfTrainConfig(enabled=True, top_fraction=1.0, max_share=1.0),
                        policy=RetrainPolicy(folds=3))
    assert result.kept, result.reason
    assert result.reason.startswith("kept") and result.silver_ids


def test_discarded_when_silver_does_not_help() -> None:
    reviewed = [note(i) for i in range(6)]
    unreviewed = [note(i) for i in range(10, 30)]
    result = self_train(reviewed, unreviewed, trainer=trainer, base_model=trainer(reviewed),
                        config=SelfTrainConfig(enabled=True, top_fraction=1.0), policy=RetrainPolicy(folds=3))
    assert not result.kept
    assert result.reason.startswith("discarded: no held-out improvement")
    assert "Smith" not in result.reason


@pytest.mark.parametrize("bad", [{"top_fraction": 0}, {"max_share": -1}, {"gold_repeat": 0}])
def test_config_rejects_nonsense(bad) -> None:  # noqa: ANN001
    with pytest.raises(ValueError):
        SelfTrainConfig(**bad)
