"""Propagate known PHI to its other occurrences: a name found once is masked everywhere.

A model that tags "Zebediah Quartermaine" in the first line of a note often
misses "QUARTERMAINE" in a header, "Mr. Quartermaine" three paragraphs on, or
"zquartermaine@mercy.org" in a signature. Once a string is known to be PHI
(tagged with high confidence, confirmed by a reviewer, or listed in the
structured record), every other occurrence is PHI too. This module finds
those occurrences.

Only identifying kinds propagate (label categories ``NAME``, ``ID``,
``CONTACT``, ``LOCATION``); ages, dates and professions recur by chance and
are left alone. A name also propagates through its parts:

- the whole value, in any case, with runs of whitespace folded;
- each surname part alone, and each given name alone unless it is a common
  word ("Will", "Grace", "Mark": ``data/leakcheck/common_words.yaml`` plus
  spaCy's stop words); titles ("Mr.", "Dr."), initials, particles ("de",
  "van") and suffixes ("Jr") are never searched alone, and "Mr./Dr. Surname"
  is found through the surname;
- inside an e-mail address or a user name: a name part of at least
  ``MIN_EMBEDDED`` letters inside ``zquartermaine@mercy.org`` or
  ``QuartermaineJr`` marks the whole address or user name.

Matching is linear in the text: one Aho-Corasick automaton (``pyahocorasick``)
over the folded variants, run over the note folded the same way (lower case
per character, so offsets survive). The same ``VariantIndex`` serves the
export's patient and corpus scope and the leak check
(``deid_core.protect.leakcheck``), with the set of known strings, never the
corpus, in memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import ahocorasick
import yaml

from deid_core.engine.rules import SAFE_LOADER
from deid_core.schemes import LabelScheme
from deid_core.spans import Span, sort_spans

SOURCE = "propagated"
PROPAGATE_CATEGORIES = frozenset({"NAME", "ID", "CONTACT", "LOCATION"})
MIN_CHARS = 3  # shorter strings ("Al", "45") recur by chance
MIN_EMBEDDED = 4  # a name part searched inside e-mail addresses and user names
DEFAULT_MIN_SCORE = 0.9
#: Sources whose spans are trusted whatever their score.
TRUSTED_PREFIXES = ("human", "gold", "known")

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_EMAIL = re.compile(r"[\w.+'-]+@[\w-]+(?:\.[\w-]+)+")
_HANDLE_CHARS = "._+@-'"


@dataclass(frozen=True, slots=True)
class Variant:
    """A folded string to search for and where it came from (never logged)."""

    text: str = field(repr=False)
    label: str
    category: str
    part: bool  # a name part (or other piece) rather than the whole value
    embeddable: bool  # may be found inside an e-mail address or a user name


@lru_cache(maxsize=4)
def _name_words(lang: str) -> dict[str, frozenset[str]]:
    """Titles, particles and suffixes of the language (from the surrogate data)."""
    lang = lang if lang in ("en", "es") else "en"
    raw = yaml.load(
        resources.files("deid_core").joinpath(f"data/surrogates/{lang}.yaml").read_text("utf-8"),
        Loader=SAFE_LOADER,
    )
    return {
        "titles": frozenset(str(t).casefold() for t in raw.get("titles", {})),
        "particles": frozenset(str(p).casefold() for p in raw.get("particles", [])),
        "suffixes": frozenset(str(s).casefold() for s in raw.get("suffixes", [])),
    }


@lru_cache(maxsize=1)
def common_words() -> frozenset[str]:
    """Words that are never propagated alone: the leak check's common words, the
    name-words list (given names that are also ordinary words), and spaCy's
    English and Spanish stop words (MIT licence)."""
    from spacy.lang.en.stop_words import STOP_WORDS as EN
    from spacy.lang.es.stop_words import STOP_WORDS as ES

    raw = yaml.load(
        resources.files("deid_core").joinpath("data/leakcheck/common_words.yaml").read_text("utf-8"),
        Loader=SAFE_LOADER,
    )
    words = {str(w).casefold() for key in ("en", "es", "professions", "name_words") for w in raw.get(key, [])}
    return frozenset(words | {w.casefold() for w in EN} | {w.casefold() for w in ES})


@lru_cache(maxsize=8)
def _kind_labels(scheme_name: str) -> dict[str, str]:
    """Surrogate kind -> the scheme's first label of that kind (``email``, ``username``)."""
    raw = yaml.load(
        resources.files("deid_core").joinpath("data/surrogates/kinds.yaml").read_text("utf-8"),
        Loader=SAFE_LOADER,
    )
    out: dict[str, str] = {}
    for label, kind in (raw.get(scheme_name) or {}).items():
        out.setdefault(str(kind), str(label))
    return out


def fold(text: str) -> str:
    """Lower case per character (length kept, so offsets into ``text`` stay valid)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


_ODD_SPACE = re.compile(r"\s{2,}|[^\S ]")


def fold_with_offsets(text: str) -> tuple[str, list[int] | None]:
    """``fold`` with each run of whitespace as one space, and each folded character's
    offset in ``text`` (``None`` when they are the same offsets)."""
    low = fold(text)
    if _ODD_SPACE.search(low) is None:
        return low, None
    pieces: list[str] = []
    offsets: list[int] = []
    pos = 0
    for m in _ODD_SPACE.finditer(low):
        pieces.append(low[pos : m.start()])
        offsets.extend(range(pos, m.start()))
        pieces.append(" ")
        offsets.append(m.start())
        pos = m.end()
    pieces.append(low[pos:])
    offsets.extend(range(pos, len(low)))
    offsets.append(len(text))
    return "".join(pieces), offsets


def _squash(value: str) -> str:
    return " ".join(fold(value).split())


def name_parts(value: str, lang: str = "en") -> list[str]:
    """The searchable parts of a name: no titles, initials, particles or suffixes."""
    words = _name_words(lang)
    parts = []
    for m in _WORD.finditer(value):
        word = m.group(0)
        low = word.casefold()
        if len(word) < 2 or low in words["titles"] or low in words["particles"] or low in words["suffixes"]:
            continue
        parts.append(word)
        if "-" in word:
            parts.extend(p for p in word.split("-") if len(p) >= 2)
    return parts


def variants(value: str, label: str, category: str, *, lang: str = "en") -> list[Variant]:
    """What to search for a known PHI string of ``category`` (empty for other kinds)."""
    if category not in PROPAGATE_CATEGORIES:
        return []
    return list(_variants(value, label, category, lang))


@lru_cache(maxsize=65536)
def _variants(value: str, label: str, category: str, lang: str) -> tuple[Variant, ...]:
    common = common_words()
    whole = _squash(value.strip(" \t\n.,;:()[]\"'"))
    out: dict[str, Variant] = {}
    if len(whole) >= MIN_CHARS and whole not in common and any(c.isalnum() for c in whole):
        out[whole] = Variant(whole, label, category, False, False)
    if category == "NAME":
        for part in name_parts(value, lang):
            low = fold(part)
            if len(low) < MIN_CHARS or low in common or low in out:
                continue
            out[low] = Variant(low, label, category, True, len(low) >= MIN_EMBEDDED)
        if whole in out and " " not in whole and len(whole) >= MIN_EMBEDDED:
            out[whole] = Variant(whole, label, category, False, True)
    return tuple(out.values())


@dataclass(frozen=True, slots=True)
class Match:
    start: int
    end: int
    payloads: tuple[Any, ...]
    embedded: bool  # found inside an e-mail address or a user name (start..end covers it)


class VariantIndex:
    """An Aho-Corasick automaton over folded variants; each key carries payloads.

    ``add`` then ``find``: the automaton is (re)built lazily after additions.
    Memory grows with the number of distinct variants, not with the texts searched.
    """

    def __init__(self) -> None:
        self._payloads: dict[str, list[Any]] = {}
        self._embeddable: set[str] = set()
        self._automaton: Any = None

    def __len__(self) -> int:
        return len(self._payloads)

    def __bool__(self) -> bool:
        return bool(self._payloads)

    def add(self, variant: Variant, payload: Any) -> None:
        self._payloads.setdefault(variant.text, []).append(payload)
        if variant.embeddable:
            self._embeddable.add(variant.text)
        self._automaton = None

    def payloads(self, key: str) -> list[Any]:
        return self._payloads.get(key, [])

    def _built(self) -> Any:
        if self._automaton is None:
            automaton = ahocorasick.Automaton()
            for key in self._payloads:
                automaton.add_word(key, key)
            automaton.make_automaton()
            self._automaton = automaton
        return self._automaton

    def find(self, text: str, *, embedded: bool = True) -> Iterator[Match]:
        """Occurrences at word boundaries (any case, any run of whitespace), and, if
        ``embedded``, e-mail addresses and user names holding an embeddable variant
        (the match then covers the whole address or user name). Offsets are into ``text``."""
        if not self._payloads:
            return
        low, offsets = fold_with_offsets(text)
        automaton = self._built()
        n = len(low)
        seen_tokens: set[int] = set()
        for end_idx, key in automaton.iter(low):
            start, end = end_idx - len(key) + 1, end_idx + 1
            inside = (start > 0 and low[start - 1].isalnum()) or (end < n and low[end].isalnum())
            if embedded and key in self._embeddable and (inside or _in_handle(low, start, end)):
                token = _token_around(low, start, end, text, offsets)
                if token is not None:
                    if token[0] not in seen_tokens:
                        seen_tokens.add(token[0])
                        yield Match(token[0], token[1], tuple(self._payloads[key]), True)
                    continue
            if inside:
                continue
            if offsets is not None:
                start, end = offsets[start], offsets[end - 1] + 1
            yield Match(start, end, tuple(self._payloads[key]), False)


def _in_handle(low: str, start: int, end: int) -> bool:
    """A match at word boundaries that sits in an e-mail address or user name
    ("john.smith@x.org", "smith_j")."""
    before = low[start - 1] if start > 0 else " "
    after = low[end] if end < len(low) else " "
    return before in "._@+" or after in "_@+" or (after == "." and end + 1 < len(low) and low[end + 1].isalnum())


def _token_around(
    low: str, start: int, end: int, text: str, offsets: list[int] | None
) -> tuple[int, int] | None:
    """The e-mail address or user name around a match, in ``text`` offsets, if it is one."""
    a, b = start, end
    while a > 0 and (low[a - 1].isalnum() or low[a - 1] in _HANDLE_CHARS):
        a -= 1
    while b < len(low) and (low[b].isalnum() or low[b] in _HANDLE_CHARS):
        b += 1
    while a < start and not low[a].isalnum():
        a += 1
    while b > end and not low[b - 1].isalnum():
        b -= 1
    if offsets is not None:
        t_start, t_end = offsets[a], offsets[b - 1] + 1
        s_start = offsets[start] - t_start
        s_end = offsets[end - 1] + 1 - t_start
    else:
        t_start, t_end, s_start, s_end = a, b, start - a, end - a
    token = text[t_start:t_end]
    if _EMAIL.fullmatch(token):
        at = token.index("@")
        return (t_start, t_end) if s_end <= at else None  # the local part only: domains are shared
    if _handle_like(token, s_start, s_end):
        return t_start, t_end
    return None


def _handle_like(token: str, start: int, end: int) -> bool:
    """A name part that is a piece of a user name or e-mail local part: "QuartermaineJr",
    "zquartermaine", "jsmith42", "john_smith", "johnSmith".

    Not a piece of an ordinary word ("Smithson", "summary" around "Mary"): on its
    left the token starts, a non-letter, a change to a capital, or an initial or
    two; on its right the token ends, a non-letter, or a change to a capital.
    """
    if start == 0 and end == len(token):
        return False  # the part alone is found at word boundaries already
    if start > 0 and token[start - 1].isalpha():
        camel = token[start - 1].islower() and token[start].isupper()
        i = start
        while i > 0 and token[i - 1].isalpha():
            i -= 1
        # An initial or two glued on ("j.smith2", "zquartermaine_2", "ZQuartermaine") makes
        # a user name only in a token written like one: "Deanna" is not "anna" with an
        # initial, and an all-lower-case word is not either: "aparente" and "lavado" hold
        # the surnames "Parente" and "Vado", "gramos" is "G. Ramos" glued. So a bare
        # "zquartermaine" (no digit, no "._@+") is read as a word, not a user name.
        handle = any(c.isdigit() or c in "._@+" for c in token)
        # "ZQuartermaine", "JSmith"; not an all-capitals word ("MCKNIGHT" is not "KNIGHT").
        initials = token[i:start].isupper() and token[start].isupper() and not token[start:end].isupper()
        if not camel and (start - i > 2 or not (handle or initials)):
            return False
    if end < len(token) and token[end].isalpha():
        return token[end].isupper() and token[end - 1].islower()
    return True


# --------------------------------------------------------------------------- in one note


def is_trusted(span: Span, min_score: float) -> bool:
    """A span that may seed propagation: confirmed by a person or the record, or confident."""
    return span.source.split(":", 1)[0] in TRUSTED_PREFIXES or span.score >= min_score


def labels_for(scheme: LabelScheme) -> dict[str, str]:
    """Label -> category for the labels that propagate."""
    return {i.name: i.category for i in scheme.labels if i.category in PROPAGATE_CATEGORIES}


def seed_index(
    text: str,
    spans: Iterable[Span],
    categories: Mapping[str, str],
    *,
    lang: str = "en",
    min_score: float = DEFAULT_MIN_SCORE,
    index: VariantIndex | None = None,
) -> VariantIndex:
    """An index of the variants of ``spans`` that may seed propagation in their note, with the
    short forms of the facilities among them (``facility_heads``: in-note only, so the export's
    and the leak check's ``variants`` leave them out)."""
    idx = index if index is not None else VariantIndex()
    for span in spans:
        category = categories.get(span.label)
        if category is None or not is_trusted(span, min_score):
            continue
        value = text[span.start : span.end]
        payload = (span.label, min(1.0, span.score))
        for v in variants(value, span.label, category, lang=lang):
            idx.add(v, payload)
        if category == "LOCATION":
            for head in _facility_heads(value, lang):
                if not idx.payloads(head):
                    idx.add(Variant(head, span.label, category, True, False), payload)
    return idx


# Words that say what kind of place a facility is, at the end of its full name ("Bayberry Commons
# Health & Rehab", "Piedmont Dialysis - Boiling Springs", "Front Range Rehab Institute"): a note
# that names it in full often names it again by the words before them ("back to Bayberry",
# "HD at Piedmont", "FRONT RANGE WANTS PEG FIRST"; 40 of the 341 facilities the English starter
# missed in the hand-written sets 1-102 are such a short form of one tagged in the same note).
_FACILITY_KINDS_EN = frozenset({
    "rehab", "rehabilitation", "hospital", "medical", "med", "center", "centre", "ctr", "health",
    "healthcare", "nursing", "home", "dialysis", "institute", "clinic", "behavioral", "behavioural",
    "psychiatric", "pavilion", "assisted", "living", "senior", "specialty", "kidney", "house",
    "shelter", "hospice", "care", "regional", "memorial", "general", "community", "residence",
    "manor", "commons", "detox", "recovery", "services", "associates", "group", "practice", "vna",
    "agency", "facility", "program", "transitional", "skilled", "&", "and", "of", "the", "at",
})
_HEAD_CUT = re.compile(r"\s+(?:-|–|—)\s+|\s*[(,;]")


def facility_heads(value: str, lang: str = "en") -> list[str]:
    """The folded short forms of a facility named in full, for in-note propagation only: the
    words before its trailing kind words ("front range" of "Front Range Rehab Institute"), if
    that is two words or more or one word of four letters or more that is no English word; and
    the first of two or more such words when it stands as a name on its own ("bayberry" of
    "Bayberry Commons Health & Rehab": five letters or more, no English word, no place).
    Nothing for names without a kind word ("Boston", "Laurel Ridge") and for other languages,
    whose facility names put the kind first."""
    return list(_facility_heads(value, lang))


@lru_cache(maxsize=65536)
def _facility_heads(value: str, lang: str) -> tuple[str, ...]:
    # Cached as ``_variants`` is: the same facilities recur note after note.
    if lang != "en":
        return ()
    words = _squash(_HEAD_CUT.split(value, 1)[0]).split()
    n = len(words)
    while n and words[n - 1].strip(".'’") in _FACILITY_KINDS_EN:
        n -= 1
    if n == 0 or n == len(words) or words[0] in _FACILITY_KINDS_EN:
        return ()
    head = words[:n]
    out = []
    if n >= 2 or (len(head[0]) >= MIN_EMBEDDED and _name_like(head[0])):
        out.append(" ".join(head))
    first = head[0]
    if n >= 2 and len(first) >= 5 and first.isalpha() and _name_like(first) and not _is_place(first):
        out.append(first)
    return tuple(out)


def _name_like(word: str) -> bool:
    """No common or stop word of the propagation lists, and no English word in the lexicon."""
    from deid_core.engine.lexicons import AMBIGUOUS, COMMON, STOP, load_lexicon

    return word not in common_words() and load_lexicon("en").classify(word) not in (STOP, COMMON, AMBIGUOUS)


def _is_place(word: str) -> bool:
    from deid_core.engine.lexicons import load_lexicon

    return load_lexicon("en").is_place(word)


def propagate(
    text: str,
    spans: Sequence[Span],
    scheme: LabelScheme,
    *,
    lang: str = "en",
    min_score: float = DEFAULT_MIN_SCORE,
    extra: VariantIndex | None = None,
) -> list[Span]:
    """``spans`` plus a ``propagated`` span on every other occurrence of a trusted one.

    ``extra`` adds known strings from outside the note (the patient's record,
    other notes of the patient). New spans never overlap existing ones; among
    themselves the longest, then earliest, wins.
    """
    categories = labels_for(scheme)
    index = seed_index(text, spans, categories, lang=lang, min_score=min_score)
    found = list(find_spans(text, spans, index, scheme.name))
    if extra is not None:
        found.extend(find_spans(text, spans, extra, scheme.name))
    if not found:
        return list(spans)
    return sort_spans([*spans, *select_new(spans, found)])


def find_spans(text: str, spans: Sequence[Span], index: VariantIndex, scheme_name: str) -> Iterator[Span]:
    """Candidate spans for every match of ``index`` in ``text``; the payload is
    ``(label, score)`` or ``(label, score, source)`` (default ``propagated``)."""
    kinds = _kind_labels(scheme_name)
    for m in index.find(text):
        payload = m.payloads[0]
        label, score = payload[:2]
        source = payload[2] if len(payload) > 2 else SOURCE
        if m.embedded:
            email = "@" in text[m.start : m.end]
            label = kinds.get("email" if email else "username", label)
        yield Span(m.start, m.end, label, source, float(score))


def select_new(existing: Sequence[Span], found: Iterable[Span]) -> list[Span]:
    """Found spans that overlap no existing span and no longer (then earlier) found one."""
    taken = sorted((s.start, s.end) for s in existing)
    chosen: list[Span] = []
    for span in sorted(set(found), key=lambda s: (-(s.end - s.start), s.start, s.label)):
        if any(a < span.end and span.start < b for a, b in taken):
            continue
        taken.append((span.start, span.end))
        chosen.append(span)
    return chosen


# --------------------------------------------------------------------------- from the record

KNOWN_SOURCE = "known"
#: Known identifiers may also be dates (a date of birth), unlike propagated spans.
KNOWN_CATEGORIES = PROPAGATE_CATEGORIES | {"DATE"}
_MONTHS = {
    "en": ["january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december"],
    "es": ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto",
           "septiembre", "octubre", "noviembre", "diciembre"],
}


def known_phi_items(meta: Mapping[str, Any], *, doc_id: str | None = None) -> list[tuple[str, str]]:
    """``(label, value)`` pairs of ``meta["known_phi"]`` (a list of ``{label, value}``).

    Raises ``CorpusFormatError`` naming the document and item for a bad shape;
    the message never carries a value.
    """
    from deid_core.errors import CorpusFormatError

    raw = meta.get("known_phi")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise CorpusFormatError("meta.known_phi must be a list of {label, value}", doc_id=doc_id)
    out = []
    for i, item in enumerate(raw):
        if (
            not isinstance(item, Mapping) or set(item) != {"label", "value"}
            or not isinstance(item["label"], str) or not item["label"]
            or not isinstance(item["value"], (str, int)) or not str(item["value"]).strip()
        ):
            raise CorpusFormatError(
                f"meta.known_phi item {i} must be {{label, value}} with a non-empty label and value",
                doc_id=doc_id,
            )
        out.append((item["label"], str(item["value"]).strip()))
    return out


def _parse_date(value: str, lang: str) -> tuple[int, int, int] | None:
    """(year, month, day) of an ISO date or a numeric date in the language's order."""
    import datetime as _dt

    formats = ["%Y-%m-%d", "%Y/%m/%d", "%d/%m/%Y", "%d-%m-%Y", "%d.%m.%Y"] if lang == "es" else [
        "%Y-%m-%d", "%Y/%m/%d", "%m/%d/%Y", "%m-%d-%Y", "%m.%d.%Y"]
    for fmt in formats:
        try:
            d = _dt.datetime.strptime(value.strip(), fmt).date()
        except ValueError:
            continue
        return d.year, d.month, d.day
    return None


def date_variants(value: str, lang: str = "en") -> list[str]:
    """Every written form of a date of birth, folded: numeric in both orders, with
    and without zero padding, two- and four-digit years, ISO, and month names in
    English and Spanish (full and abbreviated, ordinals, "de")."""
    parsed = _parse_date(value, lang)
    if parsed is None:
        return [_squash(value)]
    y, m, d = parsed
    yy = f"{y % 100:02d}"
    out = {_squash(value), f"{y}-{m:02d}-{d:02d}", f"{y}/{m:02d}/{d:02d}", f"{y}{m:02d}{d:02d}"}
    for a, b in ((m, d), (d, m)):
        for fa, fb in ((str(a), str(b)), (f"{a:02d}", f"{b:02d}")):
            for year in (str(y), yy):
                for sep in "/-.":
                    out.add(f"{fa}{sep}{fb}{sep}{year}")
    suffix = "th" if 11 <= d <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(d % 10, "th")
    for names in _MONTHS.values():
        full = names[m - 1]
        for month in {full, full[:3], full[:3] + "."}:
            out |= {
                f"{month} {d}, {y}", f"{month} {d} {y}", f"{month} {d}{suffix}, {y}", f"{month} {d}{suffix} {y}",
                f"{d} {month} {y}", f"{d:02d} {month} {y}", f"{d}-{month}-{y}", f"{d:02d}-{month}-{y}",
                f"{d} de {month} de {y}", f"{d} de {month} del {y}",
            }
    return sorted(out)


def known_variants(value: str, label: str, category: str, *, lang: str = "en") -> list[Variant]:
    """What to search for an identifier from the record: propagation's variants, plus
    initials with the surname for names and every written form of a date."""
    if category not in KNOWN_CATEGORIES:
        return []
    if category == "DATE":
        return [Variant(v, label, category, False, False) for v in date_variants(value, lang)]
    out = {v.text: v for v in variants(value, label, category, lang=lang)}
    if category == "NAME":
        parts = name_parts(value, lang)
        if len(parts) >= 2:
            given, last = [fold(p) for p in parts[:-1]], fold(parts[-1])
            initials = [g[0] for g in given]
            first = initials[0]
            for form in (
                f"{first}. {last}", f"{first} {last}", f"{last}, {first}.", f"{last}, {first}", f"{last} {first}",
                f"{'. '.join(initials)}. {last}", f"{''.join(initials)} {last}",
                f"{given[0]} {''.join(i + '. ' for i in initials[1:])}{last}".replace("  ", " "),
            ):
                form = " ".join(form.split())
                out.setdefault(form, Variant(form, label, category, True, False))
    return list(out.values())


def known_index(
    items: Sequence[tuple[str, str]], scheme: LabelScheme, *, lang: str = "en"
) -> VariantIndex | None:
    """An index of the record's identifiers (spans it finds get the source ``known``);
    labels the scheme does not know are skipped."""
    categories = {i.name: i.category for i in scheme.labels}
    index = VariantIndex()
    for label, value in items:
        category = categories.get(label)
        if category is None:
            continue
        for v in known_variants(value, label, category, lang=lang):
            index.add(v, (label, 1.0, KNOWN_SOURCE))
    return index or None
