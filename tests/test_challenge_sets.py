"""The hand-written English challenge sets: each committed JSONL is what its .txt builds to.

The benches score the JSONL; people edit the .txt. A set whose JSONL was not rebuilt after
an edit would be scored on notes nobody can read in the repository.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_support import load_script

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


BUILD = load_script("scripts/build_challenge_set.py", "build_challenge_set")
SOURCES = sorted(FIXTURES.glob("english_challenge*.txt"))


def test_every_set_is_found():
    assert len(SOURCES) >= 85


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_committed_jsonl_matches_its_source(source):
    built = BUILD.parse(source.read_text(encoding="utf-8"))
    target = source.with_suffix(".jsonl")
    assert target.is_file(), f"{target.name} is missing: python scripts/build_challenge_set.py"
    committed = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert committed == built, f"{target.name} is stale: rebuild it from {source.name}"
    ids = [note["id"] for note in built]
    assert len(ids) == len(set(ids)), f"{source.name}: two notes share an id"


def test_a_mark_is_read_into_a_span():
    (note,) = BUILD.parse("=== x-01 | test\nwife {{Ann|R}} called Dr. {{Roe|D}}\n")
    assert note["text"] == "wife Ann called Dr. Roe\n"
    assert [(s["start"], s["end"], s["label"]) for s in note["spans"]] == [(5, 8, "PATIENT"), (20, 23, "DOCTOR")]
    assert note["meta"]["categories"] == ["relative_name", "clinician_name"]
