"""Our own linear-chain CRF decoder in numpy, built from CRFsuite's weights.

Owning the maths gives three things CRFsuite's tagger does not: an O-label
bias ``b`` added to the O score at every token (paper 002, "Trading Off
Precision and Recall": ``b < 0`` favours recall), token marginals for every
label, and ``log P(y*|x) = score(y*) - log Z`` per sentence without the
underflow of ``Tagger.probability()``.

All sentences of a document are decoded together: they are sorted by length
and padded, and each step works on the prefix of sentences still running, so
the Python loop runs once per token position rather than once per token.

At ``b = 0`` the Viterbi path equals ``crf.predict()`` (same recursion, same
first-maximum tie break) and marginals match ``crf.predict_marginals()``.
Marginals and ``log Z`` never depend on the bias: the bias is a decision
rule, the probabilities stay the model's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

Bounds = Sequence[tuple[int, int]]


@dataclass(frozen=True)
class _Padded:
    values: np.ndarray  # (S, T, L), sentences sorted by decreasing length
    lengths: np.ndarray  # (S,) sorted lengths
    order: np.ndarray  # sorted position -> original sentence index
    active: np.ndarray  # (T,) number of sentences longer than t


def _pad(emissions: np.ndarray, bounds: Bounds) -> _Padded:
    lengths = np.array([b - a for a, b in bounds], dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")
    sorted_lengths = lengths[order]
    n_sent = len(bounds)
    longest = int(sorted_lengths[0]) if n_sent else 0
    values = np.zeros((n_sent, longest, emissions.shape[1]), dtype=np.float64)
    for row, s in enumerate(order.tolist()):
        a, b = bounds[s]
        values[row, : b - a] = emissions[a:b]
    active = (sorted_lengths[None, :] > np.arange(longest)[:, None]).sum(axis=1)
    return _Padded(values, sorted_lengths, order, active)


def _unpad(padded: _Padded, per_row: np.ndarray, bounds: Bounds, width: int | None) -> np.ndarray:
    total = bounds[-1][1] if bounds else 0
    shape = (total,) if width is None else (total, width)
    out = np.empty(shape, dtype=per_row.dtype)
    for row, s in enumerate(padded.order.tolist()):
        a, b = bounds[s]
        out[a:b] = per_row[row, : b - a]
    return out


def _check(emissions: np.ndarray, bounds: Bounds) -> None:
    if emissions.ndim != 2:
        raise ValueError("emissions must be a (tokens, labels) array")
    pos = 0
    for a, b in bounds:
        if a != pos or b <= a:
            raise ValueError("sentence bounds must tile the tokens without gaps or empties")
        pos = b
    if pos != emissions.shape[0]:
        raise ValueError(f"sentence bounds cover {pos} tokens but there are {emissions.shape[0]}")


def viterbi(
    emissions: np.ndarray,
    bounds: Bounds,
    transitions: np.ndarray,
    *,
    bias: float = 0.0,
    o_index: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Best label index per token, and each sentence's best (biased) score."""
    _check(emissions, bounds)
    if not bounds:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    padded = _pad(emissions, bounds)
    values = padded.values
    if bias and o_index is not None:
        values[:, :, o_index] += bias
    n_sent, longest, n_labels = values.shape
    delta = values[:, 0, :].copy()
    back = np.zeros((n_sent, longest, n_labels), dtype=np.int32)
    for t in range(1, longest):
        k = int(padded.active[t])
        cand = delta[:k, :, None] + transitions[None, :, :]  # (k, from, to)
        best_from = cand.argmax(axis=1)
        best = np.take_along_axis(cand, best_from[:, None, :], axis=1)[:, 0, :]
        delta[:k] = best + values[:k, t]
        back[:k, t] = best_from
    last = delta.argmax(axis=1)
    rows = np.arange(n_sent)
    scores_sorted = delta[rows, last]
    paths = np.zeros((n_sent, longest), dtype=np.int64)
    paths[rows, padded.lengths - 1] = last
    for t in range(longest - 1, 0, -1):
        k = int(padded.active[t])
        paths[:k, t - 1] = back[np.arange(k), t, paths[:k, t]]
    scores = np.empty(n_sent)
    scores[padded.order] = scores_sorted
    return _unpad(padded, paths, bounds, None), scores


def forward_backward(
    emissions: np.ndarray, bounds: Bounds, transitions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Token marginals ``(tokens, labels)`` and ``log Z`` per sentence.

    Runs in probability space with per-step normalisation (as CRFsuite does),
    after subtracting each token's largest emission, so nothing overflows and
    ``log Z`` is recovered from the scale factors.
    """
    _check(emissions, bounds)
    n_labels = emissions.shape[1] if emissions.ndim == 2 else 0
    if not bounds:
        return np.zeros((0, n_labels)), np.zeros(0)
    padded = _pad(emissions, bounds)
    values = padded.values
    n_sent, longest, _ = values.shape
    shift = values.max(axis=2)  # (S, T)
    expv = np.exp(values - shift[:, :, None])
    exp_trans = np.exp(transitions)
    alpha = np.zeros_like(expv)
    scale = np.ones((n_sent, longest))
    alpha[:, 0] = expv[:, 0]
    scale[:, 0] = alpha[:, 0].sum(axis=1)
    alpha[:, 0] /= scale[:, 0, None]
    for t in range(1, longest):
        k = int(padded.active[t])
        a = (alpha[:k, t - 1] @ exp_trans) * expv[:k, t]
        s = a.sum(axis=1)
        scale[:k, t] = s
        alpha[:k, t] = a / s[:, None]
    beta = np.zeros_like(expv)
    rows = np.arange(n_sent)
    beta[rows, padded.lengths - 1] = 1.0
    for t in range(longest - 1, 0, -1):
        k = int(padded.active[t])
        nb = (beta[:k, t] * expv[:k, t]) @ exp_trans.T
        beta[:k, t - 1] = nb / scale[:k, t, None]
    marg = alpha * beta
    total = marg.sum(axis=2, keepdims=True)
    total[total == 0] = 1.0
    marg /= total
    mask = np.arange(longest)[None, :] < padded.lengths[:, None]
    log_z_sorted = ((np.log(scale) + shift) * mask).sum(axis=1)
    log_z = np.empty(n_sent)
    log_z[padded.order] = log_z_sorted
    return _unpad(padded, marg, bounds, n_labels), log_z


def path_scores(
    emissions: np.ndarray, bounds: Bounds, transitions: np.ndarray, path: np.ndarray
) -> np.ndarray:
    """Unbiased score of a label path, per sentence."""
    n = emissions.shape[0]
    if n == 0:
        return np.zeros(len(bounds))
    token_scores = emissions[np.arange(n), path]
    trans = np.zeros(n)
    trans[1:] = transitions[path[:-1], path[1:]]
    starts = np.array([a for a, _ in bounds], dtype=np.int64)
    trans[starts] = 0.0
    return np.add.reduceat(token_scores + trans, starts)


class AttributeIndex:
    """Attribute string -> CRFsuite attribute id, with ids cached per word type.

    ``type_features`` is the feature extractor's cached ``(offset, word) ->
    strings`` function; caching the ids per ``(offset, word)`` too means a
    known word costs one dictionary lookup instead of ~20.
    """

    def __init__(self, attributes: Sequence[str]) -> None:
        self.ids = {a: i for i, a in enumerate(attributes)}
        self.size = len(attributes)
        self._type_ids: dict[tuple[int, str], list[int]] = {}

    def indicator(
        self,
        parts: Sequence[Sequence[tuple[Sequence[tuple[int, str]], Sequence[str]]]],
        type_features: Callable[[int, str], list[str]],
    ) -> sp.csr_matrix:
        """A (tokens x attributes) 0/1 matrix for ``FeatureExtractor.token_parts`` output."""
        ids = self.ids
        cache = self._type_ids
        indices: list[int] = []
        indptr = [0]
        for sent in parts:
            for keys, extras in sent:
                for key in keys:
                    got = cache.get(key)
                    if got is None:
                        got = [ids[f] for f in type_features(*key) if f in ids]
                        if len(cache) < 2_000_000:
                            cache[key] = got
                    indices.extend(got)
                for f in extras:
                    i = ids.get(f)
                    if i is not None:
                        indices.append(i)
                indptr.append(len(indices))
        data = np.ones(len(indices), dtype=np.float64)
        return sp.csr_matrix(
            (data, np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(indptr) - 1, self.size),
        )


def emissions_from(indicator: sp.csr_matrix, state: sp.csr_matrix) -> np.ndarray:
    """Per-token label scores: the sum of the state weights of each token's attributes."""
    return np.asarray((indicator @ state).todense(), dtype=np.float64)
