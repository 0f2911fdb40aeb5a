"""Transformations learned by TBED (paper 003), applied to the merged spans in order.

A transformation is data, as rules are: a trigger over the words, shapes
and labels of tokens around an anchor, and an action. Learned by
``deid_core.learning.tbed`` from the merged system's own out-of-fold errors,
saved as ``transforms.yaml`` in the model directory, editable by hand and
checked by ``deid-workbench rules check --transforms FILE``.

Anchors and positions:

* ``target: span`` (a span with ``label``): positions ``first``, ``last``
  (the span's first and last tokens), ``before1``, ``before2``, ``after1``,
  ``after2`` (tokens outside it);
* ``target: token`` (a token inside no span): ``token``, ``before1``,
  ``before2``, ``after1``, ``after2``.

Fields: ``word`` (lower-cased), ``shape`` (short shape, "Aa", "#-#"),
``label`` (the label of the span covering that token, ``O`` for none).
Missing tokens past the note's edges read as ``<edge>``.

Actions: ``relabel`` (to ``to``), ``delete``, ``extend_left``,
``extend_right`` (by one token, never into another span), ``shrink_left``,
``shrink_right`` (by one token, never below one), ``add`` (the token becomes
a span labelled ``to``). A changed or added span takes the source
``rule:<name>``, so the review app and the spans CSV say which
transformation made it.

Example::

    format_version: 1
    transforms:
    - name: tbed-001
      target: span
      label: NOMBRE_SUJETO_ASISTENCIA
      if: {before1.word: dr}
      do: relabel
      to: NOMBRE_PERSONAL_SANITARIO
      gain: 14        # net strict corrections on the training notes (informative)
      precision: 0.93 # share of its firings that fixed an error (score of added spans)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from deid_core.engine.features import short_shape
from deid_core.engine.rules import load_yaml_text
from deid_core.engine.tokenize import Token
from deid_core.errors import RuleError
from deid_core.spans import Span, sort_spans

FORMAT_VERSION = 1
SPAN_POSITIONS = ("first", "last", "before1", "before2", "after1", "after2")
TOKEN_POSITIONS = ("token", "before1", "before2", "after1", "after2")
FIELDS = ("word", "shape", "label")
SPAN_ACTIONS = ("relabel", "delete", "extend_left", "extend_right", "shrink_left", "shrink_right")
TOKEN_ACTIONS = ("add",)
EDGE = "<edge>"
OUT = "O"


@dataclass(frozen=True)
class Transform:
    name: str
    target: str  # "span" | "token"
    label: str | None  # the span's label (target "span")
    conditions: tuple[tuple[str, str, str], ...]  # (position, field, value), sorted
    action: str
    to: str | None = None  # new label for relabel / add
    gain: int = 0
    precision: float = 1.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "target": self.target}
        if self.label is not None:
            out["label"] = self.label
        out["if"] = {f"{p}.{f}": v for p, f, v in self.conditions}
        out["do"] = self.action
        if self.to is not None:
            out["to"] = self.to
        out["gain"] = int(self.gain)
        out["precision"] = round(float(self.precision), 4)
        return out

    @classmethod
    def from_dict(cls, raw: Any, origin: str, index: int) -> Transform:
        where = f"transform #{index + 1}"
        if not isinstance(raw, dict):
            raise RuleError(f"{where} is not a mapping", path=origin)
        name = str(raw.get("name") or f"transform-{index + 1}")

        def fail(message: str) -> RuleError:
            return RuleError(f"{where}: {message}", rule=name, path=origin)

        target = raw.get("target")
        if target not in ("span", "token"):
            raise fail(f"target must be 'span' or 'token', not {target!r}")
        positions = SPAN_POSITIONS if target == "span" else TOKEN_POSITIONS
        actions = SPAN_ACTIONS if target == "span" else TOKEN_ACTIONS
        label = raw.get("label")
        if target == "span" and (not isinstance(label, str) or not label):
            raise fail("a span transform needs the 'label' of the spans it applies to")
        if target == "token" and label is not None:
            raise fail("a token transform applies to tokens outside every span: drop 'label'")
        conds = raw.get("if") or {}
        if not isinstance(conds, dict) or not conds:
            raise fail("'if' must map at least one 'position.field' to a value")
        parsed = []
        for key, value in conds.items():
            pos, _, fld = str(key).partition(".")
            if pos not in positions:
                raise fail(f"unknown position {pos!r} (use one of {', '.join(positions)})")
            if fld not in FIELDS:
                raise fail(f"unknown field {fld!r} in {key!r} (use one of {', '.join(FIELDS)})")
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise fail(f"condition {key!r} needs a plain value")
            parsed.append((pos, fld, str(value)))
        action = raw.get("do")
        if action not in actions:
            raise fail(f"action must be one of {', '.join(actions)}, not {action!r}")
        to = raw.get("to")
        if action in ("relabel", "add"):
            if not isinstance(to, str) or not to:
                raise fail(f"action {action!r} needs 'to' (the new label)")
        elif to is not None:
            raise fail(f"action {action!r} takes no 'to'")
        try:
            gain = int(raw.get("gain", 0))
            precision = float(raw.get("precision", 1.0))
        except (TypeError, ValueError):
            raise fail("'gain' must be an integer and 'precision' a number") from None
        if not 0.0 <= precision <= 1.0:
            raise fail("'precision' must lie in [0, 1]")
        return cls(name, target, label, tuple(sorted(parsed)), action, to, gain, precision)


@dataclass(frozen=True)
class TransformSet:
    transforms: tuple[Transform, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len(self.transforms)

    def to_yaml(self) -> str:
        head = (
            "# Transformations learned by TBED (paper 003; docs/engine.md), applied in order\n"
            "# to the merged spans. Edit freely; check with: deid-workbench rules check --transforms FILE\n"
        )
        body: dict[str, Any] = {"format_version": FORMAT_VERSION}
        if self.meta:
            body["learned"] = self.meta
        body["transforms"] = [t.to_dict() for t in self.transforms]
        return head + yaml.safe_dump(body, allow_unicode=True, sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str, origin: str = "transforms") -> TransformSet:
        raw = load_yaml_text(text, origin=origin)
        if not isinstance(raw, dict):
            raise RuleError("a transform file is a mapping with 'format_version' and 'transforms'", path=origin)
        if raw.get("format_version") != FORMAT_VERSION:
            raise RuleError(
                f"unknown transform format_version {raw.get('format_version')!r} (this library reads"
                f" {FORMAT_VERSION})", path=origin,
            )
        items = raw.get("transforms") or []
        if not isinstance(items, list):
            raise RuleError("'transforms' must be a list", path=origin)
        out = [Transform.from_dict(item, origin, i) for i, item in enumerate(items)]
        names = [t.name for t in out]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise RuleError(f"duplicate transform names: {', '.join(dupes)}", path=origin)
        meta = raw.get("learned") if isinstance(raw.get("learned"), dict) else {}
        return cls(tuple(out), dict(meta))

    @classmethod
    def load(cls, path: str | Path) -> TransformSet:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"cannot read transform file ({type(exc).__name__})", path=str(path)) from None
        return cls.from_yaml(text, origin=str(path))

    def apply(self, tokens: Sequence[Token], spans: Sequence[Span]) -> list[Span]:
        """Run every transformation, in order, over the spans of one note.

        Words and shapes are read once per note; a transformation whose word or
        shape values do not occur in the note, or whose span label is on no
        span, is skipped without building a view (most are, on most notes).
        """
        current = sort_spans(spans)
        if not self.transforms or not tokens:
            return current
        words = [t.text.lower() for t in tokens]
        shapes = [short_shape(t.text) for t in tokens]
        present = {"word": {*words, EDGE}, "shape": {*shapes, EDGE}}
        for t in self.transforms:
            if t.target == "span" and not any(s.label == t.label for s in current):
                continue
            if any(f != "label" and v not in present[f] for _p, f, v in t.conditions):
                continue
            current = sort_spans(apply_one(t, TokenView(tokens, current, words, shapes)))
        return current


# -- reading a note through tokens --------------------------------------------------


class TokenView:
    """A note's tokens with the spans laid over them: what triggers read."""

    def __init__(
        self,
        tokens: Sequence[Token],
        spans: Sequence[Span],
        words: list[str] | None = None,
        shapes: list[str] | None = None,
    ) -> None:
        self.tokens = tokens
        self.spans = list(spans)
        self.words = words if words is not None else [t.text.lower() for t in tokens]
        self.shapes = shapes if shapes is not None else [short_shape(t.text) for t in tokens]
        self.labels = [OUT] * len(tokens)
        self.owner = [-1] * len(tokens)  # index of the span covering the token
        starts = [t.start for t in tokens]
        ends = [t.end for t in tokens]
        self.first: list[int] = []
        self.last: list[int] = []
        for k, s in enumerate(self.spans):
            i = bisect_right(ends, s.start)  # first token ending after the span starts
            j = bisect_right(starts, s.end - 1)  # tokens starting before the span ends
            self.first.append(i)
            self.last.append(j - 1)
            for m in range(i, j):
                self.labels[m] = s.label
                self.owner[m] = k

    def value(self, index: int, fld: str) -> str:
        if index < 0 or index >= len(self.tokens):
            return EDGE
        if fld == "word":
            return self.words[index]
        if fld == "shape":
            return self.shapes[index]
        return self.labels[index]

    def span_index(self, k: int, pos: str) -> int:
        a, b = self.first[k], self.last[k]
        return {"first": a, "last": b, "before1": a - 1, "before2": a - 2, "after1": b + 1, "after2": b + 2}[pos]

    @staticmethod
    def token_index(k: int, pos: str) -> int:
        return {"token": k, "before1": k - 1, "before2": k - 2, "after1": k + 1, "after2": k + 2}[pos]

    def free(self, index: int) -> bool:
        return 0 <= index < len(self.tokens) and self.owner[index] < 0


def matches(t: Transform, view: TokenView, k: int) -> bool:
    if t.target == "span":
        if view.spans[k].label != t.label or view.first[k] > view.last[k]:
            return False
        return all(view.value(view.span_index(k, p), f) == v for p, f, v in t.conditions)
    return view.owner[k] < 0 and all(view.value(view.token_index(k, p), f) == v for p, f, v in t.conditions)


def act(t: Transform, view: TokenView, k: int) -> Span | None:
    """The span that replaces span ``k`` (target span) or is added at token ``k``; None deletes."""
    source = f"rule:{t.name}"
    if t.target == "token":
        tok = view.tokens[k]
        return Span(tok.start, tok.end, str(t.to), source, t.precision)
    s = view.spans[k]
    a, b = view.first[k], view.last[k]
    toks = view.tokens
    if t.action == "relabel":
        return Span(s.start, s.end, str(t.to), source, s.score)
    if t.action == "delete":
        return None
    if t.action == "extend_left" and view.free(a - 1):
        return Span(toks[a - 1].start, s.end, s.label, source, s.score)
    if t.action == "extend_right" and view.free(b + 1):
        return Span(s.start, toks[b + 1].end, s.label, source, s.score)
    if t.action == "shrink_left" and b > a:
        return Span(toks[a + 1].start, s.end, s.label, source, s.score)
    if t.action == "shrink_right" and b > a:
        return Span(s.start, toks[b - 1].end, s.label, source, s.score)
    return s


def apply_one(t: Transform, view: TokenView) -> list[Span]:
    """One transformation over a whole note: every anchor is tested on the note as it was."""
    if t.target == "span":
        out = []
        for k, s in enumerate(view.spans):
            new = act(t, view, k) if matches(t, view, k) else s
            if new is not None:
                out.append(new)
        # Two neighbours extended into the same free token: keep the first.
        out.sort(key=lambda s: (s.start, s.end))
        kept: list[Span] = []
        for s in out:
            if kept and s.start < kept[-1].end:
                continue
            kept.append(s)
        return kept
    added = [act(t, view, k) for k in range(len(view.tokens)) if matches(t, view, k)]
    return [*view.spans, *(s for s in added if s is not None)]
