"""Regex recognizers kept as data: name, label, compiled pattern, score, validator.

Formulaic PHI (phone numbers, e-mail, identifiers, dates) is found more
reliably by a pattern than by a CRF that has seen few examples (paper 000,
Table 2). Rules are YAML so that a site can add its own identifiers without
code; each rule compiles when it is built, so a bad rule fails at load time and
names itself and its file. ``RuleSet.find`` returns every rule's matches,
overlaps included: choosing between them is the merge stage's job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import ahocorasick
import yaml

from deid_core.engine.regexopt import ODD_CASE, compile_pattern, literal_prefixes
from deid_core.engine.validators import VALIDATORS, Validator
from deid_core.errors import RuleError, UnsupportedFormat
from deid_core.spans import Span, sort_spans

BUILTIN_RULE_LANGUAGES = ("en", "es")

_FLAG_NAMES = {
    "IGNORECASE": re.IGNORECASE,
    "I": re.IGNORECASE,
    "MULTILINE": re.MULTILINE,
    "M": re.MULTILINE,
    "DOTALL": re.DOTALL,
    "S": re.DOTALL,
    "VERBOSE": re.VERBOSE,
    "X": re.VERBOSE,
    "ASCII": re.ASCII,
    "A": re.ASCII,
}
_FRAGMENT = re.compile(r"\{\{(\w+)\}\}")
_RULE_KEYS = {
    "name", "label", "pattern", "score", "validator", "group", "flags", "anchor", "window",
    "description", "standalone",
}
DEFAULT_WINDOW = (48, 40)  # characters searched before and after each anchor hit
#: libyaml's parser when PyYAML has it: a model's rule and filter files parse
#: ten times faster (same documents; the pure-Python loader is the fallback).
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_flags(value: Any, *, rule: str | None = None, path: str | None = None) -> int:
    """YAML flags: a list of names (``[IGNORECASE]``), one name, or an int."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list):
        raise RuleError("flags must be a list of names such as IGNORECASE", rule=rule, path=path)
    flags = 0
    for name in names:
        try:
            flags |= _FLAG_NAMES[str(name).upper()]
        except KeyError:
            raise RuleError(f"unknown regex flag {name!r}", rule=rule, path=path) from None
    return flags


def load_yaml_text(text: str, *, origin: str | None = None) -> Any:
    """Parse YAML, turning a syntax error into a RuleError with the file and line."""
    try:
        return yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise RuleError(f"not valid YAML{line}", path=origin) from None


@dataclass(frozen=True, slots=True)
class Rule:
    """One recognizer. ``pattern`` may be given as a string; it is compiled here.

    ``group`` selects the part of the match that is PHI, so a rule can demand a
    context ("Fax:") without putting it in the span.
    """

    name: str
    label: str
    pattern: re.Pattern[str]
    score: float = 0.9
    validator: str | None = None
    group: int | str = 0
    flags: int = 0
    origin: str | None = None  # file the rule came from, for error messages
    # What every match of the rule contains: a regex (e.g. "\\d") or a tuple of
    # literal cue words, matched case-insensitively ("nhc", "fax"). Rules that
    # share an anchor are only searched in windows around its hits: one scan for
    # the anchor replaces a scan of the whole note per rule.
    anchor: re.Pattern[str] | tuple[str, ...] | None = None
    # Characters searched before and after each anchor hit; None: the rule set's.
    window: tuple[int, int] | None = None
    # False: a cue for the CRF (and for a model whose training data marks its
    # matches as PHI: the learned rule mapping), never PHI on its own ("Dr.").
    standalone: bool = True

    def __post_init__(self) -> None:
        where = {"rule": self.name or "<unnamed>", "path": self.origin}
        if not self.name or not isinstance(self.name, str):
            raise RuleError("a rule needs a non-empty name", **where)
        if not self.label or not isinstance(self.label, str):
            raise RuleError("a rule needs a non-empty label", **where)
        if not isinstance(self.standalone, bool):
            raise RuleError("'standalone' must be true or false", **where)
        pattern = self.pattern
        if isinstance(pattern, str):
            try:
                pattern = compile_pattern(pattern, self.flags)  # re.compile, faster alternations
            except re.error as exc:
                raise RuleError(f"pattern does not compile: {exc}", **where) from None
            object.__setattr__(self, "pattern", pattern)
        elif not isinstance(pattern, re.Pattern):
            raise RuleError("pattern must be a string or a compiled regex", **where)
        elif self.flags and pattern.flags & self.flags != self.flags:
            raise RuleError("flags differ from the compiled pattern's flags", **where)
        try:
            score = float(self.score)
        except (TypeError, ValueError):
            raise RuleError("score must be a number", **where) from None
        if not 0.0 <= score <= 1.0:
            raise RuleError(f"score must be within 0..1, got {score}", **where)
        object.__setattr__(self, "score", score)
        group = self.group
        if isinstance(group, bool) or not isinstance(group, int | str):
            raise RuleError("group must be a group number or name", **where)
        if isinstance(group, int) and not 0 <= group <= pattern.groups:
            raise RuleError(f"group {group} does not exist in the pattern", **where)
        if isinstance(group, str) and group not in pattern.groupindex:
            raise RuleError(f"group {group!r} does not exist in the pattern", **where)
        if self.validator is not None and self.validator not in VALIDATORS:
            known = ", ".join(sorted(VALIDATORS))
            raise RuleError(f"unknown validator {self.validator!r} (known: {known})", **where)
        if pattern.match(""):
            raise RuleError("pattern matches the empty string", **where)
        anchor = self.anchor
        if isinstance(anchor, str):
            try:
                anchor = compile_pattern(anchor)
            except re.error as exc:
                raise RuleError(f"anchor does not compile: {exc}", **where) from None
            if anchor.match(""):
                raise RuleError("anchor matches the empty string", **where)
        elif isinstance(anchor, list | tuple):
            if not anchor or not all(isinstance(w, str) and w for w in anchor):
                raise RuleError("an anchor list needs non-empty literal strings", **where)
            anchor = tuple(sorted({w.lower() for w in anchor}))
            if not all(core for core, _, _ in _literal_anchor(anchor)):
                raise RuleError("an anchor word needs letters besides its \\b edge marks", **where)
        elif anchor is not None and not isinstance(anchor, re.Pattern):
            raise RuleError("anchor must be a regex or a list of literal words", **where)
        object.__setattr__(self, "anchor", anchor)
        if self.window is not None:
            try:
                before, after = (int(x) for x in self.window)
            except (TypeError, ValueError):
                raise RuleError("window must be [before, after] in characters", **where) from None
            if before < 0 or after < 0:
                raise RuleError("window sizes must not be negative", **where)
            object.__setattr__(self, "window", (before, after))

    @property
    def source(self) -> str:
        return f"rule:{self.name}"

    @property
    def check(self) -> Validator | None:
        return VALIDATORS[self.validator] if self.validator is not None else None

    def find(self, text: str, windows: Iterable[tuple[int, int]] | None = None) -> Iterator[Span]:
        """Yield this rule's validated matches as spans (empty PHI groups are skipped).

        ``windows`` restricts the search to ``(start, end)`` regions; lookbehinds
        and ``\\b`` still see the characters before a window.
        """
        regions = ((0, len(text)),) if windows is None else windows
        label, source, score = self.label, self.source, self.score
        for start, end in self.matches(text, regions):
            yield Span(start, end, label, source, score)

    def matches(self, text: str, regions: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
        """The validated ``(start, end)`` of each match in ``regions``: the one search loop that
        ``find`` and ``RuleSet.find`` share (a list, not a generator: it runs some 100 times a note)."""
        check = self.check
        group = self.group
        search = self.pattern.search
        out: list[tuple[int, int]] = []
        for lo, hi in regions:
            pos = lo
            while pos <= hi and (match := search(text, pos, hi)) is not None:
                start, end = match.span(group)
                if start < 0 or start >= end:
                    pos = max(match.end(), match.start() + 1)
                    continue
                if check is not None and not check(text[start:end], match):
                    # A rejected match may hide a valid shorter one inside it ("LTACH and
                    # Radius Healthcare"): search again from the next character.
                    pos = match.start() + 1
                    continue
                out.append((start, end))
                pos = max(match.end(), match.start() + 1)
        return out


_WORD_EDGE = "\\b"


@cache
def _literal_anchor(anchor: tuple[str, ...]) -> tuple[tuple[str, bool, bool], ...]:
    """Cue words with their edge marks: ``\\bdr\\b`` is "dr" at a word start and end."""
    out = []
    for word in anchor:
        start = word.startswith(_WORD_EDGE)
        end = word.endswith(_WORD_EDGE) and len(word) > 2
        core = word[2 if start else 0 : len(word) - 2 if end else len(word)]
        out.append((core, start, end))
    return tuple(out)


def _anchor_hits(
    text: str, lowered: str | None, anchor: re.Pattern[str] | tuple[str, ...]
) -> list[tuple[int, int]]:
    if isinstance(anchor, re.Pattern):
        return [m.span() for m in anchor.finditer(text)]
    words = _literal_anchor(anchor)
    if lowered is None:  # lower() changed the length: search each case form by regex instead
        pattern = re.compile(
            "|".join(
                ("\\b" if start else "") + re.escape(core) + ("\\b" if end else "")
                for core, start, end in words
            ),
            re.IGNORECASE,
        )
        return [m.span() for m in pattern.finditer(text)]
    hits = []
    n = len(lowered)
    for core, start, end in words:
        size = len(core)
        i = lowered.find(core)
        while i >= 0:
            j = i + size
            # A marked edge must be a word edge: "dr" in "drug" or "address" is no hit.
            if not (start and i > 0 and lowered[i - 1].isalnum()) and not (
                end and j < n and lowered[j].isalnum()
            ):
                hits.append((i, j))
            i = lowered.find(core, i + 1)
    hits.sort()
    return hits


class _LiteralAnchors:
    """Every literal anchor of a rule set, found in one pass over the note.

    One Aho-Corasick automaton over the cue words of all literal anchors
    replaces a ``str.find`` scan per cue word (over 300 words in the English
    rules); the hits are those ``_anchor_hits`` finds, in its order.
    """

    __slots__ = ("anchors", "_automaton")

    def __init__(self, anchors: Iterable[tuple[str, ...]]) -> None:
        self.anchors = tuple(anchors)
        entries: dict[str, list[tuple[int, bool, bool]]] = {}
        for k, anchor in enumerate(self.anchors):
            for core, start, end in _literal_anchor(anchor):
                entries.setdefault(core, []).append((k, start, end))
        self._automaton = ahocorasick.Automaton()
        for core, found in entries.items():
            self._automaton.add_word(core, (len(core), tuple(found)))
        self._automaton.make_automaton()

    def hits(self, lowered: str) -> list[list[tuple[int, int]]]:
        """Per anchor (in ``anchors`` order), its sorted hits in ``lowered``."""
        out: list[list[tuple[int, int]]] = [[] for _ in self.anchors]
        n = len(lowered)
        for last, (size, found) in self._automaton.iter(lowered):
            j = last + 1
            i = j - size
            # A marked edge must be a word edge: "dr" in "drug" or "address" is no hit.
            inside_left = i > 0 and lowered[i - 1].isalnum()
            inside_right = j < n and lowered[j].isalnum()
            for k, start, end in found:
                if not (start and inside_left) and not (end and inside_right):
                    out[k].append((i, j))
        for hits in out:
            hits.sort()
        return out


class _PrefixAnchors:
    """Regex anchors that ``re`` cannot skip ahead for, tried only where a match can start.

    A regex anchor such as ``(?i:\\b(?:snf|alf|ltach?|irf)\\b)`` starts with a look-around,
    so ``finditer`` runs it at every position of the note. Every match of it starts with one of
    a few literal prefixes (``literal_prefixes``: "snf", "alf", "ltac", "irf"), so one
    Aho-Corasick pass over the lower-cased note finds every position where a match can start,
    and the anchor is matched there only, in order, each search going on after the last
    match's end as ``finditer`` does: the same hits. Used when ``text.lower()`` keeps every
    offset and the note has none of ``ODD_CASE``.
    """

    __slots__ = ("anchors", "_automaton")

    def __init__(self, anchors: Iterable[tuple[re.Pattern[str], tuple[str, ...]]]) -> None:
        pairs = list(anchors)
        self.anchors = tuple(anchor for anchor, _ in pairs)
        entries: dict[str, list[int]] = {}
        for k, (_, prefixes) in enumerate(pairs):
            for prefix in prefixes:
                entries.setdefault(prefix, []).append(k)
        self._automaton = ahocorasick.Automaton()
        for prefix, found in entries.items():
            self._automaton.add_word(prefix, (len(prefix), tuple(found)))
        self._automaton.make_automaton()

    def hits(self, text: str, lowered: str) -> list[list[tuple[int, int]]]:
        """Per anchor (in ``anchors`` order), ``[m.span() for m in anchor.finditer(text)]``."""
        starts: list[set[int]] = [set() for _ in self.anchors]
        for last, (size, found) in self._automaton.iter(lowered):
            for k in found:
                starts[k].add(last + 1 - size)
        out = []
        for anchor, candidates in zip(self.anchors, starts):
            hits = []
            match = anchor.match
            pos = 0
            for i in sorted(candidates):
                if i >= pos and (m := match(text, i)) is not None:
                    hits.append(m.span())
                    pos = m.end()
            out.append(hits)
        return out


def anchor_windows(
    text: str,
    anchor: re.Pattern[str] | tuple[str, ...],
    before: int,
    after: int,
    *,
    lowered: str | None = None,
) -> list[tuple[int, int]]:
    """Merged regions around every hit of ``anchor``, widened to whitespace.

    Widening to whitespace means no window ends inside a token, so a lookahead
    such as ``(?!\\w)`` never mistakes a window edge for the end of a word.
    Literal anchors are found with ``str.find`` in ``lowered`` (``text.lower()``
    when that keeps every offset), which costs microseconds per note.
    """
    if lowered is None and isinstance(anchor, tuple):
        candidate = text.lower()
        lowered = candidate if len(candidate) == len(text) else None
    return _windows(text, _anchor_hits(text, lowered, anchor), before, after)


def _windows(
    text: str, hits: Iterable[tuple[int, int]], before: int, after: int
) -> list[tuple[int, int]]:
    n = len(text)
    out: list[tuple[int, int]] = []
    cur_lo = cur_hi = -1  # the window being grown (none yet)
    for start, end in hits:
        lo = start - before
        if lo < 0:
            lo = 0
        hi = end + after
        if hi > n:
            hi = n
        if cur_hi >= 0 and lo <= cur_hi:
            if hi > cur_hi:
                cur_hi = hi
            continue
        if cur_hi >= 0:
            _widen(text, cur_lo, cur_hi, out)
        cur_lo, cur_hi = lo, hi
    if cur_hi >= 0:
        _widen(text, cur_lo, cur_hi, out)
    return out


def _widen(text: str, lo: int, hi: int, out: list[tuple[int, int]]) -> None:
    """Append [lo, hi) widened to whitespace on both sides, merged with the last window if they meet."""
    n = len(text)
    while lo > 0 and not text[lo - 1].isspace():
        lo -= 1
    while hi < n and not text[hi].isspace():
        hi += 1
    if out and lo <= out[-1][1]:
        out[-1] = (out[-1][0], max(out[-1][1], hi))
    else:
        out.append((lo, hi))


def _expand_fragments(pattern: str, fragments: Mapping[str, str], *, rule: str, path: str | None) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in fragments:
            raise RuleError(f"unknown fragment {{{{{key}}}}}", rule=rule, path=path)
        return fragments[key]

    # Fragments may use other fragments; a few rounds cover any sane nesting.
    for _ in range(5):
        expanded = _FRAGMENT.sub(sub, pattern)
        if expanded == pattern:
            return expanded
        pattern = expanded
    if _FRAGMENT.search(pattern):
        raise RuleError("fragments nest too deeply (or refer to themselves)", rule=rule, path=path)
    return pattern


class RuleSet:
    """An ordered, immutable collection of rules run together over a note."""

    __slots__ = ("name", "lang", "rules", "origin", "window", "_labels", "_plan", "_literal", "_prefixed")

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        name: str = "rules",
        lang: str | None = None,
        origin: str | None = None,
        window: tuple[int, int] = DEFAULT_WINDOW,
    ) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.name = name
        self.lang = lang
        self.origin = origin
        self.window = (int(window[0]), int(window[1]))
        if min(self.window) < 0:
            raise RuleError("window sizes must not be negative", path=origin)
        # Rules grouped by anchor and window, so each anchor is scanned once per note
        # and each window set is built once.
        plan: dict[tuple[Any, tuple[int, int]], list[Rule]] = {}
        for rule in self.rules:
            plan.setdefault((rule.anchor, rule.window or self.window), []).append(rule)
        self._plan = list(plan.items())
        literal = [a for a in dict.fromkeys(rule.anchor for rule in self.rules) if isinstance(a, tuple)]
        self._literal = _LiteralAnchors(literal) if literal else None
        regex = [a for a in dict.fromkeys(rule.anchor for rule in self.rules) if isinstance(a, re.Pattern)]
        prefixed = [(a, p) for a in regex if (p := literal_prefixes(a)) is not None]
        self._prefixed = _PrefixAnchors(prefixed) if prefixed else None
        seen: set[str] = set()
        for rule in self.rules:
            if rule.name in seen:
                raise RuleError("two rules share this name", rule=rule.name, path=origin)
            seen.add(rule.name)
        self._labels = sorted({rule.label for rule in self.rules})

    @property
    def labels(self) -> list[str]:
        return list(self._labels)

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def get(self, name: str) -> Rule:
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise KeyError(name)

    def find(self, text: str, *, use_anchors: bool = True, standalone_only: bool = False) -> list[Span]:
        """All rules' matches, sorted; identical (start, end, label) keep the highest score.

        Overlapping matches of different rules are all returned: ``merge_spans``
        resolves them with the CRF's spans in one place. ``use_anchors=False``
        scans the whole note for every rule (the reference the windows are
        tested against). ``standalone_only`` leaves out the rules that are only
        cues (``standalone: false``), for tagging with rules alone.
        """
        best: dict[tuple[int, int, str], Span] = {}
        lowered: str | None = None
        lowered_done = False  # lowered is text.lower(), or None when that changed the length
        prefix_scan = False  # the prefixed anchors' one pass applies (lowered kept offsets, no ODD_CASE)
        hits_by_anchor: dict[Any, list[tuple[int, int]]] = {}
        prefixed = self._prefixed.anchors if self._prefixed is not None else ()
        for (anchor, (before, after)), rules in self._plan:
            windows = None
            if anchor is not None and use_anchors:
                hits = hits_by_anchor.get(anchor)
                if hits is None:
                    literal = isinstance(anchor, tuple)
                    if not lowered_done and (literal or anchor in prefixed):
                        lowered = text.lower()
                        if len(lowered) != len(text):
                            lowered = None
                        lowered_done = True
                        prefix_scan = lowered is not None and not any(ch in text for ch in ODD_CASE)
                    if literal and lowered is not None and self._literal is not None:
                        # All literal anchors at once (see _LiteralAnchors).
                        hits_by_anchor.update(zip(self._literal.anchors, self._literal.hits(lowered)))
                        hits = hits_by_anchor[anchor]
                    elif prefix_scan and not literal and anchor in prefixed:
                        # All prefixed regex anchors at once (see _PrefixAnchors).
                        hits_by_anchor.update(zip(prefixed, self._prefixed.hits(text, lowered)))  # type: ignore[union-attr]
                        hits = hits_by_anchor[anchor]
                    else:
                        hits = hits_by_anchor[anchor] = _anchor_hits(text, lowered, anchor)
                if not hits:
                    continue
                windows = _windows(text, hits, before, after)
            regions = ((0, len(text)),) if windows is None else windows
            for rule in rules:
                if standalone_only and not rule.standalone:
                    continue
                label = rule.label
                score = rule.score
                source = None
                for start, end in rule.matches(text, regions):
                    key = (start, end, label)
                    kept = best.get(key)
                    if kept is None or score > kept.score:
                        if source is None:
                            source = rule.source
                        best[key] = Span(start, end, label, source, score)
        return sort_spans(best.values())

    @classmethod
    def from_dict(cls, raw: Any, *, origin: str | None = None) -> RuleSet:
        if not isinstance(raw, dict) or not isinstance(raw.get("rules"), list):
            raise RuleError("a rule file needs a 'rules' list", path=origin)
        fragments_raw = raw.get("fragments") or {}
        if not isinstance(fragments_raw, dict):
            raise RuleError("'fragments' must be a mapping of name to regex", path=origin)
        fragments = {str(k): str(v) for k, v in fragments_raw.items()}
        rules = []
        for index, item in enumerate(raw["rules"]):
            if not isinstance(item, dict):
                raise RuleError(f"rule #{index} is not a mapping", path=origin)
            name = str(item.get("name") or f"#{index}")
            unknown = set(item) - _RULE_KEYS
            if unknown:
                raise RuleError(f"unknown keys {sorted(unknown)}", rule=name, path=origin)
            pattern = item.get("pattern")
            if not isinstance(pattern, str) or not pattern:
                raise RuleError("a rule needs a 'pattern' string", rule=name, path=origin)
            pattern = _expand_fragments(pattern, fragments, rule=name, path=origin)
            anchor = item.get("anchor")
            if isinstance(anchor, str) and anchor:
                anchor = _expand_fragments(anchor, fragments, rule=name, path=origin)
            elif isinstance(anchor, list):
                anchor = tuple(str(w) for w in anchor)
            elif anchor is not None:
                raise RuleError(
                    "'anchor' must be a regex string or a list of cue words", rule=name, path=origin
                )
            rules.append(
                Rule(
                    name=str(item.get("name") or ""),
                    label=str(item.get("label") or ""),
                    pattern=pattern,  # type: ignore[arg-type]  # compiled in __post_init__
                    score=item.get("score", 0.9),
                    validator=item.get("validator"),
                    group=item.get("group", 0),
                    flags=parse_flags(item.get("flags"), rule=name, path=origin),
                    origin=origin,
                    anchor=anchor,  # type: ignore[arg-type]  # compiled in __post_init__
                    window=_rule_window(item.get("window"), rule=name, path=origin),
                    standalone=item.get("standalone", True),
                )
            )
        window = raw.get("window", {}) or {}
        if not isinstance(window, dict):
            raise RuleError("'window' must be a mapping with 'before' and 'after'", path=origin)
        try:
            sizes = (
                int(window.get("before", DEFAULT_WINDOW[0])),
                int(window.get("after", DEFAULT_WINDOW[1])),
            )
        except (TypeError, ValueError):
            raise RuleError("window sizes must be integers", path=origin) from None
        return cls(
            rules,
            name=str(raw.get("name", origin or "rules")),
            lang=raw.get("lang"),
            origin=origin,
            window=sizes,
        )

    @classmethod
    def from_yaml(cls, path: str | Path) -> RuleSet:
        origin = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"cannot read rule file: {exc.__class__.__name__}", path=origin) from None
        return cls.from_text(text, origin=origin)

    @classmethod
    def from_text(cls, text: str, *, origin: str | None = None) -> RuleSet:
        return _parsed(text, origin)


@lru_cache(maxsize=8)
def _parsed(text: str, origin: str | None) -> RuleSet:
    """Immutable, so one parse serves every model of a retraining round (~0.15 s each)."""
    return RuleSet.from_dict(load_yaml_text(text, origin=origin), origin=origin)


def _rule_window(raw: Any, *, rule: str, path: str | None) -> tuple[int, int] | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        raw = [raw.get("before"), raw.get("after")]
    if not isinstance(raw, list | tuple) or len(raw) != 2:
        raise RuleError("window must be [before, after] in characters", rule=rule, path=path)
    try:
        return int(raw[0]), int(raw[1])
    except (TypeError, ValueError):
        raise RuleError("window must be [before, after] in characters", rule=rule, path=path) from None


@cache
def _builtin(lang: str) -> RuleSet:
    resource = resources.files("deid_core").joinpath(f"data/rules/{lang}.yaml")
    return RuleSet.from_text(resource.read_text("utf-8"), origin=f"deid_core/data/rules/{lang}.yaml")


def load_rules(lang: str, path: str | Path | None = None) -> RuleSet:
    """The built-in rules for ``lang`` ("en" or "es"), or a user's YAML rule file."""
    if path is not None:
        return RuleSet.from_yaml(path)
    if lang not in BUILTIN_RULE_LANGUAGES:
        raise UnsupportedFormat(
            f"no built-in rules for language {lang!r} (have: {', '.join(BUILTIN_RULE_LANGUAGES)})"
        )
    return _builtin(lang)


def rule_report(
    docs: Iterable[Any],
    rules: RuleSet,
    *,
    label_map: Mapping[str, str] | None = None,
    progress: Any = None,
) -> dict[str, dict[str, Any]]:
    """Per rule: matches, strict precision and recall against the gold spans of its label.

    ``docs`` are gold ``Document``s. ``label_map`` maps rule labels to gold
    labels (unmapped labels keep their name). ``overlap_precision`` counts a
    match as right when it overlaps any gold span whatever its label: did the
    rule at least cover PHI? Use it to decide which rules deserve to override
    the CRF. ``progress(message, fraction)`` is called per document when the
    number of documents is known. Counts only; no text leaves this function.
    """
    docs = list(docs)
    mapping = dict(label_map or {})
    gold_count: dict[str, int] = {}
    stats = {r.name: {"matches": 0, "exact": 0, "overlap": 0} for r in rules.rules}
    for index, doc in enumerate(docs):
        gold_keys = {(s.start, s.end, s.label) for s in doc.spans}
        for span in doc.spans:
            gold_count[span.label] = gold_count.get(span.label, 0) + 1
        starts = sorted((s.start, s.end) for s in doc.spans)
        for rule in rules.rules:
            gold_label = mapping.get(rule.label, rule.label)
            entry = stats[rule.name]
            for span in rule.find(doc.text):
                entry["matches"] += 1
                if (span.start, span.end, gold_label) in gold_keys:
                    entry["exact"] += 1
                if any(a < span.end and span.start < b for a, b in starts):
                    entry["overlap"] += 1
        if progress is not None:
            progress("scoring rules", (index + 1) / len(docs))

    def ratio(num: int, den: int) -> float | None:
        return round(num / den, 4) if den else None

    report: dict[str, dict[str, Any]] = {}
    for rule in rules.rules:
        entry = stats[rule.name]
        gold_label = mapping.get(rule.label, rule.label)
        report[rule.name] = {
            "label": rule.label,
            "gold_label": gold_label,
            "matches": entry["matches"],
            "precision": ratio(entry["exact"], entry["matches"]),
            "recall": ratio(entry["exact"], gold_count.get(gold_label, 0)),
            "overlap_precision": ratio(entry["overlap"], entry["matches"]),
        }
    return report
