"""Note templates as data: parse, load and check ``deid_core/data/synthetic/<lang>.yaml``.

A template is plain text with slots ``{name}`` or ``{name.format}``. Loading
checks every slot against the slot registry and every PHI slot's role against
the language's label scheme, so a typo fails at load time and names its kind or
section instead of surfacing halfway through a 20,000-note corpus.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from deid_core.errors import UnsupportedFormat
from deid_core.schemes import load_scheme

SUPPORTED_LANGUAGES = ("en", "es")

_SLOT_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([a-z0-9_]+))?\}")

Parsed = tuple[Any, ...]  # items: str (literal) or (slot, format-or-None)


def parse(template: str) -> Parsed:
    out: list[Any] = []
    pos = 0
    for m in _SLOT_RE.finditer(template):
        if m.start() > pos:
            out.append(template[pos : m.start()])
        out.append((m.group(1), m.group(2)))
        pos = m.end()
    if pos < len(template):
        out.append(template[pos:])
    return tuple(out)


@dataclass(frozen=True)
class Section:
    name: str
    titles: tuple[Parsed, ...]
    style: str  # prose | inline | lines | list | numbered
    n: tuple[int, int]
    first: tuple[Parsed, ...]
    items: tuple[Parsed, ...]
    inline_p: float  # prose: chance that text follows the title on the same line


@dataclass(frozen=True)
class Entry:
    p: float
    choices: tuple[Parsed, ...]


@dataclass(frozen=True)
class Kind:
    name: str
    weight: float
    titles: tuple[Parsed, ...]
    header: tuple[Entry, ...]
    sections: tuple[tuple[str, float], ...]
    footer: tuple[Entry, ...]
    block_sep: str  # between title, header, sections and footer
    default: bool = True  # part of the mix when no kinds are asked for


@dataclass(frozen=True)
class Templates:
    lang: str
    scheme: str
    labels: dict[str, str]  # slot role -> label of ``scheme``
    kinds: dict[str, Kind]
    sections: dict[str, Section]
    lex: dict[str, Any]


def _entries(raw: Any, where: str) -> tuple[Entry, ...]:
    out = []
    for i, item in enumerate(raw or []):
        p = 1.0
        if isinstance(item, dict):
            p = float(item.get("p", 1.0))
            item = item.get("t")
        choices = [item] if isinstance(item, str) else item
        if not choices or not all(isinstance(c, str) for c in choices):
            raise UnsupportedFormat(f"synthetic templates: {where} entry {i} has no template")
        out.append(Entry(p, tuple(parse(c) for c in choices)))
    return tuple(out)


@lru_cache(maxsize=4)
def load_templates(lang: str = "en") -> Templates:
    """Read and check one language's templates (cached)."""
    if lang not in SUPPORTED_LANGUAGES:
        raise UnsupportedFormat(
            f"synthetic notes: unsupported language {lang!r}; use one of {', '.join(SUPPORTED_LANGUAGES)}"
        )
    raw = yaml.safe_load(
        resources.files("deid_core").joinpath(f"data/synthetic/{lang}.yaml").read_text("utf-8")
    )
    sections = {}
    for name, s in raw["sections"].items():
        sections[name] = Section(
            name=name,
            titles=tuple(parse(t) for t in s.get("title", [])),
            style=s.get("style", "prose"),
            n=(int(s["n"][0]), int(s["n"][1])),
            first=tuple(parse(t) for t in s.get("first", [])),
            items=tuple(parse(t) for t in s.get("items", [])),
            inline_p=float(s.get("inline_p", 0.3)),
        )
    kinds = {}
    for name, k in raw["kinds"].items():
        secs = []
        for s in k["sections"]:
            sname, p = (s["s"], float(s.get("p", 1.0))) if isinstance(s, dict) else (s, 1.0)
            if sname not in sections:
                raise UnsupportedFormat(f"synthetic templates: kind {name} uses unknown section {sname!r}")
            secs.append((sname, p))
        kinds[name] = Kind(
            name=name,
            weight=float(k.get("weight", 1.0)),
            titles=tuple(parse(t) for t in k["title"]),
            header=_entries(k.get("header"), f"{name}.header"),
            sections=tuple(secs),
            footer=_entries(k.get("footer"), f"{name}.footer"),
            block_sep=str(k.get("block_sep", "\n\n")),
            default=bool(k.get("default", True)),
        )
    scheme = str(raw["scheme"])
    templates = Templates(lang, scheme, dict(raw.get("labels") or {}), kinds, sections, raw["lexicon"])
    check_templates(templates)
    return templates


def iter_parsed(t: Templates) -> Iterator[tuple[str, Parsed]]:
    for k in t.kinds.values():
        for p in k.titles:
            yield f"{k.name}.title", p
        for part, entries in (("header", k.header), ("footer", k.footer)):
            for e in entries:
                for p in e.choices:
                    yield f"{k.name}.{part}", p
    for s in t.sections.values():
        for p in (*s.titles, *s.first, *s.items):
            yield f"section {s.name}", p


def check_templates(t: Templates) -> None:
    """Fail on unknown slots or formats, and on PHI roles the scheme cannot express."""
    from deid_core.synthetic.slots import SLOT_FORMATS, SLOT_ROLES, SLOTS, slot_key

    names = set(load_scheme(t.scheme).names)
    for where, parsed in iter_parsed(t):
        for item in parsed:
            if not isinstance(item, tuple):
                continue
            name, fmt = item
            key = slot_key(name)
            if key not in SLOTS:
                raise UnsupportedFormat(f"synthetic templates ({t.lang}): {where} uses unknown slot {name!r}")
            if fmt is not None and fmt not in SLOT_FORMATS.get(key, ()):
                raise UnsupportedFormat(
                    f"synthetic templates ({t.lang}): {where} uses unknown format {name}.{fmt}"
                )
            role = SLOT_ROLES.get(key)
            if role is not None and t.labels.get(role, role) not in names:
                raise UnsupportedFormat(
                    f"synthetic templates ({t.lang}): {where} slot {name!r} writes role {role},"
                    f" which has no label in scheme {t.scheme}"
                )


# ---------------------------------------------------------------- template families

FAMILIES = ("all", "train", "dev")
_DEV_SHARE = 4  # about one worded template in four goes to the dev family


def has_wording(parsed: Parsed) -> bool:
    """Whether a template carries words of its own (``"{med}"`` or ``"{dx}."`` do not)."""
    return any(isinstance(i, str) and re.search(r"[A-Za-z]{2}", i) for i in parsed)


def template_key(parsed: Parsed) -> str:
    return hashlib.sha1(repr(parsed).encode("utf-8")).hexdigest()


def _lists(t: Templates) -> Iterator[tuple[Parsed, ...]]:
    """Every list of alternatives, in file order."""
    for k in t.kinds.values():
        yield k.titles
        for e in (*k.header, *k.footer):
            yield e.choices
    for sec in t.sections.values():
        yield sec.titles
        yield sec.first
        yield sec.items


@lru_cache(maxsize=4)
def family_assignment(lang: str) -> dict[str, str]:
    """Template key -> ``train`` or ``dev``, one family per wording across the whole file.

    A wording goes to dev when its hash says so (about one in four), so adding
    a template moves no other one. A wording that occurs in a single list may
    be moved so that the list has both a train and a dev alternative when it
    has two or more; a wording shared by several lists keeps its hash's
    family. Templates without wording of their own (``"{med}"``) are shared by
    both families: they carry no phrasing a model could memorise.
    """
    t = load_templates(lang)
    lists = [tuple(dict.fromkeys(template_key(p) for p in ch if has_wording(p))) for ch in _lists(t)]
    seen: dict[str, int] = {}
    for keys in lists:
        for k in keys:
            seen[k] = seen.get(k, 0) + 1
    family = {k: "dev" if int(k[:8], 16) % _DEV_SHARE == 0 else "train" for k in seen}
    for keys in lists:
        if len(keys) < 2:
            continue
        movable = sorted(k for k in keys if seen[k] == 1)
        fams = {family[k] for k in keys}
        if "dev" not in fams and movable:
            family[movable[0]] = "dev"
        elif "train" not in fams and movable:
            family[movable[-1]] = "train"
    return family


def _pick(choices: Sequence[Parsed], family: str, assignment: dict[str, str]) -> tuple[Parsed, ...]:
    return tuple(p for p in choices if not has_wording(p) or assignment[template_key(p)] == family)


@lru_cache(maxsize=8)
def family_templates(lang: str, family: str) -> Templates:
    """The templates of one family: ``all`` (every template), ``train`` or ``dev``.

    The dev family shares no worded template with the train family, so a model
    trained on one and scored on the other is measured on phrasings it has not
    seen (slot values and the code-built shapes of dates, phones and names are
    shared: they are what a model should learn).
    """
    t = load_templates(lang)
    if family not in FAMILIES:
        raise UnsupportedFormat(f"unknown template family {family!r}; use one of {', '.join(FAMILIES)}")
    if family == "all":
        return t
    assignment = family_assignment(lang)

    def entries(es: tuple[Entry, ...]) -> tuple[Entry, ...]:
        out = []
        for e in es:
            picked = _pick(e.choices, family, assignment)
            if picked:
                out.append(Entry(e.p, picked))
        return tuple(out)

    sections = {
        name: replace(s, titles=_pick(s.titles, family, assignment), first=_pick(s.first, family, assignment),
                      items=_pick(s.items, family, assignment))
        for name, s in t.sections.items()
    }
    kinds = {}
    for name, k in t.kinds.items():
        titles = _pick(k.titles, family, assignment)
        if not titles:
            raise UnsupportedFormat(f"synthetic templates ({lang}): kind {name} has no {family} title")
        # A section left with nothing to say in this family is left out, not written as a bare title.
        secs = tuple((sn, p) for sn, p in k.sections if sections[sn].first or sections[sn].items)
        kinds[name] = replace(k, titles=titles, header=entries(k.header), footer=entries(k.footer), sections=secs)
    return Templates(t.lang, t.scheme, t.labels, kinds, sections, t.lex)
