"""Realistic, consistent fake values for PHI spans.

A surrogate is a pure function of ``(secret, scope, kind, normalised original)``:
every random choice is drawn from a generator seeded by an HMAC-SHA256 of
those four, never from a counter or from the order values were seen. Hence
the same name in two notes of one patient gets the same surrogate even when
the notes are processed by different workers, and without the secret a
surrogate says nothing about its original. ``scope`` is the patient (default)
or the whole corpus (``consistency="corpus"``); dates always shift per
patient (see ``deid_core.protect.dateshift``).

Form is kept where it carries no identity:

- names keep titles, initials, suffixes, "Last, First" order, hyphenation and
  capitalisation; each name word is replaced on its own (first names from the
  first-name list of the same sex when the original is a known first name,
  surnames from surnames), so "John Smith", "Smith, John" and "SMITH" stay
  consistent with each other;
- phones, ids, ZIP codes, usernames and IP addresses keep their format: digit
  for digit, letter for letter (same case), punctuation and spacing kept;
  emails and URLs keep their scheme, ``www.`` and top-level domain;
- locations are replaced at the same level: city by city, state by state (a
  two-letter code by a code), country by country, hospital by hospital; a
  generic location is placed at a level by looking it up in the state and
  country lists;
- ages over 89 become "90+" (HIPAA Safe Harbor); ages up to 89 are kept, as
  Safe Harbor allows;
- a surrogate never equals its original.

Kinds without a generator ("other") and values that cannot be parsed (a date
like "Christmas", an age in words) return ``text=None`` so the operator can
apply its fallback (a tag), never the original.
"""

from __future__ import annotations

import hashlib
import hmac
import random
import re
import string
import threading
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import yaml
from faker import Faker

from deid_core.errors import UnsupportedFormat
from deid_core.protect.dateshift import DEFAULT_MAX_DAYS, patient_offset_days, shift_date
from deid_core.protect.surrogate_map import MappingEntry, mapping_key, normalise, scope_id
from deid_core.schemes import LabelScheme

Consistency = Literal["patient", "corpus"]
Status = Literal["replaced", "kept", "unsupported"]

KINDS = (
    "name", "username", "profession", "hospital", "health_centre", "organization", "street",
    "city", "state", "country", "location", "zip", "age", "date", "phone", "email", "url",
    "ip", "id", "other",
)
#: Kind by scheme category, for labels the kinds table does not list.
CATEGORY_KINDS = {
    "NAME": "name", "PROFESSION": "profession", "LOCATION": "location", "AGE": "age",
    "DATE": "date", "CONTACT": "id", "ID": "id",
}
_MAX_TRIES = 16
#: Kinds that identify a person or place: propagated across notes, searched in
#: every note of the leak check's scope, and never drawn as another value's surrogate.
IDENTIFYING_KINDS = frozenset({
    "name", "username", "id", "phone", "email", "url", "ip", "zip",
    "hospital", "health_centre", "organization", "street", "location", "city",
})
_FAKER_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Surrogate:
    text: str | None  # None: no surrogate for this value; the caller falls back
    kind: str
    status: Status
    entry: MappingEntry | None  # what to record in the mapping store


def _fold(word: str) -> str:
    """Case- and accent-folded: "Vázquez" and "VAZQUEZ" are one name."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


@lru_cache(maxsize=4)
def _language_data(lang: str) -> dict[str, Any]:
    if lang not in ("en", "es"):
        raise UnsupportedFormat(f"no surrogate data for language {lang!r} (use 'en' or 'es')")
    raw = resources.files("deid_core").joinpath(f"data/surrogates/{lang}.yaml").read_text("utf-8")
    data = yaml.safe_load(raw)
    faker = Faker(data["faker_locale"])
    person = faker.provider("faker.providers.person")
    address = faker.provider("faker.providers.address")
    all_female = tuple(person.first_names_female)
    all_male = tuple(person.first_names_male)
    all_last = tuple(person.last_names)
    firsts = {_fold(n) for n in all_female + all_male}
    lasts = {_fold(n) for n in all_last}
    # Surrogate pools: one word each, and unambiguous (Faker's es_ES lists put
    # "Roldán" among first names and "María" among male ones), so that a
    # surrogate reads as what it replaces.
    female = tuple(n for n in all_female if " " not in n and _fold(n) not in lasts)
    male = tuple(n for n in all_male if " " not in n and _fold(n) not in lasts)
    last = tuple(n for n in all_last if " " not in n and _fold(n) not in firsts)
    female_only = {_fold(n) for n in all_female} - {_fold(n) for n in all_male}
    male_only = {_fold(n) for n in all_male} - {_fold(n) for n in all_female}
    female = tuple(n for n in female if _fold(n) in female_only) or female
    male = tuple(n for n in male if _fold(n) in male_only) or male
    data.update(
        faker=faker,
        female=female,
        male=male,
        last=last,
        female_set={_fold(n) for n in all_female},
        male_set={_fold(n) for n in all_male},
        last_set=lasts,
        states=tuple(address.states),
        states_abbr=tuple(getattr(address, "states_abbr", ())),
        countries=tuple(address.countries),
    )
    data["state_set"] = {_fold(s) for s in data["states"]}
    data["abbr_set"] = {_fold(s) for s in data["states_abbr"]}
    data["country_set"] = {_fold(c) for c in data["countries"]}
    data["suffix_set"] = set(data.get("suffixes") or [])
    data["particle_set"] = set(data.get("particles") or [])
    return data


@lru_cache(maxsize=1)
def _kinds_table() -> dict[str, dict[str, str]]:
    raw = resources.files("deid_core").joinpath("data/surrogates/kinds.yaml").read_text("utf-8")
    return {k: dict(v) for k, v in yaml.safe_load(raw).items()}


def label_kinds(scheme: LabelScheme | str | None) -> dict[str, str]:
    """Label -> surrogate kind for a scheme (by name or object).

    A scheme the kinds table does not know (a model trained without
    ``--scheme`` names its own) gets the merged table by label name, so
    standard labels keep their kinds; labels no table knows stay ``other``.
    """
    if scheme is None or (isinstance(scheme, str) and scheme not in _kinds_table()):
        merged: dict[str, str] = {}
        for table in _kinds_table().values():
            merged.update(table)
        return merged
    if isinstance(scheme, str):
        return dict(_kinds_table()[scheme])
    kinds = dict(_kinds_table().get(scheme.name, {}))
    for info in scheme.labels:
        kinds.setdefault(info.name, CATEGORY_KINDS.get(info.category, "other"))
    return kinds


def _case_like(template: str, value: str) -> str:
    letters = [c for c in template if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return value.upper()
    if letters and all(c.islower() for c in letters):
        return value.lower()
    return value


class SurrogateGenerator:
    """Draws surrogates; holds no per-value state, so it is safe to share."""

    def __init__(
        self,
        secret: bytes,
        lang: str = "en",
        *,
        scheme: LabelScheme | str | None = None,
        kinds: Mapping[str, str] | None = None,
        consistency: Consistency = "patient",
        max_shift_days: int = DEFAULT_MAX_DAYS,
    ) -> None:
        if not secret:
            raise ValueError("a non-empty project secret is required")
        if consistency not in ("patient", "corpus"):
            raise ValueError("consistency must be 'patient' or 'corpus'")
        self.secret = bytes(secret)
        self.lang = lang
        self.data = _language_data(lang)
        self.kinds = label_kinds(scheme)
        if kinds:
            self.kinds.update(kinds)
        unknown = set(self.kinds.values()) - set(KINDS)
        if unknown:
            raise UnsupportedFormat(f"unknown surrogate kind(s): {', '.join(sorted(unknown))}")
        self.consistency = consistency
        self.max_shift_days = max_shift_days
        #: Words a place or organisation surrogate may share with its original.
        self.shared_words = frozenset(_fold(w) for w in self.data.get("shared_words") or ())

    # -- public -----------------------------------------------------------
    def kind_of(self, label: str) -> str:
        return self.kinds.get(label, "other")

    def shift_days(self, patient_key: str) -> int:
        return patient_offset_days(self.secret, patient_key, max_days=self.max_shift_days)

    def generate(self, value: str, label: str, *, patient_key: str | None) -> Surrogate:
        """The surrogate of ``value`` (labelled ``label``) for this patient."""
        kind = self.kind_of(label)
        scope_key = patient_key if (self.consistency == "patient" or kind == "date") else None
        scope = scope_id(self.secret, scope_key)
        draw = _Draw(self.secret, scope, kind)
        text: str | None
        if kind == "date":
            text = None if patient_key is None else shift_date(value, self.shift_days(patient_key), self.lang)
        else:
            make = _GENERATORS.get(kind)
            text = None if make is None else make(self, value, draw)
        if text is None:
            return Surrogate(None, kind, "unsupported", None)
        status: Status = "kept" if text == value else "replaced"
        entry = MappingEntry(mapping_key(self.secret, scope, kind, value), scope, kind, label, text)
        return Surrogate(text, kind, status, entry)

    # -- helpers used by the kind generators --------------------------------
    def faker_call(self, seed: int, fn: Callable[[Faker], str]) -> str:
        fake: Faker = self.data["faker"]
        with _FAKER_LOCK:  # seeding and drawing must not interleave across threads
            fake.seed_instance(seed)
            return fn(fake)


class _Draw:
    """Seeded random draws for one (scope, kind); ``rng(value, purpose, attempt)``."""

    def __init__(self, secret: bytes, scope: str, kind: str) -> None:
        self.secret, self.scope, self.kind = secret, scope, kind

    def seed(self, value: str, purpose: str = "", attempt: int = 0) -> int:
        msg = "\x00".join(
            ("deid-workbench/draw", self.scope, self.kind, purpose, str(attempt), normalise(value))
        )
        digest = hmac.new(self.secret, msg.encode("utf-8"), hashlib.sha256).digest()
        return int.from_bytes(digest[:16], "big")

    def rng(self, value: str, purpose: str = "", attempt: int = 0) -> random.Random:
        return random.Random(self.seed(value, purpose, attempt))

    def differing(
        self,
        value: str,
        purpose: str,
        make: Callable[[random.Random, int], str],
        shared: frozenset[str] | None = None,
    ) -> str:
        """Draw until the result neither equals nor contains ``value`` (case- and
        space-folded, as whole words).

        With ``shared`` (words a surrogate may repeat, such as "Hospital"), the
        result must also share no other word with ``value``: "Hospital
        Universitario de Guadalajara" must not become "Hospital General de
        Guadalajara".
        """
        avoid = None if shared is None else _content_words(value) - shared
        folded = normalise(value)
        # A purely generic original ("Centro de Salud") may be contained: nothing to hide.
        generic = shared is not None and not avoid
        inside = re.compile(rf"(?<!\w){re.escape(folded)}(?!\w)") if folded and not generic else None
        result = value
        for attempt in range(_MAX_TRIES):
            result = make(self.rng(value, purpose, attempt), attempt)
            if inside is not None and inside.search(normalise(result)):
                continue  # equal to, or containing, the original ("Hospital General de X")
            if avoid and avoid & _content_words(result):
                continue
            return result
        return result


def _content_words(text: str) -> set[str]:
    return {_fold(w) for w in re.findall(r"[^\W\d_]{3,}", text)}


def is_generic_place(value: str) -> bool:
    """Only words any hospital, street or organisation name may hold ("Hospital
    General", "Centro de Salud"): nothing identifying, in either language."""
    words = _content_words(value)
    return bool(words) and words <= _generic_words()


@lru_cache(maxsize=1)
def _generic_words() -> frozenset[str]:
    return frozenset(_fold(w) for lang in ("en", "es") for w in _language_data(lang).get("shared_words") or ())


# -- format-preserving kinds ---------------------------------------------------
def _char_like(rng: random.Random, c: str) -> str:
    if c.isdigit():
        return rng.choice(string.digits)
    if c.isalpha():
        return rng.choice(string.ascii_uppercase if c.isupper() else string.ascii_lowercase)
    return c


def _format_like(value: str, draw: _Draw, purpose: str = "fmt") -> str:
    if not any(c.isalnum() for c in value):
        return value
    return draw.differing(value, purpose, lambda rng, _: "".join(_char_like(rng, c) for c in value))


def _gen_format(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    return _format_like(value, draw)


def _gen_email(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    local, at, domain = value.rpartition("@")
    if not at:
        return _format_like(value, draw)
    host, dot, tld = domain.rpartition(".")
    new_local = _format_like(local, draw, "local") if local else local
    new_host = _format_like(host, draw, "host") if host else host
    return f"{new_local}@{new_host}{dot}{tld}" if dot else f"{new_local}@{_format_like(domain, draw, 'host')}"


_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)?(?P<www>www\.)?(?P<host>[^/?#]*)(?P<rest>.*)", re.I | re.S)


def _gen_url(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    m = _URL.fullmatch(value)
    assert m is not None  # the pattern matches any string
    host, dot, tld = m["host"].rpartition(".")
    if not dot:
        host, tld = m["host"], ""
    new_host = _format_like(host, draw, "host") if host else host
    new_rest = _format_like(m["rest"], draw, "rest") if m["rest"] else ""
    out = f"{m['scheme'] or ''}{m['www'] or ''}{new_host}{dot}{tld}{new_rest}"
    if normalise(out) == normalise(value):
        return _format_like(value, draw)
    return out


# -- ages ------------------------------------------------------------------------
_NUMBER = re.compile(r"\d+")


_UNITS_EN = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS_EN = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_UNITS_ES = (
    "cero uno dos tres cuatro cinco seis siete ocho nueve diez once doce trece catorce quince"
    " dieciséis diecisiete dieciocho diecinueve veinte veintiuno veintidós veintitrés"
    " veinticuatro veinticinco veintiséis veintisiete veintiocho veintinueve"
).split()
_TENS_ES = "treinta cuarenta cincuenta sesenta setenta ochenta noventa".split()
_NUMBER_WORDS: dict[str, int] = {
    **{w: i for i, w in enumerate(_UNITS_EN)},
    **{w: 20 + 10 * i for i, w in enumerate(_TENS_EN)},
    **{w: i for i, w in enumerate(_UNITS_ES)},
    **{w: 30 + 10 * i for i, w in enumerate(_TENS_ES)},
    "a": 1, "an": 1, "un": 1, "una": 1, "veintiún": 21, "veintiuna": 21, "dieciseis": 16,
    "veintidos": 22, "veintitres": 23, "veintiseis": 26, "hundred": 100, "cien": 100,
    "ciento": 100,
}
_NUMBER_PHRASE = re.compile(
    r"\b(?:" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True)) + r")"
    r"(?:(?:[\s-]+|\s+(?:y|and)\s+)(?:" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True))
    + r"))*\b",
    re.IGNORECASE,
)


def _words_value(phrase: str) -> int:
    total = 0
    for word in re.split(r"[\s-]+", phrase.lower()):
        if word in ("y", "and"):
            continue
        n = _NUMBER_WORDS[word]
        total = total * 100 if n == 100 and total else total + n
    return total


def _gen_age(gen: SurrogateGenerator, value: str, draw: _Draw) -> str | None:
    numbers = list(_NUMBER.finditer(value))
    if not numbers:
        # An age in words: kept up to 89 as Safe Harbor allows, "90+" above.
        m = _NUMBER_PHRASE.search(value)
        if m is None:
            return None  # "newborn", "fourth month": no safe surrogate, the fallback tags it
        if _words_value(m.group(0)) <= 89:
            return value
        return value[: m.start()] + "90+" + value[m.end() :]
    out = value
    for m in reversed(numbers):
        if int(m.group()) > 89:
            plus = out[m.end() : m.end() + 1] == "+"
            out = out[: m.start()] + ("90" if plus else "90+") + out[m.end() :]
    return out


# -- names -------------------------------------------------------------------------
_NAME_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*\.?|\d+|\s+|.", re.UNICODE)


def _gen_name(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    data = gen.data
    tokens = _NAME_TOKEN.findall(value)
    kinds: list[str] = []  # per token: title, suffix, particle, initial, name, sep
    gender: str | None = None
    seen_name = False
    for tok in tokens:
        core = tok.rstrip(".")
        low = core.casefold()
        if not core or not core[0].isalpha():
            kinds.append("sep")
        elif low in data["titles"] and not seen_name:
            kinds.append("title")
            gender = gender or data["titles"][low]
        elif low in data["suffix_set"] and seen_name:
            kinds.append("suffix")
        elif low in data["particle_set"] and seen_name:
            kinds.append("particle")
        elif len(core) == 1:
            kinds.append("initial")
            seen_name = True
        else:
            kinds.append("name")
            seen_name = True
    name_idx = [i for i, k in enumerate(kinds) if k == "name"]
    roles: dict[int, str] = {}
    comma = next((i for i, t in enumerate(tokens) if t == ","), None)
    if comma is not None and any(i < comma for i in name_idx) and any(i > comma for i in name_idx):
        for i in name_idx:
            roles[i] = "last" if i < comma else "first"
    elif len(name_idx) == 1:
        low = _fold(tokens[name_idx[0]].rstrip("."))
        is_first = (low in data["female_set"] or low in data["male_set"]) and low not in data["last_set"]
        roles[name_idx[0]] = "first" if is_first else "last"
    elif gen.lang == "es":
        # "Juan Carlos García López": leading first names, then surnames. A word
        # in both lists ("Carlos") is a first name only between first names and
        # before another word; "García López" alone is two surnames.
        first_done = False
        for n, i in enumerate(name_idx):
            low = _fold(tokens[i])
            known_first = low in data["female_set"] or low in data["male_set"]
            known_last = low in data["last_set"]
            more = n + 1 < len(name_idx)
            only_last = known_last and not known_first
            if first_done:
                roles[i] = "last"
            elif n == 0 and more and not only_last:
                roles[i] = "first"  # a multi-word name starts with a given name
            elif n > 0 and known_first and (not known_last or more):
                roles[i] = "first"
            else:
                first_done = True
                roles[i] = "last"
    else:
        for i in name_idx:
            roles[i] = "last" if i == name_idx[-1] else "first"
    out = []
    for i, tok in enumerate(tokens):
        kind = kinds[i]
        if kind == "name":
            out.append(_name_word(gen, tok, roles[i], gender, draw))
        elif kind == "initial":
            core = tok.rstrip(".")
            letter = draw.differing(core, "initial", lambda rng, _: rng.choice(string.ascii_uppercase))
            out.append((letter.lower() if core.islower() else letter) + tok[len(core) :])
        else:
            out.append(tok)
    return "".join(out)


def _name_word(gen: SurrogateGenerator, word: str, role: str, gender: str | None, draw: _Draw) -> str:
    data = gen.data
    core = word.rstrip(".")
    low = _fold(core)
    if role == "last":
        pool: tuple[str, ...] = data["last"]
    elif low in data["female_set"] and low not in data["male_set"]:
        pool = data["female"]
    elif low in data["male_set"] and low not in data["female_set"]:
        pool = data["male"]
    elif gender in ("female", "male"):
        pool = data[gender]
    else:
        pool = data["female"] + data["male"]
    chosen = draw.differing(core, f"name.{role}", lambda rng, _: rng.choice(pool))
    return _case_like(core, chosen) + word[len(core):]


# -- places, professions, organisations ------------------------------------------
def _faker_kind(method: Callable[[Faker], str]) -> Callable[[SurrogateGenerator, str, _Draw], str]:
    def make(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
        out = draw.differing(
            value, "faker", lambda rng, _: gen.faker_call(rng.getrandbits(64), method), gen.shared_words
        )
        return _case_like(value, out)

    return make


def _gen_street(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    method = (lambda f: f.street_address()) if any(c.isdigit() for c in value) else (lambda f: f.street_name())
    return _faker_kind(method)(gen, value, draw)


def _pick(pool: tuple[str, ...]) -> Callable[[SurrogateGenerator, str, _Draw], str]:
    def make(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
        return _case_like(
            value, draw.differing(value, "pick", lambda rng, _: rng.choice(pool), gen.shared_words)
        )

    return make


def _gen_state(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    data = gen.data
    core = value.strip().rstrip(".")
    if data["states_abbr"] and _fold(core) in data["abbr_set"] and len(core) <= 3:
        return _pick(data["states_abbr"])(gen, value, draw)
    return _pick(data["states"])(gen, value, draw)


def _gen_country(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    return _pick(gen.data["countries"])(gen, value, draw)


def _gen_location(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
    low = _fold(normalise(value))
    data = gen.data
    if low in data["country_set"]:
        return _gen_country(gen, value, draw)
    if low in data["state_set"] or low in data["abbr_set"]:
        return _gen_state(gen, value, draw)
    return _GENERATORS["city"](gen, value, draw)  # type: ignore[misc]


def _templated(key: str) -> Callable[[SurrogateGenerator, str, _Draw], str]:
    def make(gen: SurrogateGenerator, value: str, draw: _Draw) -> str:
        templates: list[str] = gen.data[key]

        def one(rng: random.Random, _: int) -> str:
            template = rng.choice(templates)
            city = gen.faker_call(rng.getrandbits(64), lambda f: f.city())
            return template.format(
                last=rng.choice(gen.data["last"]),
                first=rng.choice(gen.data["female"] + gen.data["male"]),
                city=city,
            )

        return _case_like(value, draw.differing(value, key, one, gen.shared_words))

    return make


_GENERATORS: dict[str, Callable[[SurrogateGenerator, str, _Draw], str | None]] = {
    "name": _gen_name,
    "username": _gen_format,
    "profession": _faker_kind(lambda f: f.job()),
    "hospital": _templated("hospitals"),
    "health_centre": _templated("health_centres"),
    "organization": _faker_kind(lambda f: f.company()),
    "street": _gen_street,
    "city": _faker_kind(lambda f: f.city()),
    "state": _gen_state,
    "country": _gen_country,
    "location": _gen_location,
    "zip": _gen_format,
    "age": _gen_age,
    "phone": _gen_format,
    "email": _gen_email,
    "url": _gen_url,
    "ip": _gen_format,
    "id": _gen_format,
}
