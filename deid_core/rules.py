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
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from deid_core.errors import RuleError, UnsupportedFormat
from deid_core.spans import Span, sort_spans
from deid_core.validators import VALIDATORS, Validator

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
_RULE_KEYS = {"name", "label", "pattern", "score", "validator", "group", "flags", "description"}


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
        return yaml.safe_load(text)
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

    def __post_init__(self) -> None:
        where = {"rule": self.name or "<unnamed>", "path": self.origin}
        if not self.name or not isinstance(self.name, str):
            raise RuleError("a rule needs a non-empty name", **where)
        if not self.label or not isinstance(self.label, str):
            raise RuleError("a rule needs a non-empty label", **where)
        pattern = self.pattern
        if isinstance(pattern, str):
            try:
                pattern = re.compile(pattern, self.flags)
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

    @property
    def source(self) -> str:
        return f"rule:{self.name}"

    @property
    def check(self) -> Validator | None:
        return VALIDATORS[self.validator] if self.validator is not None else None

    def find(self, text: str) -> Iterator[Span]:
        """Yield this rule's validated matches as spans (empty PHI groups are skipped)."""
        check = self.check
        group = self.group
        source = self.source
        for match in self.pattern.finditer(text):
            start, end = match.span(group)
            if start < 0 or start >= end:
                continue
            if check is not None and not check(text[start:end], match):
                continue
            yield Span(start, end, self.label, source, self.score)


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

    __slots__ = ("name", "lang", "rules", "origin", "_labels")

    def __init__(
        self,
        rules: Iterable[Rule],
        *,
        name: str = "rules",
        lang: str | None = None,
        origin: str | None = None,
    ) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.name = name
        self.lang = lang
        self.origin = origin
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

    def find(self, text: str) -> list[Span]:
        """All rules' matches, sorted; identical (start, end, label) keep the highest score.

        Overlapping matches of different rules are all returned: ``merge_spans``
        resolves them with the CRF's spans in one place.
        """
        best: dict[tuple[int, int, str], Span] = {}
        for rule in self.rules:
            for span in rule.find(text):
                key = (span.start, span.end, span.label)
                kept = best.get(key)
                if kept is None or span.score > kept.score:
                    best[key] = span
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
                )
            )
        return cls(
            rules,
            name=str(raw.get("name", origin or "rules")),
            lang=raw.get("lang"),
            origin=origin,
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
        return cls.from_dict(load_yaml_text(text, origin=origin), origin=origin)


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
