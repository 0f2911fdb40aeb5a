from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from deid_core.engine.crf import CRFParams, open_crf, read_weights, train_crf
from deid_core.engine.decoder import (
    EmissionScorer,
    forward_backward,
    forward_backward_parts,
    part_logprobs,
    path_scores,
    viterbi,
    viterbi_sweep,
)
from deid_core.engine.features import FeatureExtractor
from deid_core.engine.tagging import spans_to_tags
from deid_core.engine.tokenize import tokenize
from deid_core.errors import ModelError
from deid_core.spans import Span

# -- the maths against brute force -------------------------------------------------


def _brute(emissions: np.ndarray, trans: np.ndarray, bias: float = 0.0):
    n, n_labels = emissions.shape
    scores = {}
    for path in itertools.product(range(n_labels), repeat=n):
        s = sum(emissions[t, y] + (bias if y == 0 else 0.0) for t, y in enumerate(path))
        s += sum(trans[a, b] for a, b in zip(path, path[1:]))
        scores[path] = s
    best = max(scores, key=lambda p: scores[p])
    unbiased = {p: v - bias * sum(1 for y in p if y == 0) for p, v in scores.items()}
    vals = np.array(list(unbiased.values()))
    log_z = np.log(np.exp(vals - vals.max()).sum()) + vals.max()
    marg = np.zeros((n, n_labels))
    for p, v in unbiased.items():
        w = np.exp(v - log_z)
        for t, y in enumerate(p):
            marg[t, y] += w
    return best, scores[best], log_z, marg


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("bias", [0.0, -1.5, 2.0])
def test_viterbi_and_marginals_match_brute_force(seed: int, bias: float) -> None:
    rng = np.random.default_rng(seed)
    lengths = [int(x) for x in rng.integers(1, 6, size=3)]
    n_labels = 3
    emissions = rng.normal(0, 2, size=(sum(lengths), n_labels))
    trans = rng.normal(0, 2, size=(n_labels, n_labels))
    bounds, pos = [], 0
    for n in lengths:
        bounds.append((pos, pos + n))
        pos += n
    path, scores = viterbi(emissions, bounds, trans, bias=bias, o_index=0)
    marg, log_z = forward_backward(emissions, bounds, trans)
    unbiased = path_scores(emissions, bounds, trans, path)
    for s, (a, b) in enumerate(bounds):
        best, best_score, bz, bm = _brute(emissions[a:b], trans, bias)
        assert tuple(path[a:b]) == best
        assert scores[s] == pytest.approx(best_score, abs=1e-9)
        n_o = int((path[a:b] == 0).sum())
        assert unbiased[s] == pytest.approx(best_score - bias * n_o, abs=1e-9)
        assert log_z[s] == pytest.approx(bz, abs=1e-9)
        np.testing.assert_allclose(marg[a:b], bm, atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_part_logprobs_are_marginals_of_the_labelling_of_each_part(seed: int) -> None:
    # One 7-token sequence cut into three parts (sentences of a note decoded whole):
    # log P(labels of the part | note) by enumerating all 3**7 labellings.
    rng = np.random.default_rng(seed)
    n, n_labels = 7, 3
    emissions = rng.normal(0, 2, size=(n, n_labels))
    trans = rng.normal(0, 2, size=(n_labels, n_labels))
    parts = [(0, 2), (2, 5), (5, 7)]
    path = rng.integers(0, n_labels, size=n)
    _, log_z, terms = forward_backward_parts(emissions, [(0, n)], trans, parts)
    ours = part_logprobs(terms, emissions, trans, path)
    totals = dict.fromkeys(range(len(parts)), -np.inf)
    for labels in itertools.product(range(n_labels), repeat=n):
        score = sum(emissions[t, y] for t, y in enumerate(labels))
        score += sum(trans[a, b] for a, b in zip(labels, labels[1:]))
        for k, (a, b) in enumerate(parts):
            if tuple(labels[a:b]) == tuple(path[a:b]):
                totals[k] = np.logaddexp(totals[k], score - log_z[0])
    np.testing.assert_allclose(ours, [totals[k] for k in range(len(parts))], atol=1e-9)
    # A part that is the whole sequence gives log P(path | note) = score - log Z.
    _, _, whole = forward_backward_parts(emissions, [(0, n)], trans, [(0, n)])
    expected = path_scores(emissions, [(0, n)], trans, path)[0] - log_z[0]
    assert part_logprobs(whole, emissions, trans, path)[0] == pytest.approx(expected, abs=1e-9)


def test_parts_may_not_cross_a_sequence() -> None:
    emissions = np.zeros((4, 2))
    with pytest.raises(ValueError, match="cross"):
        forward_backward_parts(emissions, [(0, 2), (2, 4)], np.zeros((2, 2)), [(0, 3), (3, 4)])


def test_forward_backward_survives_extreme_scores() -> None:
    emissions = np.array([[800.0, -800.0], [-900.0, 900.0], [0.0, 0.0]])
    trans = np.array([[50.0, -50.0], [-50.0, 50.0]])
    marg, log_z = forward_backward(emissions, [(0, 3)], trans)
    assert np.isfinite(marg).all() and np.isfinite(log_z).all()
    np.testing.assert_allclose(marg.sum(axis=1), 1.0)


@pytest.mark.parametrize(
    ("bounds", "n"),
    [([(0, 2), (3, 4)], 4), ([(0, 2)], 3), ([(0, 0), (0, 2)], 2)],
)
def test_bad_bounds_are_refused(bounds: list[tuple[int, int]], n: int) -> None:
    with pytest.raises(ValueError):
        viterbi(np.zeros((n, 2)), bounds, np.zeros((2, 2)))


def test_empty_document() -> None:
    path, scores = viterbi(np.zeros((0, 3)), [], np.zeros((3, 3)))
    assert path.shape == (0,) and scores.shape == (0,)


@pytest.mark.parametrize("seed", range(5))
def test_more_negative_bias_never_drops_phi_tokens(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    emissions = rng.normal(0, 1.5, size=(60, 5))
    trans = rng.normal(0, 1, size=(5, 5))
    bounds = [(0, 7), (7, 30), (30, 31), (31, 60)]
    previous = -1
    for bias in np.arange(3.0, -4.01, -0.25):
        path, _ = viterbi(emissions, bounds, trans, bias=float(bias), o_index=0)
        non_o = int((path != 0).sum())
        assert non_o >= previous
        previous = non_o


@pytest.mark.parametrize("seed", range(4))
def test_sweep_equals_one_decode_per_bias(seed: int) -> None:
    rng = np.random.default_rng(200 + seed)
    emissions = rng.normal(0, 1.5, size=(80, 6))
    trans = rng.normal(0, 1, size=(6, 6))
    bounds = [(0, 10), (10, 11), (11, 40), (40, 80)]
    biases = [1.0, -3.0, 0.5, -0.25, 0.0, 2.0, -1.0]  # unsorted on purpose
    swept = viterbi_sweep(emissions, bounds, trans, biases, 0)
    for bias, path in zip(biases, swept):
        single, _ = viterbi(emissions, bounds, trans, bias=bias, o_index=0)
        np.testing.assert_array_equal(path, single)


# -- equivalence with CRFsuite on trained models -------------------------------------


def _tiny_corpus(n: int, seed: int) -> list[tuple[str, list[Span]]]:
    rng = random.Random(seed)
    first = ["Juan", "Ana", "María", "Pedro", "Lucía", "Jorge", "Elena"]
    last = ["Pérez", "López", "Gil", "Ruiz", "Santos", "Marín"]
    cities = ["Madrid", "Lugo", "Toledo", "Cádiz"]
    docs = []
    for _ in range(n):
        name = f"{rng.choice(first)} {rng.choice(last)}"
        date = f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(1950, 2020)}"
        city = rng.choice(cities)
        text = (
            f"Nombre: {name}.\nFecha de ingreso: {date}.\n"
            f"El paciente {name.split()[0]} vive en {city} y acude con dolor el {date}."
        )
        spans = []
        for word, label, start_at in [
            (name, "NOMBRE", 0),
            (date, "FECHA", 0),
            (name.split()[0], "NOMBRE", text.index("paciente")),
            (city, "CIUDAD", 0),
            (date, "FECHA", text.index("dolor")),
        ]:
            s = text.index(word, start_at)
            spans.append(Span(s, s + len(word), label))
        docs.append((text, spans))
    return docs


def _random_corpus(n: int, seed: int) -> tuple[list[list[list[str]]], list[list[str]]]:
    """Noisy sequences with many labels: lots of non-trivial marginals and near ties."""
    rng = random.Random(seed)
    labels = ["O", "B-A", "I-A", "B-B", "I-B", "B-C", "I-C", "B-D"]
    xs, ys = [], []
    for _ in range(n):
        length = rng.randint(1, 25)
        x, y = [], []
        for _ in range(length):
            lab = rng.choice(labels)
            feats = {f"f{rng.randint(0, 60)}" for _ in range(rng.randint(1, 6))}
            if rng.random() < 0.6:
                feats.add(f"hint={lab}")
            x.append(sorted(feats))
            y.append(lab)
        xs.append(x)
        ys.append(y)
    return xs, ys


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    fx = FeatureExtractor(lang="es")
    xs, ys = [], []
    for text, spans in _tiny_corpus(40, seed=1):
        tok = tokenize(text, "es")
        tags = spans_to_tags(tok.tokens, spans).tags
        for (a, b), feats in zip(tok.sentences, fx.sentence_features(tok)):
            xs.append(feats)
            ys.append(tags[a:b])
    path = tmp_path_factory.mktemp("crf") / "tiny.crfsuite"
    seen: list[float] = []
    crf = train_crf(xs, ys, path, CRFParams(max_iterations=30), progress=lambda m, f: seen.append(f))
    assert seen and 0.0 < seen[-1] <= 1.0
    return crf, path, fx


@pytest.fixture(scope="module")
def random_model(tmp_path_factory):
    xs, ys = _random_corpus(400, seed=7)
    path = tmp_path_factory.mktemp("crf") / "random.crfsuite"
    crf = train_crf(xs, ys, path, CRFParams(max_iterations=40, c1=0.0, c2=0.1))
    return crf, path, xs


def _check_equivalence(crf, path, sequences: list[list[list[str]]]) -> float:
    weights = read_weights(path)
    assert weights.labels == list(crf.classes_)
    scorer = EmissionScorer(weights, lambda w: [[]])
    emissions = scorer.emissions([], [], [feats for seq in sequences for feats in seq])
    bounds, pos = [], 0
    for seq in sequences:
        bounds.append((pos, pos + len(seq)))
        pos += len(seq)
    path_idx, scores = viterbi(emissions, bounds, weights.transitions)
    marg, log_z = forward_backward(emissions, bounds, weights.transitions)
    ours = [weights.labels[i] for i in path_idx]
    theirs = [tag for seq in crf.predict(sequences) for tag in seq]
    assert ours == theirs
    worst = 0.0
    ref = [m for seq in crf.predict_marginals(sequences) for m in seq]
    for k, row in enumerate(ref):
        for label, p in row.items():
            worst = max(worst, abs(marg[k, weights.labels.index(label)] - p))
    assert worst < 1e-5
    tagger = crf.tagger_
    for s, seq in enumerate(sequences[:50]):
        tagger.set(seq)
        prob = tagger.probability(tagger.tag())
        assert scores[s] - log_z[s] == pytest.approx(np.log(prob), abs=1e-9)
    return worst


def test_decoder_equals_crfsuite_on_tiny_model(tiny_model) -> None:
    crf, path, fx = tiny_model
    sequences = []
    for text, _ in _tiny_corpus(15, seed=99):
        sequences.extend(fx.sentence_features(tokenize(text, "es")))
    worst = _check_equivalence(crf, path, sequences)
    assert worst < 1e-9


def test_decoder_equals_crfsuite_on_larger_noisy_model(random_model) -> None:
    crf, path, _ = random_model
    held_out, _ = _random_corpus(300, seed=8)
    worst = _check_equivalence(crf, path, held_out)
    assert worst < 1e-9


def test_binary_weights_are_exact_where_the_dump_rounds(random_model) -> None:
    """The text dump keeps 6 decimals; the binary file holds the float64 CRFsuite decodes with."""
    crf, path, _ = random_model
    weights = read_weights(path)
    info = crf.tagger_.info()
    assert [int(info.attributes[a]) for a in weights.attributes] == list(range(len(weights.attributes)))
    rounded = crf.state_features_
    diffs = []
    for (attr, label), value in rounded.items():
        exact = weights.state[int(info.attributes[attr]), weights.labels.index(label)]
        diffs.append(abs(exact - value))
        assert abs(exact - value) <= 5e-7 + 1e-12
    assert max(diffs) > 0  # rounding is real: the dump could not reproduce crfsuite exactly
    trans = crf.transition_features_
    for (a, b), value in trans.items():
        assert weights.transitions[weights.labels.index(a), weights.labels.index(b)] == pytest.approx(
            value, abs=5e-7
        )


def test_open_crf_predicts_from_file(tiny_model) -> None:
    crf, path, fx = tiny_model
    again = open_crf(path)
    seq = fx.sentence_features(tokenize("Nombre: Ana Gil.", "es"))
    assert list(again.predict(seq)[0]) == list(crf.predict(seq)[0])


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b[:40], "truncated"),
        (lambda b: b"XXXX" + b[4:], "not a CRFsuite"),
        (lambda b: b[:-10], "truncated"),
    ],
)
def test_damaged_model_files(tiny_model, tmp_path, mutate, message: str) -> None:
    _, path, _ = tiny_model
    bad = tmp_path / "bad.crfsuite"
    bad.write_bytes(mutate(path.read_bytes()))
    with pytest.raises(ModelError, match=message):
        read_weights(bad)
    with pytest.raises(ModelError, match="cannot read"):
        read_weights(tmp_path / "missing.crfsuite")


def test_exact_weights_decide_a_near_tie_the_dump_gets_wrong(random_model) -> None:
    """A case where the 6-decimal dump flips CRFsuite's decision and the binary weights do not.

    With real-valued attributes {a: 1, b: x}, pick x so that two labels tie
    under the exact weights, then nudge it so the exact weights prefer the
    label the rounded weights do not.
    """
    crf, path, _ = random_model
    weights = read_weights(path)
    exact = weights.state.toarray()
    rounded = np.zeros_like(exact)
    attr_id = {a: i for i, a in enumerate(weights.attributes)}
    for (attr, label), value in crf.state_features_.items():
        rounded[attr_id[attr], weights.labels.index(label)] = value
    n_attrs, n_labels = exact.shape
    case = None
    for a, b in itertools.permutations(range(min(n_attrs, 40)), 2):
        for l1, l2 in itertools.combinations(range(n_labels), 2):
            da, db = exact[a, l1] - exact[a, l2], exact[b, l1] - exact[b, l2]
            if abs(db) < 1e-3 or not 0.1 < -da / db < 10:
                continue
            x = -da / db
            s = np.sort(exact[a] + x * exact[b])[::-1]
            top = set(np.argsort(-(exact[a] + x * exact[b]))[:2].tolist())
            if top != {l1, l2} or s[1] - s[2] < 1e-3:
                continue
            gap_rounded = (rounded[a, l1] - rounded[a, l2]) + x * (rounded[b, l1] - rounded[b, l2])
            if abs(gap_rounded) > 1e-8:
                case = (a, b, l1, l2, x, gap_rounded, db)
                break
        if case:
            break
    assert case is not None, "no near tie found among the first attributes"
    a, b, l1, l2, x, gap_rounded, db = case
    x += (-np.sign(gap_rounded) * abs(gap_rounded) / 10) / db
    emission = (exact[a] + x * exact[b])[None, :]
    ours, _ = viterbi(emission, [(0, 1)], weights.transitions)
    dumped, _ = viterbi((rounded[a] + x * rounded[b])[None, :], [(0, 1)], weights.transitions)
    theirs = crf.predict([[{weights.attributes[a]: 1.0, weights.attributes[b]: float(x)}]])[0]
    assert [weights.labels[int(ours[0])]] == list(theirs)
    assert int(dumped[0]) != int(ours[0])
