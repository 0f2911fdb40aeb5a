"""Synthetic English clinical notes with exact gold PHI spans (i2b2 2014 labels).

Why: tests, demos and benchmarks need realistic notes with PHI, and real notes
cannot leave the hospital. Text and spans are built together: every piece is
appended to the note and, when it is PHI, its offsets are recorded on the spot,
so a gold span can never drift from its text (nothing is searched afterwards).

Templates are data (``deid_core/data/synthetic/en.yaml``); this module fills
their slots. Each patient is generated from its own seeded ``random.Random`` and
Faker instance, so a corpus is the same on every run and machine for one seed
(and one Faker version), and ``generate_notes(n)`` is a prefix of
``generate_notes(m)`` for ``n < m``. A patient keeps the same name, DOB, MRN,
address and care team across their notes, and their notes are in time order.

Notes are flagged as synthetic in ``meta`` and by the ``synth-`` id prefix,
never in the text, so that the text stays realistic.
"""

from __future__ import annotations

import bisect
import calendar
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from importlib import resources
from random import Random
from typing import Any

import yaml
from faker.providers.address.en_US import Provider as _FakerAddress
from faker.providers.company.en_US import Provider as _FakerCompany
from faker.providers.person.en_US import Provider as _FakerPerson

from deid_core.errors import UnsupportedFormat
from deid_core.spans import Document, Span

GENERATOR = "deid-workbench synthetic v1"
KINDS = ("discharge_summary", "progress_note", "referral_letter", "lab_report")
_KIND_WEIGHTS = {"discharge_summary": 3, "progress_note": 3, "referral_letter": 2, "lab_report": 2}
SUPPORTED_LANGUAGES = ("en",)

ProgressFn = Callable[[str, float], None]

_SLOT_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([a-z0-9_]+))?\}")

# --------------------------------------------------------------------------- writer


class _Writer:
    """Appends text and records a gold span for every PHI piece as it is written."""

    __slots__ = ("chunks", "spans", "pos")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.spans: list[Span] = []
        self.pos = 0

    def lit(self, text: str) -> None:
        if text:
            self.chunks.append(text)
            self.pos += len(text)

    def phi(self, text: str, label: str) -> None:
        # A value with edge whitespace would give a span the tokenizer cannot align.
        text = " ".join(text.split())
        if not text:
            raise ValueError(f"empty PHI value for {label}")
        start = self.pos
        self.lit(text)
        self.spans.append(Span(start, self.pos, label))

    def text(self) -> str:
        return "".join(self.chunks)


# --------------------------------------------------------------------------- people


class _Weighted:
    """Weighted choice with cumulative weights computed once.

    Faker's own weighted sampling rebuilds them on every call (about 0.1 ms per
    surname), which made Faker two thirds of the generator's time.
    """

    __slots__ = ("values", "cum")

    def __init__(self, weights: dict[str, float]) -> None:
        self.values = list(weights)
        self.cum = list(itertools.accumulate(weights.values()))

    def pick(self, rng: Random) -> str:
        return self.values[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]


@lru_cache(maxsize=1)
def _faker_pools() -> dict[str, Any]:
    """Faker's en_US name and address data, sampled with our own seeded Random."""
    return {
        "male": _Weighted(_FakerPerson.first_names_male),
        "female": _Weighted(_FakerPerson.first_names_female),
        "first": _Weighted(_FakerPerson.first_names),
        "last": _Weighted(_FakerPerson.last_names),
        "city_prefixes": list(_FakerAddress.city_prefixes),
        "city_suffixes": list(_FakerAddress.city_suffixes),
        "street_suffixes": list(_FakerAddress.street_suffixes),
        "company_suffixes": list(_FakerCompany.company_suffixes),
    }


class _Fake:
    """The few Faker en_US generators the notes need, driven by one seeded Random.

    Same data as ``Faker("en_US")`` (names, city and street parts), so values
    look the same, but every draw comes from the patient's ``Random``: the
    corpus depends only on the seed and Faker's word lists.
    """

    __slots__ = ("rng", "pools")

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.pools = _faker_pools()

    def first_name_male(self) -> str:
        return self.pools["male"].pick(self.rng)

    def first_name_female(self) -> str:
        return self.pools["female"].pick(self.rng)

    def last_name(self) -> str:
        return self.pools["last"].pick(self.rng)

    def city(self) -> str:
        r, p = self.rng, self.pools
        style = r.randrange(4)
        if style == 0:
            return f"{r.choice(p['city_prefixes'])} {p['first'].pick(r)}{r.choice(p['city_suffixes'])}"
        if style == 1:
            return f"{r.choice(p['city_prefixes'])} {p['first'].pick(r)}"
        if style == 2:
            return f"{p['first'].pick(r)}{r.choice(p['city_suffixes'])}"
        return f"{p['last'].pick(r)}{r.choice(p['city_suffixes'])}"

    def street_name(self) -> str:
        r, p = self.rng, self.pools
        name = p["first"].pick(r) if r.random() < 0.5 else p["last"].pick(r)
        return f"{name} {r.choice(p['street_suffixes'])}"

    def street_address(self) -> str:
        r = self.rng
        number = str(r.randint(1, 99999) if r.random() < 0.3 else r.randint(1, 9999))
        street = f"{number} {self.street_name()}"
        if r.random() < 0.3:
            street += f" {r.choice(['Apt.', 'Suite', 'Unit'])} {r.randint(1, 999)}"
        return street

    def zipcode(self) -> str:
        return f"{self.rng.randint(1001, 99950):05d}"

    def zipcode_plus4(self) -> str:
        return f"{self.zipcode()}-{self.rng.randint(1, 9999):04d}"

    def company(self) -> str:
        r = self.rng
        style = r.randrange(3)
        if style == 0:
            return f"{self.last_name()} {r.choice(self.pools['company_suffixes'])}"
        if style == 1:
            return f"{self.last_name()}-{self.last_name()}"
        return f"{self.last_name()}, {self.last_name()} and {self.last_name()}"

    def user_name(self) -> str:
        r = self.rng
        first, last = self.pools["first"].pick(r), self.last_name()
        return r.choice([f"{first}{last}", f"{first[0]}{last}{r.randint(1, 99)}", f"{last}.{first}",
                         f"{first}{r.randint(10, 1999)}"]).lower()

    def ipv4_private(self) -> str:
        r = self.rng
        return r.choice([f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
                         f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
                         f"192.168.{r.randint(0, 255)}.{r.randint(1, 254)}"])

    def ipv4_public(self) -> str:
        r = self.rng
        first = r.choice([n for n in range(11, 224) if n not in (127, 172, 192)])
        return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


@dataclass(frozen=True, slots=True)
class _Person:
    first: str
    middle: str
    last: str
    sex: str  # "M" | "F"

    def fmt(self, style: str) -> str:
        if style == "full":
            return f"{self.first} {self.last}"
        if style == "formal":
            return f"{self.first} {self.middle[0]}. {self.last}"
        if style == "lastfirst":
            return f"{self.last}, {self.first}"
        if style == "caps":
            return f"{self.last.upper()}, {self.first.upper()}"
        if style == "last":
            return self.last
        if style == "first":
            return self.first
        if style == "initial":
            return f"{self.first[0]}. {self.last}"
        if style == "initials":
            return f"{self.first[0]}{self.middle[0]}{self.last[0]}".upper()
        raise KeyError(style)


@dataclass(frozen=True, slots=True)
class _Place:
    name: str
    street: str
    city: str
    state: str
    state_abbr: str
    zip: str
    phone: str
    fax: str
    domain: str


@dataclass
class _Patient:
    pid: str
    rng: Random
    fake: _Fake
    person: _Person
    dob: date
    mrn: str
    ssn: str
    street: str
    city: str
    state: str
    state_abbr: str
    zip: str
    phone: str
    email: str
    healthplan: str
    insurer: str
    profession: str
    organization: str
    country: str
    vehicle: str
    device: str
    username: str
    relative: _Person
    relation: str
    relative_phone: str
    hospital: _Place
    practice: _Place
    team: dict[str, _Person] = field(default_factory=dict)


@dataclass
class _Note:
    kind: str
    patient: _Patient
    rng: Random
    dates: dict[str, date]
    date_style: str
    account: str
    used: set[str] = field(default_factory=set)
    fixed: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- templates


Parsed = tuple[Any, ...]  # items: str (literal) or (slot, format)


def _parse(template: str) -> Parsed:
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
class _Section:
    name: str
    titles: tuple[Parsed, ...]
    style: str
    n: tuple[int, int]
    first: tuple[Parsed, ...]
    items: tuple[Parsed, ...]


@dataclass(frozen=True)
class _Entry:
    p: float
    choices: tuple[Parsed, ...]


@dataclass(frozen=True)
class _Kind:
    name: str
    titles: tuple[Parsed, ...]
    header: tuple[_Entry, ...]
    sections: tuple[tuple[str, float], ...]
    footer: tuple[_Entry, ...]


@dataclass(frozen=True)
class _Templates:
    kinds: dict[str, _Kind]
    sections: dict[str, _Section]
    lex: dict[str, Any]


def _entries(raw: Any, where: str) -> tuple[_Entry, ...]:
    out = []
    for i, item in enumerate(raw or []):
        p = 1.0
        if isinstance(item, dict):
            p = float(item.get("p", 1.0))
            item = item.get("t")
        choices = [item] if isinstance(item, str) else item
        if not choices or not all(isinstance(c, str) for c in choices):
            raise UnsupportedFormat(f"synthetic templates: {where} entry {i} has no template")
        out.append(_Entry(p, tuple(_parse(c) for c in choices)))
    return tuple(out)


@lru_cache(maxsize=2)
def load_templates(lang: str = "en") -> _Templates:
    """Read and check the template file once; unknown slots fail here, not mid-corpus."""
    if lang not in SUPPORTED_LANGUAGES:
        raise UnsupportedFormat(
            f"synthetic notes: unsupported language {lang!r}; use one of {', '.join(SUPPORTED_LANGUAGES)}"
        )
    raw = yaml.safe_load(
        resources.files("deid_core").joinpath(f"data/synthetic/{lang}.yaml").read_text("utf-8")
    )
    sections = {}
    for name, s in raw["sections"].items():
        sections[name] = _Section(
            name=name,
            titles=tuple(_parse(t) for t in s.get("title", [])),
            style=s.get("style", "prose"),
            n=(int(s["n"][0]), int(s["n"][1])),
            first=tuple(_parse(t) for t in s.get("first", [])),
            items=tuple(_parse(t) for t in s["items"]),
        )
    kinds = {}
    for name, k in raw["kinds"].items():
        secs = []
        for s in k["sections"]:
            sname, p = (s["s"], float(s.get("p", 1.0))) if isinstance(s, dict) else (s, 1.0)
            if sname not in sections:
                raise UnsupportedFormat(f"synthetic templates: kind {name} uses unknown section {sname!r}")
            secs.append((sname, p))
        kinds[name] = _Kind(
            name=name,
            titles=tuple(_parse(t) for t in k["title"]),
            header=_entries(k.get("header"), f"{name}.header"),
            sections=tuple(secs),
            footer=_entries(k.get("footer"), f"{name}.footer"),
        )
    templates = _Templates(kinds, sections, raw["lexicon"])
    _check_slots(templates)
    return templates


def _all_parsed(t: _Templates) -> Iterator[tuple[str, Parsed]]:
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


def _check_slots(t: _Templates) -> None:
    for where, parsed in _all_parsed(t):
        for item in parsed:
            if isinstance(item, tuple):
                name, fmt = item
                key = name if name in _SLOTS else name[0].lower() + name[1:]
                if key not in _SLOTS:
                    raise UnsupportedFormat(f"synthetic templates: {where} uses unknown slot {name!r}")
                if fmt is not None and fmt not in _SLOT_FORMATS.get(key, ()):
                    raise UnsupportedFormat(
                        f"synthetic templates: {where} uses unknown format {name}.{fmt}"
                    )


# --------------------------------------------------------------------------- values

_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_MON = [calendar.month_abbr[i] for i in range(1, 13)]


def _fmt_date(d: date, style: str) -> str:
    m, dd, y = d.month, d.day, d.year
    if style == "mdy":
        return f"{m:02d}/{dd:02d}/{y}"
    if style == "mdy_short":
        return f"{m}/{dd}/{y}"
    if style == "mdyy":
        return f"{m}/{dd}/{y % 100:02d}"
    if style == "iso":
        return d.isoformat()
    if style == "mon_d_y":
        mon = "Sept" if m == 9 and dd % 2 else _MON[m - 1]
        return f"{mon} {dd}, {y}"
    if style == "month_d_y":
        return f"{_MONTHS[m - 1]} {dd}, {y}"
    if style == "d_month_y":
        return f"{dd} {_MONTHS[m - 1]} {y}"
    if style == "dd_mon_y":
        return f"{dd:02d}-{_MON[m - 1]}-{y}"
    if style == "md":
        return f"{m}/{dd}"
    if style == "mon_d":
        return f"{_MON[m - 1]} {dd}"
    if style == "month_dth":
        suffix = "th" if 11 <= dd <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(dd % 10, "th")
        return f"{_MONTHS[m - 1]} {dd}{suffix}"
    if style == "month":
        return _MONTHS[m - 1]
    if style == "month_y":
        return f"{_MONTHS[m - 1]} {y}"
    if style == "year":
        return str(y)
    raise KeyError(style)


_HEADER_DATE_STYLES = ("mdy", "mdy", "mdy_short", "mdyy", "iso", "mon_d_y", "month_d_y", "d_month_y", "dd_mon_y")
_PROSE_DATE_STYLES = (
    "mdy", "mdy_short", "mdyy", "iso", "mon_d_y", "month_d_y", "d_month_y", "md", "md",
    "mon_d", "month_dth", "month", "month_y", "weekday_md",
)


def _digits(rng: Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _letters(rng: Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(n))


def _phone(rng: Random) -> str:
    a = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
    b = f"{rng.randint(2, 9)}{_digits(rng, 2)}"
    c = _digits(rng, 4)
    style = rng.randrange(6)
    if style == 0:
        return f"({a}) {b}-{c}"
    if style == 1:
        return f"{a}-{b}-{c}"
    if style == 2:
        return f"{a}.{b}.{c}"
    if style == 3:
        return f"+1 {a} {b} {c}"
    if style == 4:
        return f"{a}-{b}-{c} x{_digits(rng, 4)}"
    return f"({a}){b}-{c}"


def _slug(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _person(fake: _Fake, rng: Random, sex: str | None = None) -> _Person:
    sex = sex or rng.choice("MF")
    if sex == "M":
        first, middle = fake.first_name_male(), fake.first_name_male()
    else:
        first, middle = fake.first_name_female(), fake.first_name_female()
    return _Person(first, middle, fake.last_name(), sex)


def _place(fake: _Fake, rng: Random, lex: dict[str, Any], kind: str = "hospital") -> _Place:
    state, abbr = rng.choice(lex["states"])
    city = fake.city()
    if kind == "practice":
        name = rng.choice(
            [f"{fake.last_name()} Family Medicine", f"{city} Primary Care",
             f"{fake.last_name()} and {fake.last_name()} Medical Associates",
             f"{city} Health Center"]
        )
    else:
        name = _hospital_name(fake, rng, lex, city)
    return _Place(
        name=name, street=fake.street_address(), city=city, state=state, state_abbr=abbr,
        zip=fake.zipcode() if rng.random() < 0.85 else fake.zipcode_plus4(),
        phone=_phone(rng), fax=_phone(rng), domain=_domain(name, rng),
    )


def _domain(name: str, rng: Random) -> str:
    slug = _slug(name)
    if len(slug) > 20:  # long names go by their initials, as hospitals' web sites do
        slug = "".join(w[0] for w in name.split() if w[0].isalnum()).lower() + rng.choice(["health", "med", "hospital", ""])
    return slug + rng.choice([".org", ".org", ".com", ".net"])


def _hospital_name(fake: _Fake, rng: Random, lex: dict[str, Any], city: str | None = None) -> str:
    suffix = rng.choice(lex["hospital_suffixes"])
    style = rng.randrange(4)
    if style == 0:
        return f"{city or fake.city()} {suffix}"
    if style == 1:
        return f"{fake.last_name()} {suffix}"
    if style == 2:
        return f"{rng.choice(lex['hospital_prefixes'])} {suffix}"
    return f"{fake.last_name()} {fake.last_name()} {suffix}"


_RELATION_SEX = {"wife": "F", "daughter": "F", "sister": "F", "niece": "F", "mother": "F",
                 "husband": "M", "son": "M", "brother": "M", "nephew": "M", "father": "M"}


def _make_patient(index: int, seed: int, lex: dict[str, Any]) -> _Patient:
    # A string seed is hashed with SHA-512 by random.seed: stable across runs
    # and machines, unlike hash() of a str under hash randomisation.
    rng = Random(f"deid-workbench-synth:{seed}:{index}")
    fake = _Fake(rng)
    person = _person(fake, rng)
    state, abbr = rng.choice(lex["states"])
    mrn_style = rng.randrange(4)
    mrn = [
        lambda: _digits(rng, 7),
        lambda: "00" + _digits(rng, 6),
        lambda: f"{_digits(rng, 3)}-{_digits(rng, 2)}-{_digits(rng, 2)}",
        lambda: _letters(rng, 1) + _digits(rng, 8),
    ][mrn_style]()
    area = rng.choice([rng.randint(1, 665), rng.randint(667, 899)])
    ssn = f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
    email_user = rng.choice(
        [f"{person.first[0]}{person.last}", f"{person.first}.{person.last}",
         f"{person.last}{person.first[0]}{_digits(rng, 2)}", f"{person.first}{_digits(rng, 3)}"]
    )
    relation = rng.choice(lex["relations"])
    relative = _person(fake, rng, _RELATION_SEX.get(relation))
    if relation in ("daughter", "son", "sister", "brother", "niece"):
        relative = _Person(relative.first, relative.middle, person.last if rng.random() < 0.6 else relative.last, relative.sex)
    org = rng.choice([fake.company(), f"{fake.last_name()} {rng.choice(lex['org_suffixes'])}",
                      f"{fake.city()} {rng.choice(lex['org_suffixes'])}"])
    vehicle = rng.choice(
        [f"{rng.randint(1, 9)}{_letters(rng, 3)}{_digits(rng, 3)}", f"{_letters(rng, 3)}-{_digits(rng, 4)}",
         f"{rng.randint(1, 5)}{_letters(rng, 4)}{_digits(rng, 2)}{_letters(rng, 1)}{_digits(rng, 6)}"]
    )
    device = rng.choice(
        [f"{_letters(rng, 3)}{_digits(rng, 6)}{_letters(rng, 1)}", f"SN{_digits(rng, 8)}",
         f"{_digits(rng, 2)}-{_digits(rng, 5)}-{_letters(rng, 2)}"]
    )
    return _Patient(
        pid=f"P{index + 1:04d}", rng=rng, fake=fake, person=person, dob=date(2000, 1, 1), mrn=mrn,
        ssn=ssn, street=fake.street_address(), city=fake.city(), state=state, state_abbr=abbr,
        zip=fake.zipcode() if rng.random() < 0.85 else fake.zipcode_plus4(), phone=_phone(rng),
        email=f"{email_user}@{rng.choice(lex['email_domains'])}".lower(),
        healthplan=rng.choice([_letters(rng, 3) + _digits(rng, 9), f"{rng.randint(1, 9)}{_letters(rng, 2)}{_digits(rng, 1)}-{_letters(rng, 2)}{_digits(rng, 1)}-{_letters(rng, 2)}{_digits(rng, 2)}", _digits(rng, 11)]),
        insurer=rng.choice(lex["insurers"]), profession=rng.choice(lex["professions"]),
        organization=org, country=rng.choice(lex["countries"]), vehicle=vehicle, device=device,
        username=rng.choice([f"{person.first[0]}{person.last}{rng.randint(1, 99)}", fake.user_name()]).lower(),
        relative=relative, relation=relation, relative_phone=_phone(rng),
        hospital=_place(fake, rng, lex), practice=_place(fake, rng, lex, "practice"),
    )


def _age_at(dob: date, d: date) -> int:
    return d.year - dob.year - ((d.month, d.day) < (dob.month, dob.day))


def _timeline(patient: _Patient, kinds: list[str]) -> list[dict[str, date]]:
    """Dates for each note of a patient, in time order: admission before discharge,
    one note's events before the next note's."""
    rng = patient.rng
    start = date(2008, 1, 1) + timedelta(days=rng.randrange(16 * 365))
    r = rng.random()
    if r < 0.1:
        age = rng.randint(90, 103)  # over 89: HIPAA treats these ages as identifying
    elif r < 0.25:
        age = rng.randint(18, 39)
    else:
        age = rng.randint(40, 89)
    patient.dob = date(start.year - age - 1, 1, 1) + timedelta(days=rng.randrange(365))
    out = []
    cursor = start
    for kind in kinds:
        begin = cursor + timedelta(days=rng.randint(3, 200))
        d: dict[str, date] = {}
        if kind == "discharge_summary":
            d["admit"] = begin
            d["note"] = d["discharge"] = begin + timedelta(days=rng.randint(1, 14))
            d["transcribed"] = d["discharge"] + timedelta(days=rng.randint(0, 2))
        elif kind == "progress_note":
            d["admit"] = begin
            d["note"] = begin + timedelta(days=rng.randint(0, 6))
        else:
            d["note"] = begin
        d.setdefault("admit", d["note"])
        d.setdefault("discharge", d["note"])
        d.setdefault("transcribed", d["note"])
        d["collected"] = d["note"]
        d["reported"] = d["note"] + timedelta(days=rng.randint(0, 1))
        out.append(d)
        cursor = max(d.values())
    return out


# --------------------------------------------------------------------------- slots

SlotFn = Callable[[_Note, "str | None", _Writer, _Templates], None]
_SLOTS: dict[str, SlotFn] = {}
_SLOT_FORMATS: dict[str, tuple[str, ...]] = {}
_PERSON_FORMATS = ("full", "formal", "lastfirst", "caps", "last", "first", "initial", "initials", "sig", "header")


def _slot(name: str, formats: tuple[str, ...] = ()) -> Callable[[SlotFn], SlotFn]:
    def deco(fn: SlotFn) -> SlotFn:
        _SLOTS[name] = fn
        _SLOT_FORMATS[name] = formats
        return fn

    return deco


def _phi_value(name: str, label: str, get: Callable[[_Note], str]) -> None:
    def fn(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
        w.phi(get(note), label)

    _slot(name)(fn)


def _person_style(rng: Random, fmt: str | None) -> str:
    if fmt == "sig":
        return rng.choice(("full", "full", "formal"))
    if fmt == "header":
        return rng.choice(("lastfirst", "caps", "full", "full"))
    if fmt is None:
        return rng.choice(("full", "formal", "lastfirst"))
    return fmt


@_slot("patient", _PERSON_FORMATS)
def _s_patient(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(note.patient.person.fmt(_person_style(note.rng, fmt)), "PATIENT")


@_slot("relative", _PERSON_FORMATS)
def _s_relative(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(note.patient.relative.fmt(_person_style(note.rng, fmt)), "PATIENT")


def _team_slot(role: str) -> None:
    def fn(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
        p = note.patient
        if role not in p.team:
            p.team[role] = _person(p.fake, p.rng)
        w.phi(p.team[role].fmt(_person_style(note.rng, fmt)), "DOCTOR")

    _slot(role, _PERSON_FORMATS)(fn)


for _role in ("attending", "pcp", "consultant", "consultant2", "referrer", "resident",
              "radiologist", "labdir", "nurse", "tech"):
    _team_slot(_role)


@_slot("typist")
def _s_typist(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(note.rng.choice(t.lex["typists"]), "DOCTOR")


_phi_value("mrn", "MEDICALRECORD", lambda n: n.patient.mrn)
_phi_value("ssn", "SSN", lambda n: n.patient.ssn)
_phi_value("account", "ACCOUNT", lambda n: n.account)
_phi_value("healthplan", "HEALTHPLAN", lambda n: n.patient.healthplan)
_phi_value("device", "DEVICE", lambda n: n.patient.device)
_phi_value("vehicle", "VEHICLE", lambda n: n.patient.vehicle)
_phi_value("username", "USERNAME", lambda n: n.patient.username if n.rng.random() < 0.3 else _staff_username(n))
_phi_value("idnum", "IDNUM", lambda n: _idnum(n.rng))
_phi_value("clia", "IDNUM", lambda n: f"{_digits(n.rng, 2)}D{_digits(n.rng, 7)}")
_phi_value("bioid", "BIOID", lambda n: n.rng.choice([f"FP-{_digits(n.rng, 4)}-{_digits(n.rng, 4)}", f"BIO{_digits(n.rng, 7)}", f"RS{_digits(n.rng, 6)}{_letters(n.rng, 1)}"]))
_phi_value("license", "LICENSE", lambda n: n.rng.choice([_digits(n.rng, 6), f"MD{_digits(n.rng, 6)}", f"{n.patient.hospital.state_abbr}-{_digits(n.rng, 5)}"]))
_phi_value("dea", "LICENSE", lambda n: f"{_letters(n.rng, 2)}{_digits(n.rng, 7)}")
_phi_value("ip", "IPADDR", lambda n: n.patient.fake.ipv4_private() if n.rng.random() < 0.6 else n.patient.fake.ipv4_public())
_phi_value("street", "STREET", lambda n: n.patient.street)
_phi_value("city", "CITY", lambda n: n.patient.city)
_phi_value("zip", "ZIP", lambda n: n.patient.zip)
_phi_value("phone", "PHONE", lambda n: n.patient.phone)
_phi_value("relative_phone", "PHONE", lambda n: n.patient.relative_phone)
_phi_value("email", "EMAIL", lambda n: n.patient.email)
_phi_value("profession", "PROFESSION", lambda n: n.patient.profession)
_phi_value("organization", "ORGANIZATION", lambda n: n.patient.organization)
_phi_value("insurer", "ORGANIZATION", lambda n: n.patient.insurer)
_phi_value("country", "COUNTRY", lambda n: n.patient.country if n.rng.random() < 0.7 else n.rng.choice(_lex(n)["countries"]))
_phi_value("h_street", "STREET", lambda n: n.patient.hospital.street)
_phi_value("h_city", "CITY", lambda n: n.patient.hospital.city)
_phi_value("h_zip", "ZIP", lambda n: n.patient.hospital.zip)
_phi_value("h_phone", "PHONE", lambda n: n.patient.hospital.phone)
_phi_value("h_fax", "FAX", lambda n: n.patient.hospital.fax)
_phi_value("h2_name", "HOSPITAL", lambda n: n.patient.practice.name)
_phi_value("h2_street", "STREET", lambda n: n.patient.practice.street)
_phi_value("h2_city", "CITY", lambda n: n.patient.practice.city)
_phi_value("h2_state", "STATE", lambda n: n.patient.practice.state_abbr)
_phi_value("h2_zip", "ZIP", lambda n: n.patient.practice.zip)
_phi_value("fax", "FAX", lambda n: n.patient.practice.fax)
_phi_value("doc_phone", "PHONE", lambda n: n.patient.hospital.phone[:-4] + _digits(n.rng, 4) if n.patient.hospital.phone[-4:].isdigit() else _phone(n.rng))
_phi_value("pager", "PHONE", lambda n: n.rng.choice([f"{_digits(n.rng, 5)}", f"{n.rng.randint(1, 9)}-{_digits(n.rng, 4)}", _phone(n.rng)]))
_phi_value("street_other", "STREET", lambda n: n.patient.fake.street_name())
_phi_value("city_other", "CITY", lambda n: n.patient.fake.city())
_phi_value("state_other", "STATE", lambda n: n.rng.choice(_lex(n)["states"])[1])
_phi_value("lab_org", "ORGANIZATION", lambda n: f"{n.patient.fake.last_name()} {n.rng.choice(_lex(n)['lab_suffixes'])}")
_phi_value("facility", "HOSPITAL", lambda n: f"{n.rng.choice([n.patient.fake.last_name(), n.patient.fake.city()])} {n.rng.choice(_lex(n)['facilities_suffix'])}")
_phi_value("home_care", "ORGANIZATION", lambda n: f"{n.rng.choice([n.patient.fake.last_name(), n.patient.fake.city()])} {n.rng.choice(_lex(n)['home_care_suffix'])}")
_phi_value("location_other", "LOCATION-OTHER", lambda n: f"{n.rng.choice([n.patient.fake.last_name(), n.patient.fake.city()])} {n.rng.choice(_lex(n)['location_other_suffix'])}")


def _lex(note: _Note) -> dict[str, Any]:
    return load_templates("en").lex


def _staff_username(note: _Note) -> str:
    rng = note.rng
    p = note.patient.team.get("resident") or _person(note.patient.fake, rng)
    return rng.choice([f"{p.first[0]}{p.last}", f"{p.last}{p.first[0]}", f"{p.first[0]}{p.middle[0]}{p.last[0]}{rng.randint(1, 99)}"]).lower()


def _idnum(rng: Random) -> str:
    return rng.choice(
        [f"{_letters(rng, 1)}{rng.randint(10, 30)}-{_digits(rng, 5)}", _digits(rng, 9),
         f"{rng.randint(10, 99)}-{_digits(rng, 6)}", f"{_letters(rng, 2)}{_digits(rng, 7)}"]
    )


@_slot("hospital", ("caps", "other"))
def _s_hospital(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    if fmt == "other":
        w.phi(_hospital_name(note.patient.fake, note.rng, t.lex), "HOSPITAL")
    elif fmt == "caps":
        w.phi(note.patient.hospital.name.upper(), "HOSPITAL")
    else:
        w.phi(note.patient.hospital.name, "HOSPITAL")


@_slot("state", ("full",))
def _s_state(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    p = note.patient
    full = fmt == "full" or (fmt is None and note.rng.random() < 0.3)
    w.phi(p.state if full else p.state_abbr, "STATE")


@_slot("h_state", ("full",))
def _s_h_state(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    h = note.patient.hospital
    w.phi(h.state if fmt == "full" else h.state_abbr, "STATE")


@_slot("h_url")
def _s_h_url(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    d = note.patient.hospital.domain
    w.phi(note.rng.choice([f"https://www.{d}", f"www.{d}", f"https://portal.{d}/login", f"http://{d}/results"]), "URL")


@_slot("doc_email")
def _s_doc_email(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    p = note.patient
    doc = p.team.get("consultant") or p.team.get("attending") or _person(p.fake, note.rng)
    w.phi(f"{doc.first[0]}{doc.last}@{p.hospital.domain}".lower(), "EMAIL")


@_slot("dob")
def _s_dob(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(_fmt_date(note.patient.dob, note.date_style), "DATE")


@_slot("age")
def _s_age(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(str(_age_at(note.patient.dob, note.dates["note"])), "AGE")


@_slot("age_rel")
def _s_age_rel(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(str(note.rng.randint(8, 97)), "AGE")


@_slot("decade")
def _s_decade(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(f"{note.rng.randint(3, 9)}0s", "AGE")


_DATE_KEYS = ("admit", "discharge", "note", "transcribed", "collected", "reported")
_WHEN_KEYS = ("admit", "note", "prior", "next")


def _relative_date(note: _Note, key: str) -> date:
    if key in note.dates:
        return note.dates[key]
    rng = note.rng
    base = note.dates["note"]
    if key == "next":
        return base + timedelta(days=rng.randint(7, 120))
    earliest = max(note.patient.dob + timedelta(days=18 * 365), base - timedelta(days=15 * 365))
    span = (base - timedelta(days=7) - earliest).days
    return earliest + timedelta(days=rng.randint(0, max(span, 0)))


@_slot("date", _DATE_KEYS)
def _s_date(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(_fmt_date(_relative_date(note, fmt or "note"), note.date_style), "DATE")


@_slot("year")
def _s_year(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    w.phi(str(_relative_date(note, "prior").year), "DATE")


@_slot("when", _WHEN_KEYS)
def _s_when(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
    """A prepositional date phrase: only the date itself is PHI, not "on" or a weekday."""
    rng = note.rng
    key = fmt or "note"
    if key == "next" and rng.random() < 0.2:
        w.lit(f"in {rng.randint(2, 8)} weeks")  # relative: no date, no PHI
        return
    d = _relative_date(note, key)
    style = rng.choice(_PROSE_DATE_STYLES)
    if key == "prior" and rng.random() < 0.15:
        style = "year"
    if style in ("month", "month_y", "year"):
        w.lit("in ")
        w.phi(_fmt_date(d, style), "DATE")
    elif style == "weekday_md":
        w.lit(f"on {calendar.day_name[d.weekday()]}, ")
        w.phi(_fmt_date(d, "md"), "DATE")
    else:
        w.lit("on ")
        w.phi(_fmt_date(d, style), "DATE")


# ---- filler (not PHI): clinical text, much of it PHI-looking on purpose


def _filler(name: str, get: Callable[[_Note, _Templates], str]) -> None:
    def fn(note: _Note, fmt: str | None, w: _Writer, t: _Templates) -> None:
        w.lit(get(note, t))

    _slot(name)(fn)


def _choice(key: str) -> Callable[[_Note, _Templates], str]:
    def get(n: _Note, t: _Templates) -> str:
        # "chest pain or chest pain" reads as machine-made: avoid repeats within a note.
        for _ in range(4):
            value = n.rng.choice(t.lex[key])
            if value not in n.used:
                break
        n.used.add(value)
        return str(value)

    return get


def _num(lo: float, hi: float, decimals: int = 0) -> Callable[[_Note, _Templates], str]:
    if decimals == 0:
        return lambda n, t: str(n.rng.randint(int(lo), int(hi)))
    return lambda n, t: f"{n.rng.uniform(lo, hi):.{decimals}f}"


def _pronoun(m: str, f: str) -> Callable[[_Note, _Templates], str]:
    return lambda n, t: m if n.patient.person.sex == "M" else f


def _med(key: str, with_dose: bool = True) -> Callable[[_Note, _Templates], str]:
    def get(n: _Note, t: _Templates) -> str:
        # A medication list that names one drug twice looks wrong to reviewers.
        for _ in range(4):
            name, doses, unit, freqs = n.rng.choice(t.lex[key])
            if name not in n.used:
                break
        n.used.add(name)
        if not with_dose:
            return str(name)
        dose = n.rng.choice(doses)
        return f"{name} {dose} {unit} {n.rng.choice(freqs)}"

    return get


def _vitals(n: _Note, t: _Templates) -> str:
    r = n.rng
    return (
        f"T {r.uniform(97.0, 101.5):.1f} F, BP {r.randint(95, 175)}/{r.randint(50, 98)}, "
        f"HR {r.randint(52, 118)}, RR {r.randint(12, 26)}, SpO2 {r.randint(88, 100)}% on "
        f"{r.choice(['RA', 'room air', '2L NC', '4L NC'])}"
    )


def _lab(n: _Note, t: _Templates) -> str:
    r = n.rng
    return r.choice([
        f"Na {r.randint(125, 148)}", f"K {r.uniform(2.9, 6.1):.1f}", f"Cr {r.uniform(0.6, 4.5):.1f}",
        f"WBC {r.uniform(3.1, 22.0):.1f}", f"Hgb {r.uniform(6.5, 16.0):.1f}", f"BNP {r.randint(40, 3200)}",
        f"troponin {r.uniform(0.01, 2.5):.2f}", f"lactate {r.uniform(0.8, 6.0):.1f}", f"INR {r.uniform(0.9, 4.2):.1f}",
    ])


def _labs_chem(n: _Note, t: _Templates) -> str:
    r = n.rng
    return (
        f"Na {r.randint(128, 146)}, K {r.uniform(3.1, 5.6):.1f}, Cl {r.randint(94, 110)}, "
        f"HCO3 {r.randint(17, 31)}, BUN {r.randint(7, 68)}, Cr {r.uniform(0.6, 3.8):.1f}, "
        f"glucose {r.randint(68, 340)}"
    )


def _labs_cbc(n: _Note, t: _Templates) -> str:
    r = n.rng
    return f"WBC {r.uniform(3.5, 19.5):.1f}, Hgb {r.uniform(7.0, 15.8):.1f}, Hct {r.uniform(22, 47):.1f}, Plt {r.randint(60, 480)}"


_filler("sexword", lambda n, t: n.rng.choice(["man", "male"]) if n.patient.person.sex == "M" else n.rng.choice(["woman", "female"]))
_filler("sexletter", lambda n, t: n.patient.person.sex)
_filler("title", _pronoun("Mr.", "Ms."))
_filler("he", _pronoun("he", "she"))
_filler("his", _pronoun("his", "her"))
_filler("him", _pronoun("him", "her"))
_filler("relation", lambda n, t: n.patient.relation)
for _key, _src in (("symptom", "symptoms"), ("symptom2", "symptoms"), ("dx", "diagnoses"),
                   ("dx2", "diagnoses"), ("eponym", "eponyms"), ("eponym2", "eponyms"),
                   ("proc", "procedures"), ("proc2", "procedures"), ("organism", "organisms"),
                   ("antibiotic", "antibiotics"), ("plan", "plans"), ("imaging_study", "imaging_studies"),
                   ("cxr", "cxr"), ("echo", "echo"), ("ctap", "ctap"), ("murmur", "murmurs"),
                   ("mood", "moods"), ("quote", "quotes"), ("disposition_short", "disposition_short"),
                   ("weekday", "weekdays"), ("dept", "departments"),
                   ("unit", "units"), ("clinic", "clinics"), ("kin", "kin"),
                   ("antidepressant", "antidepressants")):
    _filler(_key, _choice(_src))
# One note, one service: the title and the signature must agree.
_filler("service", lambda n, t: n.fixed.setdefault("service", n.rng.choice(t.lex["services"])))
_filler("med", _med("meds"))
_filler("med_prn", _med("meds_prn"))
_filler("med_once", lambda n, t: _med("meds_prn")(n, t).split(" q")[0] + " once")
_filler("med_name", _med("meds", with_dose=False))
_filler("med_prn_name", _med("meds_prn", with_dose=False))
_filler("vitals", _vitals)
_filler("lab", _lab)
_filler("lab_name", lambda n, t: n.rng.choice(["BMP", "CBC", "Mg", "LFTs", "INR", "troponin"]))
_filler("labs_chem", _labs_chem)
_filler("labs_cbc", _labs_cbc)
_filler("time", lambda n, t: f"{n.rng.randint(0, 23):02d}:{n.rng.choice(['00', '15', '30', '45', '10', '52'])}")
_filler("time_ampm", lambda n, t: f"{n.rng.randint(1, 12)}:{n.rng.choice(['00', '15', '30', '45'])} {n.rng.choice(['AM', 'PM'])}")
_filler("hd", lambda n, t: str((n.dates["note"] - n.dates["admit"]).days + 1))
_filler("hd_any", lambda n, t: str(n.rng.randint(1, (n.dates["note"] - n.dates["admit"]).days + 1)))
_filler("ua", lambda n, t: n.rng.choice(["negative", "positive leukocyte esterase, nitrite positive, >50 WBC", "trace protein, no blood"]))
for _key, _lo, _hi, _dec in (
    ("n", 2, 9, 0), ("hr", 55, 115, 0), ("glucose", 45, 420, 0), ("stage", 2, 4, 0), ("cr", 0.7, 4.2, 1),
    ("a1c", 5.4, 11.8, 1), ("fev1", 28, 85, 0), ("gcs", 9, 15, 0), ("troponin", 0.01, 3.5, 2),
    ("bnp", 35, 4200, 0), ("inr", 0.9, 3.8, 1), ("ptt", 24, 65, 0), ("tsh", 0.2, 9.5, 2),
    ("lactate", 0.7, 6.5, 1), ("ph", 18, 48, 0), ("pco2", 28, 70, 0), ("po2", 55, 240, 0),
    ("ef", 15, 70, 0), ("sbp", 78, 182, 0), ("dbp", 40, 104, 0), ("temp", 97.1, 102.4, 1),
    ("rr", 12, 28, 0), ("spo2", 86, 100, 0), ("io_in", 600, 2900, 0), ("io_out", 400, 3400, 0),
    ("weight", 48, 135, 1), ("bmi", 18, 44, 1), ("pgy", 1, 3, 0), ("na", 126, 149, 0),
    ("k", 2.9, 6.2, 1), ("cl", 92, 112, 0), ("hco3", 16, 32, 0), ("bun", 6, 72, 0),
    ("ca", 7.6, 11.2, 1), ("mg", 1.4, 2.8, 1), ("alt", 9, 240, 0), ("egfr", 14, 110, 0),
    ("wbc", 2.8, 21.0, 1), ("hgb", 6.8, 16.5, 1), ("hct", 21, 49, 1), ("plt", 45, 520, 0),
    ("neut", 38, 92, 0), ("edema", 1, 3, 0),
):
    _filler(_key, _num(_lo, _hi, _dec))


# --------------------------------------------------------------------------- rendering


def _render(parsed: Parsed, note: _Note, w: _Writer, t: _Templates) -> None:
    for item in parsed:
        if isinstance(item, str):
            w.lit(item)
            continue
        name, fmt = item
        fn = _SLOTS.get(name)
        if fn is not None:
            fn(note, fmt, w, t)
            continue
        # A capitalised filler slot ({He}, {Dx}) starts a sentence.
        sub = _Writer()
        _SLOTS[name[0].lower() + name[1:]](note, fmt, sub, t)
        text = sub.text()
        for s in sub.spans:
            w.spans.append(Span(s.start + w.pos, s.end + w.pos, s.label))
        w.lit(text[:1].upper() + text[1:])


def _render_entries(entries: Sequence[_Entry], note: _Note, w: _Writer, t: _Templates) -> bool:
    wrote = False
    for e in entries:
        if e.p < 1.0 and note.rng.random() >= e.p:
            continue
        if wrote:
            w.lit("\n")
        _render(note.rng.choice(e.choices), note, w, t)
        wrote = True
    return wrote


def _render_section(s: _Section, note: _Note, w: _Writer, t: _Templates) -> None:
    rng = note.rng
    k = min(rng.randint(*s.n), len(s.items))
    items = ([rng.choice(s.first)] if s.first else []) + rng.sample(s.items, k)
    title = rng.choice(s.titles) if s.titles else None
    style = s.style
    if style == "inline":
        if title:
            _render(title, note, w, t)
            w.lit(" ")
        for i, it in enumerate(items):
            if i:
                w.lit(" ")
            _render(it, note, w, t)
        return
    if title:
        _render(title, note, w, t)
        w.lit(" " if style == "prose" and rng.random() < 0.3 else "\n")
    if style == "prose":
        for i, it in enumerate(items):
            if i:
                w.lit(" ")
            _render(it, note, w, t)
        return
    bullet = {"list": rng.choice(["- ", "* ", "", "- "]), "numbered": "#", "lines": ""}[style]
    for i, it in enumerate(items):
        if i:
            w.lit("\n")
        if bullet == "#":
            w.lit(f"{i + 1}. ")
        else:
            w.lit(bullet)
        _render(it, note, w, t)


def _render_note(kind: _Kind, note: _Note, t: _Templates) -> tuple[str, list[Span]]:
    w = _Writer()
    _render(note.rng.choice(kind.titles), note, w, t)
    w.lit("\n\n")
    if _render_entries(kind.header, note, w, t):
        w.lit("\n\n")
    for name, p in kind.sections:
        if p < 1.0 and note.rng.random() >= p:
            continue
        _render_section(t.sections[name], note, w, t)
        w.lit("\n\n")
    _render_entries(kind.footer, note, w, t)
    w.lit("\n")
    return w.text(), w.spans


# --------------------------------------------------------------------------- public API


def iter_notes(
    n: int,
    *,
    seed: int = 0,
    lang: str = "en",
    kinds: Sequence[str] | None = None,
    notes_per_patient: tuple[int, int] = (1, 4),
) -> Iterator[Document]:
    """Yield ``n`` synthetic notes one at a time (constant memory for large ``n``).

    Arguments are checked here, before the first note, so that a bad call fails
    at once rather than when a consumer starts iterating.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    t = load_templates(lang)
    allowed = tuple(kinds) if kinds else KINDS
    unknown = [k for k in allowed if k not in t.kinds]
    if unknown:
        raise UnsupportedFormat(
            f"unknown note kind(s) {', '.join(map(repr, unknown))}; use {', '.join(KINDS)}"
        )
    lo, hi = notes_per_patient
    if lo < 1 or hi < lo:
        raise ValueError("notes_per_patient must be (low, high) with 1 <= low <= high")
    weights = [_KIND_WEIGHTS.get(k, 1) for k in allowed]
    return _generate(n, seed, lang, t, allowed, weights, (lo, hi))


def _generate(
    n: int,
    seed: int,
    lang: str,
    t: _Templates,
    allowed: tuple[str, ...],
    weights: list[int],
    notes_per_patient: tuple[int, int],
) -> Iterator[Document]:
    lo, hi = notes_per_patient
    index = 0
    patient_index = 0
    while index < n:
        patient = _make_patient(patient_index, seed, t.lex)
        rng = patient.rng
        m = rng.randint(lo, hi)
        note_kinds = [rng.choices(allowed, weights)[0] for _ in range(m)]
        timeline = _timeline(patient, note_kinds)
        for k, (kind, dates) in enumerate(zip(note_kinds, timeline)):
            if index >= n:
                break
            note = _Note(kind, patient, rng, dates, rng.choice(_HEADER_DATE_STYLES), _account(rng))
            text, spans = _render_note(t.kinds[kind], note, t)
            meta = {
                "synthetic": True,
                "generator": GENERATOR,
                "kind": kind,
                "patient_id": patient.pid,
                "note_index": k,
                "seed": seed,
                "lang": lang,
            }
            yield Document(f"synth-{seed}-{index:05d}", text, tuple(spans), meta)
            index += 1
        patient_index += 1


def _account(rng: Random) -> str:
    return rng.choice([f"V{_digits(rng, 8)}", _digits(rng, 10), f"{_digits(rng, 4)}-{_digits(rng, 5)}"])


def generate_notes(
    n: int,
    *,
    seed: int = 0,
    lang: str = "en",
    kinds: Sequence[str] | None = None,
    notes_per_patient: tuple[int, int] = (1, 4),
    progress: ProgressFn | None = None,
) -> list[Document]:
    """``n`` deterministic synthetic notes with gold spans; see module docstring."""
    out: list[Document] = []
    step = max(1, n // 100)
    for doc in iter_notes(n, seed=seed, lang=lang, kinds=kinds, notes_per_patient=notes_per_patient):
        out.append(doc)
        if progress is not None and len(out) % step == 0:
            progress("generating synthetic notes", len(out) / n)
    if progress is not None:
        progress("generating synthetic notes", 1.0)
    return out
