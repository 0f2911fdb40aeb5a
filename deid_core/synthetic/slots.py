"""Template slots: what each ``{name}`` writes, and whether it is PHI.

A PHI slot has a *role* (``PATIENT``, ``DATE``, ``RELATIVE``, ``SEX``...). The
language's template file maps roles to its scheme's labels (i2b2 2014 for
English, MEDDOCAN for Spanish), so one slot serves both languages: a relative's
name is ``PATIENT`` in i2b2 2014 and ``FAMILIARES_SUJETO_ASISTENCIA`` in MEDDOCAN.
Filler slots (``{med}``, ``{vitals}``, ``{eponym}``) write clinical text that
is not PHI, much of it PHI-looking on purpose.

The ``Writer`` records a span at the moment it writes a PHI value, so offsets
are exact by construction.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from importlib import resources
from random import Random
from typing import TYPE_CHECKING

from deid_core.engine.lexicons import load_lexicon
from deid_core.spans import Span
from deid_core.synthetic.people import (
    Patient,
    Person,
    age_at,
    digits,
    hospital_name,
    letters,
    person,
    slug,
)

if TYPE_CHECKING:
    from deid_core.synthetic.templates import Templates


class Writer:
    """Appends text and records a gold span for every PHI piece as it is written."""

    __slots__ = ("chunks", "spans", "pos", "labels")

    def __init__(self, labels: Mapping[str, str]) -> None:
        self.chunks: list[str] = []
        self.spans: list[Span] = []
        self.pos = 0
        self.labels = labels

    def lit(self, text: str) -> None:
        if text:
            self.chunks.append(text)
            self.pos += len(text)

    def phi(self, text: str, role: str) -> None:
        # Edge or doubled whitespace would give a span the tokenizer cannot align.
        text = " ".join(text.split())
        if not text:
            raise ValueError(f"empty PHI value for {role}")
        start = self.pos
        self.lit(text)
        self.spans.append(Span(start, self.pos, self.labels.get(role, role)))

    def text(self) -> str:
        return "".join(self.chunks)


@dataclass
class Note:
    kind: str
    lang: str
    patient: Patient
    rng: Random
    dates: dict[str, date]
    date_style: str
    account: str
    used: set[str] = field(default_factory=set)
    fixed: dict[str, str] = field(default_factory=dict)


SlotFn = Callable[[Note, "str | None", Writer, "Templates"], None]
SLOTS: dict[str, SlotFn] = {}
SLOT_FORMATS: dict[str, tuple[str, ...]] = {}
SLOT_ROLES: dict[str, str | None] = {}
PERSON_FORMATS = ("full", "formal", "lastfirst", "caps", "last", "surname", "first", "initial",
                  "initials", "lower", "sig", "header")
TEAM = ("attending", "pcp", "consultant", "consultant2", "referrer", "resident", "radiologist",
        "labdir", "nurse", "tech",
        # issue 12: clinicians who are named without "Dr." in shorthand notes
        "nurse2", "sw", "casemgr", "chaplain", "therapist", "rt")


def slot_key(name: str) -> str:
    """``{He}`` is ``{he}`` capitalised: it starts a sentence."""
    return name if name in SLOTS else name[0].lower() + name[1:]


def slot(name: str, formats: tuple[str, ...] = (), role: str | None = None) -> Callable[[SlotFn], SlotFn]:
    def deco(fn: SlotFn) -> SlotFn:
        SLOTS[name] = fn
        SLOT_FORMATS[name] = formats
        SLOT_ROLES[name] = role
        return fn

    return deco


def phi_value(name: str, role: str, get: Callable[[Note], str]) -> None:
    def fn(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
        w.phi(get(note), role)

    slot(name, role=role)(fn)


# ------------------------------------------------------------------ people


def _person_style(note: Note, fmt: str | None) -> str:
    rng = note.rng
    if note.lang == "es":  # Spanish notes write given name(s) and both surnames
        if fmt in (None, "sig", "header", "formal"):
            return "full" if fmt != "header" or rng.random() < 0.7 else "lastfirst"
        return fmt
    if fmt == "sig":
        return rng.choice(("full", "full", "formal"))
    if fmt == "header":
        return rng.choice(("lastfirst", "caps", "full", "full"))
    if fmt is None:
        return rng.choice(("full", "formal", "lastfirst"))
    return fmt


@slot("patient", PERSON_FORMATS, role="PATIENT")
def _s_patient(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(note.patient.person.fmt(_person_style(note, fmt)), "PATIENT")


@slot("relative", PERSON_FORMATS, role="RELATIVE")
def _s_relative(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(note.patient.relative.fmt(_person_style(note, fmt)), "RELATIVE")


def team_member(note: Note, role: str) -> Person:
    """The patient's clinician in ``role``, created on first mention and kept."""
    p = note.patient
    if role not in p.team:
        p.team[role] = person(p.fake)
    return p.team[role]


def _team_slot(role: str) -> None:
    def fn(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
        doc = team_member(note, role)
        w.phi(doc.fmt(_person_style(note, fmt)), "DOCTOR")

    slot(role, PERSON_FORMATS, role="DOCTOR")(fn)


for _role in TEAM:
    _team_slot(_role)


@slot("drtitle", TEAM)
def _s_drtitle(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """``Dr.``/``Dra.`` agreeing with the named clinician (not PHI)."""
    doc = team_member(note, fmt or "attending")
    female = doc.sex == "F"
    w.lit(("Dra." if female else "Dr.") if note.lang == "es" else "Dr.")


@slot("typist", role="DOCTOR")
def _s_typist(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(note.rng.choice(t.lex["typists"]), "DOCTOR")


@slot("familiar", role="RELATIVE")
def _s_familiar(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """The patient's relative named by kinship ("su madre"): PHI in MEDDOCAN."""
    w.phi(note.patient.relation, "RELATIVE")


@slot("familiar_otro", ("art", "plural"), role="RELATIVE")
def _s_familiar_otro(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """Another relative by kinship: "su [abuelo materno]", "la [madre]", "sus [padres]"."""
    if fmt == "plural":
        w.phi(note.rng.choice(t.lex["kin_plural"]), "RELATIVE")
        return
    word, sex = note.rng.choice(t.lex["kin"])
    if fmt == "art":
        w.lit("el " if sex == "M" else "la ")
    w.phi(word, "RELATIVE")


@slot("sexo", role="SEX")
def _s_sexo(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    male = note.patient.person.sex == "M"
    w.phi(note.rng.choice(["varón", "hombre"]) if male else "mujer", "SEX")


@slot("sexo_letra", role="SEX")
def _s_sexo_letra(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    male = note.patient.person.sex == "M"
    if note.rng.random() < 0.1:
        w.phi("Hombre" if male else "Mujer", "SEX")
    else:
        w.phi("H" if male else "M", "SEX")


KIN_FORMATS = ("kin", "paren", "first", "first_only", "name", "kin_first", "kin_full")


def named_relative(note: Note) -> tuple[str, Person]:
    """A relative named by kinship, kept per patient: the usual one or a second one."""
    p = note.patient
    if "kin2" not in p.team:
        word, sex = note.rng.choice(_lex(note)["kin_named"])
        rel = person(p.fake, sex)
        if word in ("daughter", "son", "sister", "brother", "dtr") and note.rng.random() < 0.5:
            rel = Person(rel.first, rel.middle, p.person.last, rel.sex)
        p.team["kin2"] = rel
        p.extra["kin2"] = word
        p.extra["kin_pick"] = "kin2" if note.rng.random() < 0.5 else "relative"
    if p.extra["kin_pick"] == "relative":
        return p.relation, p.relative
    return p.extra["kin2"], p.team["kin2"]


@slot("kinfirst", KIN_FORMATS, role="RELATIVE")
def _s_kinfirst(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """A relative's first name after a kinship word: "daughter Mary", "wife (Ann)"."""
    word, rel = named_relative(note)
    fmt = fmt or "kin"
    if fmt == "kin_first":
        fmt = note.rng.choice(("kin", "paren"))
    if fmt in ("first", "first_only", "name"):
        w.phi(rel.first, "RELATIVE")
    elif fmt == "paren":
        w.lit(f"{word} (")
        w.phi(rel.first, "RELATIVE")
        w.lit(")")
    elif fmt == "kin_full":
        w.lit(f"{word}{note.rng.choice((' ', ', '))}")
        w.phi(rel.fmt(note.rng.choice(("full", "full", "formal"))), "RELATIVE")
    else:
        w.lit(f"{word} ")
        w.phi(rel.first, "RELATIVE")


def phone_odd(rng: Random) -> str:
    """An area code and seven digits in the spacings people type, sometimes with an extension."""
    a = f"{rng.randint(2, 9)}{digits(rng, 2)}"
    b = f"{rng.randint(2, 9)}{digits(rng, 2)}"
    c = digits(rng, 4)
    out = rng.choice([f"{a} {b} {c}", f"({a}){b} {c}", f"{a}-{b}{c}", f"{a}{b}{c}", f"{a} {b}{c}",
                      f"{a}/{b}-{c}", f"({a}) {b} {c}", f"{a}.{b}.{c}", f"{a} {b}-{c}", f"1-{a}-{b}-{c}"])
    if rng.random() < 0.15:
        out += rng.choice((f" x{digits(rng, 4)}", f" x{digits(rng, 3)}"))
    return out


# ------------------------------------------------------------------ identifiers and places


def _staff_username(note: Note) -> str:
    rng = note.rng
    p = note.patient.team.get("resident") or person(note.patient.fake)
    first, last = slug(p.first), slug(p.last)
    return rng.choice([f"{first[:1]}{last}", f"{last}{first[:1]}", f"{first[:1]}{slug(p.middle)[:1]}{last[:1]}{rng.randint(1, 99)}"])


def _idnum(rng: Random) -> str:
    return rng.choice(
        [f"{letters(rng, 1)}{rng.randint(10, 30)}-{digits(rng, 5)}", digits(rng, 9),
         f"{rng.randint(10, 99)}-{digits(rng, 6)}", f"{letters(rng, 2)}{digits(rng, 7)}"]
    )


def _lex(note: Note) -> dict:
    from deid_core.synthetic.templates import load_templates

    return load_templates(note.lang).lex


def _named(note: Note, key: str) -> str:
    """A place named after a surname or a town, with a suffix from the lexicon."""
    fake = note.patient.fake
    base = fake.last_name() if note.rng.random() < 0.5 else fake.city()
    return f"{base} {note.rng.choice(_lex(note)[key])}"


def _doc_phone(note: Note) -> str:
    phone = note.patient.hospital.phone
    if phone[-4:].isdigit():  # a direct line in the hospital's exchange
        return phone[:-4] + digits(note.rng, 4)
    return note.patient.fake.phone()


def _ncol(note: Note) -> str:
    """Spanish medical college number: province code twice, then five digits."""
    code = note.patient.hospital.zip[:2]
    return f"{code} {code} {digits(note.rng, 5)}"


phi_value("mrn", "MEDICALRECORD", lambda n: n.patient.mrn)
phi_value("ssn", "SSN", lambda n: n.patient.ssn)
phi_value("account", "ACCOUNT", lambda n: n.account)
phi_value("healthplan", "HEALTHPLAN", lambda n: n.patient.healthplan)
phi_value("device", "DEVICE", lambda n: n.patient.device)
phi_value("vehicle", "VEHICLE", lambda n: n.patient.vehicle)
phi_value("username", "USERNAME", lambda n: n.patient.username if n.rng.random() < 0.3 else _staff_username(n))
phi_value("idnum", "IDNUM", lambda n: _idnum(n.rng))
phi_value("clia", "IDNUM", lambda n: f"{digits(n.rng, 2)}D{digits(n.rng, 7)}")
phi_value("bioid", "BIOID", lambda n: n.rng.choice([f"FP-{digits(n.rng, 4)}-{digits(n.rng, 4)}", f"BIO{digits(n.rng, 7)}", f"RS{digits(n.rng, 6)}{letters(n.rng, 1)}"]))
phi_value("license", "LICENSE", lambda n: n.rng.choice([digits(n.rng, 6), f"MD{digits(n.rng, 6)}", f"{n.patient.hospital.state_abbr}-{digits(n.rng, 5)}"]))
phi_value("dea", "LICENSE", lambda n: f"{letters(n.rng, 2)}{digits(n.rng, 7)}")
phi_value("ncol", "LICENSE", _ncol)
phi_value("ip", "IPADDR", lambda n: n.patient.fake.ipv4_private() if n.rng.random() < 0.6 else n.patient.fake.ipv4_public())
phi_value("street", "STREET", lambda n: n.patient.street)
phi_value("city", "CITY", lambda n: n.patient.city)
phi_value("zip", "ZIP", lambda n: n.patient.zip)
phi_value("phone", "PHONE", lambda n: n.patient.phone)
phi_value("relative_phone", "PHONE", lambda n: n.patient.relative_phone)
phi_value("email", "EMAIL", lambda n: n.patient.email)
phi_value("profession", "PROFESSION", lambda n: n.patient.profession)
phi_value("organization", "ORGANIZATION", lambda n: n.patient.organization)
phi_value("insurer", "ORGANIZATION", lambda n: n.patient.insurer)
phi_value("pharmacy", "ORGANIZATION", lambda n: n.rng.choice(_lex(n)["pharmacies"]))
phi_value("country", "COUNTRY", lambda n: n.patient.country if n.rng.random() < 0.7 else n.rng.choice(_lex(n)["countries"]))
phi_value("h_street", "STREET", lambda n: n.patient.hospital.street)
phi_value("h_city", "CITY", lambda n: n.patient.hospital.city)
phi_value("h_zip", "ZIP", lambda n: n.patient.hospital.zip)
phi_value("h_phone", "PHONE", lambda n: n.patient.hospital.phone)
phi_value("h_fax", "FAX", lambda n: n.patient.hospital.fax)
phi_value("h2_name", "HOSPITAL", lambda n: n.patient.practice.name)
phi_value("centro_salud", "HEALTHCENTER", lambda n: n.patient.practice.name)
phi_value("h2_street", "STREET", lambda n: n.patient.practice.street)
phi_value("h2_city", "CITY", lambda n: n.patient.practice.city)
phi_value("h2_state", "STATE", lambda n: n.patient.practice.state_abbr)
phi_value("h2_zip", "ZIP", lambda n: n.patient.practice.zip)
phi_value("fax", "FAX", lambda n: n.patient.practice.fax)
phi_value("doc_phone", "PHONE", _doc_phone)
phi_value("pager", "PHONE", lambda n: n.rng.choice([digits(n.rng, 5), f"{n.rng.randint(1, 9)}-{digits(n.rng, 4)}", n.patient.fake.phone()]))
phi_value("pager5", "PHONE", lambda n: digits(n.rng, 5))
phi_value("ext", "PHONE", lambda n: n.rng.choice([digits(n.rng, 4), digits(n.rng, 5), f"{n.rng.randint(2, 9)}-{digits(n.rng, 4)}"]))
phi_value("phone_odd", "PHONE", lambda n: phone_odd(n.rng))
phi_value("street_other", "STREET", lambda n: n.patient.fake.street_name())
phi_value("city_other", "CITY", lambda n: n.patient.fake.city())
phi_value("pais_hospital", "COUNTRY", lambda n: "España" if n.lang == "es" else "USA")
phi_value("region", "STATE", lambda n: n.rng.choice(_lex(n)["regions"]))
phi_value("state_other", "STATE", lambda n: n.rng.choice(_lex(n)["states"])[1])
phi_value("lab_org", "ORGANIZATION", lambda n: f"{n.patient.fake.last_name()} {n.rng.choice(_lex(n)['lab_suffixes'])}")
phi_value("home_care", "ORGANIZATION", lambda n: _named(n, "home_care_suffix"))
phi_value("location_other", "LOCATION-OTHER", lambda n: _named(n, "location_other_suffix"))


# --------------------------------------------------------- agencies, police, wards and homes
# Session 20. The facilities and organisations the starter missed most in hand-written notes
# were named with ordinary words, a coined word or an acronym and met after a cue ("has ... VNA
# coming", "transfer to Farr 7", "... PD officer at bedside", "pt wants to go to Maplecrest"). The
# generator's were all a surname or a town before a suffix, so the CRF had learned the suffix, not
# the cue. Workplaces and schools named the same way were measured too and left out: they cost
# presidio-synth precision for little gain (docs/engine.md, "Session 20").

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "br", "cl", "dr", "gr", "kr", "pl", "st", "tr", "sh", "ch")


def _coined(rng: Random) -> str:
    """An invented brand word ("Velora", "Kantrix"): in no word list, so only the cue can tell."""
    word = "".join(rng.choice(_ONSETS) + rng.choice("aeiou") for _ in range(rng.choice((2, 2, 3))))
    if rng.random() < 0.4:
        word += rng.choice("xnslrk")
    return word.capitalize()


def _acronym(note: Note) -> str:
    """Two to four capitals that spell no template shorthand (PMH, ICU) and no common word."""
    lexicon = load_lexicon(note.lang) if note.lang == "en" else None
    shorthand = _template_shorthand(note.lang)
    for _ in range(50):
        word = letters(note.rng, note.rng.choice((2, 3, 3, 4)))
        if word not in shorthand and (lexicon is None or lexicon.classify(word) == "unknown"):
            return word
    return letters(note.rng, 4)


def _worded_agency(note: Note) -> str:
    """One or two ordinary words, a coined word, a surname or a town, then an agency's kind."""
    rng, lex = note.rng, _lex(note)
    r = rng.random()
    if r < 0.5:
        base = " ".join(rng.sample(lex["name_words"], rng.choice((1, 1, 2))))
    elif r < 0.6:
        base = _coined(rng)
    elif r < 0.8:
        base = note.patient.fake.last_name()
    else:
        base = note.patient.fake.city()
    return f"{base} {rng.choice(lex['home_care_suffix'])}"


def _casual(note: Note, name: str) -> str:
    """Nurses often type a name in lower case inside a mixed-case note."""
    return name.lower() if note.rng.random() < 0.25 else name


def _agency(note: Note) -> str:
    """Home care, hospice and visiting-nurse agencies, named as the town's or in words."""
    rng, lex = note.rng, _lex(note)
    r = rng.random()
    if r < 0.35:
        name = _worded_agency(note)
    elif r < 0.55:
        name = f"{rng.choice(lex['agency_heads'])} of {rng.choice(('the ', ''))}{rng.choice(lex['name_words'])}"
    elif r < 0.75:
        name = f"{note.patient.fake.city()} VNA"
    else:
        name = f"{_acronym(note)} {rng.choice(('VNA', 'Hospice', 'Home Care'))}"
    return _casual(note, name)


def _police(note: Note) -> str:
    rng = note.rng
    town = note.patient.fake.city()
    return _casual(note, rng.choice((f"{town} PD", f"{town} Police", f"{town} Fire", f"{town} Rescue",
                                     f"{town} Ambulance", f"{_coined(rng)} Ambulance")))


def _ward(note: Note) -> str:
    """A ward named after a benefactor, as Boston hospitals name theirs ("Farr 7")."""
    rng = note.rng
    return f"{note.patient.fake.last_name()} {rng.randint(2, 12)}{rng.choice(('', '', '', ' West', ' North'))}"


phi_value("agency", "ORGANIZATION", _agency)
phi_value("police", "ORGANIZATION", _police)
phi_value("ward", "HOSPITAL", _ward)


@lru_cache(maxsize=4)
def _template_shorthand(lang: str) -> frozenset[str]:
    """Capitalised shorthand the templates write (PMH, HPI, ICU).

    A hospital whose initials spell one ("Port Mary Hospital", PMH) would put
    its name in every "PMH:" header, and the leak check would rightly flag it.
    """
    raw = resources.files("deid_core").joinpath(f"data/synthetic/{lang}.yaml").read_text("utf-8")
    return frozenset(re.findall(r"\b[A-Z]{2,5}\b", raw))


def _initials(name: str, lang: str = "en") -> str:
    """A name's initials, or the name itself when they would spell the templates' shorthand."""
    initials = "".join(w[0] for w in name.replace("'s", "").split() if w[0].isalpha()).upper()
    return name if initials in _template_shorthand(lang) else initials


@slot("hospital", ("caps", "other", "abbr", "other_abbr"), role="HOSPITAL")
def _s_hospital(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """Hospitals go by their initials in clinical shorthand ("transferred from SGH")."""
    if fmt == "other":
        w.phi(hospital_name(note.patient.fake, t.lex), "HOSPITAL")
    elif fmt == "other_abbr":
        w.phi(_initials(hospital_name(note.patient.fake, t.lex), t.lang), "HOSPITAL")
    elif fmt == "abbr":
        w.phi(_initials(note.patient.hospital.name, t.lang), "HOSPITAL")
    elif fmt == "caps":
        w.phi(note.patient.hospital.name.upper(), "HOSPITAL")
    else:
        w.phi(note.patient.hospital.name, "HOSPITAL")


@slot("facility", ("short", "lower", "abbr", "bare"), role="HOSPITAL")
def _s_facility(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """Rehabs and nursing homes: full name, a short one-word suffix, lowercase, initials, or a
    name with no kind at all ("Maplecrest", "Granite Hill"), which only its context tells."""
    if fmt is None:
        w.phi(_named(note, "facilities_suffix"), "HOSPITAL")
        return
    if fmt == "bare":
        words = t.lex["name_words"]
        one = [x for x in words if " " not in x]
        name = note.rng.choice([
            f"{note.rng.choice(one)}{note.rng.choice(t.lex['place_endings'])}".capitalize(),
            f"{note.rng.choice(one)} {note.rng.choice(('Hill', 'Park', 'Gardens', 'Point', 'Commons', 'Terrace'))}",
            f"{note.patient.fake.last_name()} {note.rng.choice(('Home', 'Hall', 'Court', 'Village'))}",
        ])
        w.phi(_casual(note, name), "HOSPITAL")
        return
    name = _named(note, "facility_short_suffix" if fmt != "abbr" else "facilities_suffix")
    if fmt == "lower":
        name = name.lower()
    elif fmt == "abbr":
        name = _initials(name, t.lang)
    w.phi(name, "HOSPITAL")


@slot("state", ("full",), role="STATE")
def _s_state(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    p = note.patient
    full = fmt == "full" or (fmt is None and note.rng.random() < 0.3)
    w.phi(p.state if full else p.state_abbr, "STATE")


@slot("h_state", ("full",), role="STATE")
def _s_h_state(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    h = note.patient.hospital
    w.phi(h.state if fmt == "full" else h.state_abbr, "STATE")


@slot("h_url", role="URL")
def _s_h_url(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    d = note.patient.hospital.domain
    w.phi(note.rng.choice([f"https://www.{d}", f"www.{d}", f"https://portal.{d}/login", f"http://{d}/results"]), "URL")


@slot("doc_email", role="EMAIL")
def _s_doc_email(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    p = note.patient
    doc = p.team.get("consultant") or p.team.get("attending") or person(p.fake)
    first, last = slug(doc.first), slug(doc.last.split()[0])
    if note.lang == "es":
        user = note.rng.choice([f"{first[:1]}{last}", f"{first[:3]}{last[:3]}", f"{first}.{last}"])
        host = note.rng.choice([p.hospital.domain, *_lex(note)["email_domains"]])
    else:
        user, host = f"{first[:1]}{last}", p.hospital.domain
    w.phi(f"{user}@{host}", "EMAIL")


# ------------------------------------------------------------------ ages and dates


_ONES = ["", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
         "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
_TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def number_words(n: int) -> str:
    """English words for 1..109, hyphenated as in "ninety-two"."""
    if n >= 100:
        rest = n - 100
        return "one hundred" + (f" and {number_words(rest)}" if rest else "")
    if n < 20:
        return _ONES[n]
    tens, ones = divmod(n, 10)
    return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")


@slot("age", ("words",), role="AGE")
def _s_age(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    age = age_at(note.patient.dob, note.dates["note"])
    w.phi(number_words(age) if fmt == "words" else str(age), "AGE")


@slot("edad", role="AGE")
def _s_edad(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """MEDDOCAN's age spans include the unit: "72 años"."""
    w.phi(f"{age_at(note.patient.dob, note.dates['note'])} años", "AGE")


@slot("age_rel", role="AGE")
def _s_age_rel(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(str(note.rng.randint(8, 97)), "AGE")


@slot("decade", role="AGE")
def _s_decade(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(f"{note.rng.randint(3, 9)}0s", "AGE")


_MONTHS = [calendar.month_name[i] for i in range(1, 13)]
_MON = [calendar.month_abbr[i] for i in range(1, 13)]
_MESES = ["enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre",
          "octubre", "noviembre", "diciembre"]
_WEEKDAYS_EN = [calendar.day_name[i] for i in range(7)]

HEADER_DATE_STYLES = {
    "en": ("mdy", "mdy", "mdy_short", "mdyy", "iso", "mon_d_y", "month_d_y", "d_month_y", "dd_mon_y"),
    "es": ("dmy", "dmy", "dmy", "dmy", "dmy_short", "dmy_dash", "d_de_mes_de_y"),
}
_PROSE_DATE_STYLES = {
    "en": ("mdy", "mdy_short", "mdyy", "iso", "mon_d_y", "month_d_y", "d_month_y", "md", "md",
           "mon_d", "month_dth", "month", "month_y", "weekday_md"),
    "es": ("dmy", "dmy", "dmy_short", "d_de_mes_de_y", "d_de_mes", "mes_de_y", "Mes_de_y", "mes"),
}
_MONTH_LEVEL = {"month", "month_y", "year", "mes", "mes_de_y", "Mes_de_y"}


def fmt_date(d: date, style: str) -> str:
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
    if style in ("mon_dth", "dth_of_month"):
        suffix = "th" if 11 <= dd <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(dd % 10, "th")
        return f"{_MON[m - 1]} {dd}{suffix}" if style == "mon_dth" else f"{dd}{suffix} of {_MONTHS[m - 1]}"
    if style == "myy":
        return f"{m}/{y % 100:02d}"
    if style == "mmyy":
        return f"{m:02d}/{y % 100:02d}"
    if style == "myyyy":
        return f"{m}/{y}"
    if style == "month_y":
        return f"{_MONTHS[m - 1]} {y}"
    if style == "year":
        return str(y)
    if style == "dmy":
        return f"{dd:02d}/{m:02d}/{y}"
    if style == "dmy_short":
        return f"{dd}/{m}/{y}"
    if style == "dmy_dash":
        return f"{dd:02d}-{m:02d}-{y}"
    if style == "d_de_mes_de_y":
        return f"{dd} de {_MESES[m - 1]} de {y}"
    if style == "d_de_mes":
        return f"{dd} de {_MESES[m - 1]}"
    if style == "mes_de_y":
        return f"{_MESES[m - 1]} de {y}"
    if style == "Mes_de_y":
        return f"{_MESES[m - 1].capitalize()} de {y}"
    if style == "mes":
        return _MESES[m - 1]
    raise KeyError(style)


DATE_KEYS = ("admit", "discharge", "note", "transcribed", "collected", "reported")
WHEN_KEYS = ("admit", "discharge", "note", "prior", "next")


def _relative_date(note: Note, key: str) -> date:
    if key in note.dates:
        return note.dates[key]
    rng = note.rng
    base = note.dates["note"]
    if key == "next":
        return base + timedelta(days=rng.randint(7, 120))
    earliest = max(note.patient.dob + timedelta(days=18 * 365), base - timedelta(days=15 * 365))
    span = (base - timedelta(days=7) - earliest).days
    return earliest + timedelta(days=rng.randint(0, max(span, 0)))


@slot("dob", role="DATE")
def _s_dob(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(fmt_date(note.patient.dob, note.date_style), "DATE")


@slot("date", DATE_KEYS, role="DATE")
def _s_date(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(fmt_date(_relative_date(note, fmt or "note"), note.date_style), "DATE")


@slot("date_range", ("admit",), role="DATE")
def _s_date_range(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """A stay as "9/14-9/18": two DATE spans around a non-PHI dash."""
    style = note.rng.choice(("md", "mdy_short")) if note.lang == "en" else "dmy_short"
    w.phi(fmt_date(note.dates["admit"], style), "DATE")
    w.lit(note.rng.choice(("-", " - ", " to ")))
    w.phi(fmt_date(note.dates["discharge"], style), "DATE")


@slot("year", role="DATE")
def _s_year(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    w.phi(str(_relative_date(note, "prior").year), "DATE")


_SHORT_DATE_STYLES = ("md", "md", "md", "md", "mdyy", "month_dth", "mon_dth", "dth_of_month", "mon_d")


@slot("sdate", WHEN_KEYS, role="DATE")
def _s_sdate(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """Shorthand dates: "3/4", "3/4/98", "March 4th", "4th of March"."""
    d = _relative_date(note, fmt or "note")
    w.phi(fmt_date(d, note.rng.choice(_SHORT_DATE_STYLES)), "DATE")


@slot("yy", role="DATE")
def _s_yy(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """A bare two-digit year in a history list ("CABG '98", "MI 95"); the apostrophe is not PHI
    (the model's ``apostrophe_year`` filter puts it in the span: docs/engine.md, session 18)."""
    w.phi(f"{_relative_date(note, 'prior').year % 100:02d}", "DATE")


@slot("month_yy", role="DATE")
def _s_month_yy(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    d = _relative_date(note, "prior")
    w.phi(fmt_date(d, note.rng.choice(("myy", "myy", "mmyy", "myyyy"))), "DATE")


@slot("when", WHEN_KEYS, role="DATE")
def _s_when(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
    """A prepositional date phrase: only the date itself is PHI, not "on" or a weekday."""
    rng = note.rng
    key = fmt or "note"
    es = note.lang == "es"
    if key == "next" and rng.random() < 0.2:  # relative: no date, no PHI
        w.lit(f"en {rng.randint(2, 8)} semanas" if es else f"in {rng.randint(2, 8)} weeks")
        return
    d = _relative_date(note, key)
    style = rng.choice(_PROSE_DATE_STYLES[note.lang])
    if key == "prior" and rng.random() < 0.15:
        style = "year"
    if style in _MONTH_LEVEL:
        w.lit("en " if es else "in ")
        w.phi(fmt_date(d, style), "DATE")
    elif style == "weekday_md":
        w.lit(f"on {_WEEKDAYS_EN[d.weekday()]}, ")
        w.phi(fmt_date(d, "md"), "DATE")
    else:
        w.lit("el " if es else "on ")
        w.phi(fmt_date(d, style), "DATE")


def account_number(rng: Random, lang: str) -> str:
    if lang == "es":
        return digits(rng, rng.randint(6, 11))
    return rng.choice([f"V{digits(rng, 8)}", digits(rng, 10), f"{digits(rng, 4)}-{digits(rng, 5)}"])


# ------------------------------------------------------------------ filler (not PHI)


def filler(name: str, get: Callable[[Note, Templates], str]) -> None:
    def fn(note: Note, fmt: str | None, w: Writer, t: Templates) -> None:
        w.lit(get(note, t))

    slot(name)(fn)


def _choice(key: str) -> Callable[[Note, Templates], str]:
    def get(n: Note, t: Templates) -> str:
        # "chest pain or chest pain" reads as machine-made: avoid repeats within a note.
        for _ in range(4):
            value = n.rng.choice(t.lex[key])
            if value not in n.used:
                break
        n.used.add(value)
        return str(value)

    return get


def _dec(x: float, decimals: int, lang: str) -> str:
    s = f"{x:.{decimals}f}"
    return s.replace(".", ",") if lang == "es" else s


def _num(lo: float, hi: float, decimals: int = 0) -> Callable[[Note, Templates], str]:
    if decimals == 0:
        return lambda n, t: str(n.rng.randint(int(lo), int(hi)))
    return lambda n, t: _dec(n.rng.uniform(lo, hi), decimals, n.lang)


def _pronoun(m: str, f: str) -> Callable[[Note, Templates], str]:
    return lambda n, t: m if n.patient.person.sex == "M" else f


def _med(key: str, with_dose: bool = True) -> Callable[[Note, Templates], str]:
    def get(n: Note, t: Templates) -> str:
        # A medication list that names one drug twice looks wrong to reviewers.
        for _ in range(4):
            name, doses, unit, freqs = n.rng.choice(t.lex[key])
            if name not in n.used:
                break
        n.used.add(name)
        if not with_dose:
            return str(name)
        dose = str(n.rng.choice(doses))
        if n.lang == "es":
            dose = dose.replace(".", ",")
        return f"{name} {dose} {unit} {n.rng.choice(freqs)}"

    return get


def _vitals(n: Note, t: Templates) -> str:
    r = n.rng
    if n.lang == "es":
        return (
            f"Tª {_dec(r.uniform(35.8, 39.6), 1, 'es')} ºC; TA {r.randint(95, 175)}/{r.randint(50, 98)} mmHg; "
            f"FC {r.randint(52, 118)} lpm; SatO2 {r.randint(88, 100)}%"
        )
    return (
        f"T {r.uniform(97.0, 101.5):.1f} F, BP {r.randint(95, 175)}/{r.randint(50, 98)}, "
        f"HR {r.randint(52, 118)}, RR {r.randint(12, 26)}, SpO2 {r.randint(88, 100)}% on "
        f"{r.choice(['RA', 'room air', '2L NC', '4L NC'])}"
    )


def _lab(n: Note, t: Templates) -> str:
    r = n.rng
    if n.lang == "es":
        return r.choice([
            f"Hb {_dec(r.uniform(7.5, 16.0), 1, 'es')} g/dl", f"creatinina {_dec(r.uniform(0.6, 4.5), 1, 'es')} mg/dl",
            f"glucemia de {r.randint(70, 380)} mg/dl", f"PCR {_dec(r.uniform(0.5, 25.0), 1, 'es')} mg/dl",
            f"leucocitos {r.randint(3, 22)}.{r.randint(100, 999)}/mm3", f"sodio {r.randint(125, 148)} mEq/l",
            f"PSA de {_dec(r.uniform(0.4, 12.0), 2, 'es')} ng/ml", f"potasio {_dec(r.uniform(2.9, 6.1), 1, 'es')} mEq/l",
        ])
    return r.choice([
        f"Na {r.randint(125, 148)}", f"K {r.uniform(2.9, 6.1):.1f}", f"Cr {r.uniform(0.6, 4.5):.1f}",
        f"WBC {r.uniform(3.1, 22.0):.1f}", f"Hgb {r.uniform(6.5, 16.0):.1f}", f"BNP {r.randint(40, 3200)}",
        f"troponin {r.uniform(0.01, 2.5):.2f}", f"lactate {r.uniform(0.8, 6.0):.1f}", f"INR {r.uniform(0.9, 4.2):.1f}",
    ])


def _labs_chem(n: Note, t: Templates) -> str:
    r = n.rng
    return (
        f"Na {r.randint(128, 146)}, K {r.uniform(3.1, 5.6):.1f}, Cl {r.randint(94, 110)}, "
        f"HCO3 {r.randint(17, 31)}, BUN {r.randint(7, 68)}, Cr {r.uniform(0.6, 3.8):.1f}, "
        f"glucose {r.randint(68, 340)}"
    )


def _labs_cbc(n: Note, t: Templates) -> str:
    r = n.rng
    return f"WBC {r.uniform(3.5, 19.5):.1f}, Hgb {r.uniform(7.0, 15.8):.1f}, Hct {r.uniform(22, 47):.1f}, Plt {r.randint(60, 480)}"


def _analitica(n: Note, t: Templates) -> str:
    r = n.rng
    return (
        f"Hb {_dec(r.uniform(8.0, 16.0), 1, 'es')} g/dl, leucocitos {r.randint(3, 19)}.{r.randint(100, 999)}/mm3, "
        f"plaquetas {r.randint(90, 450)}.000/mm3, glucosa {r.randint(70, 320)} mg/dl, "
        f"creatinina {_dec(r.uniform(0.5, 3.5), 2, 'es')} mg/dl, PCR {_dec(r.uniform(0.1, 20.0), 1, 'es')} mg/dl"
    )


filler("sexword", lambda n, t: n.rng.choice(["man", "male"]) if n.patient.person.sex == "M" else n.rng.choice(["woman", "female"]))
filler("sexletter", lambda n, t: n.patient.person.sex)
filler("title", _pronoun("Mr.", "Ms."))
filler("he", _pronoun("he", "she"))
filler("his", _pronoun("his", "her"))
filler("him", _pronoun("him", "her"))
filler("o", _pronoun("o", "a"))  # Spanish agreement: ingresad{o}
filler("el", _pronoun("el", "la"))
filler("relation", lambda n, t: n.patient.relation)
for _key, _src in (("symptom", "symptoms"), ("symptom2", "symptoms"), ("dx", "diagnoses"),
                   ("dx2", "diagnoses"), ("eponym", "eponyms"), ("eponym2", "eponyms"),
                   ("proc", "procedures"), ("proc2", "procedures"), ("organism", "organisms"),
                   ("antibiotic", "antibiotics"), ("plan", "plans"), ("imaging_study", "imaging_studies"),
                   ("cxr", "cxr"), ("echo", "echo"), ("ctap", "ctap"), ("murmur", "murmurs"),
                   ("mood", "moods"), ("quote", "quotes"), ("disposition_short", "disposition_short"),
                   ("weekday", "weekdays"), ("dept", "departments"),
                   ("unit", "units"), ("clinic", "clinics"), ("kin", "kin"),
                   ("antidepressant", "antidepressants"), ("exam_finding", "exam_findings"),
                   ("imaging_finding", "imaging_findings"), ("habit", "habits")):
    filler(_key, _choice(_src))
# One note, one service: the title and the signature must agree.
filler("service", lambda n, t: n.fixed.setdefault("service", n.rng.choice(t.lex["services"])))
filler("med", _med("meds"))
filler("med_prn", _med("meds_prn"))
filler("med_once", lambda n, t: _med("meds_prn")(n, t).split(" q")[0] + " once")
filler("med_name", _med("meds", with_dose=False))
filler("med_prn_name", _med("meds_prn", with_dose=False))
filler("vitals", _vitals)
filler("lab", _lab)
filler("lab_name", lambda n, t: n.rng.choice(["BMP", "CBC", "Mg", "LFTs", "INR", "troponin"]))
filler("labs_chem", _labs_chem)
filler("labs_cbc", _labs_cbc)
filler("analitica", _analitica)
filler("time", lambda n, t: f"{n.rng.randint(0, 23):02d}:{n.rng.choice(['00', '15', '30', '45', '10', '52'])}")
filler("time_mil", lambda n, t: f"{n.rng.randint(0, 23):02d}{n.rng.choice(['00', '00', '15', '30', '45'])}")  # "by 2000": not PHI
filler("vent", _choice("vents"))
filler("imaging_exam", _choice("imaging_exams"))
filler("time_ampm", lambda n, t: f"{n.rng.randint(1, 12)}:{n.rng.choice(['00', '15', '30', '45'])} {n.rng.choice(['AM', 'PM'])}")
filler("hd", lambda n, t: str((n.dates["note"] - n.dates["admit"]).days + 1))
filler("hd_any", lambda n, t: str(n.rng.randint(1, (n.dates["note"] - n.dates["admit"]).days + 1)))
filler("pain", lambda n, t: f"{n.rng.randint(0, 10)}/10")  # looks like a date, is not
filler("strength", lambda n, t: f"{n.rng.randint(3, 5)}/5")
filler("icd", _choice("icd_codes"))
filler("ua", lambda n, t: n.rng.choice(["negative", "positive leukocyte esterase, nitrite positive, >50 WBC", "trace protein, no blood"]))
for _key, _lo, _hi, _dec_places in (
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
    ("neut", 38, 92, 0), ("edema", 1, 3, 0), ("cigs", 5, 40, 0), ("cm", 1, 9, 1),
):
    filler(_key, _num(_lo, _hi, _dec_places))
