"""Which document confidence measure ranks notes by their F1 best (issue 13, queue order)?

    python bench/queue_order.py --model MODEL_DIR [--dataset meddocan] [--split dev]
    python bench/queue_order.py --dataset english-dev              # the English starter (built on first use)
    python bench/queue_order.py --model DIR --dataset presidio-synth
    python bench/queue_order.py --model DIR --dataset meddocan --split train --folds 3 --fold 0   # out of fold

Tags every note of the split with the model (bias 0) and reports the Spearman
correlation between each measure (oriented so that higher = more confident)
and the note's strict F1. Data sets: ``meddocan`` and ``presidio-synth``
(``/work/shared/data``, read, never copied) and ``english-dev``: the
generator's dev template families (200 notes, seed 777_001, as
``bench/english_coldstart.py``) plus ``tests/fixtures/english_challenge.jsonl``,
reported apart and together. ``--folds K --fold k`` keeps the notes whose
index is ``k`` mod ``K`` (for out-of-fold figures on train with a model
trained on the other folds); ``--rows-out FILE`` writes each note's F1 and
measures (ids and numbers, no text), and ``--from-rows FILE...`` reports on
saved rows pooled (the three folds together) without tagging.

Measures (``confidence_measures`` in ``deid_core/learning/active.py`` unless marked):

* ``logprob``: log P(y*|x) of the note (paper 002: rho 0.7267 with record F-measure);
  ``logprob_per_token``; ``logprob_per_span``: divided by 1 + the predicted spans
  (``deid_core.confidence``, the queue's default order);
* ``neg_expected_errors`` (and ``_per_token``): minus sum over tokens of (1 - max marginal);
* ``min_span_marginal``: the smallest marginal of a predicted PHI token's tag;
* ``neg_phi_mass``: minus the expected number of PHI tokens;
* ``expected_span_f1``: predicted spans right with the product of their tokens' path marginals;
* ``exact_expected_f1`` (bench only, from the CRF's forward-backward):
  2 E[TP] / (spans + E[gold spans]), where E[TP] sums the exact probability
  that each predicted span's tokens carry exactly that span under the CRF
  (B-X, I-X..., not continued by I-X; an I-X after a non-X tag also starts it,
  as the lenient reading does) and E[gold spans] is the expected number of span
  starts; ``exact_min_span_p`` and ``exact_neg_expected_errors`` (expected
  false positives + missed spans) come from the same quantities, and
  ``exact_logprob`` is log P(y*|x); ``--temperature`` divides the CRF's scores
  for these four (a calibration check: at 1 they are the model's own);
* ``neg_tokens``: minus the note's length (paper 002: rho 0.5392 for length);
* issue 13 item 5, signals the CRF's own probabilities do not hold (bench only):
  ``nov_*`` novelty (tokens without a word weight in the CRF, or, ``nov_train_*``,
  absent from the training notes), ``dis_*`` disagreement (spans decoded at
  O-bias -1/-2 but not at 0, spans gone at +1, rule matches and gazetteer
  tokens no predicted span covers), ``sent_*`` from the per-sentence
  log-probabilities, and with ``--committee DIR...`` ``com_*``: disagreement
  with CRFs trained on other samples of the training data (see each
  function's docstring). ``--combine A=0.85 B=0.15`` adds ``combo``: the
  weighted sum of the measures' ranks within the set (weights chosen on
  out-of-fold train rows, never on the set reported).

F1 definitions: ``ours`` (strict span F1 of the note; a note with no gold and
no predicted span scores 1, one with predictions but no gold scores 0) and
``paper`` (paper 002 ranks records that all hold PHI: notes without gold spans
are left out, F1 undefined there). ``ceiling`` is the Spearman of F1 with
itself broken at random inside ties (half the MEDDOCAN notes score exactly 1,
so no measure can reach 1). ``bootstrap`` gives 95% intervals (1000 resamples
of notes) of the difference between ``logprob_per_span`` and the two
log-probability measures. Prints one JSON object with CPU/wall seconds and the
load average.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import logsumexp
from scipy.stats import rankdata, spearmanr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deid_core.confidence import logprob_per_span  # noqa: E402
from deid_core.corpus import read_jsonl  # noqa: E402
from deid_core.engine.decoder import path_scores  # noqa: E402
from deid_core.engine.model import DeidModel, TrainConfig, train_model  # noqa: E402
from deid_core.evaluation import strict_prf  # noqa: E402
from deid_core.learning.active import confidence_measures  # noqa: E402
from deid_core.schemes import load_scheme  # noqa: E402
from deid_core.spans import Document  # noqa: E402

DATA = next(
    (p for p in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if p.is_dir()),
    ROOT.parent / "shared" / "data",
)
DATASETS = {"meddocan": ("es", "meddocan"), "presidio-synth": ("en", "presidio_synth"),
            "english-dev": ("en", "i2b2_2014")}
CHALLENGE = ROOT / "tests" / "fixtures" / "english_challenge.jsonl"
COMPARE = ("logprob", "logprob_per_token")


def doc_f1(gold: Document, pred: Document) -> float:
    if not gold.spans and not pred.spans:
        return 1.0
    return float(strict_prf([gold], [pred])["f1"])


# ------------------------------------------------------------------ exact span probabilities


def _log_forward_backward(E: np.ndarray, T: np.ndarray, seqs: Any) -> tuple[np.ndarray, ...]:
    n, L = E.shape
    la, lb = np.empty((n, L)), np.empty((n, L))
    lz, seq_of = np.empty(len(seqs)), np.empty(n, dtype=int)
    for s, (a, b) in enumerate(seqs):
        seq_of[a:b] = s
        la[a] = E[a]
        for t in range(a + 1, b):
            la[t] = logsumexp(la[t - 1][:, None] + T, axis=0) + E[t]
        lb[b - 1] = 0.0
        for t in range(b - 2, a - 1, -1):
            lb[t] = logsumexp(T + (E[t + 1] + lb[t + 1])[None, :], axis=1)
        lz[s] = logsumexp(la[b - 1])
    return la, lb, lz, seq_of


def _window(la: np.ndarray, lb: np.ndarray, log_z: float, E: np.ndarray, T: np.ndarray,
            a: int, masks: list[np.ndarray]) -> float:
    """P(tag of token a + i is in masks[i] for every i) under the CRF (window inside one sequence)."""
    v = np.where(masks[0], la[a], -np.inf)
    for i in range(1, len(masks)):
        v = np.where(masks[i], logsumexp(v[:, None] + T, axis=0) + E[a + i], -np.inf)
    return float(np.exp(logsumexp(v + lb[a + len(masks) - 1]) - log_z))


def crf_span_probabilities(
    E: np.ndarray, T: np.ndarray, seqs: Any, names: list[str], spans: list[tuple[int, int, str]]
) -> tuple[list[float | None], float, float]:
    """Exact P(each ``(first token, last token, label)`` span is read from the CRF's tags), E[spans], log Z.

    A span is read as tags_to_spans reads it: B-X or an I-X after a tag other
    than B-X/I-X (or at the note's start) opens it, I-X continues it, anything
    else closes it. ``None`` for a span the tags cannot express (label without
    B-, or crossing a sequence boundary). ``E`` and ``T`` are emission and
    transition scores; then come the expected number of spans and the sum of
    the sequences' log partition functions.
    """
    L, n = len(names), E.shape[0]
    la, lb, lz, seq_of = _log_forward_backward(E, T, seqs)
    marg = np.exp(la + lb - lz[seq_of][:, None])
    e_spans = float(sum(marg[:, j].sum() for j, nm in enumerate(names) if nm.startswith("B-")))
    e_spans += float(sum(marg[0, j] for j, nm in enumerate(names) if nm.startswith("I-")))
    if n > 1:  # an I-X after a tag other than B-X/I-X starts a span too
        pw = np.exp(la[:-1, :, None] + T[None] + (E[1:] + lb[1:])[:, None, :] - lz[seq_of[1:]][:, None, None])
        firsts = np.array([a for a, _ in seqs])
        inside = np.ones(n - 1, dtype=bool)
        inside[firsts[firsts > 0] - 1] = False
        for j, nm in enumerate(names):
            if nm.startswith("I-"):
                ok = np.ones(L, dtype=bool)
                ok[j] = False
                if f"B-{nm[2:]}" in names:
                    ok[names.index(f"B-{nm[2:]}")] = False
                e_spans += float(pw[inside][:, ok, j].sum())
    probs: list[float | None] = []
    for a, b, label in spans:
        if f"B-{label}" not in names or seq_of[a] != seq_of[b]:
            probs.append(None)
            continue
        first, last = seqs[seq_of[a]]
        only_b = np.zeros(L, dtype=bool)
        only_b[names.index(f"B-{label}")] = True
        only_i, not_i, not_x = np.zeros(L, dtype=bool), np.ones(L, dtype=bool), ~only_b
        has_i = f"I-{label}" in names
        if has_i:
            i_col = names.index(f"I-{label}")
            only_i[i_col], not_i[i_col], not_x[i_col] = True, False, False
        body = [only_i] * (b - a) + ([not_i] if b + 1 < last else [])
        log_z = float(lz[seq_of[a]])
        p = _window(la, lb, log_z, E, T, a, [only_b, *body])
        if has_i and a > first:
            p += _window(la, lb, log_z, E, T, a - 1, [not_x, only_i, *body])
        elif has_i and a == 0:
            p += _window(la, lb, log_z, E, T, a, [only_i, *body])
        probs.append(p)
    return probs, e_spans, float(lz.sum())


def exact_span_measures(
    model: DeidModel, doc: Document, pred: Any, encoded: Any, temperature: float = 1.0
) -> dict[str, float]:
    """E[TP], E[gold spans] and the measures built from them (see the module docstring).

    ``temperature`` divides emissions and transitions (calibration: > 1 softens
    the CRF's distribution); ``exact_logprob`` is log P(y*|x) at that temperature.
    """
    names = list(model.tag_names)
    n = pred.n_tokens
    if n == 0:
        return {"exact_expected_f1": 1.0, "exact_min_span_p": 1.0, "exact_neg_expected_errors": 0.0,
                "exact_logprob": 0.0}
    E = np.asarray(encoded.emissions, dtype=float) / temperature
    T = np.asarray(model.weights.transitions, dtype=float) / temperature
    seqs = encoded.sentences
    starts = np.array([t.start for t in pred.tokens])
    ends = np.array([t.end for t in pred.tokens])
    token_spans, expressible = [], []
    for s in pred.spans:
        ks = np.flatnonzero((starts < s.end) & (ends > s.start))
        expressible.append(len(ks) > 0)
        token_spans.append((int(ks[0]), int(ks[-1]), s.label) if len(ks) else (0, 0, ""))
    crf_probs, e_gold, log_z = crf_span_probabilities(E, T, seqs, names, token_spans)
    # A span the CRF's tags cannot express (e.g. a rule's label) counts with its own score.
    probs = [float(p) if ok and p is not None else float(s.score)
             for p, ok, s in zip(crf_probs, expressible, pred.spans)]
    path = np.array([names.index(t) for t in pred.tags])
    trans = np.zeros(n)
    trans[1:] = T[path[:-1], path[1:]]
    trans[[a for a, _ in seqs]] = 0.0
    logprob = float(E[np.arange(n), path].sum() + trans.sum() - log_z)
    e_tp = float(sum(probs))
    denom = len(probs) + e_gold
    return {
        "exact_expected_f1": 2.0 * e_tp / denom if denom > 1e-9 else 1.0,
        "exact_min_span_p": min(probs) if probs else 1.0,
        "exact_neg_expected_errors": -((len(probs) - e_tp) + max(0.0, e_gold - e_tp)),
        "exact_logprob": logprob,
    }



# ------------------------------------------------------------------ novelty and disagreement (issue 13 item 5)


def _alnum(text: str) -> bool:
    return any(c.isalnum() for c in text)


def novelty_measures(model: DeidModel, pred: Any, vocab: frozenset[str] = frozenset()) -> dict[str, float]:
    """What the CRF cannot see about itself: tokens it has no weight for.

    A token is *known* when the CRF has a weight for its word attribute
    (``0:w=<lower>``, ``DeidModel._known_word``: L1 prunes words the model
    never used, so this is the vocabulary the weights hold, no extra file).
    Counted over tokens with a letter or digit; ``cap`` = first character
    upper case, ``digit`` = holds a digit; ``outside`` = not covered by a
    predicted span (a capitalised unknown word left untagged is where a name
    may be missed). ``attr_unknown`` is the mean share of a token's own type
    attributes (word, shapes, affixes...) without a weight. Higher = more
    confident (all are minus a count or share); ``_per_span`` divides by 1 + spans.
    ``nov_train_*``: the same against ``vocab``, every lower-cased token of the
    notes the model was trained on (``training_vocabulary``; before L1 pruning).
    """
    toks = [t for t in pred.tokens if _alnum(t.text)]
    n_spans = len(pred.spans)
    if not toks:
        return {k: 0.0 for k in ("nov_oov_share", "nov_oov", "nov_oov_per_span", "nov_cap_oov_share",
                                 "nov_cap_oov_outside", "nov_cap_oov_outside_per_span", "nov_digit_oov_share",
                                 "nov_attr_unknown", "nov_train_oov_share", "nov_train_oov",
                                 "nov_train_cap_oov_outside", "nov_train_cap_oov_outside_per_span")}
    ids = model._scorer.ids
    starts = np.array([t.start for t in toks])
    ends = np.array([t.end for t in toks])
    covered = np.zeros(len(toks), dtype=bool)
    for s in pred.spans:
        covered |= (starts < s.end) & (ends > s.start)
    oov = np.array([not model._known_word(t.text) for t in toks])
    cap = np.array([t.text[0].isupper() for t in toks])
    dig = np.array([any(c.isdigit() for c in t.text) for t in toks])
    centre = list(model.extractor.offsets).index(0)
    attr_unknown = []
    for t in toks:
        feats = model.extractor.word_type_features(t.text)[centre]
        attr_unknown.append(sum(f not in ids for f in feats) / max(1, len(feats)))
    n = len(toks)
    cap_out = float((oov & cap & ~covered).sum())
    t_oov = np.array([t.text.lower() not in vocab for t in toks])
    t_cap_out = float((t_oov & cap & ~covered).sum())
    return {
        "nov_train_oov_share": -float(t_oov.sum()) / n,
        "nov_train_oov": -float(t_oov.sum()),
        "nov_train_cap_oov_outside": -t_cap_out,
        "nov_train_cap_oov_outside_per_span": -t_cap_out / (1 + n_spans),
        "nov_oov_share": -float(oov.sum()) / n,
        "nov_oov": -float(oov.sum()),
        "nov_oov_per_span": -float(oov.sum()) / (1 + n_spans),
        "nov_cap_oov_share": -float((oov & cap).sum()) / n,
        "nov_cap_oov_outside": -cap_out,
        "nov_cap_oov_outside_per_span": -cap_out / (1 + n_spans),
        "nov_digit_oov_share": -float((oov & dig).sum()) / n,
        "nov_attr_unknown": -float(np.mean(attr_unknown)),
    }


def training_vocabulary(model: DeidModel) -> frozenset[str]:
    """Every lower-cased token of the notes ``model`` was trained on (its recorded corpus), or empty."""
    from deid_core.engine.tokenize import tokenize
    from deid_core.learning.retrain import training_corpus

    return frozenset(t.text.lower() for d in training_corpus(model) for t in tokenize(d.text, model.lang).tokens)


def disagreement_measures(model: DeidModel, encoded: Any, pred: Any) -> dict[str, float]:
    """Spans another reading proposes that the default prediction does not hold, and the reverse.

    ``dis_recall_k``: spans decoded at O-bias ``-k`` (recall) that are not
    exactly (start, end, label) among the default spans ('possible misses');
    ``dis_fragile``: default spans gone at O-bias +1 (precision);
    ``dis_rules``: matches of any built-in rule (mapped or not) that overlap no
    predicted span; ``dis_gazetteer``: tokens the model's gazetteer (PHI strings
    harvested from training) marks that no predicted span covers. Minus counts, and per 1 + predicted spans (``_per_span``).
    """
    default = {(s.start, s.end, s.label) for s in pred.spans}
    n_spans = len(pred.spans)
    biases = (-1.0, -2.0, 1.0)
    others = model.decode_many(encoded, biases) if encoded.tokens else [pred] * len(biases)
    out: dict[str, float] = {}
    for name, p in zip(("dis_recall_1", "dis_recall_2", "dis_fragile"), others):
        keys = {(s.start, s.end, s.label) for s in p.spans}
        k = float(len(keys - default)) if name != "dis_fragile" else float(len(default - keys))
        out[name] = -k
        out[f"{name}_per_span"] = -k / (1 + n_spans)
    raw = model._rule_spans(encoded.text)
    missed = [r for r in raw if not any(s.start < r.end and s.end > r.start for s in pred.spans)]
    out["dis_rules"] = -float(len(missed))
    out["dis_rules_per_span"] = -float(len(missed)) / (1 + n_spans)
    gaz = 0
    if model.gazetteer is not None and encoded.tokens:
        starts = np.array([t.start for t in encoded.tokens])
        ends = np.array([t.end for t in encoded.tokens])
        covered = np.zeros(len(starts), dtype=bool)
        for sp in pred.spans:
            covered |= (starts < sp.end) & (ends > sp.start)
        for a, b in encoded.sentences:
            words = [t.text for t in encoded.tokens[a:b]]
            gaz += sum(1 for k, _ in model.gazetteer.marks_at(words) if not covered[a + k])
    out["dis_gazetteer"] = -float(gaz)
    out["dis_gazetteer_per_span"] = -float(gaz) / (1 + n_spans)
    return out


def sentence_measures(pred: Any) -> dict[str, float]:
    """From log P(labels of each tokenizer sentence | note) (``Prediction.sentence_logprobs``).

    ``sent_expected_wrong``: minus the expected number of sentences holding an
    error, sum of 1 - P(sentence right) (bounded per sentence, unlike -log P);
    ``sent_min_lp``: the least likely sentence's log-probability;
    ``sent_unsure``: minus the sentences with P(right) < 0.5. ``_per_span``
    divides by 1 + predicted spans.
    """
    lp = np.asarray(pred.sentence_logprobs, dtype=float)
    per = 1.0 + len(pred.spans)
    wrong = float((1.0 - np.exp(lp)).sum()) if len(lp) else 0.0
    unsure = float((lp < np.log(0.5)).sum()) if len(lp) else 0.0
    return {"sent_expected_wrong": -wrong, "sent_expected_wrong_per_span": -wrong / per,
            "sent_min_lp": float(lp.min()) if len(lp) else 0.0,
            "sent_unsure": -unsure, "sent_unsure_per_span": -unsure / per}


def committee_measures(members: list[DeidModel], doc: Document, pred: Any) -> dict[str, float]:
    """Disagreement of a committee (CRFs trained on other samples of the training data) with the default.

    ``com_misses``: spans some member tags that the default does not (exact
    start, end, label); ``com_fragile``: default spans not every member tags;
    ``com_disagree``: the mean symmetric difference with a member; ``com_vote_entropy``:
    sum over tokens of the entropy of the BIO tag votes (default and members);
    ``com_logprob``: mean over members of log P_member(default tags | x), the
    default's reading scored by the committee; ``com_mean_logprob_per_span``:
    the members' own log P / (1 + their spans), averaged with the default's.
    Minus counts (higher = more confident); ``_per_span`` divides by 1 + default spans.
    """
    default = {(s.start, s.end, s.label) for s in pred.spans}
    n_spans = len(pred.spans)
    keys, lps, own = [], [], [logprob_per_span(pred.logprob, n_spans)]
    votes = [list(pred.tags)]
    for m in members:
        enc = m.encode(doc)
        mp = m.decode(enc, 0.0)
        keys.append({(s.start, s.end, s.label) for s in mp.spans})
        own.append(logprob_per_span(mp.logprob, len(mp.spans)))
        votes.append(list(mp.tags))
        if pred.n_tokens:
            index = {t: i for i, t in enumerate(m.tag_names)}
            if all(t in index for t in pred.tags):
                path = np.array([index[t] for t in pred.tags])
                lps.append(float((path_scores(enc.emissions, enc.sentences, m.weights.transitions, path)
                                  - enc.log_z).sum()))
            else:  # a tag the member never learned: it gives the default's reading no mass
                lps.append(-1e3)
        else:
            lps.append(0.0)
    union = set().union(*keys) if keys else set()
    inter = set.intersection(*keys) if keys else default
    misses = float(len(union - default))
    fragile = float(len(default - inter))
    disagree = float(np.mean([len(k ^ default) for k in keys])) if keys else 0.0
    entropy = 0.0
    for column in zip(*votes):
        _, counts = np.unique(np.array(column), return_counts=True)
        q = counts / counts.sum()
        entropy += float(-(q * np.log(q)).sum())
    com_lp = float(np.mean(lps)) if lps else 0.0
    per = 1.0 + n_spans
    return {
        "com_misses": -misses, "com_misses_per_span": -misses / per,
        "com_fragile": -fragile, "com_fragile_per_span": -fragile / per,
        "com_disagree": -disagree, "com_disagree_per_span": -disagree / per,
        "com_vote_entropy": -entropy, "com_vote_entropy_per_span": -entropy / per,
        "com_logprob": com_lp, "com_logprob_per_span": com_lp / per,
        "com_mean_logprob_per_span": float(np.mean(own)),
    }


# ------------------------------------------------------------------ report


def spearman(x: Any, y: Any) -> float | None:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return round(float(spearmanr(x, y).statistic), 4)


def report(rows: list[dict[str, Any]], seed: int = 0, combine: dict[str, float] | None = None,
           versus: tuple[str, ...] = ()) -> dict[str, Any]:
    """``combine={measure: weight}`` adds ``combo``, the weighted sum of the measures' ranks
    within ``rows`` (divided by their number); ``versus``: measures whose difference from
    ``logprob_per_span`` gets a bootstrap interval too."""
    f1 = np.array([r["f1"] for r in rows])
    has_gold = np.array([r["n_gold"] > 0 for r in rows])
    names = [k for k in rows[0]["measures"]]
    m = {k: np.array([r["measures"][k] for r in rows]) for k in names}
    if combine:
        m["combo"] = sum(w * rankdata(m[k]) / len(f1) for k, w in combine.items())
    rng = np.random.default_rng(seed)
    jitter = f1 + 1e-9 * rng.random(len(f1))
    boot = {}
    idx = [rng.integers(0, len(f1), len(f1)) for _ in range(1000)]
    pairs = [("logprob_per_span", other) for other in COMPARE]
    pairs += [(v, "logprob_per_span") for v in (*versus, *(("combo",) if combine else ())) if v in m]
    for first, other in pairs:
        diffs = []
        for i in idx:
            a, b = spearman(m[first][i], f1[i]), spearman(m[other][i], f1[i])
            if a is not None and b is not None:
                diffs.append(a - b)
        if diffs:
            boot[f"{first} - {other}"] = [round(float(np.mean(diffs)), 4),
                                          round(float(np.percentile(diffs, 2.5)), 4),
                                          round(float(np.percentile(diffs, 97.5)), 4)]
    return {
        "docs": len(rows), "docs_with_gold": int(has_gold.sum()),
        "mean_doc_f1": round(float(f1.mean()), 4), "share_f1_1": round(float(np.mean(f1 == 1.0)), 3),
        "ceiling": {"ours": spearman(jitter, f1), "paper": spearman(jitter[has_gold], f1[has_gold])},
        "spearman": {k: {"ours": spearman(v, f1), "paper": spearman(v[has_gold], f1[has_gold])}
                     for k, v in m.items()},
        "bootstrap_95": boot,
    }


def tag(model: DeidModel, docs: list[Document], label: str, temperature: float = 1.0,
        committee: list[DeidModel] | None = None) -> list[dict[str, Any]]:
    rows = []
    vocab = training_vocabulary(model)
    for k, d in enumerate(docs):
        encoded = model.encode(d)
        p = model.decode(encoded, 0.0)
        measures = confidence_measures(p)
        measures.update(exact_span_measures(model, d, p, encoded, temperature))
        measures["neg_tokens"] = -float(p.n_tokens)
        measures.update(novelty_measures(model, p, vocab))
        measures.update(sentence_measures(p))
        measures.update(disagreement_measures(model, encoded, p))
        if committee:
            measures.update(committee_measures(committee, d, p))
        rows.append({"id": d.id, "f1": doc_f1(d, p.to_document(d)), "n_gold": len(d.spans), "measures": measures})
        if (k + 1) % 50 == 0:
            print(f"{label}: {k + 1}/{len(docs)} notes", file=sys.stderr, flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model directory (english-dev: the starter by default)")
    ap.add_argument("--dataset", default="meddocan", choices=sorted(DATASETS))
    ap.add_argument("--split", default="dev")
    ap.add_argument("--folds", type=int, default=0, help="keep notes whose index is --fold mod --folds")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--train-iterations", type=int, default=50,
                    help="without --model (meddocan, presidio-synth): train on train first")
    ap.add_argument("--dev-families", type=int, default=200)
    ap.add_argument("--temperature", type=float, default=1.0,
                    help="divide emissions and transitions by this for the exact_* measures")
    ap.add_argument("--committee", nargs="+", default=None,
                    help="model directories of a committee (e.g. CRFs trained on halves of train): com_* measures")
    ap.add_argument("--combine", nargs="+", default=None, metavar="MEASURE=WEIGHT",
                    help="add 'combo': the weighted sum of these measures' ranks within the set")
    ap.add_argument("--versus", nargs="+", default=(),
                    help="bootstrap the difference of these measures from logprob_per_span")
    ap.add_argument("--label-map", default=None, metavar="FILE",
                    help="YAML label -> label (or null) applied to the gold, e.g. bench/presidio_to_i2b2.yaml"
                         " to score an i2b2 model on presidio-synth")
    ap.add_argument("--rows-out", default=None, help="write per-note rows (JSONL: id, F1, measures)")
    ap.add_argument("--from-rows", nargs="+", default=None, help="report on saved rows, pooled")
    args = ap.parse_args()
    combine = {k: float(w) for k, w in (c.split("=", 1) for c in args.combine)} if args.combine else None
    versus = tuple(args.versus)
    if args.from_rows:
        pooled = [json.loads(line) for path in args.from_rows
                  for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
        print(json.dumps({"from_rows": args.from_rows, "sets": {"pooled": report(pooled, combine=combine, versus=versus)}}, indent=1))
        return 0
    lang, scheme = DATASETS[args.dataset]
    t0, c0 = time.perf_counter(), time.process_time()
    if args.model:
        model = DeidModel.load(args.model)
    elif args.dataset == "english-dev":
        from deid_core.synthetic.starter import starter_model

        model = starter_model("en")
    else:
        train = read_jsonl(DATA / args.dataset / "train.jsonl")
        model = train_model(train, lang=lang, scheme=load_scheme(scheme),
                            config=TrainConfig(max_iterations=args.train_iterations))
    if args.dataset == "english-dev":
        from deid_core.synthetic import REALISTIC, generate_notes

        sets = {"dev-families": generate_notes(args.dev_families, seed=777_001, families="dev", **REALISTIC),
                "challenge": read_jsonl(CHALLENGE)}
    else:
        sets = {args.split: read_jsonl(DATA / args.dataset / f"{args.split}.jsonl")}
    if args.label_map:
        import yaml

        from deid_core.learning.simulate import apply_label_map

        mapping = yaml.safe_load(Path(args.label_map).read_text(encoding="utf-8"))
        sets = {k: apply_label_map(v, mapping) for k, v in sets.items()}
    if args.folds:
        sets = {k: [d for i, d in enumerate(v) if i % args.folds == args.fold] for k, v in sets.items()}
    committee = [DeidModel.load(c) for c in args.committee or ()]
    rows = {k: tag(model, v, k, args.temperature, committee) for k, v in sets.items()}
    if args.rows_out:
        with open(args.rows_out, "w", encoding="utf-8") as fh:
            for k, v in rows.items():
                for r in v:
                    fh.write(json.dumps({**r, "set": k}) + "\n")
    reports = {k: report(v, combine=combine, versus=versus) for k, v in rows.items()}
    if len(rows) > 1:
        reports["together"] = report([r for v in rows.values() for r in v], combine=combine, versus=versus)
    out = {
        "dataset": args.dataset, "split": args.split, "model": model.version,
        "folds": f"{args.fold} of {args.folds}" if args.folds else None,
        "temperature": args.temperature, "label_map": args.label_map,
        "sets": reports,
        "wall_seconds": round(time.perf_counter() - t0, 1), "cpu_seconds": round(time.process_time() - c0, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
