"""Post-processing filters kept as data (paper 001, rules 6, 8 and 9).

A CRF makes a few systematic mistakes that a short list fixes better than more
training: a weekday or a season tagged as PHI, a medical term or a unit, a
title on its own, a span that swallowed the punctuation around it. Paper 001
turns such tokens back to O by "pattern matching with all words that are
medical values, medical terms, days in a week, seasons in a year, titles" and
drops ages below 89. Each filter here is one YAML entry with a ``kind``; the
kinds are the few operations below, so an unknown kind fails at load time.

Filters mostly shrink or drop spans, and ``trim`` never removes characters
that are letters or digits. Two kinds add characters, only next to a span and
only words they list: ``widen`` (the apostrophe of "'98") and ``extend`` (the
kind words a facility's name ends with, which the CRF often leaves out).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from deid_core.engine.lexicons import COMMON, NAME, STOP, UNKNOWN, Lexicon, load_lexicon
from deid_core.engine.rules import load_yaml_text, parse_flags
from deid_core.errors import RuleError, UnsupportedFormat
from deid_core.spans import Span, sort_spans

BUILTIN_FILTER_LANGUAGES = ("en", "es")
_FILTER_KEYS = {"name", "kind", "labels", "except_labels", "params", "enabled", "description"}
_BRACKETS = {"(": ")", "[": "]", "{": "}", "«": "»", "“": "”", "¿": "?", "¡": "!"}

# A trace entry: (filter name, span before, span after or None when dropped).
TraceEntry = tuple[str, Span, "Span | None"]


@dataclass(frozen=True, slots=True)
class PostFilter:
    """One filter: what it does (``kind``), to which labels, with which parameters.

    ``labels`` = None means every label; ``except_labels`` are never touched
    (a weekday labelled DATE is a date). Parameters are checked and compiled
    when the filter is built, in ``prepared``.
    """

    name: str
    kind: str
    labels: frozenset[str] | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    except_labels: frozenset[str] = frozenset()
    enabled: bool = True
    origin: str | None = None
    prepared: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        where = {"rule": self.name or "<unnamed>", "path": self.origin}
        if not self.name:
            raise RuleError("a filter needs a name", **where)
        if self.kind not in FILTER_KINDS:
            known = ", ".join(sorted(FILTER_KINDS))
            raise RuleError(f"unknown filter kind {self.kind!r} (known: {known})", **where)
        if self.labels is not None and not isinstance(self.labels, frozenset):
            object.__setattr__(self, "labels", frozenset(self.labels))
        if not isinstance(self.except_labels, frozenset):
            object.__setattr__(self, "except_labels", frozenset(self.except_labels))
        object.__setattr__(self, "params", MappingProxyType(dict(self.params)))
        prepare, _ = FILTER_KINDS[self.kind]
        try:
            prepared = prepare(self.params)
        except RuleError:
            raise
        except (KeyError, TypeError, ValueError, re.error, UnsupportedFormat) as exc:
            raise RuleError(f"bad params for kind {self.kind!r}: {exc}", **where) from None
        object.__setattr__(self, "prepared", prepared)

    def applies_to(self, label: str) -> bool:
        if label in self.except_labels:
            return False
        return self.labels is None or label in self.labels

    def apply(self, text: str, span: Span) -> Span | None:
        """The span unchanged, shrunk, or None when the filter drops it."""
        if not self.enabled or not self.applies_to(span.label):
            return span
        _, run = FILTER_KINDS[self.kind]
        return run(self.prepared, text, span)


# --- filter kinds: (prepare(params) -> prepared, run(prepared, text, span) -> Span | None) ---


def _normalise(word: str, cased: bool = False) -> str:
    word = word if cased else word.casefold()
    return " ".join(word.strip().strip(".").split())


_Trim = tuple[str, int, frozenset[str], tuple[str, ...]]


def _prepare_trim(params: Mapping[str, Any]) -> _Trim:
    chars = str(params.get("chars", ",;:!?"))
    short = int(params.get("keep_dot_after_word_up_to", 3))
    abbreviations = params.get("abbreviations", [])
    suffixes = params.get("suffixes", [])
    for key, value in (("abbreviations", abbreviations), ("suffixes", suffixes)):
        if isinstance(value, str) or not isinstance(value, list):
            raise ValueError(f"'{key}' must be a list")
    return (chars, short, frozenset(_normalise(str(a)) for a in abbreviations),
            tuple(str(x).casefold() for x in suffixes if str(x)))


def _balanced(s: str, opening: str, closing: str) -> bool:
    return s.count(opening) == s.count(closing)


def _run_trim(prepared: _Trim, text: str, span: Span) -> Span | None:
    """Strip whitespace, listed punctuation, unbalanced brackets/quotes and a sentence-final dot.

    A listed suffix ("'s") is cut once, before the rest, when a word is left before it.
    """
    chars, short, abbreviations, suffixes = prepared
    start, end = span.start, span.end
    if suffixes:  # only the filters that list some; trim_edges runs on every span
        tail = text[start:end].casefold()
        for suffix in suffixes:
            if tail.endswith(suffix) and len(tail) > len(suffix) + 1 and text[end - len(suffix) - 1].isalnum():
                end -= len(suffix)
                break
    changed = True
    while changed and start < end:
        changed = False
        first, last = text[start], text[end - 1]
        if first.isspace() or first in chars or first == ".":
            start += 1
            changed = True
            continue
        if last.isspace() or last in chars:
            end -= 1
            changed = True
            continue
        inner = text[start:end]
        for quote in ("\"", "'"):
            if (first == quote or last == quote) and inner.count(quote) % 2 == 1:
                if first == quote:
                    start += 1
                else:
                    end -= 1
                changed = True
                break
        if changed:
            continue
        for opening, closing in _BRACKETS.items():
            if first == opening and not _balanced(inner, opening, closing):
                start += 1
                changed = True
                break
            if last == closing and not _balanced(inner, opening, closing):
                end -= 1
                changed = True
                break
        if changed:
            continue
        if last == "." and end - start > 1:
            word = re.search(r"[^\W\d_][\w.]*\.$", inner)
            # "St.", "J.", "U.S.A.", "Avda." keep their dot; "Smith." at a sentence end loses it.
            keep = word is not None and (
                len(word.group()) - 1 <= short
                or "." in word.group()[:-1]
                or _normalise(word.group()) in abbreviations
            )
            if not keep:
                end -= 1
                changed = True
    if start >= end:
        return None
    if (start, end) == (span.start, span.end):
        return span
    return Span(start, end, span.label, span.source, span.score)


def _prepare_nothing(params: Mapping[str, Any]) -> None:
    return None


def _run_punctuation_only(prepared: None, text: str, span: Span) -> Span | None:
    return span if any(ch.isalnum() for ch in text[span.start : span.end]) else None


def _prepare_stoplist(params: Mapping[str, Any]) -> tuple[frozenset[str], str, bool]:
    words = params["words"]
    if isinstance(words, str) or not isinstance(words, list):
        raise ValueError("'words' must be a list")
    match = str(params.get("match", "span"))
    if match not in ("span", "all_words"):
        raise ValueError("'match' must be 'span' or 'all_words'")
    cased = bool(params.get("case_sensitive", False))
    return frozenset(_normalise(str(w), cased) for w in words), match, cased


_WORD = re.compile(r"[^\W_]+(?:['’.-][^\W_]+)*", re.UNICODE)


def _run_stoplist(prepared: tuple[frozenset[str], str, bool], text: str, span: Span) -> Span | None:
    words, match, cased = prepared
    inner = text[span.start : span.end]
    if match == "span":
        return None if _normalise(inner, cased) in words else span
    found = [_normalise(w, cased) for w in _WORD.findall(inner)]
    if found and all(w in words for w in found):
        return None
    return span


def _prepare_pattern(params: Mapping[str, Any]) -> tuple[re.Pattern[str] | None, ...]:
    flags = parse_flags(params.get("flags"))
    compiled = []
    for key in ("span", "before", "after"):
        value = params.get(key)
        compiled.append(re.compile(str(value), flags) if value is not None else None)
    if all(p is None for p in compiled):
        raise ValueError("give at least one of 'span', 'before', 'after'")
    window = int(params.get("window", 40))
    return (*compiled, window)  # type: ignore[return-value]


def _run_pattern(prepared: tuple, text: str, span: Span) -> Span | None:
    """Drop when the span text fully matches ``span`` and its context matches ``before``/``after``."""
    span_re, before_re, after_re, window = prepared
    if span_re is not None and not span_re.fullmatch(text, span.start, span.end):
        return span
    if before_re is not None:
        lo = max(0, span.start - window)
        if before_re.search(text[lo : span.start]) is None:
            return span
    if after_re is not None and after_re.match(text, span.end, min(len(text), span.end + window)) is None:
        return span
    return None


def _prepare_numeric_below(params: Mapping[str, Any]) -> float:
    return float(params["min"])


_NUMBER = re.compile(r"\d+")


def _run_numeric_below(prepared: float, text: str, span: Span) -> Span | None:
    """Paper 001 rule 8: an age below the HIPAA threshold is not PHI under HIPAA."""
    m = _NUMBER.search(text, span.start, span.end)
    if m is not None and int(m.group()) < prepared:
        return None
    return span


def _prepare_widen(params: Mapping[str, Any]) -> tuple[re.Pattern[str], re.Pattern[str], int]:
    flags = parse_flags(params.get("flags"))
    try:
        span_re, before = params["span"], params["before"]
    except KeyError as exc:
        raise ValueError(f"give {exc.args[0]!r}") from None
    return re.compile(str(span_re), flags), re.compile(f"(?:{before})\\Z", flags), int(params.get("window", 8))


def _run_widen(prepared: tuple[re.Pattern[str], re.Pattern[str], int], text: str, span: Span) -> Span | None:
    """Take ``before`` into the span when it sits right before a span that fully matches ``span``
    ("'" of "CABG '98": the generator and the CRF mark the digits; with its apostrophe the span is a
    year that date shifting can shift)."""
    span_re, before_re, window = prepared
    if span_re.fullmatch(text, span.start, span.end) is None:
        return span
    m = before_re.search(text, max(0, span.start - window), span.start)
    if m is None or m.start() == span.start:
        return span
    return Span(m.start(), span.end, span.label, span.source, span.score)


_Extend = tuple[frozenset[str], frozenset[str], int, "str | None"]


def _prepare_extend(params: Mapping[str, Any]) -> _Extend:
    words, joiners = params["words"], params.get("joiners", [])
    for key, value in (("words", words), ("joiners", joiners)):
        if isinstance(value, str) or not isinstance(value, list):
            raise ValueError(f"'{key}' must be a list")
    label = params.get("label")
    return (frozenset(_normalise(str(w)) for w in words), frozenset(_normalise(str(j)) for j in joiners),
            int(params.get("max_words", 3)), None if label is None else str(label))


_NEXT_WORD = re.compile(r"[ \t]+([^\W_]+(?:['’-][^\W_]+)*|&)")


def _run_extend(prepared: _Extend, text: str, span: Span) -> Span | None:
    """Take the listed words right after a span into it, on the same line ("DuPage Rehab" +
    "Institute", "Harbor View Care" + "& Rehab"); a joiner only before a listed word. With
    ``label``, an extended span takes that label ("Spokane" + "PD" is an organisation)."""
    words, joiners, max_words, label = prepared
    end, pos, taken = span.end, span.end, 0
    while taken < max_words:
        m = _NEXT_WORD.match(text, pos)
        if m is None:
            break
        word = _normalise(m.group(1))
        if word in joiners:
            after = _NEXT_WORD.match(text, m.end())
            if after is None or _normalise(after.group(1)) not in words:
                break
            m = after
        elif word not in words:
            break
        end = pos = m.end()
        taken += 1
    if end == span.end:
        return span
    return Span(span.start, end, label or span.label, span.source, span.score)


_NotAnId = tuple[re.Pattern[str], int, Lexicon]


def _prepare_not_an_identifier(params: Mapping[str, Any]) -> _NotAnId:
    lexicon = load_lexicon(str(params.get("lang", "en")))  # UnsupportedFormat names the languages
    return re.compile(rf"\d{{{int(params.get('min_digits', 4))},}}"), int(params.get("mixed_digits", 3)), lexicon


_TOKEN = re.compile(r"\S+")
_ID_GROUPS = re.compile(r"\d+(?:[-./]\d+){2,}|\d{3,}(?: \d{3,}){2,}")  # "88-301-947", "118 402 377"
_STREET = re.compile(
    r"(?i:\b\d+(?:st|nd|rd|th)?[ \t]+(?:[a-z.]+[ \t]+){0,2}(?:st|rd|ave|blvd|ln|dr|ct|hwy|way|ter|pl|cir|pkwy|sq|street|road|avenue|lane|drive|terrace|place|circle|parkway|square)\b)"
)


def _run_not_an_identifier(prepared: _NotAnId, text: str, span: Span) -> Span | None:
    """Drop a span of an identifier label that holds numbers and no identifier: clinical values the
    CRF read as a plan or account number at a recall bias ("hct 27 -> 25", "cha2ds2-vasc 4").

    Kept, as PHI under a wrong label, when it may hold any: a token that looks like an id (a run
    of ``min_digits`` digits, letters mixed with ``mixed_digits`` digits, three digit groups), no
    digit at all (the CRF's id labels also land on names and organisations it could not place), a
    house number before a street word, a word the lexicon reads as a name or a place, or a
    capitalised word in no list.
    """
    digit_run, mixed_digits, lexicon = prepared
    inner = text[span.start : span.end]
    if not any(ch.isdigit() for ch in inner):
        return span
    if digit_run.search(inner) or _ID_GROUPS.search(inner) or _STREET.search(inner):
        return span
    for token in _TOKEN.findall(inner):
        digits = sum(ch.isdigit() for ch in token)
        if digits >= mixed_digits and any(ch.isalpha() for ch in token):
            return span
    for token in _WORD.findall(inner):
        if any(ch.isdigit() for ch in token):
            continue
        for word in re.sub(r"['’]s$", "", token).split("-"):  # "Lapierre-Nadeau": each part
            reading = lexicon.classify(word)
            if reading == NAME or (lexicon.is_place(word) and reading not in (STOP, COMMON)):
                return span
            if reading == UNKNOWN and len(word) >= 4 and word.istitle():
                return span  # "Kuusiku 7": a capitalised word in no list may name a street or a person
    return None


FILTER_KINDS: dict[str, tuple[Callable[[Mapping[str, Any]], Any], Callable[..., Span | None]]] = {
    "trim": (_prepare_trim, _run_trim),
    "punctuation_only": (_prepare_nothing, _run_punctuation_only),
    "stoplist": (_prepare_stoplist, _run_stoplist),
    "pattern": (_prepare_pattern, _run_pattern),
    "numeric_below": (_prepare_numeric_below, _run_numeric_below),
    "widen": (_prepare_widen, _run_widen),
    "not_an_identifier": (_prepare_not_an_identifier, _run_not_an_identifier),
    "extend": (_prepare_extend, _run_extend),
}


def apply_filters(
    text: str,
    spans: Iterable[Span],
    filters: Sequence[PostFilter],
    *,
    trace: list[TraceEntry] | None = None,
    memo: dict[Span, Span | None] | None = None,
) -> list[Span]:
    """Run every enabled filter, in order, over each span; return the survivors sorted.

    ``trace`` (optional) collects ``(filter, before, after)`` for each change,
    so a reviewer can see why a detection vanished; it holds offsets and
    labels only, never text. ``memo`` (optional, one per note and filter
    list) remembers each span's outcome: a bias sweep filters the same spans
    of a note over and over.
    """
    n = len(text)
    out: list[Span] = []
    grown: dict[Span, int] = {}  # a span an ``extend`` filter lengthened -> its end before
    for span in spans:
        if memo is not None and trace is None and span in memo:
            kept = memo[span]
            if kept is not None:
                out.append(kept)
                if kept.end > span.end:
                    grown[kept] = span.end
            continue
        span.check_fits(n)
        current: Span | None = span
        for flt in filters:
            assert current is not None
            after = flt.apply(text, current)
            if after is not current and trace is not None:
                trace.append((flt.name, current, after))
            current = after
            if current is None:
                break
        if memo is not None:
            memo[span] = current
        if current is not None:
            out.append(current)
            if current.end > span.end:
                grown[current] = span.end
    out = sort_spans(out)
    if grown:
        # An extension stops where the next span starts: spans never overlap.
        for i in range(len(out) - 1):
            if out[i].end > out[i + 1].start and out[i] in grown:
                s = out[i]
                out[i] = Span(s.start, grown[s], s.label, s.source, s.score)
    return out


def filters_from_dict(raw: Any, *, origin: str | None = None) -> list[PostFilter]:
    if not isinstance(raw, dict) or not isinstance(raw.get("filters"), list):
        raise RuleError("a filter file needs a 'filters' list", path=origin)
    filters: list[PostFilter] = []
    seen: set[str] = set()
    for index, item in enumerate(raw["filters"]):
        if not isinstance(item, dict):
            raise RuleError(f"filter #{index} is not a mapping", path=origin)
        name = str(item.get("name") or "")
        where = {"rule": name or f"#{index}", "path": origin}
        unknown = set(item) - _FILTER_KEYS
        if unknown:
            raise RuleError(f"unknown keys {sorted(unknown)}", **where)
        if name in seen:
            raise RuleError("two filters share this name", **where)
        seen.add(name)
        labels = item.get("labels")
        except_labels = item.get("except_labels") or []
        params = item.get("params") or {}
        if labels is not None and not isinstance(labels, list):
            raise RuleError("'labels' must be a list", **where)
        if not isinstance(except_labels, list) or not isinstance(params, dict):
            raise RuleError("'except_labels' must be a list and 'params' a mapping", **where)
        filters.append(
            PostFilter(
                name=name,
                kind=str(item.get("kind") or ""),
                labels=frozenset(map(str, labels)) if labels is not None else None,
                params=params,
                except_labels=frozenset(map(str, except_labels)),
                enabled=bool(item.get("enabled", True)),
                origin=origin,
            )
        )
    return filters


@cache
def _builtin(lang: str) -> tuple[PostFilter, ...]:
    origin = f"deid_core/data/filters/{lang}.yaml"
    text = resources.files("deid_core").joinpath(f"data/filters/{lang}.yaml").read_text("utf-8")
    return tuple(filters_from_dict(load_yaml_text(text, origin=origin), origin=origin))


def load_filters(lang: str, path: str | Path | None = None) -> list[PostFilter]:
    """The built-in filters for ``lang`` ("en" or "es"), or a user's YAML filter file."""
    if path is not None:
        origin = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"cannot read filter file: {exc.__class__.__name__}", path=origin) from None
        return filters_from_dict(load_yaml_text(text, origin=origin), origin=origin)
    if lang not in BUILTIN_FILTER_LANGUAGES:
        raise UnsupportedFormat(
            f"no built-in filters for language {lang!r} (have: {', '.join(BUILTIN_FILTER_LANGUAGES)})"
        )
    return list(_builtin(lang))
