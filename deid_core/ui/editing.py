"""The reviewer's editing model: pure functions over an immutable edit state.

Every edit returns a new ``EditState`` whose undo stack holds the previous
layer, so the page keeps one object per document in ``st.session_state`` and
unsaved work survives Streamlit reruns. Edits snap to token boundaries: a PHI
span made of half a token could never be learned by the CRF nor fully redacted.
Spans made by a person carry ``source="human:<user>"`` and score 1.0.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from deid_core.errors import DeidError
from deid_core.spans import Span, sort_spans

#: How many undo steps are kept per document.
UNDO_DEPTH = 100


class EditRejected(DeidError, ValueError):
    """An edit that cannot be applied (no token selected, no span there)."""


class TokenLike(Protocol):
    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True, slots=True)
class EditState:
    """The layer being edited and the layers it replaced, most recent last."""

    spans: tuple[Span, ...]
    undo_stack: tuple[tuple[Span, ...], ...] = ()
    origin: tuple[Span, ...] = field(default=())  # the layer the editor was opened on

    @classmethod
    def start(cls, spans: Iterable[Span]) -> EditState:
        layer = tuple(sort_spans(spans))
        return cls(layer, (), layer)

    @property
    def can_undo(self) -> bool:
        return bool(self.undo_stack)

    @property
    def dirty(self) -> bool:
        return {s.key for s in self.spans} != {s.key for s in self.origin}

    def push(self, spans: Iterable[Span]) -> EditState:
        layer = tuple(sort_spans(spans))
        if layer == self.spans:
            return self
        stack = (self.undo_stack + (self.spans,))[-UNDO_DEPTH:]
        return EditState(layer, stack, self.origin)


def undo(state: EditState) -> EditState:
    if not state.undo_stack:
        return state
    return EditState(state.undo_stack[-1], state.undo_stack[:-1], state.origin)


def human(author: str) -> str:
    return f"human:{author}"


def snap_to_tokens(tokens: Sequence[TokenLike], start: int, end: int) -> tuple[int, int] | None:
    """Widen ``[start, end)`` to whole tokens; ``None`` when it touches no token.

    A selection that only covers whitespace touches no token. Tokens must be in
    text order (as ``tokenize`` returns them).
    """
    if end <= start:
        return None
    ends = [t.end for t in tokens]
    starts = [t.start for t in tokens]
    i = bisect_right(ends, start)  # first token ending after start
    j = bisect_left(starts, end)  # first token starting at or after end
    if i >= j:
        return None
    return tokens[i].start, tokens[j - 1].end


def _find(state: EditState, start: int, end: int) -> Span:
    for span in state.spans:
        if span.start == start and span.end == end:
            return span
    raise EditRejected(f"no span at {start}..{end}")


def add_span(
    state: EditState,
    tokens: Sequence[TokenLike],
    start: int,
    end: int,
    label: str,
    author: str,
) -> EditState:
    """Label a selection; spans it overlaps are replaced by the new one."""
    snapped = snap_to_tokens(tokens, start, end)
    if snapped is None:
        raise EditRejected(f"selection {start}..{end} covers no token")
    new = Span(snapped[0], snapped[1], label, human(author), 1.0)
    kept = [s for s in state.spans if not s.overlaps(new)]
    return state.push(kept + [new])


def delete_span(state: EditState, start: int, end: int) -> EditState:
    target = _find(state, start, end)
    return state.push(s for s in state.spans if s is not target)


def relabel_span(state: EditState, start: int, end: int, label: str, author: str) -> EditState:
    target = _find(state, start, end)
    if target.label == label:
        return state
    new = Span(target.start, target.end, label, human(author), 1.0)
    return state.push([s for s in state.spans if s is not target] + [new])


def extend_span(
    state: EditState,
    tokens: Sequence[TokenLike],
    start: int,
    end: int,
    direction: str,
    author: str,
) -> EditState:
    """Grow a span by one token (``direction`` "next" or "prev"), absorbing what it meets."""
    target = _find(state, start, end)
    if direction == "next":
        nxt = [t for t in tokens if t.start >= target.end]
        if not nxt:
            raise EditRejected(f"span {start}..{end} has no next token")
        new_start, new_end = target.start, nxt[0].end
    elif direction == "prev":
        prev = [t for t in tokens if t.end <= target.start]
        if not prev:
            raise EditRejected(f"span {start}..{end} has no previous token")
        new_start, new_end = prev[-1].start, target.end
    else:
        raise ValueError(f"direction must be 'next' or 'prev', got {direction!r}")
    new = Span(new_start, new_end, target.label, human(author), 1.0)
    kept = [s for s in state.spans if s is not target and not s.overlaps(new)]
    return state.push(kept + [new])


def shrink_span(
    state: EditState,
    tokens: Sequence[TokenLike],
    start: int,
    end: int,
    side: str,
    author: str,
) -> EditState:
    """Drop the first ("start") or last ("end") token of a span of two or more tokens."""
    target = _find(state, start, end)
    inside = [t for t in tokens if t.start >= target.start and t.end <= target.end]
    if len(inside) < 2:
        raise EditRejected(f"span {start}..{end} has a single token; delete it instead")
    if side == "start":
        new_start, new_end = inside[1].start, target.end
    elif side == "end":
        new_start, new_end = target.start, inside[-2].end
    else:
        raise ValueError(f"side must be 'start' or 'end', got {side!r}")
    new = Span(new_start, new_end, target.label, human(author), 1.0)
    return state.push([s for s in state.spans if s is not target] + [new])


# --- "apply to all identical strings" -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Change:
    """One planned edit of an apply-to-all, shown in the preview before it is applied."""

    doc_id: str
    start: int
    end: int
    label: str
    kind: str  # "add" | "remove"
    replaces: tuple[Span, ...] = ()  # spans an "add" overlaps and will replace


@dataclass(frozen=True, slots=True)
class Target:
    """A document an apply-to-all may touch: its text, tokens and current layer."""

    doc_id: str
    text: str
    tokens: Sequence[TokenLike]
    spans: Sequence[Span]


def find_identical(text: str, tokens: Sequence[TokenLike], needle: str) -> list[tuple[int, int]]:
    """Exact occurrences of ``needle`` that start and end on token boundaries.

    Boundaries matter: "Ann" must not match inside "Annual".
    """
    if not needle.strip():
        return []
    starts = {t.start for t in tokens}
    ends = {t.end for t in tokens}
    out = []
    pos = text.find(needle)
    while pos != -1:
        end = pos + len(needle)
        if pos in starts and end in ends:
            out.append((pos, end))
        pos = text.find(needle, pos + 1)
    return out


def plan_apply_all(
    targets: Sequence[Target], needle: str, label: str, action: str
) -> list[Change]:
    """What "apply to all identical strings" would change, document by document.

    ``add``: every token-aligned occurrence not already a span with this label
    becomes one (replacing what it overlaps). ``remove``: every span whose text
    is ``needle`` and whose label is ``label`` goes.
    """
    if action not in ("add", "remove"):
        raise ValueError(f"action must be 'add' or 'remove', got {action!r}")
    changes: list[Change] = []
    for target in targets:
        if action == "remove":
            for span in sort_spans(target.spans):
                if span.label == label and target.text[span.start : span.end] == needle:
                    changes.append(Change(target.doc_id, span.start, span.end, label, "remove"))
            continue
        for start, end in find_identical(target.text, target.tokens, needle):
            if any(s.start == start and s.end == end and s.label == label for s in target.spans):
                continue
            probe = Span(start, end, label)
            hit = tuple(s for s in target.spans if s.overlaps(probe))
            changes.append(Change(target.doc_id, start, end, label, "add", hit))
    return changes


def apply_changes(state: EditState, changes: Iterable[Change], author: str) -> EditState:
    """Apply one document's planned changes as a single undo step."""
    spans = list(state.spans)
    for change in changes:
        probe = Span(change.start, change.end, change.label)
        if change.kind == "remove":
            spans = [s for s in spans if s.key != probe.key]
        else:
            spans = [s for s in spans if not s.overlaps(probe)]
            spans.append(Span(change.start, change.end, change.label, human(author), 1.0))
    return state.push(spans)


def diff_layers(before: Sequence[Span], after: Sequence[Span]) -> dict[str, list[Span]]:
    """Spans added and removed between two layers (by key), for the save summary."""
    bk = {s.key for s in before}
    ak = {s.key for s in after}
    return {
        "added": sort_spans(s for s in after if s.key not in bk),
        "removed": sort_spans(s for s in before if s.key not in ak),
    }


# --- actions sent by the review component ----------------------------------------------

EDIT_ACTIONS = ("add", "delete", "relabel", "extend", "shrink", "undo")
NAV_ACTIONS = ("accept", "skip")


def apply_action(
    state: EditState,
    action: dict[str, object],
    tokens: Sequence[TokenLike],
    author: str,
    labels: Sequence[str],
) -> EditState:
    """Apply one edit the browser sent; navigation actions are the page's business.

    The payload comes from the browser, so it is checked like any input: known
    type, integer offsets, a label of the project's scheme.
    """
    kind = action.get("type")
    if kind not in EDIT_ACTIONS:
        raise EditRejected(f"unknown edit action {kind!r}")
    if kind == "undo":
        return undo(state)

    def offset(name: str) -> int:
        value = action.get(name)
        if type(value) is not int or value < 0:
            raise EditRejected(f"action {kind!r} needs an integer {name!r}")
        return value

    start, end = offset("start"), offset("end")
    if kind in ("add", "relabel"):
        label = action.get("label")
        if not isinstance(label, str) or label not in labels:
            raise EditRejected(f"action {kind!r} has a label outside the project's scheme")
        if kind == "add":
            return add_span(state, tokens, start, end, label, author)
        return relabel_span(state, start, end, label, author)
    if kind == "delete":
        return delete_span(state, start, end)
    if kind == "extend":
        return extend_span(state, tokens, start, end, str(action.get("direction")), author)
    return shrink_span(state, tokens, start, end, str(action.get("side")), author)


# --- a whole layer edited in the browser ----------------------------------------------

#: What the browser may send as a layer: at most this many spans.
MAX_BROWSER_SPANS = 20_000


def layer_from_browser(
    state: EditState,
    raw: object,
    tokens: Sequence[TokenLike],
    text_length: int,
    author: str,
    labels: Sequence[str],
) -> EditState:
    """The layer the review component edited locally, checked like any other input.

    Every span must start and end on token boundaries inside the note, overlap
    no other span and carry a label of the project's scheme (unless it is a span
    the server sent as is, such as an imported one). Provenance is not
    taken from the browser: a span identical (offsets and label) to one of the
    current layer or of the layer the note was opened on keeps that span's
    source and score, every other span is the reviewer's (``human:<author>``,
    score 1.0), so a forged source or score cannot reach the store. A span the
    browser marks as confirmed by a person (source ``human:<author>``) becomes
    the reviewer's too. The result is one undo step on ``state``.
    """
    if not isinstance(raw, list) or len(raw) > MAX_BROWSER_SPANS:
        raise EditRejected("the editor sent no span list")
    starts = {t.start for t in tokens}
    ends = {t.end for t in tokens}
    allowed = set(labels)
    known = {s.key: s for s in (*state.origin, *state.spans)}
    mine = human(author)
    out: list[Span] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise EditRejected(f"span {i} is not an object")
        start, end, label = item.get("s"), item.get("e"), item.get("l")
        if type(start) is not int or type(end) is not int or not 0 <= start < end <= text_length:
            raise EditRejected(f"span {i} has offsets outside the note ({start!r}..{end!r})")
        if start not in starts or end not in ends:
            raise EditRejected(f"span {i} at {start}..{end} does not start and end on tokens")
        previous = known.get((start, end, label)) if isinstance(label, str) else None
        if previous is None and (not isinstance(label, str) or label not in allowed):
            # an imported span may carry a label the scheme lacks; a new one may not
            raise EditRejected(f"span {i} at {start}..{end} has a label outside the project's scheme")
        if previous is not None and item.get("src") != mine:
            out.append(previous)
        else:
            out.append(Span(start, end, label, mine, 1.0))
    layer = sort_spans(out)
    for a, b in zip(layer, layer[1:]):
        if b.start < a.end:
            raise EditRejected(f"spans at {a.start}..{a.end} and {b.start}..{b.end} overlap")
    return state.push(layer)
