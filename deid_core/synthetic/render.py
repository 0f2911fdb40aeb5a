"""Render one note from its kind's templates: title, header block, sections, footer."""

from __future__ import annotations

from collections.abc import Sequence

from deid_core.spans import Span
from deid_core.synthetic.slots import SLOTS, Note, Writer
from deid_core.synthetic.templates import Entry, Kind, Parsed, Section, Templates


def render(parsed: Parsed, note: Note, w: Writer, t: Templates) -> None:
    for item in parsed:
        if isinstance(item, str):
            w.lit(item)
            continue
        name, fmt = item
        fn = SLOTS.get(name)
        if fn is not None:
            fn(note, fmt, w, t)
            continue
        # A capitalised slot ({He}, {Dx}, {Sexo}) starts a sentence.
        sub = Writer(w.labels)
        SLOTS[name[0].lower() + name[1:]](note, fmt, sub, t)
        text = sub.text()
        for s in sub.spans:
            w.spans.append(Span(s.start + w.pos, s.end + w.pos, s.label))
        w.lit(text[:1].upper() + text[1:])


def _render_entries(entries: Sequence[Entry], note: Note, w: Writer, t: Templates) -> bool:
    wrote = False
    for e in entries:
        if e.p < 1.0 and note.rng.random() >= e.p:
            continue
        if wrote:
            w.lit("\n")
        render(note.rng.choice(e.choices), note, w, t)
        wrote = True
    return wrote


def _join(items: Sequence[Parsed], sep: str, note: Note, w: Writer, t: Templates) -> None:
    for i, it in enumerate(items):
        if i:
            w.lit(sep)
        render(it, note, w, t)


def render_section(s: Section, note: Note, w: Writer, t: Templates) -> None:
    rng = note.rng
    k = min(rng.randint(*s.n), len(s.items))
    items = ([rng.choice(s.first)] if s.first else []) + rng.sample(s.items, k)
    title = rng.choice(s.titles) if s.titles else None
    style = s.style
    if style == "inline":
        if title:
            render(title, note, w, t)
            w.lit(" ")
        _join(items, " ", note, w, t)
        return
    if title:
        render(title, note, w, t)
        w.lit(" " if style == "prose" and rng.random() < s.inline_p else "\n")
    if style == "prose":
        _join(items, " ", note, w, t)
        return
    if style == "paragraphs":
        _join(items, "\n", note, w, t)
        return
    bullet = {"list": rng.choice(["- ", "* ", "", "- "]), "numbered": "#", "lines": ""}[style]
    for i, it in enumerate(items):
        if i:
            w.lit("\n")
        w.lit(f"{i + 1}. " if bullet == "#" else bullet)
        render(it, note, w, t)


def render_note(kind: Kind, note: Note, t: Templates) -> tuple[str, list[Span]]:
    w = Writer(t.labels)
    sep = kind.block_sep
    render(note.rng.choice(kind.titles), note, w, t)
    w.lit(sep)
    if _render_entries(kind.header, note, w, t):
        w.lit(sep)
    for name, p in kind.sections:
        if p < 1.0 and note.rng.random() >= p:
            continue
        render_section(t.sections[name], note, w, t)
        w.lit(sep)
    _render_entries(kind.footer, note, w, t)
    w.lit("\n")
    return w.text(), w.spans
