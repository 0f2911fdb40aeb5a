from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from deid_core.protect.dateshift import date_precision, patient_offset_days, shift_date

ES_MONTHS = [
    "enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
    "septiembre", "octubre", "noviembre", "diciembre",
]

EN_FORMATS = [
    "%m/%d/%Y", "%Y-%m-%d", "%B %d, %Y", "%d %b %Y", "%A, %B %d, %Y", "%m/%d/%y",
    "%d-%b-%Y", "%b %d %Y", "%m-%d-%Y", "%Y/%m/%d",
]


@pytest.mark.parametrize(
    ("text", "days", "lang", "expected"),
    [
        ("03/14/2067", 40, "en", "04/23/2067"),
        ("3/14/67", 40, "en", "4/23/67"),
        ("2067-03-14", -300, "en", "2066-05-18"),
        ("March 14, 2067", 40, "en", "April 23, 2067"),
        ("Mar. 14th, 2067", 40, "en", "Apr. 23rd, 2067"),
        ("MARCH 1ST", 40, "en", "APRIL 10TH"),
        ("Monday, March 14, 2067", 40, "en", "Saturday, April 23, 2067"),
        ("14-Mar-2067", 40, "en", "23-Apr-2067"),
        ("14th of March", 40, "en", "23rd of April"),
        ("03/14/2067 10:30 AM", 40, "en", "04/23/2067 10:30 AM"),
        (" 03/14/2067.", 1, "en", None),  # trailing punctuation is not part of a date span
        ("25/12/2067", 7, "en", "01/01/2068"),  # day > 12: read day-first even in English
        ("05/03/2067", 40, "es", "14/04/2067"),
        ("5 de marzo de 2067", 40, "es", "14 de abril de 2067"),
        ("Martes, 5 de marzo del 2067", 40, "es", "Jueves, 14 de abril del 2067"),
        ("sábado 5 de marzo", 2, "es", "lunes 7 de marzo"),
        ("Christmas", 10, "en", None),
        ("13/25/2067", 10, "en", None),
        ("Feb 30, 2067", 10, "en", None),
        ("1/0000", 0, "en", None),  # year 0 does not exist (found by fuzzing)
        ("01/01/0001", -5, "en", None),  # shifted before year 1
    ],
)
def test_shift_date_table(text: str, days: int, lang: str, expected: str | None) -> None:
    assert shift_date(text, days, lang) == expected


@pytest.mark.parametrize(
    ("text", "days", "expected", "precision"),
    [
        ("March 2067", 40, "April 2067", "month_year"),
        ("03/2067", -300, "05/2066", "month_year"),
        ("marzo de 2067", 40, "abril de 2067", "month_year"),
        ("9/14", 40, "10/24", "month_day"),
        ("2067", 40, "2067", "year"),  # mid-year + 40 days stays in 2067
        ("2067", 200, "2068", "year"),
        ("2067", -200, "2066", "year"),
        ("March", 40, "April", "month"),
        ("Monday", 40, "Saturday", "weekday"),
        ("año 2009", 200, "año 2010", "year"),
        ("septiembre del año 2000", 200, "abril del año 2001", "month_year"),
        ("mes de abril", 200, "mes de noviembre", "month"),
        ("the month of March", 200, "the month of October", "month"),
        ("Feb 29", 1, "Mar 1", "month_day"),  # yearless dates use the leap year 2000
        ("'94", 200, "'95", "year"),  # a history list's "MI '94" keeps its apostrophe
        ("’19", -200, "’18", "year"),
        ("Dec ’19", 40, "Jan ’20", "month_year"),
    ],
)
def test_partial_dates(text: str, days: int, expected: str, precision: str) -> None:
    lang = "es" if " de" in text or "año" in text else "en"
    assert shift_date(text, days, lang) == expected
    assert date_precision(text, lang) == precision


def _render(d: date, fmt: str, lang: str) -> str:
    if lang == "es":
        return fmt.format(d=d.day, mes=ES_MONTHS[d.month - 1], Y=d.year)
    return d.strftime(fmt)


def _read(text: str, fmt: str, lang: str) -> date:
    if lang == "es":
        day, _, month, _, year = text.split(" ")
        return date(int(year), ES_MONTHS.index(month) + 1, int(day))
    try:
        return datetime.strptime(text, fmt).date()
    except ValueError:  # "May" is written in full even where months are abbreviated
        return datetime.strptime(text, fmt.replace("%b", "%B")).date()


dates = st.dates(min_value=date(1975, 1, 1), max_value=date(2060, 12, 31))
formats = st.sampled_from([(f, "en") for f in EN_FORMATS] + [("{d} de {mes} de {Y}", "es")])


@settings(max_examples=200, deadline=None)
@given(a=dates, b=dates, days=st.integers(-365, 365), fa=formats, fb=formats)
def test_shifting_keeps_intervals_across_formats(a: date, b: date, days: int, fa, fb) -> None:
    sa = shift_date(_render(a, *fa), days, fa[1])
    sb = shift_date(_render(b, *fb), days, fb[1])
    assert sa is not None and sb is not None
    new_a, new_b = _read(sa, *fa), _read(sb, *fb)
    assert new_a == a + timedelta(days=days)
    assert new_b - new_a == b - a


@settings(max_examples=100, deadline=None)
@given(a=dates, days=st.integers(-365, 365))
def test_weekday_is_consistent_with_shifted_date(a: date, days: int) -> None:
    shifted = shift_date(a.strftime("%a, %b %d %Y"), days)
    assert shifted is not None
    parsed = _read(shifted, "%a, %b %d %Y", "en")
    assert parsed.strftime("%a") == shifted[:3]


@pytest.mark.parametrize("patient", ["p1", "p2", "MRN 00412", "ñandú"])
def test_patient_offset_is_deterministic_nonzero_and_bounded(patient: str) -> None:
    off = patient_offset_days(b"secret", patient)
    assert off == patient_offset_days(b"secret", patient)
    assert off != 0 and -365 <= off <= 365
    assert -30 <= patient_offset_days(b"secret", patient, max_days=30) <= 30


def test_offsets_depend_on_secret_and_patient() -> None:
    by_patient = {patient_offset_days(b"s", f"p{i}") for i in range(50)}
    by_secret = {patient_offset_days(f"s{i}".encode(), "p") for i in range(50)}
    assert len(by_patient) > 40 and len(by_secret) > 40
    assert all(v != 0 for v in by_patient | by_secret)


def test_max_days_must_be_positive() -> None:
    with pytest.raises(ValueError):
        patient_offset_days(b"s", "p", max_days=0)
