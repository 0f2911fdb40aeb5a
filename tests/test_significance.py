"""Approximate randomization (paper 004, M = 9999) against hand-made systems."""

from __future__ import annotations

import numpy as np
import pytest

from deid_core.errors import DocumentMismatch, UnsupportedFormat
from deid_core.evaluation import (
    METRICS,
    approximate_randomization,
    document_counts,
    format_significance,
    prf,
)
from deid_core.spans import Document, Span

TEXT = "Patient John Smith seen on 09/14/2067 at Mercy Hospital."
GOLD_SPANS = (Span(8, 18, "PATIENT"), Span(27, 37, "DATE"))


def corpus(n: int, spans_for) -> list[Document]:
    return [Document(f"d{i:02d}", TEXT, tuple(spans_for(i))) for i in range(n)]


GOLD = corpus(30, lambda i: GOLD_SPANS)
PERFECT = corpus(30, lambda i: GOLD_SPANS)
HALF = corpus(30, lambda i: GOLD_SPANS[:1])  # finds the name, misses every date


def test_identical_systems_give_p_one():
    result = approximate_randomization(GOLD, HALF, HALF)
    assert result["p_value"] == 1.0
    assert result["diff"] == 0.0 and result["trials"] == 9999


def test_clearly_better_system_is_significant():
    result = approximate_randomization(GOLD, PERFECT, HALF, trials=9999, seed=1)
    assert result["a"] == 1.0 and result["b"] == pytest.approx(2 / 3)
    # Only the two all-or-nothing swaps reach the observed difference: p ~ 1e-4.
    assert result["p_value"] < 0.01


def test_single_document_can_never_be_significant():
    # With one document, every shuffle gives the same |diff| as observed.
    result = approximate_randomization(GOLD[:1], PERFECT[:1], HALF[:1], trials=500)
    assert result["p_value"] == 1.0


def test_seeded_runs_are_reproducible():
    mixed = corpus(30, lambda i: GOLD_SPANS if i % 3 else GOLD_SPANS[:1])
    first = approximate_randomization(GOLD, mixed, HALF, trials=999, seed=7)
    again = approximate_randomization(GOLD, mixed, HALF, trials=999, seed=7)
    assert first == again
    assert 0 < first["p_value"] <= 1


def _reference_p(a: np.ndarray, b: np.ndarray, trials: int, seed: int, measure: str) -> float:
    """Paper 004's loop, written out slowly, drawing the same random numbers."""
    rng = np.random.default_rng(seed)
    observed = abs(prf(*a.sum(0))[measure] - prf(*b.sum(0))[measure])
    draws = rng.random((trials, len(a)))
    hits = 0
    for row in draws:
        sa, sb = a.copy(), b.copy()
        swap = row < 0.5
        sa[swap], sb[swap] = b[swap], a[swap]
        diff = abs(prf(*sa.sum(0))[measure] - prf(*sb.sum(0))[measure])
        hits += diff >= observed - 1e-12
    return (hits + 1) / (trials + 1)


@pytest.mark.parametrize("measure", ["precision", "recall", "f1"])
def test_vectorised_test_matches_the_loop(measure):
    noisy = corpus(12, lambda i: GOLD_SPANS[: i % 3] + ((Span(41, 46, "HOSPITAL"),) if i % 4 == 0 else ()))
    other = corpus(12, lambda i: GOLD_SPANS[: (i + 1) % 3])
    gold = GOLD[:12]
    a = document_counts(gold, noisy).astype(int)
    b = document_counts(gold, other).astype(int)
    result = approximate_randomization(gold, noisy, other, trials=300, seed=3, metric=f"strict_{measure}")
    assert result["p_value"] == pytest.approx(_reference_p(a, b, 300, 3, measure))


@pytest.mark.parametrize(
    "criterion, expected_rows",
    [
        ("strict", [[1, 1, 1]]),  # name exact; date one char short
        ("relaxed", [[2, 0, 0]]),  # the short date is within 2 characters
        ("token", [[7, 0, 0]]),  # John Smith 09 / 14 / 2067: the short pred still touches 2067
        ("char", [[19, 0, 1]]),  # 20 gold characters, the last one missed
    ],
)
def test_document_counts_per_criterion(criterion, expected_rows):
    pred = [Document("d00", TEXT, (Span(8, 18, "PATIENT"), Span(27, 36, "DATE")))]
    assert document_counts(GOLD[:1], pred, criterion).tolist() == expected_rows


@pytest.mark.parametrize("metric", METRICS)
def test_every_metric_runs(metric):
    result = approximate_randomization(GOLD, PERFECT, HALF, trials=99, metric=metric)
    assert result["metric"] == metric and 0 < result["p_value"] <= 1


def test_missing_predictions_count_as_empty():
    result = approximate_randomization(GOLD, PERFECT[:15], PERFECT, trials=99)
    assert result["a"] < result["b"] == 1.0


@pytest.mark.parametrize(
    "kwargs, error",
    [({"metric": "strict_accuracy"}, UnsupportedFormat), ({"metric": "bleu"}, UnsupportedFormat),
     ({"trials": 0}, UnsupportedFormat)],
)
def test_bad_arguments(kwargs, error):
    with pytest.raises(error):
        approximate_randomization(GOLD, PERFECT, HALF, **kwargs)


def test_unknown_document_raises():
    stray = [Document("elsewhere", TEXT, ())]
    with pytest.raises(DocumentMismatch, match="elsewhere"):
        approximate_randomization(GOLD, PERFECT + stray, HALF)


def test_format_significance_line():
    line = format_significance(approximate_randomization(GOLD, PERFECT, HALF, trials=99))
    assert line.startswith("strict_f1: A = 1.0000, B = 0.6667, A - B = +0.3333, p = ")


# ---------------------------------------------------------------- command line


def _run_cli(argv: list[str]) -> int:
    import argparse

    from deid_core.cli import evaluation as cli

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(argv)
    return args.func(args)


def test_significance_command(tmp_path, capsys):
    import json

    from deid_core.corpus import write_jsonl

    paths = {}
    for name, docs in (("gold", GOLD), ("a", PERFECT), ("b", HALF)):
        paths[name] = tmp_path / f"{name}.jsonl"
        write_jsonl(paths[name], docs)
    base = ["significance", "--gold", str(paths["gold"]), "--pred-a", str(paths["a"]),
            "--pred-b", str(paths["b"]), "--trials", "999"]
    assert _run_cli(base + ["--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) >= {"metric", "a", "b", "diff", "p_value", "trials"}
    assert result["p_value"] < 0.01 and result["trials"] == 999
    assert _run_cli(base + ["--metric", "char_recall"]) == 0
    assert capsys.readouterr().out.startswith("char_recall: A = 1.0000, B = 0.5000")
    with pytest.raises(UnsupportedFormat):
        _run_cli(base + ["--metric", "nonsense"])
