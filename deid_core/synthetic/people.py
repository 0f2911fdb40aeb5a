"""Patients, care teams and places: who and where the notes are about.

Each patient draws from its own ``random.Random``, seeded with a string that
Python hashes with SHA-512 (stable across runs and machines, unlike ``hash()``
under hash randomisation). Names and address parts come from Faker's ``en_US``
and ``es_ES`` word lists, sampled with that ``Random`` rather than through a
Faker instance: Faker rebuilds cumulative weights on every weighted draw
(about 0.1 ms per surname), which made it two thirds of the generator's time.
"""

from __future__ import annotations

import bisect
import itertools
import unicodedata
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from random import Random
from typing import Any

from faker.providers.address.en_US import Provider as _AddressEN
from faker.providers.company.en_US import Provider as _CompanyEN
from faker.providers.person.en_US import Provider as _PersonEN
from faker.providers.person.es_ES import Provider as _PersonES


class Weighted:
    """Weighted choice with cumulative weights computed once."""

    __slots__ = ("values", "cum")

    def __init__(self, weights: Any) -> None:
        if isinstance(weights, dict):
            self.values = list(weights)
            self.cum = list(itertools.accumulate(weights.values()))
        else:  # a plain sequence: uniform
            self.values = list(weights)
            self.cum = list(range(1, len(self.values) + 1))

    def pick(self, rng: Random) -> str:
        return self.values[bisect.bisect_right(self.cum, rng.random() * self.cum[-1])]


@lru_cache(maxsize=2)
def faker_pools(lang: str) -> dict[str, Any]:
    if lang == "es":
        return {
            "male": Weighted(_PersonES.first_names_male),
            "female": Weighted(_PersonES.first_names_female),
            "first": Weighted(tuple(_PersonES.first_names_male) + tuple(_PersonES.first_names_female)),
            "last": Weighted(_PersonES.last_names),
        }
    return {
        "male": Weighted(_PersonEN.first_names_male),
        "female": Weighted(_PersonEN.first_names_female),
        "first": Weighted(_PersonEN.first_names),
        "last": Weighted(_PersonEN.last_names),
        "city_prefixes": list(_AddressEN.city_prefixes),
        "city_suffixes": list(_AddressEN.city_suffixes),
        "street_suffixes": list(_AddressEN.street_suffixes),
        "company_suffixes": list(_CompanyEN.company_suffixes),
    }


# The places lexicon lists US populated places by population, then counties and states
# (scripts/build_lexicons.py); the first 10,000 entries are all towns and cities.
US_TOWNS = 10_000


@lru_cache(maxsize=1)
def us_towns() -> tuple[str, ...]:
    """The largest US towns and cities of the places lexicon, capitalised as written."""
    from deid_core.engine.lexicons import read_list

    return tuple(capitalise_place(p) for p in read_list("en", "places")[:US_TOWNS] if not any(c.isdigit() for c in p))


def capitalise_place(name: str) -> str:
    """'winston-salem' -> 'Winston-Salem', "o'fallon" -> "O'Fallon", "hell's kitchen" -> "Hell's Kitchen"."""
    out, up = [], True
    for i, ch in enumerate(name):
        out.append(ch.upper() if up else ch)
        up = ch in " -." or (ch == "'" and i == 1)
    return "".join(out)


def digits(rng: Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def letters(rng: Random, n: int) -> str:
    return "".join(rng.choice("ABCDEFGHJKLMNPRSTUVWXYZ") for _ in range(n))


def slug(text: str, keep: str = "") -> str:
    """ASCII letters and digits only (José -> jose), for e-mail addresses and domains."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return "".join(ch for ch in plain.lower() if ch.isalnum() or ch in keep)


class Fake:
    """The few Faker-like generators the notes need, driven by one seeded Random."""

    __slots__ = ("rng", "lang", "pools", "lex")

    def __init__(self, rng: Random, lang: str, lex: dict[str, Any]) -> None:
        self.rng = rng
        self.lang = lang
        self.pools = faker_pools(lang)
        self.lex = lex

    def first_name(self, sex: str) -> str:
        name = self.pools["male" if sex == "M" else "female"].pick(self.rng)
        if self.lang == "es" and self.rng.random() < 0.15:  # José Luis, María Isabel
            other = self.pools["male" if sex == "M" else "female"].pick(self.rng)
            if other != name:
                name = f"{name} {other}"
        return name

    def last_name(self) -> str:
        return self.pools["last"].pick(self.rng)

    def surnames(self) -> str:
        """Spanish names carry two surnames (sometimes with a particle); English ones one."""
        if self.lang == "es":
            first, second = self.last_name(), self.last_name()
            if self.rng.random() < 0.08:
                second = f"{self.rng.choice(['de la', 'del', 'de'])} {second}"
            return f"{first} {second}"
        return self.last_name()

    def city(self) -> str:
        r, p = self.rng, self.pools
        if self.lang == "es":
            return str(r.choice(self.lex["cities"])[0])
        if r.random() < 0.5:
            # Real towns, larger ones more often: real notes name Tucson and Valdosta, and a
            # starter that only ever saw "Jessicaview" learns that a known place name is no cue.
            towns = us_towns()
            return towns[int(len(towns) * r.random() ** 2)]
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
        if self.lang == "es":
            prefix = r.choice(self.lex["street_prefixes"])
            style = r.randrange(3)
            if style == 0:
                name = f"{p['first'].pick(r)} {self.last_name()}"
            elif style == 1:
                name = self.last_name()
            else:
                name = r.choice(self.lex["street_names"])
            return f"{prefix} {name}"
        name = p["first"].pick(r) if r.random() < 0.5 else p["last"].pick(r)
        return f"{name} {r.choice(p['street_suffixes'])}"

    def street_address(self) -> str:
        r = self.rng
        if self.lang == "es":
            number = r.randint(1, 180)
            if r.random() < 0.08:  # a road address: "Carretera de Toledo km 12,500"
                return f"Carretera de {self.city()} km {r.randint(1, 40)},{digits(r, 3)}"
            tail = r.choice([
                f", {number}", f" {number}", f", {number}, {r.randint(1, 9)}º {r.choice('ABCDEF')}",
                f" {number}, {r.randint(1, 9)} {r.choice('ABCD')}", ", s/n", " s/n",
                f", {number}, {r.randint(1, 6)}º-{r.choice(['izda', 'dcha', 'A', 'B'])}",
                f" {number}-{number + 2}, {r.randint(1, 6)}º {r.choice(['dcha', 'izda'])}",
                f", nº {number}", f", {number}, bajo", f" {number}, {r.randint(1, 9)}º{r.choice('ABCD')}",
            ])
            return f"{self.street_name()}{tail}"
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

    def phone(self) -> str:
        r = self.rng
        if self.lang == "es":
            style = r.randrange(6)
            if style == 0:
                return f"9{r.randint(1, 8)} {digits(r, 3)} {digits(r, 2)} {digits(r, 2)}"
            if style == 1:
                return f"9{digits(r, 2)} {digits(r, 3)} {digits(r, 3)}"
            if style == 2:
                return f"9{digits(r, 8)}"
            if style == 3:
                return f"6{digits(r, 8)}"
            if style == 4:
                return f"+34 9{digits(r, 2)} {digits(r, 3)} {digits(r, 3)}"
            return f"9{digits(r, 8)} ext {digits(r, 4)}"
        a = f"{r.randint(2, 9)}{digits(r, 2)}"
        b = f"{r.randint(2, 9)}{digits(r, 2)}"
        c = digits(r, 4)
        style = r.randrange(6)
        if style == 0:
            return f"({a}) {b}-{c}"
        if style == 1:
            return f"{a}-{b}-{c}"
        if style == 2:
            return f"{a}.{b}.{c}"
        if style == 3:
            return f"+1 {a} {b} {c}"
        if style == 4:
            return f"{a}-{b}-{c} x{digits(r, 4)}"
        return f"({a}){b}-{c}"


@dataclass(frozen=True, slots=True)
class Person:
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
        if style == "surname":
            return self.last.split()[0]
        if style == "first":
            return self.first
        if style == "initial":
            return f"{self.first[0]}. {self.last}"
        if style == "initials":
            return f"{self.first[0]}{self.middle[0]}{self.last[0]}".upper()
        if style == "lower":  # hurried shorthand: "d/w dr smith"
            return self.last.lower()
        raise KeyError(style)


@dataclass(frozen=True, slots=True)
class Place:
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
class Patient:
    pid: str
    lang: str
    rng: Random
    fake: Fake
    person: Person
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
    relative: Person
    relation: str
    relative_phone: str
    hospital: Place
    practice: Place
    team: dict[str, Person] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)


def person(fake: Fake, sex: str | None = None) -> Person:
    sex = sex or fake.rng.choice("MF")
    return Person(fake.first_name(sex), fake.first_name(sex).split()[0], fake.surnames(), sex)


def domain(name: str, rng: Random) -> str:
    s = slug(name)
    if len(s) > 20:  # long names go by their initials, as hospitals' web sites do
        s = "".join(w[0] for w in name.split() if w[0].isalnum()).lower() + rng.choice(["health", "med", "hospital", ""])
        s = slug(s)
    return s + rng.choice([".org", ".org", ".com", ".net"])


def hospital_name(fake: Fake, lex: dict[str, Any], city: str | None = None) -> str:
    rng = fake.rng
    if fake.lang == "es":
        city = city or fake.city()
        patron = rng.choice(lex["hospital_patrons"])
        saint = f"{rng.choice(['San', 'Santa'])} {fake.first_name(rng.choice('MF')).split()[0]}"
        return rng.choice([
            f"Hospital Universitario {patron}",
            f"Hospital Universitario de {city}",
            f"Hospital General Universitario de {city}",
            f"Hospital {patron}",
            f"Hospital {saint}",
            f"Hospital Universitario {saint}",
            f"Complejo Hospitalario de {city}",
            f"Complejo Hospitalario Universitario de {city}",
            f"Hospital Clínico de {city}",
            f"Hospital Clínico Universitario de {city}",
            f"Clínica {fake.last_name()}",
            f"Hospital Comarcal de {city}",
            f"Hospital de {city}",
            f"Hospital Regional Universitario de {city}",
            f"Hospital Infanta {fake.first_name('F').split()[0]}",
            f"Hospital General de {city}",
        ])
    suffix = rng.choice(lex["hospital_suffixes"])
    style = rng.randrange(4)
    if style == 0:
        return f"{city or fake.city()} {suffix}"
    if style == 1:
        return f"{fake.last_name()} {suffix}"
    if style == 2:
        return f"{rng.choice(lex['hospital_prefixes'])} {suffix}"
    return f"{fake.last_name()} {fake.last_name()} {suffix}"


def _city_state_zip(fake: Fake, lex: dict[str, Any]) -> tuple[str, str, str, str]:
    rng = fake.rng
    if fake.lang == "es":
        city, province, prefix = rng.choice(lex["cities"])
        return city, province, province, f"{int(prefix):02d}{rng.randint(0, 999):03d}"
    state, abbr = rng.choice(lex["states"])
    return fake.city(), state, abbr, fake.zipcode() if rng.random() < 0.85 else fake.zipcode_plus4()


def place(fake: Fake, lex: dict[str, Any], kind: str = "hospital") -> Place:
    rng = fake.rng
    city, state, abbr, zipcode = _city_state_zip(fake, lex)
    if kind == "practice":
        if fake.lang == "es":
            name = rng.choice([f"Centro de Salud {city}", f"Centro de Salud {rng.choice(lex['street_names'])}",
                               f"Centro de Salud {fake.last_name()}"])
        else:
            name = rng.choice(
                [f"{fake.last_name()} Family Medicine", f"{city} Primary Care",
                 f"{fake.last_name()} and {fake.last_name()} Medical Associates",
                 f"{city} Health Center"]
            )
    else:
        name = hospital_name(fake, lex, city)
    return Place(
        name=name, street=fake.street_address(), city=city, state=state, state_abbr=abbr,
        zip=zipcode, phone=fake.phone(), fax=fake.phone(), domain=domain(name, rng),
    )


def make_patient(index: int, seed: int, lang: str, lex: dict[str, Any]) -> Patient:
    rng = Random(f"deid-workbench-synth:{lang}:{seed}:{index}" if lang != "en" else f"deid-workbench-synth:{seed}:{index}")
    fake = Fake(rng, lang, lex)
    me = person(fake)
    city, state, abbr, zipcode = _city_state_zip(fake, lex)
    relation, relation_sex = rng.choice(lex["relations"])
    relative = person(fake, relation_sex)
    if relation in lex.get("blood_relations", ()) and rng.random() < 0.6:
        relative = Person(relative.first, relative.middle, me.last, relative.sex)
    email_user = rng.choice(
        [f"{me.first[0]}{me.last.split()[0]}", f"{me.first.split()[0]}.{me.last.split()[0]}",
         f"{me.last.split()[0]}{me.first[0]}{digits(rng, 2)}", f"{me.first.split()[0]}{digits(rng, 3)}"]
    )
    profession = rng.choice(lex["professions"])
    if isinstance(profession, list):  # [masculine, feminine]
        profession = profession[0 if me.sex == "M" else 1]
    if lang == "es":
        mrn = rng.choice([digits(rng, 7), digits(rng, 6), digits(rng, 8), digits(rng, 9)])
        ssn = ""
        healthplan = rng.choice([f"{digits(rng, 2)} {digits(rng, 8)} {digits(rng, 2)}", f"{digits(rng, 2)} {digits(rng, 8)}",
                                 f"{digits(rng, 2)}/{digits(rng, 8)}/{digits(rng, 2)}"])
        org = rng.choice([f"Universidad de {fake.city()}", f"Fundación {fake.last_name()}",
                          f"Instituto {rng.choice(lex['street_names'])}", f"Mutua {fake.last_name()}"])
        insurer = ""
        vehicle = f"{digits(rng, 4)} {letters(rng, 3)}"
    else:
        mrn = rng.choice([
            digits(rng, 7), "00" + digits(rng, 6), f"{digits(rng, 3)}-{digits(rng, 2)}-{digits(rng, 2)}",
            letters(rng, 1) + digits(rng, 8),
        ])
        area = rng.choice([rng.randint(1, 665), rng.randint(667, 899)])
        ssn = f"{area:03d}-{rng.randint(1, 99):02d}-{rng.randint(1, 9999):04d}"
        healthplan = rng.choice([
            letters(rng, 3) + digits(rng, 9),
            f"{rng.randint(1, 9)}{letters(rng, 2)}{digits(rng, 1)}-{letters(rng, 2)}{digits(rng, 1)}-{letters(rng, 2)}{digits(rng, 2)}",
            digits(rng, 11),
        ])
        org = rng.choice([fake.company(), f"{fake.last_name()} {rng.choice(lex['org_suffixes'])}",
                          f"{fake.city()} {rng.choice(lex['org_suffixes'])}"])
        insurer = rng.choice(lex["insurers"])
        vehicle = rng.choice([
            f"{rng.randint(1, 9)}{letters(rng, 3)}{digits(rng, 3)}", f"{letters(rng, 3)}-{digits(rng, 4)}",
            f"{rng.randint(1, 5)}{letters(rng, 4)}{digits(rng, 2)}{letters(rng, 1)}{digits(rng, 6)}",
        ])
    device = rng.choice([
        f"{letters(rng, 3)}{digits(rng, 6)}{letters(rng, 1)}", f"SN{digits(rng, 8)}",
        f"{digits(rng, 2)}-{digits(rng, 5)}-{letters(rng, 2)}",
    ])
    country = rng.choice(lex["countries"])
    if lang == "es" and rng.random() < 0.75:
        country = "España"
    return Patient(
        pid=f"P{index + 1:04d}", lang=lang, rng=rng, fake=fake, person=me, dob=date(2000, 1, 1),
        mrn=mrn, ssn=ssn, street=fake.street_address(), city=city, state=state, state_abbr=abbr,
        zip=zipcode, phone=fake.phone(), email=f"{slug(email_user, keep='.') or 'x'}@{rng.choice(lex['email_domains'])}",
        healthplan=healthplan, insurer=insurer, profession=profession, organization=org,
        country=country, vehicle=vehicle, device=device,
        username=rng.choice([f"{slug(me.first)[:1]}{slug(me.last)[:10]}{rng.randint(1, 99)}", fake.user_name()]),
        relative=relative, relation=relation, relative_phone=fake.phone(),
        hospital=place(fake, lex), practice=place(fake, lex, "practice"),
    )


def age_at(dob: date, d: date) -> int:
    return d.year - dob.year - ((d.month, d.day) < (dob.month, dob.day))


_ADMITTED = ("discharge_summary", "informe_alta")
_INPATIENT = ("progress_note", "caso_clinico")


def timeline(patient: Patient, kinds: list[str]) -> list[dict[str, date]]:
    """Dates for each note of a patient, in time order: admission before
    discharge, and one note's events before the next note's."""
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
        if kind in _ADMITTED:
            d["admit"] = begin
            d["note"] = d["discharge"] = begin + timedelta(days=rng.randint(1, 14))
            d["transcribed"] = d["discharge"] + timedelta(days=rng.randint(0, 2))
        elif kind in _INPATIENT:
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
