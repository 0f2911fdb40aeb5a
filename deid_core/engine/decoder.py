"""Our own linear-chain CRF decoder (numpy and numba), built from CRFsuite's weights.

Owning the maths gives three things CRFsuite's tagger does not: an O-label
bias ``b`` added to the O score at every token (paper 002, "Trading Off
Precision and Recall": ``b < 0`` favours recall), token marginals for every
label, and ``log P(y*|x) = score(y*) - log Z`` per sequence without the
underflow of ``Tagger.probability()`` (and per sentence inside a longer
sequence, as a marginal: ``part_logprobs``).

Viterbi and forward-backward are plain loops compiled with numba (cached on
disk after the first run): per token they cost ``labels**2`` multiply-adds,
where numpy would pay a few microseconds of call overhead per step. That
made decoding the largest part of tagging time before.

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
from numba import njit

from deid_core.engine.crf import CRFWeights
from deid_core.engine.features import BOS, EOS

Bounds = Sequence[tuple[int, int]]


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


def _starts(bounds: Bounds) -> np.ndarray:
    return np.fromiter((a for a, _ in bounds), dtype=np.int64, count=len(bounds))


@njit(cache=True, nogil=True)
def _viterbi_kernel(
    emissions: np.ndarray, starts: np.ndarray, trans: np.ndarray, bias: float, o_index: int
) -> tuple[np.ndarray, np.ndarray]:
    # CRFsuite's recursion (crf1dc_viterbi): the best of prev[i] + trans[i, j]
    # over i, the first maximum winning, then + state[j]. The loops are turned
    # around (i outer, j inner along a contiguous row of trans) so the compiler
    # vectorises the inner loop; visiting i in ascending order with a strict
    # ">" keeps the first maximum, and every score is the same float sum. The
    # bias is added to the O emission, as if part of the state score.
    n, n_labels = emissions.shape
    n_sent = starts.shape[0]
    path = np.zeros(n, dtype=np.int64)
    scores = np.zeros(n_sent)
    back = np.zeros((n, n_labels), dtype=np.int64)
    delta = np.empty(n_labels)
    best = np.empty(n_labels)
    arg = np.empty(n_labels, dtype=np.int64)
    for s in range(n_sent):
        a = starts[s]
        b = starts[s + 1] if s + 1 < n_sent else n
        for j in range(n_labels):
            delta[j] = emissions[a, j] + (bias if j == o_index else 0.0)
        for t in range(a + 1, b):
            for j in range(n_labels):
                best[j] = delta[0] + trans[0, j]
                arg[j] = 0
            for i in range(1, n_labels):
                d = delta[i]
                for j in range(n_labels):
                    score = d + trans[i, j]
                    if score > best[j]:
                        best[j] = score
                        arg[j] = i
            for j in range(n_labels):
                back[t, j] = arg[j]
                delta[j] = best[j] + (emissions[t, j] + (bias if j == o_index else 0.0))
        last = 0
        for j in range(1, n_labels):
            if delta[j] > delta[last]:
                last = j
        scores[s] = delta[last]
        path[b - 1] = last
        for t in range(b - 1, a, -1):
            path[t - 1] = back[t, path[t]]
    return path, scores


@njit(cache=True, nogil=True)
def _forward_backward_kernel(
    emissions: np.ndarray, starts: np.ndarray, exp_trans: np.ndarray, parts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    n, n_labels = emissions.shape
    n_sent = starts.shape[0]
    expv = np.empty((n, n_labels))
    shift = np.empty(n)
    for t in range(n):
        m = emissions[t, 0]
        for j in range(1, n_labels):
            if emissions[t, j] > m:
                m = emissions[t, j]
        shift[t] = m
        for j in range(n_labels):
            expv[t, j] = np.exp(emissions[t, j] - m)
    alpha = np.zeros((n, n_labels))
    beta = np.zeros((n, n_labels))
    scale = np.ones(n)
    log_z = np.zeros(n_sent)
    row = np.empty(n_labels)
    for s in range(n_sent):
        a = starts[s]
        b = starts[s + 1] if s + 1 < n_sent else n
        total = 0.0
        for j in range(n_labels):
            alpha[a, j] = expv[a, j]
            total += expv[a, j]
        scale[a] = total
        for j in range(n_labels):
            alpha[a, j] /= total
        for t in range(a + 1, b):
            # Loops ordered so the inner one runs along a contiguous row (SIMD).
            for j in range(n_labels):
                row[j] = 0.0
            for i in range(n_labels):
                w = alpha[t - 1, i]
                for j in range(n_labels):
                    row[j] += w * exp_trans[i, j]
            total = 0.0
            for j in range(n_labels):
                acc = row[j] * expv[t, j]
                alpha[t, j] = acc
                total += acc
            scale[t] = total
            for j in range(n_labels):
                alpha[t, j] /= total
        for j in range(n_labels):
            beta[b - 1, j] = 1.0
        for t in range(b - 1, a, -1):
            for j in range(n_labels):
                row[j] = beta[t, j] * expv[t, j]
            for i in range(n_labels):
                acc = 0.0
                for j in range(n_labels):
                    acc += row[j] * exp_trans[i, j]
                beta[t - 1, i] = acc / scale[t]
        lz = 0.0
        for t in range(a, b):
            lz += np.log(scale[t]) + shift[t]
        log_z[s] = lz
    marg = alpha * beta
    for t in range(n):
        total = 0.0
        for j in range(n_labels):
            total += marg[t, j]
        if total != 0.0:
            for j in range(n_labels):
                marg[t, j] /= total
    # What a part's log-probability needs (see part_logprobs): the log of the
    # normalised forward vector at its first token and of the normalised
    # backward vector at its last token, and every step's log normaliser.
    n_parts = parts.shape[0]
    heads = np.empty((n_parts, n_labels))
    tails = np.empty((n_parts, n_labels))
    for p in range(n_parts):
        first = parts[p]
        last = (parts[p + 1] if p + 1 < n_parts else n) - 1
        for j in range(n_labels):
            heads[p, j] = np.log(alpha[first, j])
            tails[p, j] = np.log(beta[last, j])
    step = np.log(scale) + shift
    return marg, log_z, heads, tails, step


_kernels_loaded = False


def load_kernels() -> None:
    """Load the compiled kernels now, once per process, rather than in the first note's decoding.

    The first call of a numba function sets up numba's compiler context to
    load the machine code cached on disk: about 0.1 s of CPU, whatever the
    note. A model calls this when it is built, so that the cost is part of
    loading it (as it is of importing numba) and the first note a reviewer
    opens is not the slow one.
    """
    global _kernels_loaded
    if _kernels_loaded:
        return
    emissions, transitions = np.zeros((2, 2)), np.zeros((2, 2))
    forward_backward_parts(emissions, [(0, 2)], transitions, [(0, 2)])
    viterbi(emissions, [(0, 2)], transitions, bias=0.0, o_index=0)
    _kernels_loaded = True


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
    o = -1 if o_index is None else int(o_index)
    return _viterbi_kernel(
        np.ascontiguousarray(emissions, dtype=np.float64), _starts(bounds),
        np.ascontiguousarray(transitions, dtype=np.float64), float(bias) if o >= 0 else 0.0, o,
    )


def forward_backward(
    emissions: np.ndarray, bounds: Bounds, transitions: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Token marginals ``(tokens, labels)`` and ``log Z`` per sentence.

    Runs in probability space with per-step normalisation (as CRFsuite does),
    after subtracting each token's largest emission, so nothing overflows and
    ``log Z`` is recovered from the scale factors.
    """
    marginals, log_z, _ = forward_backward_parts(emissions, bounds, transitions, bounds)
    return marginals, log_z


@dataclass(frozen=True)
class PartTerms:
    """What ``log P(labels of a part | note)`` needs besides the path (``part_logprobs``).

    A part is a run of tokens inside one CRF sequence, e.g. a sentence of a
    note decoded as one sequence.
    """

    bounds: tuple[tuple[int, int], ...]
    heads: np.ndarray  # (parts, labels): log normalised forward vector at each part's first token
    tails: np.ndarray  # (parts, labels): log normalised backward vector at each part's last token
    step: np.ndarray  # (tokens,): log normaliser of each forward step (log scale + shift)


def forward_backward_parts(
    emissions: np.ndarray, bounds: Bounds, transitions: np.ndarray, parts: Bounds
) -> tuple[np.ndarray, np.ndarray, PartTerms]:
    """``forward_backward`` plus the terms for the log-probability of each of ``parts``.

    ``parts`` tile the tokens and never cross a sequence boundary (sentences
    do not cross lines, and lines do not cross notes).
    """
    _check(emissions, bounds)
    _check(emissions, parts)
    n_labels = emissions.shape[1] if emissions.ndim == 2 else 0
    if not bounds:
        empty = np.zeros((0, n_labels))
        return empty, np.zeros(0), PartTerms((), empty, empty, np.zeros(0))
    part_starts = _starts(parts)
    if not set(_starts(bounds).tolist()) <= set(part_starts.tolist()):
        raise ValueError("parts must not cross a sequence boundary")
    marginals, log_z, heads, tails, step = _forward_backward_kernel(
        np.ascontiguousarray(emissions, dtype=np.float64), _starts(bounds),
        np.exp(np.asarray(transitions, dtype=np.float64)), part_starts,
    )
    return marginals, log_z, PartTerms(tuple((int(a), int(b)) for a, b in parts), heads, tails, step)


def part_logprobs(
    terms: PartTerms, emissions: np.ndarray, transitions: np.ndarray, path: np.ndarray
) -> np.ndarray:
    """``log P(path[a:b] | note)`` for every part ``(a, b)``: the labels of a part, whatever the rest.

    The forward vector at ``a`` sums over every labelling before the part, the
    backward vector at ``b - 1`` over every labelling after it; both are kept
    normalised, so the steps' normalisers inside the part are subtracted. When
    a part is a whole sequence this is ``score(path) - log Z``.
    """
    n = emissions.shape[0]
    if n == 0 or not terms.bounds:
        return np.zeros(len(terms.bounds))
    inside = np.zeros(n)
    inside[1:] = transitions[path[:-1], path[1:]] + emissions[np.arange(1, n), path[1:]] - terms.step[1:]
    cumulative = np.cumsum(inside)
    firsts = np.array([a for a, _ in terms.bounds], dtype=np.int64)
    lasts = np.array([b - 1 for _, b in terms.bounds], dtype=np.int64)
    rows = np.arange(len(firsts))
    return (
        terms.heads[rows, path[firsts]] + terms.tails[rows, path[lasts]]
        + cumulative[lasts] - cumulative[firsts]
    )


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


#: Memory bound of one batched Viterbi call in a sweep (emissions plus back-pointers, per token).
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
    midpoint, recursively. Sentences are decoded together in batched calls,
    at most ``batch_bytes`` of them at a time, so one call can sweep a single
    note or a whole corpus. Results equal
    ``viterbi`` at each bias (barring exact score ties).
    """
    n_labels = int(transitions.shape[0])
    limit = SWEEP_BATCH_BYTES if batch_bytes is None else batch_bytes
    paths: list[list[np.ndarray | None]] = [[None] * len(sentences) for _ in grid]

    def decode(i: int, ids: list[int]) -> None:
        # The kernel pads nothing: a call holds its tokens' emissions and
        # back-pointers (16 bytes per token and label), so chunks are cut by tokens.
        per_call = max(1, limit // (n_labels * 16))
        pos = 0
        while pos < len(ids):
            chunk, size = [], 0
            while pos < len(ids) and (not chunk or size + len(sentences[ids[pos]]) <= per_call):
                chunk.append(ids[pos])
                size += len(sentences[ids[pos]])
                pos += 1
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
    ``deid_core.engine.features``), so their summed weight vector is computed once
    per word type, for every window offset at once, and kept in a table: word
    ``w`` owns rows ``base(w) + j`` for offset ``offsets[j]``. A note then
    costs one dictionary lookup per token, a few array gathers, and its
    context attributes.
    """

    #: Keep the state weights dense when this small (L1-pruned models usually are).
    DENSE_LIMIT = 8_000_000

    def __init__(
        self,
        weights: CRFWeights,
        word_features: Callable[[str], Sequence[Sequence[str]]],
        offsets: Sequence[int] = (0,),
        edges: tuple[str, str] = (BOS, EOS),
    ) -> None:
        """``word_features(word)``: the word's type attributes at each of ``offsets``, in order."""
        self.ids = {a: i for i, a in enumerate(weights.attributes)}
        n_attrs, self.n_labels = weights.state.shape
        self.state: np.ndarray | sp.csr_matrix = (
            weights.state.toarray() if n_attrs * self.n_labels <= self.DENSE_LIMIT else weights.state
        )
        self.word_features = word_features
        self.offsets = tuple(offsets)
        self.bos, self.eos = edges  # the words seen past a sentence's edges
        self.max_rows = 1_000_000
        self._base: dict[str, int] = {}
        self._n_rows = 0
        self._table = np.zeros((1024, self.n_labels))
        # One model may serve several Streamlit sessions (st.cache_resource): the
        # row table grows in place, so lookups and growth happen under a lock.
        self._lock = threading.Lock()

    def _indicator(self, attr_lists: Sequence[Sequence[str]]) -> sp.csr_matrix:
        """0/1 rows of known attributes, in the order given (so sums keep their order)."""
        n = len(attr_lists)
        get = self.ids.get
        flat = np.array([get(a, -1) for attrs in attr_lists for a in attrs], dtype=np.int64)
        lengths = np.fromiter(map(len, attr_lists), dtype=np.int64, count=n)
        known = flat >= 0
        rows = np.repeat(np.arange(n), lengths)[known]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        cols = flat[known]
        return sp.csr_matrix((np.ones(len(cols)), cols, indptr), shape=(n, len(self.ids)))

    def _scores(self, attr_lists: Sequence[Sequence[str]]) -> np.ndarray:
        product = self._indicator(attr_lists) @ self.state
        return product if isinstance(product, np.ndarray) else np.asarray(product.todense())

    def _add_words(self, words: list[str]) -> None:
        """Compute and store the rows of ``words`` (not yet in the table) at every offset."""
        width = len(self.offsets)
        vectors = self._scores([feats for w in words for feats in self.word_features(w)])
        first = self._n_rows
        need = first + len(words) * width
        if need > self._table.shape[0]:
            grown = np.zeros((max(need, 2 * self._table.shape[0]), self.n_labels))
            grown[:first] = self._table[:first]
            self._table = grown
        self._table[first:need] = vectors
        base = self._base
        for k, w in enumerate(words):
            base[w] = first + k * width
        self._n_rows = need

    def _word_bases(self, words: Sequence[str]) -> np.ndarray:
        """Base row of every token's word (plus the two edge words at the end)."""
        base = self._base
        keys = [*words, self.bos, self.eos]
        rows = [base.get(w, -1) for w in keys]
        if -1 in rows:
            missing = list(dict.fromkeys(w for w, r in zip(keys, rows) if r == -1))
            if self._n_rows + len(missing) * len(self.offsets) > self.max_rows:
                # Bound memory on endless vocabularies: start over with this note's words.
                base.clear()
                self._n_rows = 0
                missing = list(dict.fromkeys(keys))
            self._add_words(missing)
            rows = [base[w] for w in keys]
        return np.asarray(rows, dtype=np.int64)

    def emissions(
        self,
        words: Sequence[str],
        sentences: Bounds,
        context: Sequence[Sequence[str]],
    ) -> np.ndarray:
        """``(tokens, labels)`` scores of a note's ``words``, ``sentences`` giving the window's edges.

        ``context`` holds each token's attributes that are not type features
        (``FeatureExtractor.context_features``).
        """
        out = np.array(self._scores(context), dtype=np.float64)
        n = len(words)
        if not n:
            return out
        sentence_start = np.empty(n, dtype=np.int64)
        sentence_end = np.empty(n, dtype=np.int64)
        for a, b in sentences:
            sentence_start[a:b] = a
            sentence_end[a:b] = b
        position = np.arange(n)
        with self._lock:
            rows = self._word_bases(words)
            bos, eos = rows[n], rows[n + 1]
            for j, off in enumerate(self.offsets):
                if off == 0:
                    at = rows[:n]
                else:
                    seen = position + off
                    inside = (seen >= sentence_start) & (seen < sentence_end)
                    at = np.where(inside, rows[np.clip(seen, 0, n - 1)], bos if off < 0 else eos)
                out += self._table[at + j]
        return out
