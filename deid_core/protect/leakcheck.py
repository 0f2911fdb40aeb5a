"""Check that no original PHI string survives in de-identified output.

Every export runs this, so that the corpus leaves with evidence that it is
clean. The originals come from the spans that were replaced; the output texts
are searched for each of them three ways:

- ``exact``: the same characters (after trimming punctuation at the edges);
- ``case-insensitive``: the same string up to case and runs of whitespace;
- ``digits``: for identifiers with at least ``MIN_DIGITS`` digits, the same
  digit sequence with any punctuation or spaces between the digits
  ("555-1234" found as "5551234" or "555 12 34").

Matches must start and end at word boundaries ("Ann" is not found in
"Annual"). Each original is searched in its own document's output
(``scope="document"``, the default, which decides pass or fail). With
``scope="corpus"`` every original is also searched in every other document:
a name replaced in one note but undetected in another shows up there, but so
do surnames that are also eponyms ("Murphy's sign") and ages that equal a
temperature, so cross-document hits are reported for review and do not fail
the check.

To avoid burying real leaks under false alarms, some originals are not
searched (and are counted as skipped in the report): strings shorter than
``MIN_CHARS`` characters (two-letter initials, ages like "45"), common words
listed in ``data/leakcheck/common_words.yaml`` ("home", "May"), and dates that
only name a year, a month or a weekday (not identifiers under HIPAA Safe
Harbor, and a shifted full date legitimately still contains many years), and
all-numeric day-month dates without a year ("5/5" is far more often a
strength score or a ratio).
surnames that are also eponyms ("Barrett", "Murphy"), place names made only
of generic words ("Hospital General", "Centro de Salud"), and ages written as a
bare number ("102" is far more often a lab value; ages over 89 are replaced
anyway, and "102-year-old" is still searched). Dates and ages are not
searched by digits, because their digits are short and common.

A one-word original written with capitals but found only in lower case is
reported as a ``common-noun`` match ("Dr. Walker" and "a rolling walker") for
review, without failing the check; multi-word names and exact-case matches
always fail.

A hit is classified by where it lies in the output: in unchanged note text (a
``leak``), inside a kept span (deliberately kept by the project's operators),
or inside a generated surrogate that differs from its own original (a
``coincidence``: the generator drew a value containing some other PHI string,
such as a shifted date equal to another original date, which reveals nothing
about the replaced value). A surrogate that contains the searched string when
its own original did too is a leak ("Hospital General de Guadalajara" drawn
for "Hospital Universitario de Guadalajara"), except for shifted dates, which
keep month and year by design. Only leaks fail the check.

Reports carry document ids, offsets, labels and the kind of match, never the
matched string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml

from deid_core.protect.dateshift import date_precision
from deid_core.protect.surrogate_map import normalise
from deid_core.protect.surrogates import is_generic_place, label_kinds

_PLACE_KINDS = frozenset({"hospital", "health_centre", "organization", "street", "location", "city"})
MIN_CHARS = 3
MIN_DIGITS = 5
Where = Literal["text", "kept", "surrogate"]
_WORD = re.compile(r"[^\W_]+")
_NUMERIC_DATE = re.compile(r"[\d/.-]+")
_NUMERIC_RUN = re.compile(r"\d(?:[ ().\-/+]*\d)*")


@lru_cache(maxsize=1)
def common_words() -> dict[str, frozenset[str]]:
    """Word lists by key: ``en``, ``es``, ``professions``, ``eponyms``."""
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


@dataclass(frozen=True, slots=True)
class LeakHit:
    doc_id: str  # output document where the string was found
    start: int
    end: int
    label: str  # label of the original
    source_doc_id: str  # document the original came from
    match: str  # exact | case-insensitive | digits
    where: Where

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

    @property
    def leaks(self) -> list[LeakHit]:
        """Originals found in unchanged text of their own document: these fail the check."""
        return [
            h for h in self.hits if h.where == "text" and h.same_document and h.match != "common-noun"
        ]

    @property
    def possible(self) -> list[LeakHit]:
        """A one-word capitalised name found only in lower case ("Walker" as "rolling
        walker"): usually the common noun, so reported for review, not failed."""
        return [h for h in self.hits if h.where == "text" and h.same_document and h.match == "common-noun"]

    @property
    def cross_document(self) -> list[LeakHit]:
        """Another document's original found in unchanged text: worth a look, often a
        common surname or number ("Murphy's sign", "T 102.0"), so reported, not failed."""
        return [h for h in self.hits if h.where == "text" and not h.same_document]

    @property
    def ok(self) -> bool:
        return not self.leaks

    def to_dict(self) -> dict[str, Any]:
        by_where: dict[str, int] = {"kept": 0, "surrogate": 0}
        for h in self.hits:
            if h.where != "text":
                by_where[h.where] += 1
        return {
            "ok": self.ok,
            "scope": self.scope,
            "documents": self.n_documents,
            "candidates": self.n_candidates,
            "skipped": dict(sorted(self.skipped.items())),
            "thresholds": {"min_chars": MIN_CHARS, "min_digits": MIN_DIGITS},
            "leaks": len(self.leaks),
            "cross_document": len(self.cross_document),
            "possible_common_nouns": len(self.possible),
            "in_kept_spans": by_where["kept"],
            "coincidences_in_surrogates": by_where["surrogate"],
            "hits": [h.to_dict() | {"same_document": h.same_document} for h in self.hits],
        }


def _core(value: str) -> str:
    """The value without punctuation or spaces at its edges."""
    m = re.search(r"[^\W_].*[^\W_]|[^\W_]", value, re.S)
    return m.group(0) if m else ""


def make_candidates(
    doc_id: str, items: Iterable[tuple[str, str]], *, lang: str = "en", skipped: dict[str, int] | None = None
) -> list[LeakCandidate]:
    """Candidates from ``(label, original string)`` pairs, after the documented skips."""
    kinds = label_kinds(None)
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
        elif kind in _PLACE_KINDS and is_generic_place(core):
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
        out.append(LeakCandidate(doc_id, label, core, kind not in ("date", "age"), kind))
    return out


class _Index:
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


def _normalised_with_offsets(text: str) -> tuple[str, list[int]]:
    """Lower-cased text with whitespace runs collapsed, and each character's original offset."""
    chars: list[str] = []
    offsets: list[int] = []
    prev_space = False
    for i, c in enumerate(text):
        if c.isspace():
            if not prev_space:
                chars.append(" ")
                offsets.append(i)
            prev_space = True
            continue
        prev_space = False
        low = c.lower()
        if len(low) != 1:  # the rare character whose lower case is longer: compare as is
            low = c
        chars.append(low)
        offsets.append(i)
    offsets.append(len(text))
    return "".join(chars), offsets


def _classify(target: LeakTarget, start: int, end: int, cand: LeakCandidate) -> Where:
    for region in target.regions:
        if region.start <= start and end <= region.end:
            if region.kept:
                return "kept"
            if normalise(target.text[region.start : region.end]) == region.original:
                return "text"  # a "replacement" identical to its original: a leak
            if cand.kind != "date" and normalise(cand.value) in region.original:
                # The surrogate carries words of the value it replaced ("Hospital
                # General de Guadalajara" for "... de Guadalajara"): a leak. Shifted
                # dates keep month and year often, by design, without revealing them.
                return "text"
            return "surrogate"
    return "text"


def _search(target: LeakTarget, index: _Index, scope: str) -> list[LeakHit]:
    hits: dict[tuple[int, int, str, str], LeakHit] = {}
    norm_text, offsets = _normalised_with_offsets(target.text)

    def add(start: int, end: int, cand: LeakCandidate, match: str) -> None:
        if scope == "document" and cand.doc_id != target.doc_id:
            return
        key = (start, end, cand.label, cand.doc_id)
        if key in hits:
            return
        where = _classify(target, start, end, cand)
        hits[key] = LeakHit(target.doc_id, start, end, cand.label, cand.doc_id, match, where)

    for m in _WORD.finditer(norm_text):
        for norm, cand in index.by_first.get(m.group(0), ()):
            pos = m.start()
            stop = pos + len(norm)
            if not norm_text.startswith(norm, pos):
                continue
            if stop < len(norm_text) and norm_text[stop].isalnum():
                continue
            start, end = offsets[pos], offsets[stop - 1] + 1
            found = target.text[start:end]
            if found == cand.value:
                match = "exact"
            elif (
                cand.kind == "name"
                and " " not in norm
                and found.islower()
                and not cand.value.islower()
            ):
                match = "common-noun"
            else:
                match = "case-insensitive"
            add(start, end, cand, match)
    if index.by_digits:
        for run in _NUMERIC_RUN.finditer(target.text):
            positions = [run.start() + i for i, c in enumerate(run.group(0)) if c.isdigit()]
            digits = "".join(target.text[p] for p in positions)
            for length, table in index.by_digits.items():
                for i in range(0, len(digits) - length + 1):
                    for cand in table.get(digits[i : i + length], ()):
                        add(positions[i], positions[i + length - 1] + 1, cand, "digits")
    return list(hits.values())


def check_leaks(
    targets: Sequence[LeakTarget],
    candidates: Sequence[LeakCandidate],
    *,
    scope: Literal["corpus", "document"] = "document",
    skipped: dict[str, int] | None = None,
) -> LeakReport:
    """Search every target for every candidate (or only its own document's)."""
    if scope not in ("corpus", "document"):
        raise ValueError("scope must be 'corpus' or 'document'")
    index = _Index(candidates)
    hits: list[LeakHit] = []
    for target in targets:
        hits.extend(_search(target, index, scope))
    hits.sort(key=lambda h: (h.doc_id, h.start, h.end, h.label, h.source_doc_id))
    return LeakReport(hits, len(targets), len(candidates), dict(skipped or {}), scope)


def check_deidentified(
    pairs: Sequence[tuple[Any, Any]],
    *,
    lang: str = "en",
    scope: Literal["corpus", "document"] = "document",
) -> LeakReport:
    """Leak-check ``(original Document, DeidentifiedDocument)`` pairs.

    The originals of every replaced span are searched; spans deliberately kept
    (operator ``keep``, or an age under 90) are not, and hits inside them are
    reported as ``kept``.
    """
    candidates: list[LeakCandidate] = []
    targets: list[LeakTarget] = []
    skipped: dict[str, int] = {}
    for original, result in pairs:
        items = []
        regions = []
        for decision in result.decisions:
            value = original.text[decision.original.start : decision.original.end]
            kept = decision.status == "kept"
            if not kept:
                items.append((decision.original.label, value))
            regions.append(Region(decision.new.start, decision.new.end, kept, normalise(value)))
        candidates.extend(make_candidates(original.id, items, lang=lang, skipped=skipped))
        targets.append(LeakTarget(result.doc_id, result.text, tuple(regions)))
    return check_leaks(targets, candidates, scope=scope, skipped=skipped)
