"""One scale for the CRF's scores, so a non-probabilistic model's numbers mean what an L-BFGS model's do.

crfsuite's passive-aggressive and perceptron trainers (the review loop's fast
candidates) learn weights that separate the right path by a margin; only
their ratios matter to Viterbi, and their size is arbitrary. On the bundled
starter plus 100 reviewed notes a `pa` candidate's weights are about 100
times smaller than the L-BFGS starter's, so its token marginals are nearly
uniform (best-label probability well under 0.5), and everything read from
them breaks though its bias-0 tags are fine: an O-label bias of -0.5 tags
nearly every token, span scores never reach the propagation threshold, and
the queue's log-probabilities rank notes by length.

The fix is a temperature: multiply every weight by one factor ``s``, chosen
to maximise the likelihood of held-out gold tags (Guo et al. 2017,
"On calibration of modern neural networks", for classifiers). Scaling all
weights by ``s`` leaves the bias-0 path unchanged and gives a model whose
probabilities, bias and confidence are on a likelihood-fitted scale, as a
model trained by L-BFGS (a maximum-likelihood trainer) is already.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from deid_core.engine.crf import CRFWeights
from deid_core.engine.decoder import Bounds, forward_backward, path_scores

#: crfsuite trainers that maximise a (regularised) likelihood: their scale is already fitted.
LIKELIHOOD_ALGORITHMS = frozenset({"lbfgs", "l2sgd"})
#: The range searched, wide enough for crfsuite's `pa` and `ap` weights.
SCALE_BOUNDS = (1.0 / 64, 4096.0)
#: The largest |weight| a scale may produce: twice the bundled L-BFGS starter's (10.3).
#: Notes a model separates perfectly (a few training notes) push the likelihood's
#: optimum to infinity; this keeps such a fit at the size of a likelihood-trained
#: model's weights, where forward-backward stays finite.
MAX_WEIGHT = 20.0
#: Tokens the fit reads at most: the fitted scale moves by under 1% from 15k to 40k (0.75 s against 1.7 s).
MAX_TOKENS = 15_000


def needs_scale(algorithm: str) -> bool:
    return algorithm not in LIKELIHOOD_ALGORITHMS


def scale_bounds(weights: CRFWeights) -> tuple[float, float]:
    """:data:`SCALE_BOUNDS`, the upper one cut so no weight exceeds :data:`MAX_WEIGHT`."""
    largest = max(float(np.abs(weights.state.data).max()) if weights.state.nnz else 0.0,
                  float(np.abs(weights.transitions).max()) if weights.transitions.size else 0.0)
    hi = SCALE_BOUNDS[1] if largest == 0.0 else min(SCALE_BOUNDS[1], MAX_WEIGHT / largest)
    return SCALE_BOUNDS[0], max(SCALE_BOUNDS[0], hi)


def scaled_weights(weights: CRFWeights, scale: float) -> CRFWeights:
    if scale == 1.0:
        return weights
    return CRFWeights(list(weights.labels), weights.attributes, weights.state * scale,
                      weights.transitions * scale)


def negative_log_likelihood(
    scale: float,
    notes: Sequence[tuple[np.ndarray, Bounds, np.ndarray]],
    transitions: np.ndarray,
) -> float:
    """Mean per-token -log P(gold tags | note) with every weight multiplied by ``scale``."""
    total, tokens = 0.0, 0
    for emissions, bounds, gold in notes:
        _, log_z = forward_backward(emissions * scale, bounds, transitions * scale)
        total += float(log_z.sum() - scale * path_scores(emissions, bounds, transitions, gold).sum())
        tokens += len(gold)
    return total / tokens if tokens else 0.0


def fit_scale(
    notes: Sequence[tuple[np.ndarray, Bounds, np.ndarray]],
    transitions: np.ndarray,
    *,
    bounds: tuple[float, float] = SCALE_BOUNDS,
    tolerance: float = 0.01,
) -> float:
    """The ``s`` minimising :func:`negative_log_likelihood` (convex in ``s``), by golden section on log s.

    ``notes``: each note's emissions at scale 1, its sentence bounds and its
    gold tag indices. With no gold token the scale stays 1.
    """
    if not notes or not any(len(g) for _, _, g in notes):
        return 1.0
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    lo, hi = math.log(bounds[0]), math.log(bounds[1])

    def cost(x: float) -> float:
        value = negative_log_likelihood(math.exp(x), notes, transitions)
        return value if math.isfinite(value) else math.inf

    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = cost(a), cost(b)
    while hi - lo > tolerance:
        if fa <= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = cost(a)
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = cost(b)
    return float(round(math.exp((lo + hi) / 2.0), 4))
