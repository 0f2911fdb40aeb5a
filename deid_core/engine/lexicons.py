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
