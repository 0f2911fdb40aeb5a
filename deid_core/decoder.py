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

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from deid_core.crf import CRFWeights

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
    to_from = np.ascontiguousarray(transitions.T)  # reduce over the contiguous last axis
    delta = values[:, 0, :].copy()
    back = np.zeros((n_sent, longest, n_labels), dtype=np.intp)
    buffer = np.empty((n_sent, n_labels, n_labels))
    for t in range(1, longest):
        k = int(padded.active[t])
        cand = buffer[:k]
        np.add(delta[:k, None, :], to_from, out=cand)  # (k, to, from)
        best_from = cand.argmax(axis=2)  # first maximum, as CRFsuite
        back[:k, t] = best_from
        delta[:k] = np.take_along_axis(cand, best_from[:, :, None], axis=2)[:, :, 0] + values[:k, t]
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


#: Memory bound of one batched Viterbi call in a sweep (emissions plus back-pointers).
SWEEP_BATCH_BYTES = 64 * 1024 * 1024


def sweep_paths(
    sentences: Sequence[np.ndarray],
    transitions: np.ndarray,
    grid: Sequence[float],
    o_index: int,
    *,
    batch_bytes: int | None = None,
) -> list[list[np.ndarray]]:
    """Viterbi paths of many sentences at every bias of the ascending ``grid``: ``[bias][sentence]``.

    The best biased score of a sentence, ``max_y score(y) + b * n_O(y)``, is a
    convex piecewise-linear function of ``b``. If the same path wins at two
    biases it wins everywhere between them, so after decoding the two ends of
    the grid only sentences whose paths differ are decoded again, at the
    midpoint, recursively. Sentences are decoded together in batched calls
    (the decoder's cost is mostly per call), at most ``batch_bytes`` at a time,
    so one call can sweep a single note or a whole corpus. Results equal
    ``viterbi`` at each bias (barring exact score ties).
    """
    n_labels = int(transitions.shape[0])
    limit = SWEEP_BATCH_BYTES if batch_bytes is None else batch_bytes
    paths: list[list[np.ndarray | None]] = [[None] * len(sentences) for _ in grid]

    def decode(i: int, ids: list[int]) -> None:
        ids = sorted(ids, key=lambda k: len(sentences[k]), reverse=True)
        pos = 0
        while pos < len(ids):
            longest = max(1, len(sentences[ids[pos]]))
            chunk = ids[pos : pos + max(1, limit // (longest * n_labels * 16))]
            pos += len(chunk)
            bounds, at = [], 0
            for k in chunk:
                bounds.append((at, at + len(sentences[k])))
                at += len(sentences[k])
            path, _ = viterbi(np.concatenate([sentences[k] for k in chunk]), bounds, transitions,
                              bias=float(grid[i]), o_index=o_index)
            for k, (a, b) in zip(chunk, bounds):
                paths[i][k] = path[a:b]

    everything = list(range(len(sentences)))
    if sentences and len(grid):
        decode(0, everything)
        if len(grid) > 1:
            decode(len(grid) - 1, everything)
    stack = [(0, len(grid) - 1, everything)]
    while stack:
        lo, hi, ids = stack.pop()
        if hi - lo <= 1 or not ids:
            continue
        differ = []
        for k in ids:
            left, right = paths[lo][k], paths[hi][k]
            assert left is not None and right is not None
            if np.array_equal(left, right):
                for i in range(lo + 1, hi):
                    paths[i][k] = left
            else:
                differ.append(k)
        if differ:
            mid = (lo + hi) // 2
            decode(mid, differ)
            stack.append((lo, mid, differ))
            stack.append((mid, hi, differ))
    out: list[list[np.ndarray]] = []
    for row in paths:
        done = [p for p in row if p is not None]
        assert len(done) == len(row), "every sentence has a path at every bias"
        out.append(done)
    return out


def viterbi_sweep(
    emissions: np.ndarray,
    bounds: Bounds,
    transitions: np.ndarray,
    biases: Sequence[float],
    o_index: int,
) -> list[np.ndarray]:
    """Viterbi paths of one sequence set at many biases (in the order given); see ``sweep_paths``."""
    _check(emissions, bounds)
    order = sorted(range(len(biases)), key=lambda i: biases[i])
    grid = [float(biases[i]) for i in order]
    if not grid:
        return []
    rows = sweep_paths([emissions[a:b] for a, b in bounds], transitions, grid, o_index)
    out: list[np.ndarray] = [np.zeros(0, dtype=np.intp)] * len(grid)
    for rank, i in enumerate(order):
        out[i] = np.concatenate(rows[rank]) if bounds else np.zeros(0, dtype=np.intp)
    return out


class EmissionScorer:
    """Per-token label scores from features, with the type part cached per word.

    A token's score is the sum of the state weights of its attributes. Most
    attributes depend only on ``(offset, word)`` (see
    ``deid_core.features``), so their summed weight vector is computed once
    per word type and offset and kept in a table; a token then costs one
    table row per window offset plus its few context attributes.
    """

    #: Keep the state weights dense when this small (L1-pruned models usually are).
    DENSE_LIMIT = 8_000_000

    def __init__(self, weights: CRFWeights, type_features: Callable[[int, str], list[str]]) -> None:
        self.ids = {a: i for i, a in enumerate(weights.attributes)}
        n_attrs, self.n_labels = weights.state.shape
        self.state: np.ndarray | sp.csr_matrix = (
            weights.state.toarray() if n_attrs * self.n_labels <= self.DENSE_LIMIT else weights.state
        )
        self.type_features = type_features
        self.max_rows = 1_000_000
        self._rows: dict[int, dict[str, int]] = {}
        self._n_rows = 0
        self._table = np.zeros((1024, self.n_labels))
        # One model may serve several Streamlit sessions (st.cache_resource): the
        # row table grows in place, so lookups and growth happen under a lock.
        self._lock = threading.Lock()

    def _indicator(self, attr_lists: Sequence[Sequence[str]]) -> sp.csr_matrix:
        ids = self.ids
        indices: list[int] = []
        indptr = [0]
        for attrs in attr_lists:
            indices.extend([i for i in map(ids.get, attrs) if i is not None])
            indptr.append(len(indices))
        return sp.csr_matrix(
            (np.ones(len(indices)), np.asarray(indices, dtype=np.int64), np.asarray(indptr, dtype=np.int64)),
            shape=(len(attr_lists), len(ids)),
        )

    def _scores(self, attr_lists: Sequence[Sequence[str]]) -> np.ndarray:
        product = self._indicator(attr_lists) @ self.state
        return product if isinstance(product, np.ndarray) else np.asarray(product.todense())

    def _add_rows(self, offset: int, words: list[str]) -> dict[str, int]:
        if self._n_rows + len(words) > self.max_rows:
            self._rows.clear()  # bound memory on endless vocabularies
            self._n_rows = 0
        vectors = self._scores([self.type_features(offset, w) for w in words])
        first = self._n_rows
        need = first + len(words)
        if need > self._table.shape[0]:
            grown = np.zeros((max(need, 2 * self._table.shape[0]), self.n_labels))
            grown[:first] = self._table[:first]
            self._table = grown
        self._table[first:need] = vectors
        rows = self._rows.setdefault(offset, {})
        for j, w in enumerate(words):
            rows[w] = first + j
        self._n_rows = need
        return rows

    def emissions(
        self,
        offsets: Sequence[int],
        window_words: Sequence[Sequence[str]],
        context: Sequence[Sequence[str]],
    ) -> np.ndarray:
        """``(tokens, labels)`` scores from ``FeatureExtractor.window_words``/``context_features``."""
        out = np.array(self._scores(context), dtype=np.float64)
        if not len(context):
            return out
        with self._lock:
            return self._add_type_rows(out, offsets, window_words)

    def _add_type_rows(
        self, out: np.ndarray, offsets: Sequence[int], window_words: Sequence[Sequence[str]]
    ) -> np.ndarray:
        for off, words in zip(offsets, window_words):
            rows = self._rows.get(off, {})
            idx = [rows.get(w, -1) for w in words]
            if -1 in idx:
                missing = list(dict.fromkeys(w for w, i in zip(words, idx) if i == -1))
                if self._n_rows + len(missing) > self.max_rows:
                    missing = list(dict.fromkeys(words))  # the table is about to be reset
                rows = self._add_rows(off, missing)
                idx = [rows[w] for w in words]
            out += self._table[np.asarray(idx, dtype=np.int64)]
        return out
