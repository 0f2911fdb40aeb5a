"""Check that no original PHI string survives in de-identified output.

Every export and every ``deidentify`` runs this, so that the corpus leaves with
evidence that it is clean. The originals come from the spans that were
replaced; the output texts (and the string values of their ``meta``) are
searched for each of them:

- ``exact``: the same characters (after trimming punctuation at the edges);
- ``case-insensitive``: the same string up to case and runs of whitespace;
- ``digits``: for identifiers with at least ``MIN_DIGITS`` digits (in other
  patients' notes ``MIN_DIGITS_ACROSS``), the same digit sequence with any punctuation or
  spaces between the digits ("555-1234" found as "5551234" or "555 12 34");
- ``variant``: for identifying kinds (names, ids, contacts, addresses,
  facilities), the variants propagation searches for
  (``deid_core.engine.propagate``): a surname or uncommon given name alone, in
  any case;
- ``embedded``: a name part inside an e-mail address or a user name
  ("zquartermaine@mercy.org", "QuartermaineJr").

Matches start and end at word boundaries ("Ann" is not found in "Annual"),
except the e-mail and user-name variants.

Scopes: ``document`` searches each note for its own originals only;
``patient`` also searches it for the identifying originals of every other
note of the same patient; ``corpus`` for those of every note. A hit in
unchanged text within the scope fails the check. Hits of other kinds from
other notes (a date or an age equal to another note's) are not searched
across notes: they recur by chance. The identifying strings of the whole
export are held in one Aho-Corasick automaton (``KnownPhi``), so the check
is linear in the text and its memory grows with the set of PHI strings, not
with the corpus; ``LeakChecker`` checks one document at a time as an export
streams them.

To avoid burying real leaks under false alarms, some originals are not
searched (and are counted as skipped in the report): strings shorter than
``MIN_CHARS`` characters (two-letter initials, ages like "45"), common words
listed in ``data/leakcheck/common_words.yaml`` ("home", "May"), dates that
only name a year, a month or a weekday (not identifiers under HIPAA Safe
Harbor, and a shifted full date legitimately still contains many years),
all-numeric day-month dates without a year ("5/5" is far more often a
strength score or a ratio), surnames that are also eponyms ("Barrett",
"Murphy"), place names made only of generic words ("Hospital General",
"Centro de Salud"), and ages written as a bare number ("102" is far more
often a lab value; ages over 89 are replaced anyway, and "102-year-old" is
still searched). Dates and ages are not searched by digits, because their
digits are short and common.

A one-word original written with capitals but found only in lower case, or,
in a note of another patient, found as an all-capitals word of at most
``ACRONYM_MAX`` letters (an acronym: "ANA", "EVA", "ELISA" for the names Ana,
Eva, Elisa), is reported as a
``common-noun`` match ("Dr. Walker" and "a rolling walker") for review,
without failing the check; multi-word names and exact-case matches always
fail.

A hit is classified by where it lies in the output: in unchanged note text (a
``leak``), inside a kept span (deliberately kept by the project's operators),
or inside a generated surrogate that differs from its own original. A
surrogate that contains the searched string when its own original did too is
a leak ("Hospital General de Guadalajara" drawn for "Hospital Universitario
de Guadalajara"), except for shifted dates, which keep month and year by
design. A surrogate that contains another original of an identifying kind of
the same note or patient (the generator drew another person's real name) is
a ``collision`` and fails too. Other hits inside surrogates are
``coincidence``s: the generator drew a value equal to some other PHI string,
such as a shifted date equal to another original date, or a name found in a
note of another patient, which reveals nothing about the replaced value.

Reports carry document ids, offsets, fields, labels and the kind of match,
never the matched string.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache
from importlib import resources
from itertools import accumulate
from typing import Any, Literal

import yaml

from deid_core.engine.propagate import (
    VariantIndex,
    fold,
    fold_with_offsets,
    known_phi_items,
    variants,
)
from deid_core.protect.dateshift import date_precision
from deid_core.protect.surrogate_map import normalise
from deid_core.protect.surrogates import IDENTIFYING_KINDS, is_generic_place, label_kinds

_PLACE_KINDS = frozenset({"hospital", "health_centre", "organization", "street", "location", "city"})
#: Propagation's category for each identifying kind (which variants it gets).
_KIND_CATEGORY = {"name": "NAME"} | {k: "LOCATION" for k in _PLACE_KINDS}
MIN_CHARS = 3
MIN_DIGITS = 5
#: In other patients' notes, identifiers are found by their digits alone only from this
#: many digits: five- and six-digit values (postcodes, short ids) recur by chance in
#: measurements ("20/400" for the postcode 20400, blood pressures; MEDDOCAN dev and the
#: synthetic export bench, issue 14). Their exact string is still searched.
MIN_DIGITS_ACROSS = 7
ACRONYM_MAX = 5  # an all-capitals word up to this long may be an acronym, not a name
#: Hits that do not fail the check (coincidences, kept spans) are counted, but
#: only this many are kept in the report, so that its size stays bounded.
MAX_LISTED = 10_000
SCOPES = ("document", "patient", "corpus")
META_SEP = "\x1f"
_WRITTEN_META = ("deidentified", "reviewed", "model_version", "bias", "ids")
Scope = Literal["document", "patient", "corpus"]
Where = Literal["text", "kept", "surrogate"]
_WORD = re.compile(r"[^\W_]+")
_NUMERIC_DATE = re.compile(r"[\d/.-]+")
_NUMERIC_RUN = re.compile(r"\d(?:[ ().\-/+]*\d)*")
_DATE_START = re.compile(r"\d{1,4}[/.-]\d{1,2}[/.-]\d{2,4}(?!\d)")


@lru_cache(maxsize=1)
def common_words() -> dict[str, frozenset[str]]:
    """Word lists by key: ``en``, ``es``, ``professions``, ``eponyms``, ``name_words``."""
    raw = resources.files("deid_core").joinpath("data/leakcheck/common_words.yaml").read_text("utf-8")
    return {key: frozenset(normalise(str(w)) for w in words) for key, words in yaml.safe_load(raw).items()}


@dataclass(frozen=True, slots=True)
class LeakCandidate:
    """An original PHI string to search for. ``value`` stays in memory only."""

    doc_id: str
    label: str
    value: str = field(repr=False)
    check_digits: bool = True
    kind: str = "other"  # surrogate kind of the label ("name", "date", ...)


@dataclass(frozen=True, slots=True)
class Region:
    """A span of the output that was written by the de-identifier."""

    start: int
    end: int
    kept: bool  # True: original text deliberately kept; False: generated
    original: str = field(default="", repr=False)  # normalised original, in memory only


@dataclass(frozen=True, slots=True)
class LeakTarget:
    doc_id: str
    text: str = field(repr=False)
    regions: tuple[Region, ...] = ()
    patient_key: str | None = None  # None: the document is its own patient
    #: String values of the output's meta, as ``(dotted key, value)``.
    meta: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    @property
    def patient(self) -> str:
        return self.patient_key if self.patient_key is not None else f"\x00doc:{self.doc_id}"


@dataclass(frozen=True, slots=True)
class LeakHit:
    doc_id: str  # output document where the string was found
    start: int
    end: int
    label: str  # label of the original
    source_doc_id: str  # a document the original came from
    match: str  # exact | case-insensitive | digits | variant | embedded | common-noun | collision
    where: Where
    fails: bool = True  # a leak (decides pass or fail)
    field: str = "text"  # "text" or "meta.<key>"
    #: For a leak in the text: the same place in the original note (to open it in Review).
    orig_start: int | None = None
    orig_end: int | None = None

    @property
    def same_document(self) -> bool:
        return self.doc_id == self.source_doc_id

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LeakReport:
    hits: list[LeakHit]
    n_documents: int
    n_candidates: int
    skipped: dict[str, int]
    scope: str
    counts: Counter[str] = field(default_factory=Counter)  # every hit, by category, listed or not

    @property
    def leaks(self) -> list[LeakHit]:
        """Originals (or their variants) found in the output within the scope: these fail."""
        return [h for h in self.hits if h.fails]

    @property
    def possible(self) -> list[LeakHit]:
        """A one-word capitalised name found only in lower case ("Walker" as "rolling
        walker"): usually the common noun, so reported for review, not failed."""
        return [h for h in self.hits if h.match == "common-noun"]

    @property
    def cross_document(self) -> list[LeakHit]:
        """Hits of another document's original in unchanged text (failing or not)."""
        return [h for h in self.hits if h.where == "text" and not h.same_document]

    @property
    def ok(self) -> bool:
        return not self.leaks

    def add(self, hits: Iterable[LeakHit]) -> None:
        for h in hits:
            category = _category(h)
            self.counts[category] += 1
            if h.fails or category == "possible_common_nouns" or self.counts["listed"] < MAX_LISTED:
                self.hits.append(h)
                if not h.fails:
                    self.counts["listed"] += 1

    def to_dict(self, rename: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The report as JSON; ``rename`` maps document ids to those written (pseudonyms)."""
        hits = sorted(self.hits, key=_hit_order)
        if rename:
            hits = [
                replace(h, doc_id=rename.get(h.doc_id, h.doc_id),
                        source_doc_id=rename.get(h.source_doc_id, h.source_doc_id))
                for h in hits
            ]
        return {
            "ok": self.ok,
            "scope": self.scope,
            "documents": self.n_documents,
            "candidates": self.n_candidates,
            "skipped": dict(sorted(self.skipped.items())),
            "thresholds": {"min_chars": MIN_CHARS, "min_digits": MIN_DIGITS,
                           "min_digits_across_notes": MIN_DIGITS_ACROSS},
            "leaks": len(self.leaks),
            "leaking_documents": len({h.doc_id for h in self.leaks}),
            "leaks_by_match": dict(sorted(Counter(h.match for h in self.leaks).items())),
            "in_meta": sum(1 for h in self.leaks if h.field != "text"),
            "cross_document": self.counts["cross_document"],
            "possible_common_nouns": self.counts["possible_common_nouns"],
            "in_kept_spans": self.counts["kept"],
            "coincidences_in_surrogates": self.counts["surrogate"],
            "hits_not_listed": sum(v for k, v in self.counts.items() if k != "listed")
            - len(self.hits),
            "hits": [h.to_dict() | {"same_document": h.same_document} for h in hits],
        }


def _category(h: LeakHit) -> str:
    if h.match == "common-noun":
        return "possible_common_nouns"
    if h.fails:
        return "cross_document_leak" if not h.same_document else "leak"
    if h.where == "text":
        return "cross_document"
    return h.where


def _hit_order(h: LeakHit) -> tuple[Any, ...]:
    return (h.doc_id, h.field, h.start, h.end, h.label, h.source_doc_id)


def _core(value: str) -> str:
    """The value without punctuation or spaces at its edges."""
    m = re.search(r"[^\W_].*[^\W_]|[^\W_]", value, re.S)
    return m.group(0) if m else ""


@lru_cache(maxsize=1)
def _all_kinds() -> dict[str, str]:
    return label_kinds(None)


@lru_cache(maxsize=65536)
def _generic_place(value: str) -> bool:
    return is_generic_place(value)


def make_candidates(
    doc_id: str, items: Iterable[tuple[str, str]], *, lang: str = "en", skipped: dict[str, int] | None = None
) -> list[LeakCandidate]:
    """Candidates from ``(label, original string)`` pairs, after the documented skips."""
    kinds = _all_kinds()
    words = common_words()
    # Both languages' lists: a Spanish note quotes English words and vice versa.
    common = words["en"] | words["es"] | words["professions"]
    counts = skipped if skipped is not None else {}
    out = []
    for label, value in items:
        core = _core(value)
        norm = normalise(core)
        kind = kinds.get(label, "other")
        reason = None
        if len(norm) < MIN_CHARS:
            reason = "short"
        elif norm in common:
            reason = "common_word"
        elif kind == "name" and norm in words["eponyms"]:
            reason = "eponym"
        elif kind in _PLACE_KINDS and _generic_place(core):
            reason = "generic_place"
        elif kind == "age" and norm.isdigit():
            reason = "bare_number_age"
        elif kind == "date" and date_precision(core, lang) in ("year", "month", "weekday"):
            reason = "year_month_or_weekday_only"
        elif kind == "date" and _NUMERIC_DATE.fullmatch(core) and date_precision(core, lang) == "month_day":
            reason = "numeric_month_day"
        if reason is not None:
            counts[reason] = counts.get(reason, 0) + 1
            continue
        # Dates, ages and street addresses are not searched by digits: their digit
        # runs are short or common ("(2013)" holds the house number 32013's digits).
        out.append(LeakCandidate(doc_id, label, core, kind not in ("date", "age", "street"), kind))
    return out


# --------------------------------------------------------------------------- the known PHI of a scope


def _digit_count(text: str, start: int, end: int) -> int:
    return sum(c.isdigit() for c in text[start:end])


def _common_noun_like(found: str, same_patient: bool) -> bool:
    """How a one-word capitalised name looks when the match is probably not the name:
    all lower case ("Dr. Walker", "a rolling walker"), or, in a note of another
    patient, a short all-capitals word, an acronym ("Ana", "ANA" the antinuclear
    antibodies; "Eva", "EVA" the visual analogue scale; MEDDOCAN dev, issue 14).
    In the patient's own notes "JONES" in a heading is the name, and longer
    all-capitals names ("QUARTERMAINE") always count."""
    if found.islower():
        return True
    return not same_patient and found.isupper() and found.isalpha() and len(found) <= ACRONYM_MAX


@dataclass(slots=True)
class _Known:
    """What is known about one folded variant (no original text beyond the key)."""

    label: str
    kind: str
    doc_id: str  # the first document it came from
    whole: bool  # the whole original (not a part of a name)
    capitalised: bool  # a one-word name written with capitals (for common-noun hits)
    patients: set[str] = field(default_factory=set)


class KnownPhi:
    """The identifying PHI strings of an export, their variants, and whose they are.

    Memory is one entry per distinct variant (plus the patients holding it),
    whatever the number of notes. Used by the patient- and corpus-scope leak
    check, and by the export to mask other occurrences before de-identifying.
    """

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang
        self.index = VariantIndex()
        self.digits: dict[str, _Known] = {}
        self.digit_lengths: set[int] = set()
        self._info: dict[str, _Known] = {}
        self.n_strings = 0

    def __len__(self) -> int:
        return len(self._info) + len(self.digits)

    def add(self, cand: LeakCandidate, patient: str) -> None:
        """Add an original (already past ``make_candidates``' skips) of ``patient``."""
        if cand.kind not in IDENTIFYING_KINDS:
            return
        self.n_strings += 1
        category = _KIND_CATEGORY.get(cand.kind, "ID")
        one_word_name = cand.kind == "name" and " " not in cand.value.strip()
        eponyms = common_words()["eponyms"]
        for v in variants(cand.value, cand.label, category, lang=self.lang):
            if v.part and v.text in eponyms:
                continue
            info = self._info.get(v.text)
            if info is None:
                capitalised = cand.kind == "name" and (one_word_name or v.part)
                info = _Known(cand.label, cand.kind, cand.doc_id, not v.part, capitalised)
                self._info[v.text] = info
                self.index.add(v, info)
            elif not v.part:
                info.whole = True
            info.patients.add(patient)
        digits = "".join(c for c in cand.value if c.isdigit())
        if cand.check_digits and len(digits) >= MIN_DIGITS:
            info = self.digits.get(digits)
            if info is None:
                info = self.digits[digits] = _Known(cand.label, cand.kind, cand.doc_id, True, False)
                self.digit_lengths.add(len(digits))
            info.patients.add(patient)

    def is_original_of(self, value: str, patient: str) -> bool:
        """Whether ``value`` is, or holds, a whole original of an identifying kind of
        ``patient`` (the leak check's collision: the whole value, or a multi-word
        original inside it)."""
        key = " ".join(fold(value).split())
        info = self._info.get(key)
        if info is not None and info.whole and patient in info.patients:
            return True
        for m in self.index.find(value, embedded=False):
            info = m.payloads[0]
            if info.whole and patient in info.patients and " " in " ".join(fold(value[m.start : m.end]).split()):
                return True
        return False

    def digit_matches(self, text: str) -> Iterator[tuple[int, int, _Known]]:
        """Identifiers found by their digits, whatever the punctuation between them."""
        if not self.digits:
            return
        for run in _NUMERIC_RUN.finditer(text):
            if ":" in run.group(0) or _DATE_START.match(run.group(0)):
                continue  # dates and times: an id's digits across "6/1/2021 16:45" mean nothing
            positions = [run.start() + i for i, c in enumerate(run.group(0)) if c.isdigit()]
            digits = "".join(text[p] for p in positions)
            for length in self.digit_lengths:
                for i in range(0, len(digits) - length + 1):
                    info = self.digits.get(digits[i : i + length])
                    if info is not None:
                        yield positions[i], positions[i + length - 1] + 1, info

    def spans_in(self, text: str, patient: str | None, scope: Scope) -> Iterator[tuple[int, int, str]]:
        """``(start, end, label)`` of every occurrence in ``text`` within ``scope``
        (for the export's masking of other occurrences)."""
        for m in self.index.find(text):
            info: _Known = m.payloads[0]
            if not (scope == "corpus" or (patient is not None and patient in info.patients)):
                continue
            same = patient is not None and patient in info.patients
            if info.capitalised and not m.embedded and _common_noun_like(text[m.start : m.end], same):
                continue  # "Day" the surname, "6-day stay"; "Ana", "ANA" the antibodies
            yield m.start, m.end, info.label
        for start, end, info in self.digit_matches(text):
            same = patient is not None and patient in info.patients
            if (scope == "corpus" or same) and (same or _digit_count(text, start, end) >= MIN_DIGITS_ACROSS):
                yield start, end, info.label


# --------------------------------------------------------------------------- one document


class _Index:
    """A document's own originals, searched exactly, case-insensitively and by digits."""

    def __init__(self, candidates: Sequence[LeakCandidate]) -> None:
        self.by_first: dict[str, list[tuple[str, LeakCandidate]]] = {}
        self.by_digits: dict[int, dict[str, list[LeakCandidate]]] = {}
        for cand in candidates:
            # The same folding as the searched text (lower case per character, so
            # offsets survive), not casefold ("ß" would become "ss").
            norm = _normalised_with_offsets(cand.value.strip())[0]
            first = _WORD.match(norm)
            if first is None:
                continue
            self.by_first.setdefault(first.group(0), []).append((norm, cand))
            digits = "".join(c for c in cand.value if c.isdigit())
            if cand.check_digits and len(digits) >= MIN_DIGITS:
                self.by_digits.setdefault(len(digits), {}).setdefault(digits, []).append(cand)


def _normalised_with_offsets(text: str) -> tuple[str, list[int] | None]:
    """Lower-cased text with whitespace runs collapsed, and each character's original
    offset (``None`` when nothing was collapsed, so offsets are unchanged)."""
    return fold_with_offsets(text)


def _region_at(regions: Sequence[Region], start: int, end: int) -> Region | None:
    for region in regions:
        if region.start <= start and end <= region.end:
            return region
    return None


def _classify(regions: Sequence[Region], text: str, start: int, end: int, kind: str, value: str) -> Where:
    region = _region_at(regions, start, end)
    if region is None:
        return "text"
    if region.kept:
        return "kept"
    if normalise(text[region.start : region.end]) == region.original:
        return "text"  # a "replacement" identical to its original: a leak
    if kind != "date" and normalise(value) in region.original:
        # The surrogate carries words of the value it replaced ("Hospital
        # General de Guadalajara" for "... de Guadalajara"): a leak. Shifted
        # dates keep month and year often, by design, without revealing them.
        return "text"
    return "surrogate"


def _search_own(target: LeakTarget, text: str, fld: str, index: _Index) -> list[LeakHit]:
    """The document's own originals in ``text`` (its note text or one meta value)."""
    hits: list[LeakHit] = []
    seen: set[tuple[int, int, str]] = set()
    regions = target.regions if fld == "text" else ()
    norm_text, offsets = _normalised_with_offsets(text)

    def add(start: int, end: int, cand: LeakCandidate, match: str) -> None:
        key = (start, end, cand.label)
        if key in seen:
            return
        seen.add(key)
        where = _classify(regions, text, start, end, cand.kind, cand.value)
        fails = where == "text" and match != "common-noun"
        hits.append(LeakHit(target.doc_id, start, end, cand.label, cand.doc_id, match, where, fails, fld))

    for m in _WORD.finditer(norm_text):
        for norm, cand in index.by_first.get(m.group(0), ()):
            pos = m.start()
            stop = pos + len(norm)
            if not norm_text.startswith(norm, pos):
                continue
            if stop < len(norm_text) and norm_text[stop].isalnum():
                continue
            start, end = (offsets[pos], offsets[stop - 1] + 1) if offsets is not None else (pos, stop)
            found = text[start:end]
            if found == cand.value:
                match = "exact"
            elif cand.kind == "name" and " " not in norm and found.islower() and not cand.value.islower():
                match = "common-noun"
            else:
                match = "case-insensitive"
            add(start, end, cand, match)
    if index.by_digits:
        for run in _NUMERIC_RUN.finditer(text):
            if ":" in run.group(0) or _DATE_START.match(run.group(0)):
                continue  # an id's digits inside "02/27/1938" or "16:45" mean nothing
            positions = [run.start() + i for i, c in enumerate(run.group(0)) if c.isdigit()]
            digits = "".join(text[p] for p in positions)
            for length, table in index.by_digits.items():
                for i in range(0, len(digits) - length + 1):
                    for cand in table.get(digits[i : i + length], ()):
                        add(positions[i], positions[i + length - 1] + 1, cand, "digits")
    return hits


def _search_known(
    target: LeakTarget, text: str, fld: str, known: KnownPhi, scope: Scope, own: bool
) -> list[LeakHit]:
    """Variants of known identifying strings (the document's own, or the scope's)."""
    hits: list[LeakHit] = []
    regions = target.regions if fld == "text" else ()
    patient = target.patient

    def judge(start: int, end: int, info: _Known, match: str) -> None:
        same_scope = own or scope == "corpus" or patient in info.patients
        if not same_scope:
            return
        source = target.doc_id if own else info.doc_id
        region = _region_at(regions, start, end)
        if region is None and any(not r.kept and r.start < end and start < r.end for r in regions):
            # Part surrogate, part note text ("Carrillo" drawn for a doctor, then a
            # "HOSPITAL" heading): made by the generator, not left over.
            hits.append(LeakHit(target.doc_id, start, end, info.label, source, match, "surrogate", False, fld))
            return
        if region is not None and region.kept:
            hits.append(LeakHit(target.doc_id, start, end, info.label, source, match, "kept", False, fld))
            return
        if region is not None and normalise(text[region.start : region.end]) != region.original:
            key = normalise(text[start:end])
            if f" {key} " in f" {region.original} ":
                where: Where = "text"  # the surrogate carries a word of its own original
            elif info.whole and (own or patient in info.patients) and (
                " " in key or key == normalise(text[region.start : region.end])
            ):
                # Another original of this note or patient drawn as a surrogate (the
                # whole surrogate, or a multi-word original inside it): a real name of
                # someone else in the same record, so it fails. A one-word original
                # inside a longer surrogate ("Smith" in "25227 Smith Freeway") does not.
                hits.append(LeakHit(target.doc_id, start, end, info.label, source, "collision", "surrogate", True, fld))
                return
            else:
                hits.append(LeakHit(target.doc_id, start, end, info.label, source, match, "surrogate", False, fld))
                return
        else:
            where = "text"
        found = text[start:end]
        if info.capitalised and match not in ("digits", "embedded") and _common_noun_like(
            found, own or patient in info.patients
        ):
            hits.append(LeakHit(target.doc_id, start, end, info.label, source, "common-noun", where, False, fld))
            return
        hits.append(LeakHit(target.doc_id, start, end, info.label, source, match, where, True, fld))

    for m in known.index.find(text):
        info = m.payloads[0]
        judge(m.start, m.end, info, "embedded" if m.embedded else "variant" if not info.whole else "case-insensitive")
    for start, end, info in known.digit_matches(text):
        if own or patient in info.patients or _digit_count(text, start, end) >= MIN_DIGITS_ACROSS:
            judge(start, end, info, "digits")
    return hits


def check_target(
    target: LeakTarget,
    own: Sequence[LeakCandidate],
    *,
    scope: Scope = "document",
    known: KnownPhi | None = None,
    lang: str = "en",
) -> list[LeakHit]:
    """Every hit in one output document: its own originals and their variants, and
    (scope ``patient`` or ``corpus``) the identifying strings of ``known``."""
    index = _Index(own)
    # Beyond document scope ``known`` holds this document's strings too.
    own_known = None
    if known is None or scope == "document":
        own_known = KnownPhi(lang)
        for cand in own:
            own_known.add(cand, target.patient)
    # The meta values are searched as one string, cut apart afterwards; the
    # separator is neither a letter nor a space, so no match crosses it.
    meta_text = META_SEP.join(v for _, v in target.meta)
    starts = list(accumulate((len(v) + 1 for _, v in target.meta[:-1]), initial=0))
    fields = [("text", target.text)] + ([("meta", meta_text)] if target.meta else [])
    hits: dict[tuple[str, int, int], LeakHit] = {}
    for fld, text in fields:
        found = _search_own(target, text, fld, index)
        if own_known is not None:
            found += _search_known(target, text, fld, own_known, scope, own=True)
        else:
            found += _search_known(target, text, fld, known, scope, own=False)  # type: ignore[arg-type]
        if fld == "meta":
            found = [_in_meta_field(h, target.meta, starts) for h in found]
        for h in found:
            key = (h.field, h.start, h.end)
            old = hits.get(key)
            # One hit per place: a failing one first, then the document's own original.
            if old is None or (h.fails and not old.fails):
                hits[key] = h
    return _outermost(hits.values())


def _in_meta_field(hit: LeakHit, meta: Sequence[tuple[str, str]], starts: list[int]) -> LeakHit:
    i = bisect_right(starts, hit.start) - 1
    key, base = meta[i][0], starts[i]
    return replace(hit, field=f"meta.{key}", start=hit.start - base, end=hit.end - base)


def _outermost(hits: Iterable[LeakHit]) -> list[LeakHit]:
    """Drop hits inside a longer hit of the same field that fails at least as much
    ("Smith" inside "John Smith")."""
    out: list[LeakHit] = []
    for h in sorted(hits, key=lambda h: (h.field, h.start, -(h.end - h.start), not h.fails)):
        if any(
            o.field == h.field and o.start <= h.start and h.end <= o.end and (o.fails or not h.fails)
            for o in out[-8:]
        ):
            continue
        out.append(h)
    return sorted(out, key=_hit_order)


def check_leaks(
    targets: Sequence[LeakTarget],
    candidates: Sequence[LeakCandidate],
    *,
    scope: Scope = "document",
    skipped: dict[str, int] | None = None,
    lang: str = "en",
) -> LeakReport:
    """Search every target for its own candidates and, beyond ``document`` scope,
    for the identifying candidates of the other targets in scope."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
    by_doc: dict[str, list[LeakCandidate]] = {}
    for cand in candidates:
        by_doc.setdefault(cand.doc_id, []).append(cand)
    known = None
    if scope != "document":
        patients = {t.doc_id: t.patient for t in targets}
        known = KnownPhi(lang)
        for cand in candidates:
            known.add(cand, patients.get(cand.doc_id, f"\x00doc:{cand.doc_id}"))
    report = LeakReport([], len(targets), len(candidates), dict(skipped or {}), scope)
    for target in targets:
        report.add(check_target(target, by_doc.get(target.doc_id, ()), scope=scope, known=known, lang=lang))
    report.hits.sort(key=_hit_order)
    return report


# --------------------------------------------------------------------------- de-identified documents


def meta_strings(meta: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """``(dotted key, value)`` for every string (or number) in a meta mapping."""
    for key, value in meta.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from meta_strings(value, f"{name}.")
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                if isinstance(item, Mapping):
                    yield from meta_strings(item, f"{name}.{i}.")
                elif isinstance(item, (str, int)) and not isinstance(item, bool):
                    yield f"{name}.{i}", str(item)
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            yield name, str(value)


def candidates_of(original: Any, result: Any, *, lang: str, skipped: dict[str, int]) -> list[LeakCandidate]:
    """The searched originals of one de-identified document (kept spans are not searched)."""
    items = [
        (d.original.label, original.text[d.original.start : d.original.end])
        for d in result.decisions
        if d.status != "kept"
    ]
    # The record's identifiers (meta.known_phi) must not survive either.
    items += known_phi_items(getattr(original, "meta", {}) or {}, doc_id=original.id)
    return make_candidates(original.id, items, lang=lang, skipped=skipped)


def target_of(original: Any, result: Any, meta: Mapping[str, Any] | None = None, doc_id: str | None = None) -> LeakTarget:
    """The output as the leak check sees it: text, generated regions, patient and meta."""
    regions = tuple(
        Region(
            d.new.start, d.new.end, d.status == "kept",
            normalise(original.text[d.original.start : d.original.end]),
        )
        for d in result.decisions
    )
    out_meta = result.meta if meta is None else meta
    # Values the de-identifier wrote itself are not searched: flags, the model version,
    # and, once pseudonymised, the HMAC ids (random hex would match digit runs).
    skip = set(_WRITTEN_META)
    if out_meta.get("ids") == "pseudonymised":
        skip |= {"original_id", "patient_key", "source"}
    return LeakTarget(
        result.doc_id if doc_id is None else doc_id, result.text, regions, result.patient_key,
        tuple((k, v) for k, v in meta_strings(out_meta) if k.split(".", 1)[0] not in skip),
    )


class LeakChecker:
    """Checks documents one at a time as an export streams them; ``known`` (built in a
    first pass over the export) holds the scope's identifying strings."""

    def __init__(self, *, lang: str = "en", scope: Scope = "document", known: KnownPhi | None = None) -> None:
        if scope not in SCOPES:
            raise ValueError(f"scope must be one of {', '.join(SCOPES)}")
        self.lang = lang
        self.scope = scope
        self.known = known
        self.report = LeakReport([], 0, 0, {}, scope)

    def check(self, original: Any, result: Any, *, meta: Mapping[str, Any] | None = None,
              doc_id: str | None = None) -> list[LeakHit]:
        """Check one document; returns its failing hits (all hits go to ``report``).

        ``meta``/``doc_id``: what is written for it, when not ``result.meta``/``result.doc_id``
        (pseudonymised ids); hits name the original document id."""
        own = candidates_of(original, result, lang=self.lang, skipped=self.report.skipped)
        target = target_of(original, result, meta)
        hits = check_target(target, own, scope=self.scope, known=self.known, lang=self.lang)
        if any(h.fails and h.field == "text" for h in hits):
            back = result.offset_map.inverse()
            n = back.src_length  # a text longer than its map (edited after de-identification) maps no further
            hits = [
                replace(h, orig_start=back.map(h.start, "start"), orig_end=back.map(h.end, "end"))
                if h.fails and h.field == "text" and h.end <= n else h
                for h in hits
            ]
        self.report.n_documents += 1
        self.report.n_candidates += len(own)
        self.report.add(hits)
        return [h for h in hits if h.fails]


def known_from(pairs: Iterable[tuple[Any, Any]], *, lang: str = "en") -> KnownPhi:
    """The identifying originals of ``(original, DeidentifiedDocument)`` pairs."""
    known = KnownPhi(lang)
    for original, result in pairs:
        target_patient = result.patient_key if result.patient_key is not None else f"\x00doc:{result.doc_id}"
        for cand in candidates_of(original, result, lang=lang, skipped={}):
            known.add(cand, target_patient)
    return known


def check_deidentified(
    pairs: Sequence[tuple[Any, Any]],
    *,
    lang: str = "en",
    scope: Scope = "document",
) -> LeakReport:
    """Leak-check ``(original Document, DeidentifiedDocument)`` pairs.

    The originals of every replaced span are searched; spans deliberately kept
    (operator ``keep``, or an age under 90) are not, and hits inside them are
    reported as ``kept``.
    """
    known = known_from(pairs, lang=lang) if scope != "document" else None
    checker = LeakChecker(lang=lang, scope=scope, known=known)
    for original, result in pairs:
        checker.check(original, result)
    checker.report.hits.sort(key=_hit_order)
    return checker.report
