"""One retraining round: a candidate that builds on the active model, judged on reviewed notes.

Trained on the reviewed notes alone, a candidate forgets what the starter
knew (issue 13: 32 reviewed notes gave strict F1 0.920 against the starter's
0.997). So a candidate trains on the active model's own training corpus
(the generator configuration or training file its directory records under
``metadata["corpus"]``) plus every reviewed note, the reviewed notes weighted
up. Two ways of weighting, chosen by ``RetrainPolicy.adaptation``:

* ``"duplicate"``: each reviewed note's sequences appear ``reviewed_weight`` times;
* ``"augment"`` (feature augmentation, Daume 2007): reviewed notes carry an
  in-domain copy of every feature besides the general one (and are repeated
  ``reviewed_weight`` times too). Where the project disagrees with the starter
  (a site that never counts room numbers as PHI) the in-domain weights absorb
  the difference, so the reviewer wins there without the starter's knowledge
  being unlearned elsewhere. The model folds both copies when it is loaded and
  tags every note as in-domain (``TrainConfig.feature_augmentation``).

:func:`retrain_round` is the single code path for the app's background
retrain (``deid_core.ui.learning.retrain_project``) and for the simulation
(``deid_core.learning.simulate``): same corpus, same weighting, same fast
in-loop crfsuite settings, same keep-only-if-better decision.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from deid_core.errors import ModelError
from deid_core.learning.registry import RetrainPolicy, RetrainResult, retrain
from deid_core.spans import Document

log = logging.getLogger(__name__)

Progress = Callable[[str, float], None]

__all__ = ["RecallBiasChoice", "RoundTrainer", "candidate_config", "in_loop_base", "make_trainer", "retrain_round", "training_corpus"]


def training_corpus(model: Any) -> list[Document]:
    """Rebuild the notes a model was trained on from its ``metadata["corpus"]``.

    ``{"kind": "synthetic", "lang", "n", "seed", "options"}`` regenerates the
    generator notes; ``{"kind": "file", "path", "sha256", "documents"}`` reads
    the training file, refusing if it is gone or no longer the file the model
    was trained on (a retrain must not silently train on something else).
    A model that records no corpus has none to rebuild: the empty list.
    """
    meta = model if isinstance(model, Mapping) else getattr(model, "metadata", {})
    ref = meta.get("corpus")
    if ref is None:
        return []
    if not isinstance(ref, Mapping):
        raise ModelError(f"model training corpus record is malformed: {type(ref).__name__}")
    kind = ref.get("kind")
    if kind == "synthetic":
        try:
            return list(_generated_corpus(json.dumps(dict(ref), sort_keys=True)))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"model training corpus record is malformed: {exc}") from None
    if kind == "file":
        from deid_core.corpus import file_sha256, read_jsonl

        path = Path(str(ref.get("path", "")))
        if not path.is_file():
            raise ModelError(
                f"{path}: the model's training file is gone; restore it (sha256"
                f" {ref.get('sha256')}) to retrain on the starter's data"
            )
        if file_sha256(path) != ref.get("sha256"):
            raise ModelError(
                f"{path}: the model's training file has changed since training (sha256"
                f" {ref.get('sha256')} expected); restore it to retrain on the starter's data"
            )
        return read_jsonl(path)
    raise ModelError(f"model training corpus has unknown kind {kind!r}: use 'synthetic' or 'file'")


@lru_cache(maxsize=2)
def _generated_corpus(record: str) -> tuple[Document, ...]:
    """The generator notes of a corpus record, kept for the next round in this process.

    Only generated notes are kept (they hold no real PHI); a training file is read each time.
    """
    from deid_core.synthetic import generate_notes

    ref = json.loads(record)
    options = dict(ref.get("options") or {})
    if "notes_per_patient" in options:
        options["notes_per_patient"] = tuple(options["notes_per_patient"])
    if "lang" in ref:
        options.setdefault("lang", ref["lang"])
    return tuple(generate_notes(int(ref["n"]), seed=int(ref["seed"]), **options))


def in_loop_base(base_docs: Sequence[Document], max_chars: int | None) -> list[Document]:
    """The part of the active model's corpus an in-loop candidate trains on.

    Every training of a round repeats the whole base corpus, so its size sets
    the round's time; a seeded sample up to ``max_chars`` characters keeps
    rounds short whatever the corpus (a user's training file may be large).
    The same notes every round (the sample depends only on the corpus), in
    corpus order; a seeded permutation rather than every k-th note, so no
    cycle in how the corpus was generated is aliased.
    """
    docs = list(base_docs)
    if max_chars is None or sum(len(d.text) for d in docs) <= max_chars:
        return docs
    keep: list[int] = []
    total = 0
    for i in np.random.default_rng(0).permutation(len(docs)).tolist():
        size = len(docs[i].text)
        if keep and total + size > max_chars:
            break
        keep.append(i)
        total += size
    return [docs[i] for i in sorted(keep)]


def calibration_notes(base_docs: Sequence[Document], sample: Sequence[Document]) -> list[Document] | None:
    """The corpus notes a fast candidate did not train on, in a seeded order: gold to fit its score scale on.

    ``None`` when the sample is the whole corpus (the scale is then fitted on
    training notes; see ``deid_core.engine.model.train_models``).
    """
    kept = {d.id for d in sample}
    rest = [d for d in base_docs if d.id not in kept]
    if not rest:
        return None
    return [rest[i] for i in np.random.default_rng(1).permutation(len(rest)).tolist()]


#: Biases a candidate's recall bias is chosen from: the Bias page's slider range
#: (-5..0), so a project that follows it can still show it; beyond it precision collapses.
CHOICE_GRID = tuple(round(-0.25 * i, 2) for i in range(21))


class RecallBiasChoice:
    """How a round gives each model it trains a recall bias of its own, as the starter got its.

    The starter records the largest O-label bias whose character recall on
    its dev notes reaches a target (``engine.recall_bias``). A candidate is
    measured the same way, on the same dev notes (``dev``, regenerated from
    the active model's record) and target, with its general weights
    (``DeidModel.general_domain``): a margin trainer's weights have another
    sharpness, so the starter's number finds less with them (docs/active.md,
    session 12), while what the reviewers taught (the in-domain weights) is
    the project's and not measured on generated notes. Without dev notes, or
    when no bias reaches the target, the model keeps ``fallback`` (the
    active model's recall bias).
    """

    def __init__(self, dev: Sequence[Document], target: float, record: Mapping[str, Any] | None,
                 fallback: float) -> None:
        self.dev, self.target, self.record, self.fallback = list(dev), target, record, fallback

    @classmethod
    def of(cls, model: Any) -> RecallBiasChoice | None:
        """The choice an active model's candidates get: ``None`` when it records no recall bias."""
        from deid_core.engine.recall_bias import RECALL_BIAS_INFO_KEY, recall_bias_or_none
        from deid_core.evaluation.bias_sweep import DEFAULT_TARGET

        meta = getattr(model, "metadata", None) or {}
        fallback = recall_bias_or_none(meta)
        if fallback is None:
            return None
        info = meta.get(RECALL_BIAS_INFO_KEY)
        info = info if isinstance(info, Mapping) else {}
        record = info.get("dev_corpus")
        dev: Sequence[Document] = ()
        if isinstance(record, Mapping) and record.get("kind") == "synthetic":
            try:
                dev = _generated_corpus(json.dumps(dict(record), sort_keys=True))
            except (KeyError, TypeError, ValueError):
                log.warning("model %s: recall bias dev corpus record is malformed; candidates inherit %s",
                            getattr(model, "version", "?"), fallback)
        target = info.get("target", DEFAULT_TARGET)
        return cls(dev, float(target), dict(record) if dev else None, fallback)

    def apply(self, model: Any) -> Any:
        from deid_core.engine.recall_bias import RECALL_BIAS_INFO_KEY, RECALL_BIAS_KEY
        from deid_core.evaluation.bias_sweep import choose_recall_bias

        if not self.dev:
            model.metadata[RECALL_BIAS_KEY] = self.fallback
            model.metadata[RECALL_BIAS_INFO_KEY] = {"bias": self.fallback, "inherited": "no dev notes"}
            return model
        # On the general weights: the dev notes are the base corpus's, not the project's
        # (an adapted model reads them with the reviewers' in-domain weights otherwise).
        choice = choose_recall_bias(model.general_domain(), self.dev, target=self.target, grid=CHOICE_GRID)
        bias = choice["bias"] if choice["reached"] else self.fallback
        model.metadata[RECALL_BIAS_KEY] = bias
        model.metadata[RECALL_BIAS_INFO_KEY] = {
            **choice, "bias": bias, "dev_corpus": self.record,
            **({} if choice["reached"] else {"inherited": "target not reached on the dev notes"}),
        }
        return model

    @staticmethod
    def share(candidate: Any, stand_in: Any) -> Any:
        """A k-fold stand-in decodes at its candidate's recall bias (one choice per round, not four)."""
        from deid_core.engine.recall_bias import RECALL_BIAS_INFO_KEY, RECALL_BIAS_KEY

        if RECALL_BIAS_KEY in candidate.metadata:
            stand_in.metadata[RECALL_BIAS_KEY] = candidate.metadata[RECALL_BIAS_KEY]
            stand_in.metadata[RECALL_BIAS_INFO_KEY] = {"bias": candidate.metadata[RECALL_BIAS_KEY],
                                                       "inherited": "the round's candidate"}
        return stand_in


def _round_cache(base: Sequence[Document], corpus: Mapping[str, Any] | None) -> Any:
    """A training cache for one round, backed by the kept one of a generated corpus."""
    from deid_core.engine.model import TrainingCache

    if corpus is None or corpus.get("kind") != "synthetic":
        return TrainingCache()  # a training file may hold real notes: nothing outlives the round
    return TrainingCache(_corpus_cache(json.dumps(dict(corpus), sort_keys=True)), base)


@lru_cache(maxsize=1)
def _corpus_cache(record: str) -> Any:
    """The kept training work on a generated corpus's notes, keyed by its record (one corpus at a time)."""
    from deid_core.engine.model import TrainingCache

    return TrainingCache()


def candidate_config(base_config: Any, policy: RetrainPolicy) -> Any:
    """The active model's TrainConfig with the loop's crfsuite settings and adaptation."""
    changes: dict[str, Any] = {"feature_augmentation": policy.adaptation == "augment"}
    if policy.loop_algorithm is not None:
        changes["algorithm"] = policy.loop_algorithm
    if policy.loop_iterations is not None:
        changes["max_iterations"] = policy.loop_iterations
    return replace(base_config, **changes)


class RoundTrainer:
    """``trainer(reviewed, progress)``: train on the base notes plus ``reviewed``, weighted up.

    The same procedure trains the candidate and, in the k-fold comparison,
    each fold's stand-in for the candidate and for the active model; they share
    one :class:`~deid_core.engine.model.TrainingCache`, so each note is
    tokenised and featurised once per round. :meth:`batch` trains the
    candidate and its fold stand-ins together (``engine.model.train_models``).
    """

    def __init__(
        self, base_docs: Sequence[Document], *, lang: str, scheme: Any, config: Any,
        policy: RetrainPolicy, corpus: Mapping[str, Any] | None = None,
        calibration: Sequence[Document] | None = None, recall_bias: RecallBiasChoice | None = None,
    ) -> None:
        self.base = list(base_docs)
        self.recall_bias = recall_bias
        self.calibration = list(calibration) if calibration is not None else None
        self.lang, self.scheme, self.policy = lang, scheme, policy
        self.config = replace(config, feature_augmentation=policy.adaptation == "augment")
        self.corpus = dict(corpus) if corpus is not None else None
        # The round's trainings share each note's tokens and features; a generated
        # corpus's notes keep theirs for the next round too.
        self.cache = _round_cache(self.base, corpus)

    def _training_set(self, reviewed: Sequence[Document]) -> tuple[list[Document], dict[str, Any]]:
        reviewed_ids = {d.id for d in reviewed}
        # A reviewed note that is also in the base corpus counts once, as reviewed.
        docs = [d for d in self.base if d.id not in reviewed_ids] + list(reviewed)
        n_base = len(docs) - len(reviewed)
        weight, augment = self.policy.reviewed_weight, self.config.feature_augmentation
        return docs, dict(
            lang=self.lang, scheme=self.scheme, config=self.config, cache=self.cache, corpus=self.corpus,
            calibration=self.calibration, repeats=[1] * n_base + [weight] * len(reviewed),
            in_domain=[False] * n_base + [True] * len(reviewed) if augment else None,
        )

    def _record(self, model: Any, n_base: int, n_reviewed: int, candidate: Any | None = None) -> Any:
        model.metadata["adaptation"] = {
            "method": self.policy.adaptation, "reviewed_weight": self.policy.reviewed_weight,
            "base_documents": n_base, "reviewed_documents": n_reviewed,
        }
        if self.recall_bias is not None:
            if candidate is None:
                self.recall_bias.apply(model)
            else:
                RecallBiasChoice.share(candidate, model)
        return model

    def __call__(self, reviewed: list[Document], progress: Progress | None = None) -> Any:
        from deid_core.engine.model import train_model

        docs, kwargs = self._training_set(reviewed)
        model = train_model(docs, progress=progress, **kwargs)
        return self._record(model, len(docs) - len(reviewed), len(reviewed))

    def batch(
        self, reviewed: list[Document], folds: Sequence[Sequence[Document]], progress: Progress | None = None
    ) -> tuple[Any, list[Any]]:
        """The candidate on ``reviewed``, and one stand-in per fold trained without that fold's notes."""
        from deid_core.engine.model import train_models

        if self.config.charcrf is not None:  # a character CRF trains model by model
            left_out = [{d.id for d in f} for f in folds]
            return self(reviewed, progress), [self([d for d in reviewed if d.id not in ids]) for ids in left_out]
        docs, kwargs = self._training_set(reviewed)
        n_base = len(docs) - len(reviewed)
        index = {d.id: n_base + i for i, d in enumerate(reviewed)}
        models = train_models(docs, progress=progress, leave_out=[[index[d.id] for d in f] for f in folds],
                              **kwargs)
        candidate = self._record(models[0], n_base, len(reviewed))
        return candidate, [self._record(m, n_base, len(reviewed) - len(f), candidate)
                           for m, f in zip(models[1:], folds)]


#: The round's training procedure: the base notes plus the reviewed notes given to it;
#: ``calibration`` is gold none of its models trains on (:func:`calibration_notes`).
make_trainer = RoundTrainer


def retrain_round(
    reviewed: Sequence[Document],
    *,
    active_model: Any | None,
    policy: RetrainPolicy,
    lang: str,
    scheme: Any = None,
    base_config: Any = None,
    active_train_ids: set[str] | None = None,
    base_docs: Sequence[Document] | None = None,
    progress: Progress | None = None,
    bias: float | str = 0.0,
) -> RetrainResult:
    """Train a candidate on the active model's corpus plus ``reviewed`` and decide on it at ``bias``.

    ``base_docs`` saves rebuilding the active model's training corpus each
    round (the simulation rebuilds it once); by default it is
    :func:`training_corpus` of the active model. The candidate inherits the
    active model's corpus record, so the next round builds on the same base,
    never on an earlier candidate's reviewed notes (those come from the store).
    """
    from deid_core.engine.model import TrainConfig

    if active_model is not None:
        scheme = scheme if scheme is not None else active_model.scheme
        base_config = base_config if base_config is not None else active_model.config
        corpus = active_model.metadata.get("corpus")
        base = list(base_docs) if base_docs is not None else training_corpus(active_model)
        if corpus is None:
            log.warning("active model %s records no training corpus: candidate trains on reviewed notes only",
                        active_model.version)
    else:
        corpus, base = None, list(base_docs or [])
    config = candidate_config(base_config if base_config is not None else TrainConfig(), policy)
    n_corpus = len(base)
    sample = in_loop_base(base, policy.loop_base_chars)
    trainer = make_trainer(sample, lang=lang, scheme=scheme, config=config, policy=policy, corpus=corpus,
                           calibration=calibration_notes(base, sample), recall_bias=RecallBiasChoice.of(active_model))
    result = retrain(
        reviewed, trainer=trainer, active_model=active_model, active_train_ids=active_train_ids,
        policy=policy, progress=progress, lang=lang, bias=bias,
    )
    result.metrics["n_base_docs"] = len(sample)
    result.metrics["n_base_corpus"] = n_corpus
    result.metrics["adaptation"] = policy.adaptation
    result.metrics["reviewed_weight"] = policy.reviewed_weight
    result.metrics["train_config"] = {"algorithm": config.algorithm, "max_iterations": config.max_iterations}
    return result
