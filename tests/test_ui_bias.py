"""Bias page numbers: decode reviewed notes at a bias and score them against the gold."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from deid_core.spans import Document, Span
from deid_core.ui.bias import (
    bias_curve,
    bias_grid,
    curve_chart,
    largest_bias_reaching,
    metrics_at_bias,
)

TEXT = "Ann Lee seen at Mercy on 09/14."
GOLD = Document("d1", TEXT, (Span(0, 7, "PATIENT"), Span(16, 21, "HOSPITAL"), Span(25, 30, "DATE")))


@dataclass
class _Decoded:
    spans: tuple[Span, ...]


class ThresholdDecoder:
    """Test double: a candidate span appears once the bias drops below its threshold."""

    def decode(self, encoded, bias=0.0):
        return _Decoded(tuple(s for s, threshold in encoded if bias < threshold))


ENCODED = [
    (Span(0, 7, "PATIENT"), 2.0),  # found at any bias below +2
    (Span(16, 21, "HOSPITAL"), 0.0),  # found only at negative bias
    (Span(25, 30, "DATE"), -3.0),  # found only at strongly negative bias
    (Span(8, 12, "CITY"), -4.0),  # a false positive at the extreme
]


def test_grid():
    assert bias_grid() == [-5 + 0.5 * i for i in range(17)]
    assert bias_grid(1.0, -2, 1) == [-2, -1, 0, 1]


@pytest.mark.parametrize(
    "bias, strict_recall, char_recall, precision",
    [
        (2.5, 0.0, 0.0, 0.0),
        (1.0, 1 / 3, 7 / 17, 1.0),
        (-1.0, 2 / 3, 12 / 17, 1.0),
        (-3.5, 1.0, 1.0, 1.0),
        (-4.5, 1.0, 1.0, 0.75),
    ],
)
def test_metrics_at_bias(bias, strict_recall, char_recall, precision):
    point = metrics_at_bias(ThresholdDecoder(), [GOLD], [ENCODED], bias)
    assert point.strict["recall"] == pytest.approx(strict_recall)
    assert point.char["recall"] == pytest.approx(char_recall)
    assert point.strict["precision"] == pytest.approx(precision)
    assert point.missed_char_share == pytest.approx(1 - char_recall)


class SweepingDecoder(ThresholdDecoder):
    """Test double with the engine's ``decode_many``: must give the same curve."""

    def __init__(self):
        self.sweeps = 0

    def decode_many(self, encoded, biases):
        self.sweeps += 1
        return [self.decode(encoded, b) for b in biases]


@pytest.mark.parametrize("decoder", [ThresholdDecoder(), SweepingDecoder()])
def test_curve_is_sorted_monotone_and_charts(decoder):
    seen = []
    points = bias_curve(decoder, [GOLD], [ENCODED], [1.0, -5.0, 0.0],
                        progress=lambda m, f: seen.append(f))
    assert [p.bias for p in points] == [-5.0, 0.0, 1.0]
    recalls = [p.char["recall"] for p in points]
    assert recalls == sorted(recalls, reverse=True)
    assert seen[-1] == 1.0
    assert getattr(decoder, "sweeps", 1) == 1
    assert largest_bias_reaching(points, 0.99) == -5.0
    assert largest_bias_reaching(points[1:], 0.99) is None
    spec = curve_chart(points, points[1]).to_dict()
    assert "hconcat" in spec


def test_pairs_must_match():
    with pytest.raises(ValueError):
        metrics_at_bias(ThresholdDecoder(), [GOLD], [], 0.0)


def test_sweep_equals_decoding_each_bias_on_a_real_model(monkeypatch):
    from deid_core.engine import decoder
    from deid_core.engine.model import TrainConfig, train_model
    from deid_core.schemes import load_scheme
    from deid_core.synthetic import generate_notes
    from deid_core.ui.bias import corpus_sweep_spans, sweep_spans

    model = train_model(generate_notes(10, seed=3), lang="en", scheme=load_scheme("i2b2_2014"),
                        config=TrainConfig(max_iterations=10))
    grid = bias_grid(0.5)
    docs = generate_notes(6, seed=4) + [Document("empty", "   ")]
    encoded = [model.encode(Document(d.id, d.text)) for d in docs]
    expected = [[tuple(model.decode(e, b).spans) for b in grid] for e in encoded]
    assert corpus_sweep_spans(model, encoded, grid) == expected
    shuffled = [grid[3], grid[0], grid[-1]]  # any order of biases
    assert sweep_spans(model, encoded[0], shuffled) == [expected[0][3], expected[0][0], expected[0][-1]]
    monkeypatch.setattr(decoder, "SWEEP_BATCH_BYTES", 1)  # one sentence per batched call
    assert corpus_sweep_spans(model, encoded, grid) == expected
