"""bench/english_curve.py: the group syntax and reading recall at a precision off a bias grid.

Two starters are compared with these numbers (docs/engine.md, "Session 20"), so a group that
silently dropped a set, or a recall read from a point below the precision floor, would mislead.
"""

from __future__ import annotations

import pytest
from script_support import load_script

bench = load_script("bench/english_curve.py", "english_curve_bench")


def test_groups_name_ranges_and_single_sets():
    assert bench.set_numbers("2-5,41") == [2, 3, 4, 5, 41]
    assert bench.set_numbers("78") == [78]


def test_a_group_reads_every_note_of_its_sets():
    one = bench.read_group("78")
    both = bench.read_group("78-79")
    assert len(one) == 20 and len(both) == 40
    assert [d.id for d in both[:20]] == [d.id for d in one]


def test_a_missing_set_is_named():
    with pytest.raises(SystemExit, match="english_challenge_9999.jsonl"):
        bench.read_group("9999")


def test_recall_at_precision_takes_the_best_point_at_or_above_the_floor():
    points = [
        {"bias": 0.0, "recall": 0.90, "precision": 0.95},
        {"bias": -1.0, "recall": 0.93, "precision": 0.90},
        {"bias": -2.0, "recall": 0.97, "precision": 0.84},
    ]
    assert bench.recall_at_precision(points, 0.90) == 0.93
    assert bench.recall_at_precision(points, 0.80) == 0.97
    assert bench.recall_at_precision(points, 0.99) is None
