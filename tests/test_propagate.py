"""Propagation of known PHI to its other occurrences in a note (issue 14)."""

from __future__ import annotations

import pytest

from deid_core.engine.propagate import SOURCE, VariantIndex, propagate, variants
from deid_core.schemes import load_scheme
from deid_core.spans import Span

I2B2 = load_scheme("i2b2_2014")
NAME = "Zebediah Quartermaine"


def _found(text: str, spans: list[Span], **kw: object) -> list[tuple[str, str]]:
    out = propagate(text, spans, I2B2, **kw)  # type: ignore[arg-type]
    return [(text[s.start : s.end], s.label) for s in out if s.source == SOURCE]


@pytest.mark.parametrize(
    ("later", "expected"),
    [
        ("QUARTERMAINE", ("QUARTERMAINE", "PATIENT")),  # any case
        ("quartermaine", ("quartermaine", "PATIENT")),
        ("Mr. Quartermaine", ("Quartermaine", "PATIENT")),  # title + surname
        ("Dr. Quartermaine", ("Quartermaine", "PATIENT")),
        ("Zebediah", ("Zebediah", "PATIENT")),  # a given name that is not a common word
        ("ZEBEDIAH  QUARTERMAINE", ("ZEBEDIAH  QUARTERMAINE", "PATIENT")),  # whole, spaces folded
        ("zquartermaine@mercy.org", ("zquartermaine@mercy.org", "EMAIL")),  # e-mail local part
        ("zebediah.q@mercy.org", ("zebediah.q@mercy.org", "EMAIL")),
        ("QuartermaineJr", ("QuartermaineJr", "USERNAME")),  # user name
        ("zquartermaine2", ("zquartermaine2", "USERNAME")),
        ("ZQuartermaine", ("ZQuartermaine", "USERNAME")),
        ("quartermaine_z2", ("quartermaine_z2", "USERNAME")),
    ],
)
def test_variants_of_a_confirmed_name_are_marked(later: str, expected: tuple[str, str]) -> None:
    text = f"{NAME} was seen. Later: {later} called."
    assert _found(text, [Span(0, len(NAME), "PATIENT", "human:ann", 1.0)]) == [expected]


@pytest.mark.parametrize(
    "later",
    [
        "Quartermainesque",  # inside an ordinary word
        "Smithson",
        "the will of the family",  # a given name that is a common word
        "Mark the chart",
    ],
)
def test_ordinary_words_are_not_marked(later: str) -> None:
    text = f"Will Smith and Mark Quartermaine were seen. {later}."
    spans = [Span(0, 10, "PATIENT", "human:ann", 1.0), Span(15, 32, "PATIENT", "human:ann", 1.0)]
    found = _found(text, spans)
    assert all(text.index(later) > text.index(f) or f not in later for f, _ in found)
    assert not any(f.lower() in ("will", "mark") for f, _ in found)


def test_surname_alone_but_not_common_given_name() -> None:
    text = "Will Quartermaine admitted. Quartermaine stable. Will follow up."
    found = _found(text, [Span(0, 17, "PATIENT", "crf:m", 0.97)])
    assert found == [("Quartermaine", "PATIENT")]


def test_identifying_kinds_only_and_confident_seeds_only() -> None:
    text = "Age 45, MRN 88231944, seen 03/04/2020. Again: 45, 88231944, 03/04/2020."
    spans = [
        Span(4, 6, "AGE", "crf:m", 0.99),
        Span(12, 20, "MEDICALRECORD", "crf:m", 0.99),
        Span(27, 37, "DATE", "crf:m", 0.99),
    ]
    assert _found(text, spans) == [("88231944", "MEDICALRECORD")]
    # A low-confidence model span seeds nothing; a reviewer's span always does.
    assert _found(text, [Span(12, 20, "MEDICALRECORD", "crf:m", 0.5)]) == []
    assert _found(text, [Span(12, 20, "MEDICALRECORD", "human:ann", 0.5)]) == [("88231944", "MEDICALRECORD")]


def test_new_spans_never_overlap_existing_ones() -> None:
    text = "Dr. Hannah Quartermaine met Hannah Quartermaine-Lee."
    spans = [Span(4, 23, "DOCTOR", "human:a", 1.0), Span(28, 51, "PATIENT", "human:a", 1.0)]
    assert _found(text, spans) == []


def test_extra_index_seeds_from_outside_the_note() -> None:
    idx = VariantIndex()
    for v in variants("Zebediah Quartermaine", "PATIENT", "NAME"):
        idx.add(v, ("PATIENT", 1.0))
    text = "Seen with Mr. QUARTERMAINE today."
    out = propagate(text, [], I2B2, extra=idx)
    assert [(text[s.start : s.end], s.label, s.source) for s in out] == [("QUARTERMAINE", "PATIENT", SOURCE)]


@pytest.mark.parametrize("word", ["Deanna", "Mcdaniel", "Joanna", "MCDANIEL", "DEANNA"])
def test_a_name_holding_another_name_is_not_a_user_name(word: str) -> None:
    text = f"Anna and Daniel visited. {word} called."
    spans = [Span(0, 4, "PATIENT", "human:a", 1.0), Span(9, 15, "PATIENT", "human:a", 1.0)]
    assert _found(text, spans) == []


def test_lower_case_words_holding_a_surname_are_not_user_names() -> None:
    """MEDDOCAN dev (issue 14): the surnames "Parente", "Vado" and "Ramos" masked
    "aparente", "lavado" and "gramos" in other notes as user names ("a" + "parente").
    A lower-case token is a user name only when written like one (a digit, "._@+")."""
    text = ("Luis Parente, Ana Vado and Gil Ramos seen. No aparente change after lavado, 500 gramos;"
            " lparente2 and a.vado wrote.")
    spans = [Span(0, 12, "PATIENT", "human:ann", 1.0), Span(14, 22, "PATIENT", "human:ann", 1.0),
             Span(27, 36, "PATIENT", "human:ann", 1.0)]
    assert _found(text, spans) == [("lparente2", "USERNAME"), ("a.vado", "USERNAME")]


@pytest.mark.parametrize(
    ("full", "later", "expected"),
    [
        ("Front Range Rehab Institute", "FRONT RANGE WANTS PEG FIRST.", ["FRONT RANGE"]),
        ("Piedmont Dialysis - Boiling Springs", "pt to get HD at Piedmont only.", ["Piedmont"]),
        ("Merrymeeting Shores Assisted Living", "plan back to merrymeeting today.", ["merrymeeting"]),
        ("Hobblebush House", "Hobblebush staff can resume care.", ["Hobblebush"]),
        # an English word is no short form of its own; a name without a kind word has none
        ("Mass General Hospital", "mass in the rul on ct.", []),
        ("Tidewater Rehab", "tidewater region.", []),
        ("Laurel Ridge", "laurel wreath. ridge of the wound.", []),
    ],
)
def test_a_facility_named_in_full_marks_its_short_form(full: str, later: str, expected: list[str]) -> None:
    text = f"Accepted at {full}. {later}"
    start = text.index(full)
    seed = [Span(start, start + len(full), "HOSPITAL", "human:ann", 1.0)]
    assert [t for t, label in _found(text, seed) if label == "HOSPITAL"] == expected


def test_facility_short_forms_are_english_and_in_note_only() -> None:
    from deid_core.engine.propagate import facility_heads, variants

    assert facility_heads("Front Range Rehab Institute", "es") == []
    # the export's and the leak check's variants across notes stay the whole value
    assert [v.text for v in variants("Front Range Rehab Institute", "HOSPITAL", "LOCATION")] == [
        "front range rehab institute"
    ]
