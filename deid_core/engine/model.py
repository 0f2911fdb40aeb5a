"""The trained de-identification model: training, prediction and the model directory.

A prediction runs the stages of CONVENTIONS.md as plain functions over spans:
tokenise -> rules -> features -> emissions -> Viterbi (with the O-label bias)
-> merge rule and CRF spans -> post-process. ``encode`` does everything that
does not depend on the bias once, so that the review app can re-decode a
note at a new bias, or draw the whole bias curve, without recomputing
features.

A model directory is versioned (``manifest.json`` carries
``format_version``) and written atomically: it is built in a temporary
directory beside the target and renamed into place, so a crash never leaves
half a model. A model built from notes contains words from those notes (the
CRF attributes, the gazetteer): treat the directory as PHI.
"""

from __future__ import annotations

import copy
import gc
import hashlib
import json
import logging
import math
import os
import re
import shutil
import socket
import tempfile
import time
import uuid
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import yaml

from deid_core.engine.calibration import (
    MAX_TOKENS,
    fit_scale,
    needs_scale,
    scale_bounds,
    scaled_weights,
)
from deid_core.engine.charcrf import (
    EMPTY_CHARS,
    CharCRFConfig,
    CharEncoded,
    CharTagger,
    TokenView,
    resolve,
    token_view,
    train_char_crf,
)
from deid_core.engine.crf import (
    CRFParams,
    CRFWeights,
    fold_domain_weights,
    read_weights,
    train_crf_groups,
)
from deid_core.engine.decoder import (
    EmissionScorer,
    PartTerms,
    forward_backward_parts,
    load_kernels,
    part_logprobs,
    path_scores,
    viterbi,
    viterbi_sweep,
)
from deid_core.engine.features import (
    DOMAIN_PREFIX,
    FeatureConfig,
    FeatureExtractor,
    FoldFreeFeatures,
    augment_domain,
)
from deid_core.engine.gazetteers import (
    Gazetteer,
    HarvestItem,
    builtin_gazetteer,
    harvest_gazetteer,
    harvest_item,
    load_word_list,
    merge_gazetteers,
)
from deid_core.engine.merge import merge_spans
from deid_core.engine.postprocess import PostFilter, apply_filters, filters_from_dict, load_filters
from deid_core.engine.propagate import (
    find_spans,
    known_index,
    known_phi_items,
    propagate,
    select_new,
)
from deid_core.engine.rules import RuleSet, load_rules, load_yaml_text
from deid_core.engine.tagging import OUTSIDE, spans_to_tags, tags_to_spans
from deid_core.engine.tokenize import Token, Tokenized, tokenize
from deid_core.engine.transforms import TransformSet
from deid_core.errors import ModelError, RuleError
from deid_core.schemes import LabelInfo, LabelScheme, scheme_from_labels
from deid_core.spans import Document, Span, sort_spans

log = logging.getLogger(__name__)

MODEL_FORMAT_VERSION = 1
ProgressFn = Callable[[str, float], None]

MANIFEST = "manifest.json"
CRF_FILE = "model.crfsuite"
FEATURES_FILE = "features.json"
SCHEME_FILE = "scheme.yaml"
RULE_MAP_FILE = "rule_mapping.json"
GAZETTEER_FILE = "gazetteer.json"
TRAINING_FILE = "training.json"
METRICS_FILE = "metrics.json"
RULES_FILE = "rules.yaml"
FILTERS_FILE = "filters.yaml"
CHARCRF_FILE = "charcrf.crfsuite"  # optional: the character CRF (paper 000)
#: Optional TBED transformations (paper 003). Editable by hand, so outside the checksums.
TRANSFORMS_FILE = "transforms.yaml"
#: training.json: the factor every CRF weight is multiplied by (``deid_core.engine.calibration``).
SCORE_SCALE_KEY = "score_scale"
REQUIRED_FILES = (CRF_FILE, FEATURES_FILE, SCHEME_FILE, RULE_MAP_FILE, GAZETTEER_FILE, TRAINING_FILE)


@dataclass(frozen=True)
class TrainConfig:
    """Everything that shapes a model. Defaults come from ``bench/engine_hparam_search.py``."""

    # CRFsuite settings: the defaults live once, in ``CRFParams``.
    algorithm: str = CRFParams.algorithm
    c1: float = CRFParams.c1
    c2: float = CRFParams.c2
    max_iterations: int = CRFParams.max_iterations
    min_freq: int = CRFParams.min_freq
    all_possible_transitions: bool = CRFParams.all_possible_transitions
    epsilon: float = CRFParams.epsilon
    features: FeatureConfig = field(default_factory=FeatureConfig)
    gazetteer_min_count: int = 2
    gazetteer_min_precision: float = 0.5
    #: Gazetteer features for training notes come from the other folds, so the
    #: CRF learns how far to trust a gazetteer hit on notes it has not seen.
    gazetteer_folds: int = 2
    word_lists: tuple[str, ...] = ()  # "path" (LABEL<TAB>phrase lines) or "LABEL=path"
    builtin_gazetteer: bool = True  # Faker's first/last names, countries, states, street words
    rules_path: str | None = None  # None: the built-in rules for the language
    filters_path: str | None = None  # None: the built-in post-filters for the language
    use_filters: bool = True
    #: What one CRF sequence is: "sentence" (the tokenizer's sentences),
    #: "line" (all sentences of a line: a split at "Apt." or "Dr." no longer
    #: cuts a span in two) or "note" (the whole note: transitions carry
    #: across line breaks, for PHI written over several lines). Features use
    #: sentences either way.
    sequence: str = "note"
    #: Mark the other occurrences of a confidently tagged name, id, address or
    #: facility in the note (``engine/propagate.py``); spans get source ``propagated``.
    propagate: bool = True
    propagate_min_score: float = 0.9
    rule_map_min_precision: float = 0.7
    rule_map_min_count: int = 3
    seed: int = 0
    #: The character-level CRF trained beside the token CRF (None: none).
    charcrf: CharCRFConfig | None = None
    #: Trained with feature augmentation (Daume 2007): notes marked in-domain
    #: carried a second, prefixed copy of every attribute. The model folds the
    #: two copies at load time and tags every note as in-domain.
    feature_augmentation: bool = False

    def crf_params(self) -> CRFParams:
        return CRFParams(**{f.name: getattr(self, f.name) for f in fields(CRFParams)})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, FeatureConfig | CharCRFConfig):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in raw.items() if k in known}
        if isinstance(kwargs.get("features"), dict):
            kwargs["features"] = FeatureConfig.from_dict(kwargs["features"])
        if isinstance(kwargs.get("charcrf"), dict):
            kwargs["charcrf"] = CharCRFConfig.from_dict(kwargs["charcrf"])
        if "word_lists" in kwargs:
            kwargs["word_lists"] = tuple(kwargs["word_lists"])
        return cls(**kwargs)


@dataclass(frozen=True)
class Encoded:
    """A note with everything the bias does not change: tokens, emissions, marginals, rule spans."""

    doc_id: str
    text: str
    tokens: tuple[Token, ...]
    sentences: tuple[tuple[int, int], ...]  # the CRF sequences (see TrainConfig.sequence)
    emissions: np.ndarray  # (n_tokens, n_tags), unbiased
    marginals: np.ndarray  # (n_tokens, n_tags), unbiased
    log_z: np.ndarray  # (n_sequences,)
    rule_spans: tuple[Span, ...]  # matches of rules mapped to a scheme label, ready to merge
    parts: PartTerms  # for log P(labels of each tokenizer sentence | note)
    chars: CharEncoded = EMPTY_CHARS  # the character CRF's windows, when the model has one
    #: ``(label, value)`` identifiers from the record (``meta["known_phi"]``): every decode
    #: adds them, so the Bias page and bias sweeps see what ``predict`` shows reviewers.
    known: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Prediction:
    doc_id: str
    spans: tuple[Span, ...]
    logprob: float  # log P(y*|x) of the document: the sum over its CRF sequences
    logprob_per_token: float
    # Per tokenizer sentence, log P(its labels in y* | x): the sentence's own
    # confidence even when the CRF decodes whole lines or notes. They add up to
    # ``logprob`` only when every sentence is its own CRF sequence.
    sentence_logprobs: tuple[float, ...]
    n_tokens: int
    tokens: tuple[Token, ...]
    tags: tuple[str, ...]
    tag_names: tuple[str, ...]
    marginals: np.ndarray = field(repr=False, compare=False)
    model_version: str = ""
    bias: float = 0.0

    def near_misses(self, threshold: float = 0.2) -> list[Span]:
        """Tokens left outside every span whose P(not O) >= threshold: where a reviewer should look.

        One span per token; label = the most likely non-O label, score = P(not O).
        A token with no letter or digit ("--" before a signature) is never PHI on its
        own, so it is never suggested, however likely the span next to it.
        """
        if not self.n_tokens:
            return []
        o = self.tag_names.index(OUTSIDE)
        p_phi = 1.0 - self.marginals[:, o]
        masked = self.marginals.copy()
        masked[:, o] = -1.0
        best = masked.argmax(axis=1)
        covered = np.zeros(self.n_tokens, dtype=bool)
        starts = np.array([t.start for t in self.tokens])
        ends = np.array([t.end for t in self.tokens])
        for span in self.spans:
            covered |= (starts < span.end) & (ends > span.start)
        out = []
        for k in np.flatnonzero((p_phi >= threshold) & ~covered).tolist():
            tok = self.tokens[k]
            if not any(c.isalnum() for c in tok.text):
                continue
            label = self.tag_names[int(best[k])].split("-", 1)[-1]
            out.append(Span(tok.start, tok.end, label, f"crf:{self.model_version}", float(p_phi[k])))
        return out

    def to_document(self, doc: Document) -> Document:
        if doc.id != self.doc_id:
            raise ModelError(f"prediction for document {self.doc_id!r} applied to {doc.id!r}")
        return Document(doc.id, doc.text, self.spans, dict(doc.meta)).with_meta(
            logprob=self.logprob,
            logprob_per_token=self.logprob_per_token,
            model_version=self.model_version,
            bias=self.bias,
        )


def _uncovered_rules(rule_spans: Sequence[Span], crf_spans: Sequence[Span]) -> list[Span]:
    """Rule spans minus those strictly inside a longer CRF span.

    Rules win overlaps in ``merge_spans``; but when the CRF span contains the
    rule's whole match ("E-41013" around the postcode rule's "41013"), keeping
    the rule would leak the rest. Dropping such rule spans never uncovers a
    character. On MEDDOCAN dev: strict F1 0.9611 -> 0.9620, and character
    recall at bias -2.5 0.9871 -> 0.9925.
    """
    if not crf_spans or not rule_spans:
        return list(rule_spans)
    crf = sorted(crf_spans, key=lambda c: c.start)
    starts = [c.start for c in crf]
    out = []
    for r in rule_spans:
        i = bisect_right(starts, r.start) - 1
        inside = i >= 0 and crf[i].end >= r.end and len(crf[i]) > len(r)
        if not inside:
            out.append(r)
    return out


def sequence_bounds(tok: Tokenized, mode: str) -> tuple[tuple[int, int], ...]:
    """Token ranges of the CRF sequences of a note: its sentences, its lines, or the whole note."""
    if mode == "sentence":
        return tok.sentences
    if mode == "note":
        return ((0, len(tok.tokens)),) if tok.tokens else ()
    if mode != "line":
        raise ModelError(f"unknown sequence mode {mode!r}: use 'sentence', 'line' or 'note'")
    out: list[tuple[int, int]] = []
    for a, b in tok.sentences:
        if out and not tok.tokens[a].line_start and tok.tokens[a].line == tok.tokens[a - 1].line:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return tuple(out)


# -- rule label mapping ----------------------------------------------------------------


def unshadowed(spans: Sequence[Span]) -> list[Span]:
    """Rule spans without those inside a longer span of the same label from another rule.

    The merge never keeps such a span ("Mary" of a one-word name rule inside
    "Mary Smith" of the two-word rule), so it says nothing about its rule's
    precision: ``learn_rule_mapping`` judges rules on these spans only.
    """
    by_label: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        by_label[span.label].append(span)
    out: list[Span] = []
    for group in by_label.values():
        group.sort(key=lambda x: (x.start, -x.end))
        max_end = -1
        max_extent: tuple[int, int] | None = None
        for span in group:
            if max_end >= span.end and max_extent != (span.start, span.end):
                continue
            out.append(span)
            if span.end > max_end:
                max_end, max_extent = span.end, (span.start, span.end)
    return sorted(out, key=lambda x: (x.start, x.end, x.label, x.source))



def learn_rule_mapping(
    pairs: Iterable[tuple[Sequence[Span], Sequence[Span]]],
    *,
    min_precision: float = 0.7,
    min_count: int = 3,
    declared: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Map each rule (by source) to the gold label its matches coincide with most often.

    ``pairs`` are ``(rule spans, gold spans)`` per document. A rule is mapped
    only when that coincidence (exact offsets) holds for ``min_precision`` of
    its matches; other rules stay features only. ``declared`` maps the
    standalone rules (by source) to their own label, when the model's scheme
    has it: such a rule with fewer than ``min_count`` matches keeps that label,
    since too few matches are no evidence against it (a pager rule that never
    fired on synthetic training notes must still tag pagers in real ones).
    Only enough matches that disagree with the gold turn a standalone rule
    into a feature. Returns the mapping and the per-rule counts that justify it.
    """
    matches: Counter[str] = Counter()
    agree: dict[str, Counter[str]] = defaultdict(Counter)
    for rule_spans, gold in pairs:
        by_offsets = {(g.start, g.end): g.label for g in gold}
        for s in rule_spans:
            matches[s.source] += 1
            label = by_offsets.get((s.start, s.end))
            if label is not None:
                agree[s.source][label] += 1
    mapping: dict[str, str] = {}
    stats: dict[str, dict[str, Any]] = {}
    for source, n in sorted(matches.items()):
        best_label, best = (agree[source].most_common(1) or [(None, 0)])[0]
        precision = best / n if n else 0.0
        stats[source] = {"matches": n, "label": best_label, "agree": best, "precision": round(precision, 4)}
        if best_label is not None and n >= min_count and precision >= min_precision:
            mapping[source] = best_label
    for source, label in sorted((declared or {}).items()):
        if matches[source] < min_count:
            mapping[source] = label
            entry = stats.setdefault(source, {"matches": 0, "label": None, "agree": 0, "precision": 0.0})
            entry["declared"] = label
    return mapping, stats


# -- the model -------------------------------------------------------------------------------


def _scheme_to_dict(scheme: LabelScheme) -> dict[str, Any]:
    return {
        "name": scheme.name,
        "language": scheme.language,
        "labels": {
            i.name: {"category": i.category, "hipaa": i.hipaa, "colour": i.colour} for i in scheme.labels
        },
    }


def _scheme_from_dict(raw: Any, origin: str) -> LabelScheme:
    if not isinstance(raw, dict) or not isinstance(raw.get("labels"), dict):
        raise ModelError(f"{origin}: a label scheme needs a 'labels' mapping")
    infos = tuple(
        LabelInfo(str(k), str(v.get("category", "OTHER")), bool(v.get("hipaa", False)), str(v.get("colour", "#999999")))
        for k, v in raw["labels"].items()
    )
    return LabelScheme(str(raw.get("name", origin)), str(raw.get("language", "en")), infos)


class DeidModel:
    """A trained tagger: CRF weights, feature extractor, rules, mapping and filters."""

    def __init__(
        self,
        *,
        crf_bytes: bytes,
        lang: str,
        scheme: LabelScheme,
        config: TrainConfig,
        gazetteer: Gazetteer,
        rule_mapping: dict[str, str],
        metadata: dict[str, Any],
        metrics: dict[str, Any] | None = None,
        version: str | None = None,
        weights: CRFWeights | None = None,
        rules_text: str | None = None,
        filters_text: str | None = None,
        charcrf_bytes: bytes | None = None,
        transforms: TransformSet | None = None,
    ) -> None:
        self.lang = lang
        self.scheme = scheme
        self.config = config
        self.gazetteer = gazetteer
        self.rule_mapping = dict(rule_mapping)
        self.metadata = dict(metadata)
        self.metrics: dict[str, Any] = dict(metrics or {})
        self._crf_bytes = crf_bytes
        # A character CRF changes what the model tags, so it takes part in the version.
        digest = hashlib.sha256(crf_bytes + (charcrf_bytes or b"")).hexdigest()
        self.version = version or f"{lang}-{digest[:12]}"
        if weights is None:
            weights = _crf_weights(crf_bytes)
        if config.feature_augmentation:
            weights = fold_domain_weights(weights, DOMAIN_PREFIX)
        self._unscaled = weights
        self.tag_names: tuple[str, ...] = tuple(weights.labels)
        if OUTSIDE not in self.tag_names:
            raise ModelError(f"model {self.version} has no {OUTSIDE!r} tag")
        self.o_index = self.tag_names.index(OUTSIDE)
        self.labels: list[str] = sorted({t.split("-", 1)[1] for t in self.tag_names if t != OUTSIDE})
        self.extractor = FeatureExtractor(config.features, lang=lang, gazetteer=gazetteer)
        self._use_scale(float(self.metadata.get(SCORE_SCALE_KEY, 1.0)))
        load_kernels()
        #: Applied to the merged spans before the filters; learned by ``deid_core.learning.tbed``.
        self.transforms: TransformSet | None = transforms
        self.char: CharTagger | None = None
        if charcrf_bytes is not None:
            self.char = CharTagger(charcrf_bytes, config.charcrf or CharCRFConfig())
        # The rule and filter files are part of the model: the CRF learned weights
        # for these rules' matches, so a later edit of the built-in files must not
        # change what a trained model sees.
        self.rules_text: str | None = None
        self.rules: RuleSet | None = None
        if config.features.rules or rule_mapping:
            self.rules_text = rules_text if rules_text is not None else _data_text("rules", lang, config.rules_path)
            self.rules = RuleSet.from_text(self.rules_text, origin=f"model {self.version} {RULES_FILE}")
        self.filters_text: str | None = None
        self.filters: list[PostFilter] = []
        if config.use_filters:
            self.filters_text = (
                filters_text if filters_text is not None else _data_text("filters", lang, config.filters_path)
            )
            origin = f"model {self.version} {FILTERS_FILE}"
            self.filters = filters_from_dict(load_yaml_text(self.filters_text, origin=origin), origin=origin)
        #: Propagation is a run-time switch too (``deidentify --no-propagate``).
        self.propagate = config.propagate

    def without_rules(self, names: Iterable[str]) -> DeidModel:
        """This model with the named rules (``phone_us``, not ``rule:phone_us``) as features only.

        A project demotes a rule whose spans reviewers keep deleting
        (``deid_core.store.rule_feedback``): its matches still feed the CRF,
        as the CRF was trained with them, but no longer become spans on their
        own. The model on disk and this object are left alone (a loaded model
        is shared between sessions); the copy shares the weights. Returns
        ``self`` when no named rule is mapped.
        """
        drop = {f"rule:{n}" for n in names} & set(self.rule_mapping)
        if not drop:
            return self
        other = copy.copy(self)
        other.rule_mapping = {k: v for k, v in self.rule_mapping.items() if k not in drop}
        other.metadata = {**self.metadata, "demoted_rules": sorted(d[len("rule:"):] for d in drop)}
        return other

    def general_domain(self) -> DeidModel:
        """This model as it tags a note of its base corpus: the in-domain weights left out.

        A model trained with feature augmentation tags every note as the
        project's (the copies are folded on loading). Its base corpus's dev
        notes are not the project's, so a measure taken on them (its recall
        bias, ``learning.retrain.RecallBiasChoice``) reads the general weights
        alone: what the trainer made of the shared data, not what the
        reviewers taught. ``self`` when the model has no in-domain copy.
        """
        if not self.config.feature_augmentation:
            return self
        other = copy.copy(self)
        other._unscaled = _crf_weights(self._crf_bytes)  # prefixed attributes are never extracted
        other._use_scale(self._scale)
        return other

    # -- score scale --------------------------------------------------------------

    def _use_scale(self, scale: float) -> None:
        if not (math.isfinite(scale) and scale > 0):
            raise ModelError(f"model {self.version}: {SCORE_SCALE_KEY} must be a positive number, got {scale!r}")
        self._scale = scale
        self.weights = scaled_weights(self._unscaled, scale)
        self._scorer = EmissionScorer(self.weights, self.extractor.word_type_features, self.extractor.offsets)

    def calibrate(self, docs: Sequence[Document], max_tokens: int = MAX_TOKENS) -> float:
        """Fit the score scale on gold ``docs`` (``deid_core.engine.calibration``) and use it.

        For models from a margin trainer (`pa`, `ap`), whose weights have no
        likelihood scale; the fitted factor is recorded as
        ``metadata["score_scale"]`` and applied whenever the model is loaded.
        Reads notes in the order given up to ``max_tokens`` tokens; notes with
        a label the CRF has no tag for are skipped. Call it before the model is
        shared: it changes what the model's marginals and bias mean.
        """
        tag_index = {t: i for i, t in enumerate(self.tag_names)}
        notes: list[tuple[np.ndarray, Any, np.ndarray]] = []
        tokens = 0
        for doc in docs:
            if tokens >= max_tokens:
                break
            enc = self.encode(replace(doc, meta={}))
            if not enc.tokens:
                continue
            tags = spans_to_tags(enc.tokens, doc.spans, "BIO", snap=True).tags
            if any(t not in tag_index for t in tags):
                continue
            notes.append((enc.emissions, enc.sentences, np.array([tag_index[t] for t in tags], dtype=np.int64)))
            tokens += len(tags)
        # Fitted relative to the weights in use (the emissions above), so no rebuild at scale 1 first.
        factor = fit_scale(notes, self.weights.transitions, bounds=scale_bounds(self.weights))
        scale = factor if self._scale == 1.0 else round(self._scale * factor, 4)
        self.metadata[SCORE_SCALE_KEY] = scale
        self.metadata["score_scale_info"] = {"documents": len(notes), "tokens": tokens}
        self._use_scale(scale)
        return scale

    # -- prediction ---------------------------------------------------------------

    def _rule_spans(self, text: str) -> list[Span]:
        return self.rules.find(text) if self.rules is not None else []

    def encode(self, doc: Document) -> Encoded:
        known = tuple(known_phi_items(doc.meta, doc_id=doc.id))
        tok = tokenize(doc.text, self.lang)
        raw_rules = self._rule_spans(doc.text)
        mapped = tuple(
            Span(s.start, s.end, self.rule_mapping[s.source], s.source, s.score)
            for s in raw_rules
            if s.source in self.rule_mapping
        )
        n_tags = len(self.tag_names)
        if not tok.tokens:
            empty = np.zeros((0, n_tags))
            no_parts = PartTerms((), empty, empty, np.zeros(0))
            return Encoded(doc.id, doc.text, (), (), empty, empty, np.zeros(0), mapped, no_parts, known=known)
        fx = self.extractor
        emissions = self._scorer.emissions(
            [t.text for t in tok.tokens], tok.sentences, fx.context_features(tok, raw_rules)
        )
        seqs = sequence_bounds(tok, self.config.sequence)
        marginals, log_z, parts = forward_backward_parts(
            emissions, seqs, self.weights.transitions, tok.sentences
        )
        chars = EMPTY_CHARS
        if self.char is not None:
            chars = self.char.encode(
                doc.text, tok.tokens, raw_rules, marginals, self._known_word, self.tag_names
            )
        return Encoded(doc.id, doc.text, tok.tokens, seqs, emissions, marginals, log_z, mapped, parts, chars,
                       known=known)

    def _known_word(self, word: str) -> bool:
        """Whether the token CRF saw ``word`` in training (its ``0:w=`` attribute has a weight)."""
        return f"0:w={word.lower()}" in self._scorer.ids

    def decode(self, encoded: Encoded, bias: float = 0.0) -> Prediction:
        """Spans at ``bias`` (added to the O score at every token; ``< 0`` favours recall)."""
        path = None
        if encoded.tokens:
            path, _ = viterbi(
                encoded.emissions, encoded.sentences, self.weights.transitions,
                bias=float(bias), o_index=self.o_index,
            )
        return self._prediction(encoded, path, float(bias), char_path=self._char_path(encoded, bias))

    def _char_path(self, encoded: Encoded, bias: float) -> np.ndarray | None:
        if self.char is None or not encoded.chars.windows:
            return None
        return self.char.path(encoded.chars, float(bias))

    def decode_many(self, encoded: Encoded, biases: Sequence[float]) -> list[Prediction]:
        """Predictions at several biases, re-decoding only sentences whose path can change."""
        if not encoded.tokens:
            return [self._prediction(encoded, None, float(b)) for b in biases]
        paths = viterbi_sweep(
            encoded.emissions, encoded.sentences, self.weights.transitions, biases, self.o_index
        )
        return self.decode_paths(encoded, paths, biases)

    def decode_paths(
        self, encoded: Encoded, paths: Sequence[np.ndarray], biases: Sequence[float]
    ) -> list[Prediction]:
        """Predictions for Viterbi ``paths`` of one note found at ``biases`` (as a sweep gives them).

        A note has only a few distinct paths across a grid, and most spans
        survive from one to the next: spans, merge and filters (the slow Python
        part) run once per distinct path, and each span is filtered once.
        """
        done: dict[bytes, Prediction] = {}
        memo: dict[Span, Span | None] = {}
        out = []
        for path, b in zip(paths, biases):
            char_path = self._char_path(encoded, b)
            key = path.tobytes() + (b"|" + char_path.tobytes() if char_path is not None else b"")
            if key not in done:
                done[key] = self._prediction(
                    encoded, path if encoded.tokens else None, float(b), memo, char_path=char_path
                )
            out.append(replace(done[key], bias=float(b)))
        return out

    def _prediction(
        self,
        encoded: Encoded,
        path: np.ndarray | None,
        bias: float,
        filter_memo: dict[Span, Span | None] | None = None,
        char_path: np.ndarray | None = None,
    ) -> Prediction:
        source = f"crf:{self.version}"
        if path is not None:
            transitions = self.weights.transitions
            unbiased = path_scores(encoded.emissions, encoded.sentences, transitions, path)
            total = float((unbiased - encoded.log_z).sum())
            sentence_lp = part_logprobs(encoded.parts, encoded.emissions, transitions, path)
            tags = tuple(self.tag_names[i] for i in path.tolist())
            scores = encoded.marginals[np.arange(len(path)), path]
            # Read leniently: an I- that starts a sequence continues the span before it,
            # which keeps multi-line address blocks whole (presidio-synth dev: +0.017 F1).
            crf_spans = tags_to_spans(encoded.tokens, tags, source=source, scores=scores)
        else:
            total = 0.0
            sentence_lp = np.zeros(0)
            tags = ()
            crf_spans = []
        char_spans: list[Span] = []
        if self.char is not None and char_path is not None:
            char_spans = self.char.spans(encoded.text, encoded.chars, char_path, f"charcrf:{self.version}")
            char_spans, crf_spans = resolve(
                char_spans, crf_spans, self.char.config.policy, encoded.tokens, self.char.config.min_score
            )
        model_spans = [*crf_spans, *char_spans]
        spans = merge_spans([*_uncovered_rules(encoded.rule_spans, model_spans), *model_spans])
        if self.transforms:
            spans = self.transforms.apply(encoded.tokens, spans)
        if self.filters:
            spans = apply_filters(encoded.text, spans, self.filters, memo=filter_memo)
        if self.propagate:
            spans = propagate(
                encoded.text, spans, self.scheme, lang=self.lang, min_score=self.config.propagate_min_score
            )
        if encoded.known:
            spans = self._with_known(encoded, spans)
        n = len(encoded.tokens)
        return Prediction(
            doc_id=encoded.doc_id,
            spans=tuple(spans),
            logprob=total,
            logprob_per_token=total / n if n else 0.0,
            sentence_logprobs=tuple(float(x) for x in sentence_lp),
            n_tokens=n,
            tokens=encoded.tokens,
            tags=tags,
            tag_names=self.tag_names,
            marginals=encoded.marginals,
            model_version=self.version,
            bias=bias,
        )

    def _with_known(self, encoded: Encoded, spans: Sequence[Span]) -> list[Span]:
        """The record's identifiers, found in every written variant, added where nothing
        covers them, with the source ``known``."""
        extra = known_index(list(encoded.known), self.scheme, lang=self.lang)
        found = list(find_spans(encoded.text, spans, extra, self.scheme.name)) if extra else []
        return sort_spans([*spans, *select_new(spans, found)]) if found else list(spans)

    def predict(self, doc: Document, bias: float = 0.0) -> Prediction:
        """Spans of ``doc`` at ``bias``, with the identifiers ``doc.meta["known_phi"]``
        lists (from the structured record) in every written variant."""
        return self.decode(self.encode(doc), bias)

    def predict_many(
        self,
        docs: Sequence[Document],
        bias: float = 0.0,
        progress: bool | ProgressFn = False,
    ) -> list[Prediction]:
        """Predict a corpus; ``progress=True`` shows a tqdm bar, a callable gets ``(message, fraction)``."""
        out = []
        iterable: Iterable[Document] = docs
        if progress is True:
            from tqdm import tqdm

            iterable = tqdm(docs, desc="tagging", unit="doc")
        n = max(1, len(docs))
        for i, doc in enumerate(iterable):
            out.append(self.predict(doc, bias))
            if callable(progress):
                progress(f"tagged {i + 1} of {len(docs)}", (i + 1) / n)
        return out

    # -- persistence --------------------------------------------------------------

    def save(self, path: str | Path) -> Path:
        """Write the model directory atomically (build beside the target, then rename)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            self._write_files(tmp)
            if target.exists():
                old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
                os.replace(target, old)
                os.replace(tmp, target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    def _write_files(self, directory: Path) -> None:
        def dump(name: str, obj: Any) -> None:
            (directory / name).write_text(
                json.dumps(obj, ensure_ascii=False, indent=1, sort_keys=True), encoding="utf-8"
            )

        (directory / CRF_FILE).write_bytes(self._crf_bytes)
        dump(FEATURES_FILE, {"lang": self.lang, "train_config": self.config.to_dict()})
        (directory / SCHEME_FILE).write_text(
            yaml.safe_dump(_scheme_to_dict(self.scheme), allow_unicode=True, sort_keys=False),
            encoding="utf-8",
        )
        dump(RULE_MAP_FILE, {"mapping": self.rule_mapping})
        self.gazetteer.save(directory / GAZETTEER_FILE)
        dump(TRAINING_FILE, self.metadata)
        dump(METRICS_FILE, self.metrics)
        optional = [METRICS_FILE]
        if self.char is not None:
            (directory / CHARCRF_FILE).write_bytes(self.char.crf_bytes)
            optional.append(CHARCRF_FILE)
        for name, text in ((RULES_FILE, self.rules_text), (FILTERS_FILE, self.filters_text)):
            if text is not None:
                (directory / name).write_text(text, encoding="utf-8")
                optional.append(name)
        files = {}
        for name in (*REQUIRED_FILES, *optional):
            files[name] = hashlib.sha256((directory / name).read_bytes()).hexdigest()
        manifest: dict[str, Any] = {
            "format_version": MODEL_FORMAT_VERSION,
            "version": self.version,
            "lang": self.lang,
            "created": self.metadata.get("created"),
            "files": files,
        }
        if self.transforms is not None:
            (directory / TRANSFORMS_FILE).write_text(self.transforms.to_yaml(), encoding="utf-8")
            manifest["editable"] = [TRANSFORMS_FILE]
        # The manifest goes last: a directory without it was never finished.
        dump(MANIFEST, manifest)

    @classmethod
    def load(cls, path: str | Path) -> DeidModel:
        directory = Path(path)
        if not directory.is_dir():
            raise ModelError(f"{directory}: model directory does not exist")
        manifest = _read_json(directory / MANIFEST)
        if not isinstance(manifest, dict) or manifest.get("format_version") != MODEL_FORMAT_VERSION:
            raise ModelError(
                f"{directory / MANIFEST}: unknown model format version"
                f" {manifest.get('format_version') if isinstance(manifest, dict) else None!r}"
                f" (this library reads version {MODEL_FORMAT_VERSION})"
            )
        for name in REQUIRED_FILES:
            if not (directory / name).is_file():
                raise ModelError(f"{directory / name}: missing from the model directory")
        expected = manifest.get("files", {})
        for name, digest in expected.items():
            file = directory / name
            if file.is_file() and hashlib.sha256(file.read_bytes()).hexdigest() != digest:
                raise ModelError(f"{file}: does not match the checksum in {MANIFEST}")
        feats = _read_json(directory / FEATURES_FILE)
        try:
            config = TrainConfig.from_dict(feats["train_config"])
            lang = str(feats["lang"])
        except (KeyError, TypeError) as exc:
            raise ModelError(f"{directory / FEATURES_FILE}: malformed feature configuration") from exc
        try:
            scheme_raw = yaml.safe_load((directory / SCHEME_FILE).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ModelError(f"{directory / SCHEME_FILE}: cannot read label scheme") from exc
        mapping = _read_json(directory / RULE_MAP_FILE)
        if not isinstance(mapping, dict) or not isinstance(mapping.get("mapping"), dict):
            raise ModelError(f"{directory / RULE_MAP_FILE}: malformed rule mapping")
        metrics_file = directory / METRICS_FILE
        metrics = _read_json(metrics_file) if metrics_file.is_file() else {}
        texts: dict[str, str | None] = {}
        for name in (RULES_FILE, FILTERS_FILE):
            if name in expected and not (directory / name).is_file():
                raise ModelError(f"{directory / name}: missing from the model directory")
            try:
                texts[name] = (directory / name).read_text(encoding="utf-8") if name in expected else None
            except (OSError, UnicodeDecodeError) as exc:
                raise ModelError(f"{directory / name}: cannot read ({type(exc).__name__})") from exc
        model = cls(
            crf_bytes=(directory / CRF_FILE).read_bytes(),
            lang=lang,
            scheme=_scheme_from_dict(scheme_raw, str(directory / SCHEME_FILE)),
            config=config,
            gazetteer=Gazetteer.load(directory / GAZETTEER_FILE),
            rule_mapping={str(k): str(v) for k, v in mapping["mapping"].items()},
            metadata=_read_json(directory / TRAINING_FILE),
            metrics=metrics,
            version=str(manifest.get("version")),
            weights=read_weights(directory / CRF_FILE),
            rules_text=texts[RULES_FILE],
            filters_text=texts[FILTERS_FILE],
            charcrf_bytes=_optional_bytes(directory, CHARCRF_FILE, expected),
            transforms=(
                TransformSet.load(directory / TRANSFORMS_FILE)
                if TRANSFORMS_FILE in manifest.get("editable", []) else None
            ),
        )
        if needs_scale(config.algorithm) and SCORE_SCALE_KEY not in model.metadata:
            log.warning(
                "model %s was trained with crfsuite %r before score scales were fitted: its bias-0 tags are"
                " right, but its probabilities, span scores and O-label bias are not on a likelihood scale"
                " (retrain to fix; docs/engine.md, 'Score scale of margin-trained models')",
                model.version, config.algorithm,
            )
        return model


def _crf_weights(crf_bytes: bytes) -> CRFWeights:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / CRF_FILE
        path.write_bytes(crf_bytes)
        return read_weights(path)


def _data_text(kind: str, lang: str, path: str | None) -> str:
    """The YAML text of a rule or filter file: the user's ``path`` or the built-in one for ``lang``."""
    if path is not None:
        try:
            return Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"cannot read {kind} file: {exc.__class__.__name__}", path=str(path)) from None
    # Validate the language the way the loaders do (a clear UnsupportedFormat).
    (load_rules if kind == "rules" else load_filters)(lang)
    return resources.files("deid_core").joinpath(f"data/{kind}/{lang}.yaml").read_text("utf-8")


def _optional_bytes(directory: Path, name: str, expected: dict[str, Any]) -> bytes | None:
    """An optional file the manifest lists (absent from models saved before it existed)."""
    if name not in expected:
        return None
    try:
        return (directory / name).read_bytes()
    except OSError as exc:
        raise ModelError(f"{directory / name}: missing from the model directory ({exc.strerror})") from exc


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise ModelError(f"{path}: missing from the model directory")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelError(f"{path}: cannot read ({type(exc).__name__})") from exc


# -- training -------------------------------------------------------------------------------


def _word_list_gazetteer(specs: Sequence[str], lang: str) -> Gazetteer:
    parts = []
    for spec in specs:
        label, sep, path = spec.partition("=")
        if sep and label and not os.path.exists(spec):
            parts.append(load_word_list(path, label, lang=lang))
        else:
            parts.append(load_word_list(spec, None, lang=lang))
    return merge_gazetteers(*parts)


class _PreparedNote(NamedTuple):
    tokenized: Tokenized
    gold_tags: list[str]
    misaligned: int
    dropped: int
    rule_spans: list[Span]
    features: FoldFreeFeatures
    harvest: HarvestItem


def _cache_key(doc: Document) -> tuple[str, str, tuple[Span, ...]]:
    return doc.id, doc.text, tuple(doc.spans)


class TrainingCache:
    """A note's training work that does not depend on the other notes it is trained with.

    Tokens, gold tags, rule hits and every feature but the gazetteer's (which
    is harvested from the other notes) are the same in every model of a
    retraining round; computing them once saves about a third of each
    training. Keyed by id, text and gold spans, so an edited note is
    recomputed; one cache serves one feature configuration (checked). Holds
    note text: it lives in memory and is never written anywhere.

    ``shared`` is a longer-lived cache for ``shared_docs`` (the generated
    notes of a starter's corpus, the same every round): their work is read
    from and stored there, everything else here, so no other note outlives
    the round. A shared cache filled under another configuration starts over.
    """

    def __init__(self, shared: TrainingCache | None = None, shared_docs: Iterable[Document] = ()) -> None:
        self._notes: dict[tuple[str, str, tuple[Span, ...]], _PreparedNote] = {}
        self._setting: Any = None
        self._shared = shared
        self._shared_keys = frozenset(map(_cache_key, shared_docs)) if shared is not None else frozenset()

    def check(self, setting: Any) -> None:
        if self._setting is None:
            self._setting = setting
        elif setting != self._setting:
            raise ModelError("a training cache serves one language, feature configuration and rule set")
        if self._shared is not None and self._shared._setting != setting:
            self._shared._notes.clear()
            self._shared._setting = setting

    def _home(self, key: tuple[str, str, tuple[Span, ...]]) -> TrainingCache:
        return self._shared if self._shared is not None and key in self._shared_keys else self

    def get(self, doc: Document) -> _PreparedNote | None:
        key = _cache_key(doc)
        return self._home(key)._notes.get(key)

    def put(self, doc: Document, note: _PreparedNote) -> None:
        key = _cache_key(doc)
        self._home(key)._notes[key] = note

    def __len__(self) -> int:
        return len(self._notes)


def train_model(
    docs: Sequence[Document],
    *,
    lang: str,
    scheme: LabelScheme | None = None,
    config: TrainConfig | None = None,
    progress: ProgressFn | None = None,
    repeats: Sequence[int] | None = None,
    in_domain: Sequence[bool] | None = None,
    corpus: dict[str, Any] | None = None,
    cache: TrainingCache | None = None,
    calibration: Sequence[Document] | None = None,
) -> DeidModel:
    """Train a model on gold documents. ``progress(message, fraction)`` reports each stage.

    The arguments are :func:`train_models`'s, without ``leave_out``.
    """
    return train_models(
        docs, lang=lang, scheme=scheme, config=config, progress=progress, repeats=repeats,
        in_domain=in_domain, corpus=corpus, cache=cache, calibration=calibration,
    )[0]


def train_models(
    docs: Sequence[Document],
    *,
    lang: str,
    scheme: LabelScheme | None = None,
    config: TrainConfig | None = None,
    progress: ProgressFn | None = None,
    repeats: Sequence[int] | None = None,
    in_domain: Sequence[bool] | None = None,
    corpus: dict[str, Any] | None = None,
    cache: TrainingCache | None = None,
    leave_out: Sequence[Sequence[int]] = (),
    calibration: Sequence[Document] | None = None,
) -> list[DeidModel]:
    """The model on all ``docs``, then one per ``leave_out`` group of indices, trained without them.

    A k-fold comparison's models share one feature extraction and one
    crfsuite data set (its holdout groups). Each note's training attributes
    are the ones it has in the model on all ``docs``: the gazetteer marks on
    training notes come from cross-fold harvests over all ``docs``, so a
    left-out note's PHI strings can still mark other notes' tokens (never
    its own). Everything a model uses when it tags (its gazetteer, its rule
    mapping) comes from its own training notes only. The groups must not
    overlap; with a character CRF each model is trained on its own.

    ``repeats[i]`` gives document ``i``'s CRF sequences that many times
    (crfsuite has no instance weights; its loss is a sum over sequences).
    ``in_domain[i]`` marks the target-domain notes when
    ``config.feature_augmentation`` is on. ``corpus`` is recorded as
    ``metadata["corpus"]``: what a retrain needs to rebuild the training set
    (``deid_core.corpus.file_corpus_reference`` for a training file).
    ``cache`` keeps each note's tokens, rule hits and gazetteer-free features
    for the next call (a retraining round trains several models on the same notes).

    A margin trainer's (`pa`, `ap`) model on all ``docs`` gets its score
    scale fitted (``DeidModel.calibrate``) on ``calibration``, gold notes it
    did not train on, or, without them, on a seeded sample of its own
    training notes (overconfident, but on the right order of magnitude). The
    ``leave_out`` models are scaled too: a comparison at the project's bias
    needs them on the same scale as the candidate they stand in for.
    """
    config = config or TrainConfig()
    if not docs:
        raise ModelError("cannot train a model on an empty corpus").with_code("E_EMPTY")
    if repeats is not None and (len(repeats) != len(docs) or any(int(r) < 1 for r in repeats)):
        raise ModelError("repeats needs one count >= 1 per document")
    if in_domain is not None and len(in_domain) != len(docs):
        raise ModelError("in_domain needs one flag per document")
    if in_domain is not None and any(in_domain) and not config.feature_augmentation:
        raise ModelError("in-domain notes need TrainConfig(feature_augmentation=True)")
    group_of = np.zeros(len(docs), dtype=np.int64)
    for g, indices in enumerate(leave_out, start=1):
        for i in indices:
            if not 0 <= int(i) < len(docs) or group_of[int(i)]:
                raise ModelError("leave_out groups need distinct indices of the documents, in range")
            group_of[int(i)] = g
    if leave_out and config.charcrf is not None:
        raise ModelError("models with a character CRF are trained one at a time (no leave_out)")

    def report(message: str, fraction: float) -> None:
        if progress is not None:
            progress(message, max(0.0, min(1.0, fraction)))

    started = time.perf_counter()
    corpus_labels = sorted({s.label for d in docs for s in d.spans})
    if scheme is None:
        scheme = scheme_from_labels(f"from-corpus-{lang}", corpus_labels, lang)
    unknown = sorted(set(corpus_labels) - set(scheme.names))
    if unknown:
        raise ModelError(
            f"corpus labels {unknown} are not in label scheme {scheme.name!r}; pass a matching scheme"
        )

    rules_text = _data_text("rules", lang, config.rules_path) if config.features.rules else None
    rules = RuleSet.from_text(rules_text, origin=config.rules_path or f"built-in {lang} rules") if rules_text else None
    base_fx = FeatureExtractor(config.features, lang=lang)
    if cache is not None:
        cache.check((lang, config.features, config.sequence, rules_text))

    report("tokenising", 0.0)
    prepared: list[_PreparedNote] = []
    for i, doc in enumerate(docs):
        note = cache.get(doc) if cache is not None else None
        if note is None:
            tok = tokenize(doc.text, lang)
            alignment = spans_to_tags(tok.tokens, doc.spans, "BIO", snap=True)
            found = rules.find(doc.text) if rules is not None else []
            note = _PreparedNote(
                tok, alignment.tags, len(alignment.misaligned), len(alignment.dropped), found,
                base_fx.fold_free_features(tok, found),
                harvest_item(tok.tokens, doc.spans) if config.features.gazetteer else ([], []),
            )
            if cache is not None:
                cache.put(doc, note)
        prepared.append(note)
        if i % 50 == 0:
            report("tokenising", 0.1 * i / len(docs))
    tokenized = [n.tokenized for n in prepared]
    gold_tags = [n.gold_tags for n in prepared]
    rule_spans = [n.rule_spans for n in prepared]
    n_docs = len(docs)
    members = [list(range(n_docs)), *(
        [i for i in range(n_docs) if group_of[i] != g] for g in range(1, len(leave_out) + 1)
    )]
    report("building gazetteers", 0.12)
    user_gaz = _word_list_gazetteer(config.word_lists, lang) if config.word_lists else Gazetteer()
    if config.builtin_gazetteer and config.features.gazetteer:
        user_gaz = merge_gazetteers(builtin_gazetteer(lang), user_gaz)

    def harvest(indices: Iterable[int]) -> Gazetteer:
        return harvest_gazetteer(
            (prepared[i].harvest for i in indices),
            min_count=config.gazetteer_min_count,
            min_precision=config.gazetteer_min_precision,
        )

    use_gaz = config.features.gazetteer
    full_gaz = merge_gazetteers(harvest(range(n_docs)), user_gaz) if use_gaz else Gazetteer()
    folds = max(1, config.gazetteer_folds) if use_gaz else 1
    fold_of = np.random.default_rng(config.seed).permutation(n_docs) % folds
    extractors = []
    for k in range(folds):
        if folds == 1:
            gaz = full_gaz
        else:
            gaz = merge_gazetteers(harvest(i for i in range(n_docs) if fold_of[i] != k), user_gaz)
        extractors.append(FeatureExtractor(config.features, lang=lang, gazetteer=gaz))

    report("extracting features", 0.15)
    xs: list[list[list[str]]] = []
    ys: list[list[str]] = []
    groups: list[int] = []
    for i, tok in enumerate(tokenized):
        flat = extractors[int(fold_of[i])].with_gazetteer(tok, prepared[i].features)
        if in_domain is not None and in_domain[i]:
            flat = augment_domain(flat)
        for _ in range(int(repeats[i]) if repeats is not None else 1):
            for a, b in sequence_bounds(tok, config.sequence):
                xs.append(flat[a:b])
                ys.append(gold_tags[i][a:b])
                groups.append(int(group_of[i]))
        if i % 50 == 0:
            report("extracting features", 0.15 + 0.15 * i / n_docs)
    if not any(tag != OUTSIDE for y in ys for tag in y):
        raise ModelError("the training corpus has no PHI spans that align with tokens")
    features_seconds = time.perf_counter() - started

    params = config.crf_params()
    # Host and pid in the name: deid_core.protect.cleanup removes it once this process is gone.
    host = re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:40] or "host"
    with tempfile.TemporaryDirectory(prefix=f"deid-train-{host}-{os.getpid()}-") as tmp:
        paths = [Path(tmp) / f"{k}-{CRF_FILE}" for k in range(len(members))]
        crf_started = time.perf_counter()
        share = 0.68 if config.charcrf is None else 0.4
        train_crf_groups(
            xs, ys, groups, [(k if k else -1, path) for k, path in enumerate(paths)], params,
            progress=lambda m, f: report(m, 0.3 + share * f),
        )
        crf_seconds = time.perf_counter() - crf_started
        del xs, ys
        crfs = [(path.read_bytes(), read_weights(path)) for path in paths]
        char_tagger: CharTagger | None = None
        char_stats: dict[str, Any] = {}
        if config.charcrf is not None:
            char_started = time.perf_counter()
            views = None
            if config.charcrf.stack:
                views = out_of_fold_views(
                    docs, lang=lang, scheme=scheme, config=config,
                    progress=lambda m, f: report(f"out-of-fold token labels: {m}", 0.7 + 0.14 * f),
                )
            char_tagger, char_stats = train_char_crf(
                [(d.text, t.tokens, r, d.spans) for d, t, r in zip(docs, tokenized, rule_spans)],
                config.charcrf,
                Path(tmp) / CHARCRF_FILE,
                progress=lambda m, f: report(f"character {m}", (0.84 if views else 0.7) + (0.14 if views else 0.28) * f),
                views=views,
            )
            char_stats["seconds"] = round(time.perf_counter() - char_started, 3)
    declared = (
        {r.source: r.label for r in rules if r.standalone and r.label in scheme.names}
        if rules is not None
        else {}
    )
    # Margin trainers only: gold to fit each model's score scale on (its own notes, shuffled, if none given).
    scale_notes: Sequence[Document] | None = None
    if needs_scale(config.algorithm):
        scale_notes = calibration if calibration is not None else [
            docs[i] for i in np.random.default_rng(config.seed).permutation(len(docs))
        ]
    models = []
    for k, keep in enumerate(members):
        # What the model tags with comes from its own training notes only.
        mapping, rule_stats = learn_rule_mapping(
            ((unshadowed(rule_spans[i]), docs[i].spans) for i in keep),
            min_precision=config.rule_map_min_precision,
            min_count=config.rule_map_min_count,
            declared=declared,
        )
        gazetteer = full_gaz if k == 0 or not use_gaz else merge_gazetteers(harvest(keep), user_gaz)
        crf_bytes, weights = crfs[k]
        metadata: dict[str, Any] = {
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "documents": len(keep),
            "sentences": sum(len(tokenized[i].sentences) for i in keep),
            "tokens": sum(len(tokenized[i].tokens) for i in keep),
            "spans": sum(len(docs[i].spans) for i in keep),
            "misaligned_spans": sum(prepared[i].misaligned for i in keep),
            "dropped_spans": sum(prepared[i].dropped for i in keep),
            "labels": sorted({s.label for i in keep for s in docs[i].spans}),
            "hyperparameters": params.to_dict(),
            "seed": config.seed,
            "seconds": {
                "features": round(features_seconds, 3),
                "crf": round(crf_seconds, 3),
                "total": round(time.perf_counter() - started, 3),
            },
            "attributes": len(weights.attributes),
            "gazetteer_entries": len(gazetteer),
            "rule_stats": rule_stats,
        }
        if len(members) > 1:
            metadata["trained_together"] = len(members)  # the seconds are the batch's
        if char_tagger is not None:
            metadata["charcrf"] = char_stats
        if repeats is not None:
            metadata["repeated_documents"] = sum(1 for i in keep if int(repeats[i]) > 1)
        if in_domain is not None:
            metadata["in_domain_documents"] = sum(1 for i in keep if in_domain[i])
        if corpus is not None:
            metadata["corpus"] = dict(corpus)
        model = DeidModel(
            crf_bytes=crf_bytes,
            lang=lang,
            scheme=scheme,
            config=config,
            gazetteer=gazetteer,
            rule_mapping=mapping,
            metadata=metadata,
            weights=weights,
            rules_text=rules_text,
            charcrf_bytes=char_tagger.crf_bytes if char_tagger is not None else None,
        )
        if scale_notes is not None:
            report("fitting the score scale", 0.99)
            model.calibrate(scale_notes)
            model.metadata["score_scale_info"]["held_out"] = calibration is not None
        log.info("trained model %s on %d documents, %d tokens", model.version, len(keep), metadata["tokens"])
        models.append(model)
    report("trained", 1.0)
    return models


def stack_folds(n_docs: int, config: TrainConfig) -> np.ndarray:
    """The fold of each training note for the stacked character CRF's out-of-fold token labels (seeded)."""
    folds = config.charcrf.stack_folds if config.charcrf is not None else 3
    return np.random.default_rng(config.seed).permutation(n_docs) % folds


def out_of_fold_views(
    docs: Sequence[Document],
    *,
    lang: str,
    scheme: LabelScheme | None,
    config: TrainConfig,
    progress: ProgressFn | None = None,
    fold_models: Sequence[DeidModel] | None = None,
) -> list[TokenView]:
    """Each training note's token CRF labels from a token model trained without it (stacking).

    ``fold_models[f]`` may be given (trained on the notes outside fold ``f``
    of ``stack_folds``, with ``charcrf=None``): a benchmark caches them.
    """
    char_config = config.charcrf or CharCRFConfig(stack=True)
    fold_of = stack_folds(len(docs), config)
    folds = int(fold_of.max()) + 1 if len(docs) else 0
    base = replace(config, charcrf=None)
    views: list[TokenView | None] = [None] * len(docs)
    for f in range(folds):
        held = [i for i in range(len(docs)) if fold_of[i] == f]
        if fold_models is not None:
            model = fold_models[f]
        else:
            def report(message: str, fraction: float, f: int = f) -> None:
                if progress is not None:
                    progress(f"fold {f + 1}/{folds}: {message}", (f + fraction) / folds)

            train = [d for i, d in enumerate(docs) if fold_of[i] != f]
            if not train:
                raise ModelError(f"stacking needs more notes than its {folds} folds")
            model = train_model(train, lang=lang, scheme=scheme, config=base, progress=report)
        for i in held:
            enc = model.encode(docs[i])
            views[i] = token_view(enc.tokens, enc.marginals, model.tag_names, model._known_word, char_config)
    return [v if v is not None else TokenView((), (), ()) for v in views]


def with_config(config: TrainConfig, **changes: Any) -> TrainConfig:
    """A copy of ``config`` with some fields changed (``features`` may be a dict of changes)."""
    feats = changes.pop("features", None)
    if isinstance(feats, dict):
        changes["features"] = replace(config.features, **feats)
    elif feats is not None:
        changes["features"] = feats
    return replace(config, **changes)


# -- bias sweep ---------------------------------------------------------------------------------


def freeze_loaded_heap() -> None:
    """Take everything allocated so far out of the cyclic garbage collector's scans.

    Importing spaCy, scipy and numba and loading a model leaves about 230,000
    long-lived objects that every full collection walks again; on MEDDOCAN
    dev that cost 6-12% of tagging time. For processes that load a model once
    and then tag (the CLI, batch workers). Not for the app: a server that
    keeps loading models would pin their garbage.
    """
    gc.collect()
    gc.freeze()


def bias_grid(start: float, stop: float, step: float) -> list[float]:
    """``start, start + step, ..., <= stop`` without float drift (values rounded to 1e-9)."""
    if step <= 0:
        raise ModelError(f"bias step must be positive, got {step}")
    if stop < start:
        raise ModelError(f"bias range is empty: from {start} to {stop}")
    n = int(np.floor((stop - start) / step + 1e-9)) + 1
    return [round(start + i * step, 9) for i in range(n)]

