"""What reviewers did to each rule's spans, which rules to demote, and list suggestions.

A rule that tags well on the notes a model was trained on can still tag
badly on a project's own notes (a local identifier format that looks like a
date, a ward name that looks like a surname). The reviewers' decisions say
so: every predicted span of a rule is either kept as it was, given another
label, given other boundaries, or deleted. Counting those per rule gives its
precision on the project's own notes; a rule below the project's threshold
loses the right to tag on its own (it stays a CRF feature), which is the
demotion ``deid_core.store.rule_feedback`` records and undoes.

Everything here is pure: the store reads the pairs, the UI shows the result.
Suggestions carry note text (the strings themselves), so they are returned
only to an authorised caller and never logged or audited.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deid_core.settings import SettingsPolicy
from deid_core.spans import Span

RULE_PREFIX = "rule:"
OUTCOMES = ("kept", "relabelled", "reshaped", "deleted")

__all__ = [
    "OUTCOMES",
    "RuleFeedbackPolicy",
    "RuleStats",
    "ListSuggestion",
    "classify",
    "rule_name",
    "rule_stats",
    "demotion_candidates",
    "suggest_lists",
]


def rule_name(source: str) -> str | None:
    """``"rule:phone_us"`` -> ``"phone_us"``; any other source -> None."""
    return source[len(RULE_PREFIX):] if source.startswith(RULE_PREFIX) else None


def classify(predicted: Span, final: Sequence[Span]) -> str:
    """What the reviewer did to one predicted span, judged from the final spans of its note.

    ``kept``: a final span with the same offsets and label; ``relabelled``:
    same offsets, another label; ``reshaped``: an overlapping final span with
    other boundaries; ``deleted``: no final span overlaps it. The first that
    applies wins, in that order.
    """
    overlapping = [f for f in final if f.start < predicted.end and predicted.start < f.end]
    if not overlapping:
        return "deleted"
    same = [f for f in overlapping if f.start == predicted.start and f.end == predicted.end]
    if any(f.label == predicted.label for f in same):
        return "kept"
    return "relabelled" if same else "reshaped"


@dataclass
class RuleStats:
    """Reviewer decisions on one rule's predicted spans; ``labels`` counts the labels it tagged."""

    rule: str
    kept: int = 0
    relabelled: int = 0
    reshaped: int = 0
    deleted: int = 0
    notes: int = 0
    labels: Counter[str] = field(default_factory=Counter)

    @property
    def decisions(self) -> int:
        return self.kept + self.relabelled + self.reshaped + self.deleted

    @property
    def precision(self) -> float | None:
        """Strict precision: kept / decisions. A relabelled or reshaped span is wrong as
        tagged, and a standalone rule's span wins every overlap with the CRF, so a rule
        that is often reshaped or relabelled overrides a model that could do better."""
        return self.kept / self.decisions if self.decisions else None

    @property
    def overlap_precision(self) -> float | None:
        """The share of its spans that at least pointed at PHI (all but the deleted)."""
        return (self.decisions - self.deleted) / self.decisions if self.decisions else None

    def to_row(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "label": ", ".join(sorted(self.labels)) or None,
            "kept": self.kept, "relabelled": self.relabelled, "reshaped": self.reshaped,
            "deleted": self.deleted, "decisions": self.decisions, "notes": self.notes,
            "precision": None if self.precision is None else round(self.precision, 4),
            "overlap_precision": None if self.overlap_precision is None else round(self.overlap_precision, 4),
        }


def rule_stats(pairs: Iterable[tuple[Sequence[Span], Sequence[Span]]]) -> dict[str, RuleStats]:
    """Per rule (by name): what reviewers did to its spans, over ``(predicted, final)`` per note.

    ``predicted`` is the model output the reviewer started from (spans whose
    source is ``rule:<name>`` belong to that rule; other sources are ignored);
    ``final`` is the reviewed layer, rejected predictions excluded. Counts only.
    """
    out: dict[str, RuleStats] = {}
    for predicted, final in pairs:
        seen: set[str] = set()
        for span in predicted:
            name = rule_name(span.source)
            if name is None:
                continue
            entry = out.setdefault(name, RuleStats(name))
            outcome = classify(span, final)
            setattr(entry, outcome, getattr(entry, outcome) + 1)
            entry.labels[span.label] += 1
            if name not in seen:
                seen.add(name)
                entry.notes += 1
    return dict(sorted(out.items()))


@dataclass(frozen=True)
class RuleFeedbackPolicy(SettingsPolicy):
    """Project settings for rule feedback; stored in the project's settings JSON.

    A rule is demoted when its strict precision on reviewed notes is below
    ``rule_min_precision`` after at least ``rule_min_decisions`` reviewer
    decisions (fewer are too noisy to take a rule away). A string is
    suggested for a list once reviewers deleted or added it in at least
    ``list_suggestion_min_notes`` notes.
    """

    rule_min_precision: float = 0.5
    rule_min_decisions: int = 20
    list_suggestion_min_notes: int = 3

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.rule_min_precision) <= 1.0:
            raise ValueError(f"rule_min_precision must be within 0..1, got {self.rule_min_precision}")
        if int(self.rule_min_decisions) < 1:
            raise ValueError(f"rule_min_decisions must be >= 1, got {self.rule_min_decisions}")
        if int(self.list_suggestion_min_notes) < 1:
            raise ValueError(f"list_suggestion_min_notes must be >= 1, got {self.list_suggestion_min_notes}")

    def below(self, stats: RuleStats) -> bool:
        """Enough decisions, and precision under the threshold."""
        return (stats.decisions >= self.rule_min_decisions and stats.precision is not None
                and stats.precision < self.rule_min_precision)


def demotion_candidates(
    stats: Mapping[str, RuleStats],
    policy: RuleFeedbackPolicy,
    *,
    demoted: Iterable[str] = (),
    restored: Iterable[str] = (),
) -> list[str]:
    """Rules to demote now: below the threshold, not demoted yet, and not restored by an
    admin (an undo is a decision the automatic check must not overturn)."""
    skip = set(demoted) | set(restored)
    return [name for name, s in stats.items() if name not in skip and policy.below(s)]


# --------------------------------------------------------------------------- list suggestions

_SPACES = re.compile(r"\s+")


def normalise(text: str) -> str:
    """The key strings are compared by: case-folded, runs of white space made one space."""
    return _SPACES.sub(" ", text).strip().casefold()


@dataclass(frozen=True)
class ListSuggestion:
    """A string for the allow-list (never tag: ``kind="allow"``) or the deny-list (always
    tag with ``label``: ``kind="deny"``), with how often reviewers acted on it.

    ``text`` is note text: show it to an authorised admin only, never log it.
    """

    kind: str
    text: str
    label: str | None
    notes: int
    occurrences: int


def suggest_lists(
    notes: Iterable[tuple[str, Sequence[Span], Sequence[Span]]], *, min_notes: int = 3
) -> list[ListSuggestion]:
    """Allow- and deny-list suggestions from ``(text, predicted, final)`` per reviewed note.

    Allow (do not tag): a string whose predicted spans reviewers deleted in at
    least ``min_notes`` notes, and which no final span anywhere holds (had a
    reviewer kept it once, it is PHI somewhere and must not be allowed).
    Deny (always tag): a string reviewers added (a final span no predicted
    span overlaps) in at least ``min_notes`` notes and never deleted, with the
    label they gave it most often. Counting notes rather than occurrences
    keeps one long note from making a suggestion on its own. Strings compare
    case-folded with white space collapsed; the most frequent written form is
    shown. Sorted by notes, most first.
    """
    deleted_notes: dict[str, set[int]] = defaultdict(set)
    added_notes: dict[str, set[int]] = defaultdict(set)
    deleted_n: Counter[str] = Counter()
    added_n: Counter[str] = Counter()
    added_labels: dict[str, Counter[str]] = defaultdict(Counter)
    forms: dict[str, Counter[str]] = defaultdict(Counter)
    in_final: set[str] = set()
    for index, (text, predicted, final) in enumerate(notes):
        for f in final:
            in_final.add(normalise(text[f.start:f.end]))
        for p in predicted:
            if classify(p, final) == "deleted":
                form = text[p.start:p.end]
                key = normalise(form)
                if key:
                    deleted_notes[key].add(index)
                    deleted_n[key] += 1
                    forms[key][form] += 1
        for f in final:
            if not any(p.start < f.end and f.start < p.end for p in predicted):
                form = text[f.start:f.end]
                key = normalise(form)
                if key:
                    added_notes[key].add(index)
                    added_n[key] += 1
                    added_labels[key][f.label] += 1
                    forms[key][form] += 1
    out: list[ListSuggestion] = []
    for key, where in deleted_notes.items():
        if len(where) >= min_notes and key not in in_final:
            out.append(ListSuggestion("allow", forms[key].most_common(1)[0][0], None, len(where),
                                      deleted_n[key]))
    for key, where in added_notes.items():
        if len(where) >= min_notes and key not in deleted_notes:
            label = added_labels[key].most_common(1)[0][0]
            out.append(ListSuggestion("deny", forms[key].most_common(1)[0][0], label, len(where),
                                      added_n[key]))
    return sorted(out, key=lambda s: (-s.notes, -s.occurrences, s.kind, normalise(s.text)))
