"""English name and place lexicons, and how to read them in context.

Lexicons are built by ``scripts/build_lexicons.py`` from public-domain and
permissively licensed sources (docs/lexicons.md) into package data; nothing is
downloaded at run time. A lexicon hit alone is weak evidence: a third of the
US surnames are also English words ("Young", "Hall", "Hope"). So every word
gets one of four readings (``classify``), and rules and features decide what
each reading is worth in their context:

* ``stop``: never a name (function words, note verbs, clinical words);
* ``name``: a lexicon name that is not a common English word, or one that
  notes use as a name nearly always ("Smith", "Miller");
* ``ambiguous``: a lexicon name that is also a common word ("Hope", "Young");
* ``unknown``: in no list (a rare name, a misspelling, a drug).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from deid_core.errors import UnsupportedFormat

STOP, NAME, AMBIGUOUS, COMMON, UNKNOWN = "stop", "name", "ambiguous", "common", "unknown"

#: Names the lexicon files and their reading: a model records it with its
#: features, and refuses to load against a different one. Change it whenever
#: scripts/build_lexicons.py's output or en_context.yaml changes.
LEXICON_VERSION = "en-1"


def read_list(lang: str, name: str) -> list[str]:
    """One bundled word list in its file order (frequency or population order)."""
    resource = resources.files("deid_core").joinpath(f"data/lexicons/{lang}/{name}.txt.gz")
    return gzip.decompress(resource.read_bytes()).decode("utf-8").split("\n")[:-1]


@dataclass(frozen=True)
class Lexicon:
    """Lower-case word sets for one language; ranks are frequency ranks (0 = most frequent)."""

    first: dict[str, int]
    last: dict[str, int]
    places: frozenset[str]
    common: frozenset[str]
    stop: frozenset[str]
    names_first: frozenset[str]
    department: frozenset[str] = frozenset()

    def is_name(self, word: str) -> bool:
        w = word.lower()
        return w in self.first or w in self.last

    def is_place(self, phrase: str) -> bool:
        return phrase.lower() in self.places

    def classify(self, word: str) -> str:
        """``stop``, ``name``, ``ambiguous``, ``common`` (an English word, no name) or ``unknown``."""
        w = word.lower()
        if w in self.stop:
            return STOP
        if w in self.names_first:
            return NAME
        named = w in self.first or w in self.last
        if w in self.common:
            return AMBIGUOUS if named else COMMON
        return NAME if named else UNKNOWN


@cache
def load_lexicon(lang: str = "en") -> Lexicon:
    """The built-in lexicon for ``lang`` (English only), loaded once per process."""
    if lang != "en":
        raise UnsupportedFormat(f"no built-in name lexicon for language {lang!r} (have: en)")
    context = yaml.load(  # a safe loader: libyaml's when present
        resources.files("deid_core").joinpath(f"data/lexicons/{lang}_context.yaml").read_text("utf-8"),
        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
    )
    return Lexicon(
        first={w: i for i, w in enumerate(read_list(lang, "first_names"))},
        last={w: i for i, w in enumerate(read_list(lang, "last_names"))},
        places=frozenset(read_list(lang, "places")),
        common=frozenset(read_list(lang, "common_words")),
        stop=frozenset(str(w).lower() for w in context["stop"]),
        names_first=frozenset(str(w).lower() for w in context["names_first"]),
        department=frozenset(str(w).lower() for w in context["department"]),
    )


#: Spanish closed-class word lists for quasi-identifiers that are not names
#: (docs/lexicons.md): gazetteer label -> file under ``data/lexicons/es/`` and
#: whether the file holds masculine singular base forms to inflect.
SPANISH_QUASI_LISTS: dict[str, tuple[str, bool]] = {
    "NATIONALITY": ("demonyms", True),
    "KINSHIP": ("kinship", False),
    "PROFESSION": ("professions", True),
    "MARITAL_STATUS": ("marital_status", False),
    "ORIENTATION": ("orientation", False),
    "RELIGION": ("religion", True),
}

_ACCENT_DROP = str.maketrans("áéíóú", "aeiou")


def _unaccent_last(word: str) -> str:
    """``alemán`` -> ``aleman``: the stress mark goes once a syllable is added."""
    for i in range(len(word) - 1, -1, -1):
        if word[i] in "áéíóú":
            return word[:i] + word[i].translate(_ACCENT_DROP) + word[i + 1 :]
    return word


def inflect_es(word: str) -> list[str]:
    """Gender and number forms of a Spanish masculine singular noun or adjective.

    Regular morphology only, which is all these lists need: ``-o`` changes
    gender and number (``peruano peruana peruanos peruanas``); ``-e``, ``-a``
    and ``-ista`` only number; a stressed final vowel takes ``-es`` and ``-s``
    (``marroquí``); ``-or``, ``-ol``, ``-uz`` and stressed ``-án -én -ín -ón
    -és`` take ``-a`` for the feminine (``francés francesa franceses``);
    other consonants only number (``militar militares``). A few forms made
    this way are not used in Spanish; they never match a note, so they cost
    nothing.
    """
    w = word
    if w.endswith("o"):
        return [w, w[:-1] + "a", w + "s", w[:-1] + "as"]
    if w[-1] in "aeiu":
        return [w, w + "s"]
    if w[-1] in "áéíóú":
        return [w, w + "es", w + "s"]
    stem = _unaccent_last(w) if w[-2:] in ("án", "én", "ín", "ón", "és") else w
    plural_stem = stem[:-1] + "c" if stem.endswith("z") else stem
    forms = [w, plural_stem + "es"]
    if stem.endswith(("or", "ol", "uz", "an", "en", "in", "on", "es")):
        forms[1:1] = [stem + "a"]
        forms.append(stem + "as")
    return forms


def _read_plain_list(lang: str, name: str) -> list[str]:
    resource = resources.files("deid_core").joinpath(f"data/lexicons/{lang}/{name}.txt")
    lines = resource.read_text("utf-8").splitlines()
    return [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]


@cache
def spanish_quasi_identifiers() -> dict[str, tuple[str, ...]]:
    """Spanish nationality, kinship, profession, marital status, orientation and religion words.

    These are the quasi-identifiers MEDDOCAN-style corpora label (a patient's
    nationality, his mother, his trade) and that a model trained on one
    corpus misses whenever the word itself was never seen in training. As
    gazetteer features the CRF learns from the training labels how much
    each list is worth, so a demonym never seen in training still reads as a
    demonym. Lower-case phrases; a multi-word entry inflects its first word
    only (``auxiliar de enfermería`` -> ``auxiliares de enfermería``).
    """
    out: dict[str, tuple[str, ...]] = {}
    for label, (name, inflect) in SPANISH_QUASI_LISTS.items():
        phrases: list[str] = []
        for entry in _read_plain_list("es", name):
            head, _, rest = entry.lower().partition(" ")
            for form in inflect_es(head) if inflect else [head]:
                phrases.append(f"{form} {rest}" if rest else form)
        out[label] = tuple(dict.fromkeys(phrases))
    return out
