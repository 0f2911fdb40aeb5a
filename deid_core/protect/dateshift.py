"""Per-patient date shifting that keeps intervals and the written format.

Every date of one patient moves by the same number of days, so the time
between admission and discharge, or between two notes, survives
de-identification (what a researcher needs) while the real dates do not. The
offset is derived from an HMAC of the patient key with the project secret:
without the secret nobody can recover it, and with it every note of a patient,
exported in any order or partition, gets the same shift.

A date string is parsed into its fields (weekday, day, month as a number or a
name, year) and only those fields are rewritten, so separators, zero padding,
case, abbreviations, ordinals, "de" and any time of day stay as written.
Partial dates are shifted as sensibly as their precision allows:

- day and month without a year ("9/14", "March 5th"): shifted inside the leap
  reference year 2000, so Feb 29 stays valid and the interval to other
  yearless dates is kept;
- month and year ("March 2067", "03/2067"): the 15th of that month is shifted;
- year alone ("2067"): 2 July of that year (its middle) is shifted, so the year
  changes only when the offset crosses a year boundary from mid-year (a year
  alone is not a HIPAA identifier, but it must agree with shifted full dates);
- month alone ("March"): the 15th of that month is shifted;
- weekday alone ("Monday"): moves by the offset modulo 7.

A weekday written next to a full date is recomputed from the shifted date, so
it is always consistent. "May" is both a full and an abbreviated month name;
it is written back in full. Two-digit years follow the POSIX ``%y`` pivot
(69-99 -> 1900s, 00-68 -> 2000s) and are written back with two digits.
Strings that do not parse return ``None``; the caller decides the fallback
(by default the operator tags them, it never keeps them).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass
from datetime import date, timedelta

DEFAULT_MAX_DAYS = 365

_MONTHS = {
    "en": [
        ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
        ("may", "may"), ("june", "jun"), ("july", "jul"), ("august", "aug"),
        ("september", "sep"), ("october", "oct"), ("november", "nov"), ("december", "dec"),
    ],
    "es": [
        ("enero", "ene"), ("febrero", "feb"), ("marzo", "mar"), ("abril", "abr"),
        ("mayo", "may"), ("junio", "jun"), ("julio", "jul"), ("agosto", "ago"),
        ("septiembre", "sep"), ("octubre", "oct"), ("noviembre", "nov"), ("diciembre", "dic"),
    ],
}
_MONTH_EXTRA = {"en": {"sept": 9}, "es": {"setiembre": 9, "sept": 9, "set": 9}}
_WEEKDAYS = {
    "en": [
        ("monday", "mon"), ("tuesday", "tue"), ("wednesday", "wed"), ("thursday", "thu"),
        ("friday", "fri"), ("saturday", "sat"), ("sunday", "sun"),
    ],
    "es": [
        ("lunes", "lun"), ("martes", "mar"), ("miércoles", "mié"), ("jueves", "jue"),
        ("viernes", "vie"), ("sábado", "sáb"), ("domingo", "dom"),
    ],
}
_WEEKDAY_EXTRA = {
    "en": {"tues": 1, "thur": 3, "thurs": 3, "weds": 2},
    "es": {"miercoles": 2, "sabado": 5, "mie": 2, "sab": 5},
}


def patient_offset_days(secret: bytes, patient_key: str, *, max_days: int = DEFAULT_MAX_DAYS) -> int:
    """The patient's shift in days: in ``[-max_days, max_days]``, never 0."""
    if max_days < 1:
        raise ValueError("max_days must be at least 1")
    digest = hmac.new(
        secret, b"deid-workbench/dateshift\x00" + patient_key.encode("utf-8"), hashlib.sha256
    ).digest()
    n = int.from_bytes(digest[:8], "big") % (2 * max_days)
    return n - max_days if n < max_days else n - max_days + 1


def _names(lang: str) -> tuple[dict[str, int], dict[str, int]]:
    months = {}
    for i, (full, abbr) in enumerate(_MONTHS[lang], start=1):
        months[full] = i
        months[abbr] = i
    months.update(_MONTH_EXTRA[lang])
    weekdays = {}
    for i, (full, abbr) in enumerate(_WEEKDAYS[lang]):
        weekdays[full] = i
        weekdays[abbr] = i
    weekdays.update(_WEEKDAY_EXTRA[lang])
    return months, weekdays


def _alts(names: dict[str, int]) -> str:
    return "|".join(sorted((re.escape(n) for n in names), key=len, reverse=True))


#: What may stand for the century of a two-digit year ("'94", "’94").
_APOSTROPHES = "'’"


def _patterns(lang: str) -> list[tuple[str, re.Pattern[str]]]:
    months, weekdays = _names(lang)
    wd = rf"(?:(?P<wd>{_alts(weekdays)})\.?,?\s+)?"
    mn = rf"(?P<mn>{_alts(months)})\.?"
    d = r"(?P<d>\d{1,2})(?P<ord>st|nd|rd|th|º|°|ª)?"
    y = rf"(?P<y>\d{{4}}|[{_APOSTROPHES}]\d{{2}})"
    de = r"\s+del?\s+(?:año\s+)?" if lang == "es" else r"\s+"
    year_word = r"(?:año\s+)?" if lang == "es" else r"(?:(?:the\s+)?year\s+)?"
    month_word = r"(?:mes\s+de\s+)?" if lang == "es" else r"(?:(?:the\s+)?month\s+of\s+)?"
    raw = [
        ("ymd", r"(?P<y>\d{4})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})"),
        ("num3", r"(?P<a>\d{1,2})(?P<s>[-/.])(?P<b>\d{1,2})(?P=s)(?P<y>\d{4}|\d{2})"),
        ("mdy", rf"{wd}{mn}[\s-]+{d}(?:(?:,\s*|\s+|-){y})?"),
        ("dmy", rf"{wd}{d}(?:\s+of\s+|\s+de\s+|[\s-]+){mn}(?:(?:,\s*|{de}|-){y})?"),
        ("my", rf"{mn}(?:,\s*|{de}|\s+|-){y}"),
        ("m_y", r"(?P<m>\d{1,2})(?P<s>[-/.])(?P<y>\d{4})"),
        ("num2", r"(?P<a>\d{1,2})(?P<s>[-/])(?P<b>\d{1,2})"),
        ("year", rf"{year_word}(?P<y>\d{{4}}|[{_APOSTROPHES}]\d{{2}})"),  # "'94" in a history list
        ("month", rf"{month_word}{mn}"),
        ("weekday", rf"(?P<wd>{_alts(weekdays)})\.?"),
    ]
    return [(name, re.compile(p, re.IGNORECASE)) for name, p in raw]


_PATTERNS = {lang: _patterns(lang) for lang in _MONTHS}
_TIME = re.compile(
    r"(?:\s+(?:at|a las)\s+|\s*@\s*|,\s*|\s+|T)\d{1,2}:\d{2}(?::\d{2})?(?:\s*[ap]\.?\s?m\.?)?(?:\s*h)?$",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Fields:
    pattern: str
    match: re.Match[str]
    year: int | None
    month: int | None
    day: int | None
    first_month: bool = True  # for all-numeric dates: is the first number the month?


def _year(raw: str) -> int:
    digits = raw.lstrip(_APOSTROPHES)
    value = int(digits)
    if len(digits) == 2:
        value += 1900 if value >= 69 else 2000
    return value


def _valid(y: int | None, m: int | None, d: int | None) -> bool:
    try:
        date(2000 if y is None else y, 1 if m is None else m, 1 if d is None else d)
    except ValueError:
        return False
    return True


def _parse(core: str, lang: str) -> _Fields | None:
    months, _ = _names(lang)
    for name, pattern in _PATTERNS[lang]:
        m = pattern.fullmatch(core)
        if m is None:
            continue
        g = m.groupdict()
        year = _year(g["y"]) if g.get("y") else None
        if name in ("num3", "num2"):
            a, b = int(g["a"]), int(g["b"])
            first_month = lang == "en"
            if (first_month and a > 12 >= b) or (not first_month and b > 12 >= a):
                first_month = not first_month
            month, day = (a, b) if first_month else (b, a)
        else:
            first_month = True
            month = int(g["m"]) if g.get("m") else None
            if g.get("mn"):
                month = months[g["mn"].lower()]
            day = int(g["d"]) if g.get("d") else None
        if name == "year" and not 1000 <= (year or 0) <= 2999:
            return None
        if month is not None and not 1 <= month <= 12:
            return None
        if not _valid(year, month, day):
            return None
        return _Fields(name, m, year, month, day, first_month)
    return None


def _case_like(template: str, word: str) -> str:
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word.lower()


_FULL_SPELLINGS = {"miercoles", "sabado", "setiembre"}


def _name_like(template: str, table: list[tuple[str, str]], index: int) -> str:
    """Write name ``index`` of ``table`` in the template's length (full/abbreviated) and case."""
    low = template.lower()
    is_full = low in {f for f, _ in table} or low in _FULL_SPELLINGS
    full, abbr = table[index]
    return _case_like(template, full if is_full else abbr)


_EN_ORDINALS = {"st", "nd", "rd", "th"}


def _en_ordinal(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _number_like(template: str, value: int, padded: bool) -> str:
    if padded:
        return f"{value:0{max(2, len(template))}d}"
    return str(value)


def shift_date(text: str, days: int, lang: str = "en") -> str | None:
    """Shift a written date by ``days`` keeping its format, or ``None`` if it does not parse."""
    if lang not in _PATTERNS:
        lang = "en"
    stripped = text.strip()
    if not stripped:
        return None
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    time_match = _TIME.search(stripped)
    core, time_part = stripped, ""
    if time_match is not None and time_match.start() > 0:
        core, time_part = stripped[: time_match.start()], stripped[time_match.start() :]
    fields = _parse(core, lang)
    if fields is None:
        return None
    m = fields.match
    g = m.groupdict()
    y, mo, d = fields.year, fields.month, fields.day
    new_weekday: int | None = None
    try:
        if fields.pattern == "weekday":
            _, weekdays = _names(lang)
            new_weekday = (weekdays[g["wd"].lower()] + days) % 7
            new = None
        elif y is not None and mo is not None and d is not None:
            new = date(y, mo, d) + timedelta(days=days)
        elif mo is not None and d is not None:
            new = date(2000, mo, d) + timedelta(days=days)
        elif y is not None and mo is not None:
            new = date(y, mo, 15) + timedelta(days=days)
        elif y is not None:
            new = date(y, 7, 2) + timedelta(days=days)
        elif mo is not None:
            new = date(2001, mo, 15) + timedelta(days=days)
        else:  # pragma: no cover - every pattern sets a field
            return None
    except (ValueError, OverflowError):
        return None  # a year 0, or a shift past year 1 or 9999
    if new is not None:
        new_weekday = new.weekday() if (d is not None) else None
        if d is not None and y is None:
            # Yearless: the true weekday is unknown, so move the written one by the offset.
            _, weekdays = _names(lang)
            new_weekday = (weekdays[g["wd"].lower()] + days) % 7 if g.get("wd") else None

    # Zero padding: any field written with a leading zero, or every day and month
    # number (two or more) written with two digits ("12/25/2067" -> "01/01/2068").
    numeric = [g[k] for k in ("a", "b", "m", "d") if g.get(k)]
    padded = bool(numeric) and (
        any(v.startswith("0") for v in numeric)
        or (len(numeric) > 1 and all(len(v) == 2 for v in numeric))
    )
    edits: list[tuple[int, int, str]] = []
    for group in ("y", "m", "d", "ord", "a", "b", "mn", "wd"):
        value = g.get(group)
        if not value:
            continue
        start, end = m.span(group)
        if group == "y":
            assert new is not None
            digits = value.lstrip(_APOSTROPHES)
            rendered = f"{new.year % 100:02d}" if len(digits) == 2 else f"{new.year:04d}"
            if digits != value:
                rendered = value[0] + rendered
        elif group in ("a", "b"):
            assert new is not None
            is_month = (group == "a") == fields.first_month
            rendered = _number_like(value, new.month if is_month else new.day, padded)
        elif group == "m":
            assert new is not None
            rendered = _number_like(value, new.month, padded)
        elif group == "d":
            assert new is not None
            rendered = _number_like(value, new.day, padded)
        elif group == "ord":
            assert new is not None
            if value.lower() not in _EN_ORDINALS:
                continue
            rendered = _case_like(value, _en_ordinal(new.day))
        elif group == "mn":
            assert new is not None
            rendered = _name_like(value, _MONTHS[lang], new.month - 1)
        else:
            if new_weekday is None:
                continue
            rendered = _name_like(value, _WEEKDAYS[lang], new_weekday)
        edits.append((start, end, rendered))
    out = core
    for start, end, rendered in sorted(edits, reverse=True):
        out = out[:start] + rendered + out[end:]
    return lead + out + time_part + trail


def date_precision(text: str, lang: str = "en") -> str | None:
    """What a date string pins down: ``day``, ``month_day``, ``month_year``, ``year``,
    ``month``, ``weekday``, or ``None`` when it does not parse.

    The leak check uses it to skip bare years, which are not identifiers.
    """
    stripped = text.strip()
    time_match = _TIME.search(stripped)
    core = stripped[: time_match.start()] if time_match is not None and time_match.start() > 0 else stripped
    fields = _parse(core, lang if lang in _PATTERNS else "en")
    if fields is None:
        return None
    if fields.pattern == "weekday":
        return "weekday"
    y, mo, d = fields.year, fields.month, fields.day
    if d is not None:
        return "day" if y is not None else "month_day"
    if mo is not None:
        return "month_year" if y is not None else "month"
    return "year"
