"""Gazetteers: phrase lists per label, matched over tokens and emitted as BIOES marks.

Two sources, as in paper 000 section 3.2.2: phrases harvested from the gold
spans of the training corpus, and word lists a user supplies. A harvested
phrase is kept only when it was seen as that label at least ``min_count``
times and when it is PHI in most of its occurrences (``min_precision``):
otherwise a name that is also a common word ("Rosa", "Mayo") would fire
everywhere and teach the CRF to distrust the gazetteer.

A gazetteer built from training data holds PHI (names, streets). It lives in
the model directory, which is as sensitive as the training corpus.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path

from deid_core.engine.tokenize import Token
from deid_core.errors import CorpusFormatError, ModelError
from deid_core.spans import Span

GAZETTEER_FORMAT_VERSION = 1


#: How phrases and words are compared. ``str.lower`` itself rather than a
#: function calling it: ``matches`` maps it over every sentence of every note.
normalise: Callable[[str], str] = str.lower


class Gazetteer:
    """Phrases (tuples of normalised tokens) per label, with longest-match lookup."""

    def __init__(
        self,
        entries: dict[str, set[tuple[str, ...]]] | None = None,
        lowercase_labels: Iterable[str] = (),
    ) -> None:
        # Each phrase's labels, as one frozenset shared by every phrase with the same
        # labels: a set per phrase was tens of thousands of objects for the garbage
        # collector to scan while a model loads (half of the gazetteer's load time).
        self._phrases: dict[tuple[str, ...], frozenset[str]] = {}
        self._label_sets: dict[frozenset[str], frozenset[str]] = {}
        self._max_len: dict[str, int] = {}  # first token -> longest phrase starting with it
        self._pairs: set[tuple[str, str]] = set()  # the first two tokens of every longer phrase
        #: Labels that match only words written in lower case: a Spanish
        #: demonym or trade is lower case in running text, while the same
        #: word capitalised is mostly a surname or a place ("Navarro",
        #: "Herrero", "Argentina"), which would teach the CRF to distrust it.
        self.lowercase_labels: frozenset[str] = frozenset(lowercase_labels)
        for label, phrases in (entries or {}).items():
            for phrase in phrases:
                self.add(label, phrase)

    def add(self, label: str, phrase: Sequence[str]) -> None:
        key = tuple(normalise(w) for w in phrase)
        if not key:
            return
        self._add_label(key, label)
        self._max_len[key[0]] = max(self._max_len.get(key[0], 0), len(key))

    def _add_label(self, key: tuple[str, ...], label: str) -> None:
        if len(key) > 1:
            self._pairs.add((key[0], key[1]))
        labels = self._phrases.get(key)
        if labels is None or label not in labels:
            grown = frozenset((label,)) if labels is None else labels | {label}
            self._phrases[key] = self._label_sets.setdefault(grown, grown)

    def __len__(self) -> int:
        return len(self._phrases)

    @property
    def labels(self) -> list[str]:
        return sorted({lab for labs in self._phrases.values() for lab in labs})

    def entries(self) -> dict[str, list[list[str]]]:
        out: dict[str, list[list[str]]] = defaultdict(list)
        for phrase, labels in sorted(self._phrases.items()):
            for label in sorted(labels):
                out[label].append(list(phrase))
        return dict(out)

    def matches(self, words: Sequence[str]) -> list[tuple[int, int, str]]:
        """Longest match at each start position: ``(start, end, label)`` token ranges."""
        norm = list(map(normalise, words))
        out: list[tuple[int, int, str]] = []
        n = len(norm)
        max_len, phrases, pairs = self._max_len, self._phrases, self._pairs
        lower_only = self.lowercase_labels
        for i, w in enumerate(norm):
            longest = max_len.get(w)
            if longest is None:
                continue
            if longest > 1 and (i + 1 == n or (w, norm[i + 1]) not in pairs):
                longest = 1  # no longer phrase starts with these two words
            for size in range(min(longest, n - i), 0, -1):
                labels = phrases.get(tuple(norm[i : i + size]) if size > 1 else (w,))
                if labels and not labels.isdisjoint(lower_only) and any(
                    words[k] != norm[k] for k in range(i, i + size)
                ):
                    labels = labels - lower_only
                if labels:
                    out.extend((i, i + size, label) for label in sorted(labels))
                    break
        return out

    def marks(self, words: Sequence[str]) -> list[list[str]]:
        """Per token, the BIOES marks of every match covering it ("B-NAME", "S-CITY", ...)."""
        out: list[list[str]] = [[] for _ in words]
        for k, found in self.marks_at(words):
            out[k] = found
        return out

    def marks_at(self, words: Sequence[str]) -> list[tuple[int, list[str]]]:
        """``marks`` of the tokens that have any, as ``(index, marks)`` in token order."""
        by_token: dict[int, list[str]] = {}
        for start, end, label in self.matches(words):
            if end - start == 1:
                by_token.setdefault(start, []).append(f"S-{label}")
                continue
            by_token.setdefault(start, []).append(f"B-{label}")
            for k in range(start + 1, end - 1):
                by_token.setdefault(k, []).append(f"I-{label}")
            by_token.setdefault(end - 1, []).append(f"E-{label}")
        return [(k, m if len(m) < 2 else list(dict.fromkeys(m))) for k, m in sorted(by_token.items())]

    # -- persistence -------------------------------------------------------

    def to_json(self) -> dict:
        raw: dict = {"format_version": GAZETTEER_FORMAT_VERSION, "entries": self.entries()}
        if self.lowercase_labels:
            raw["lowercase_labels"] = sorted(self.lowercase_labels)
        return raw

    @classmethod
    def from_json(cls, raw: object, origin: str = "gazetteer") -> Gazetteer:
        if not isinstance(raw, dict) or raw.get("format_version") != GAZETTEER_FORMAT_VERSION:
            raise ModelError(f"{origin}: unknown gazetteer format version")
        entries = raw.get("entries")
        if not isinstance(entries, dict):
            raise ModelError(f"{origin}: gazetteer has no 'entries' mapping")
        lowercase = raw.get("lowercase_labels", [])
        if not isinstance(lowercase, list):
            raise ModelError(f"{origin}: gazetteer 'lowercase_labels' is not a list")
        gaz = cls(lowercase_labels=[str(label) for label in lowercase])
        # ``add`` inlined: a model's gazetteer has tens of thousands of phrases.
        add_label, longest = gaz._add_label, gaz._max_len
        for label, phrases in entries.items():
            label = str(label)
            for phrase in phrases:
                key = tuple([normalise(str(w)) for w in phrase])
                if not key:
                    continue
                add_label(key, label)
                if len(key) > longest.get(key[0], 0):
                    longest[key[0]] = len(key)
        return gaz

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Gazetteer:
        p = Path(path)
        try:
            raw = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ModelError(f"{p}: cannot read gazetteer ({type(exc).__name__})") from exc
        return cls.from_json(raw, str(p))


def spans_as_token_ranges(tokens: Sequence[Token], spans: Iterable[Span]) -> list[tuple[int, int, str]]:
    """Token index ranges of the spans whose edges are token edges (others are skipped)."""
    by_start = {t.start: i for i, t in enumerate(tokens)}
    by_end = {t.end: i for i, t in enumerate(tokens)}
    out = []
    for s in spans:
        i, j = by_start.get(s.start), by_end.get(s.end)
        if i is not None and j is not None and j >= i:
            out.append((i, j + 1, s.label))
    return out


#: One note or sentence as harvesting sees it: normalised words and its gold spans' token ranges.
HarvestItem = tuple[list[str], list[tuple[int, int, str]]]


def harvest_item(tokens: Sequence[Token], spans: Iterable[Span]) -> HarvestItem:
    return [normalise(t.text) for t in tokens], spans_as_token_ranges(tokens, spans)


def build_gazetteer(
    items: Iterable[tuple[Sequence[Token], Sequence[Span]]],
    *,
    min_count: int = 2,
    min_precision: float = 0.5,
    max_tokens: int = 6,
) -> Gazetteer:
    """Harvest phrases from gold spans of ``(tokens, spans)`` pairs (one pair per sentence or note).

    Precision counts every occurrence of the phrase as a token sequence in the
    same items, so that a phrase which is PHI only now and then is left out.
    """
    return harvest_gazetteer(
        (harvest_item(toks, spans) for toks, spans in items),
        min_count=min_count, min_precision=min_precision, max_tokens=max_tokens,
    )


def harvest_gazetteer(
    items: Iterable[HarvestItem], *, min_count: int = 2, min_precision: float = 0.5, max_tokens: int = 6
) -> Gazetteer:
    """``build_gazetteer`` over items already in harvest form (a training round keeps them per note)."""
    materialised = list(items)
    as_label: Counter[tuple[tuple[str, ...], str]] = Counter()
    for words, ranges in materialised:
        for i, j, label in ranges:
            if j - i <= max_tokens:
                as_label[(tuple(words[i:j]), label)] += 1
    candidates = {phrase for (phrase, _), c in as_label.items() if c >= min_count}
    if not candidates:
        return Gazetteer()
    lengths = sorted({len(p) for p in candidates})
    firsts = {p[0] for p in candidates}
    seen: Counter[tuple[str, ...]] = Counter()
    for words, _ in materialised:
        n = len(words)
        for i, w in enumerate(words):
            if w not in firsts:
                continue
            for size in lengths:
                if i + size > n:
                    break
                phrase = tuple(words[i : i + size])
                if phrase in candidates:
                    seen[phrase] += 1
    gaz = Gazetteer()
    for (phrase, label), c in as_label.items():
        if c >= min_count and c / max(seen[phrase], c) >= min_precision:
            gaz.add(label, phrase)
    return gaz


def load_word_list(path: str | Path, label: str | None = None, *, lang: str = "en") -> Gazetteer:
    """Read a user word list: one phrase per line, or ``LABEL<TAB>phrase`` when ``label`` is None.

    Phrases are tokenised with the clinical tokenizer so that they match the
    way notes are tokenised. Blank lines and ``#`` comments are skipped.
    """
    from deid_core.engine.tokenize import tokenize

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusFormatError("word list is not UTF-8", path=str(p), offset=exc.start) from exc
    except OSError as exc:
        raise CorpusFormatError(f"cannot read word list ({exc.strerror})", path=str(p)) from exc
    gaz = Gazetteer()
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        entry_label = label
        phrase = stripped
        if label is None:
            entry_label, sep, phrase = stripped.partition("\t")
            if not sep or not entry_label.strip() or not phrase.strip():
                raise CorpusFormatError(
                    "expected LABEL<TAB>phrase", path=str(p), line=lineno
                )
            entry_label = entry_label.strip()
        assert entry_label is not None
        gaz.add(entry_label, [t.text for t in tokenize(phrase.strip(), lang).tokens])
    return gaz


def merge_gazetteers(*gazetteers: Gazetteer) -> Gazetteer:
    """Every phrase of every gazetteer with all its labels; the inputs are left as they are.

    Works on the normalised tables directly: a training merges the built-in
    lists (tens of thousands of phrases) with each fold's harvest, so going
    through ``entries`` and ``add`` cost most of a second per training.
    """
    out = Gazetteer(lowercase_labels=[lab for gaz in gazetteers for lab in gaz.lowercase_labels])
    # The largest is copied whole and the others added to it; the union does not depend on the order.
    for gaz in sorted(gazetteers, key=len, reverse=True):
        if not out._phrases:
            out._phrases = dict(gaz._phrases)
            out._label_sets = dict(gaz._label_sets)
            out._max_len = dict(gaz._max_len)
            out._pairs = set(gaz._pairs)
            continue
        for key, labels in gaz._phrases.items():
            for label in labels:
                out._add_label(key, label)
        for first, longest in gaz._max_len.items():
            if longest > out._max_len.get(first, 0):
                out._max_len[first] = longest
    return out


def _faker_cities() -> list[str]:
    """City names of every Faker address locale that lists them (~30k names, 41 locales)."""
    import importlib
    import pkgutil

    import faker.providers.address as address

    names: list[str] = []
    for info in pkgutil.iter_modules(address.__path__):
        try:
            module = importlib.import_module(f"faker.providers.address.{info.name}")
        except ImportError:  # pragma: no cover - a locale module that needs extras
            continue
        provider = getattr(module, "Provider", None)
        names.extend(str(c) for c in (getattr(provider, "cities", None) or ()))
    return names


_SIMPLE_WORD = re.compile(r"^[^\W\d_]+$")
_CASE_CHANGE = re.compile(r"[a-z][A-Z]|[A-Z]{2}[A-Z][a-z]")


def _phrase_words(phrase: str, lang: str) -> list[str]:
    """Tokenise a gazetteer phrase as notes are tokenised; plain words skip spaCy (30k cities)."""
    words = phrase.split()
    if all(_SIMPLE_WORD.match(w) and not _CASE_CHANGE.search(w) for w in words):
        return words
    from deid_core.engine.tokenize import tokenize

    return [t.text for t in tokenize(phrase, lang).tokens]


@lru_cache(maxsize=4)
def builtin_gazetteer(lang: str) -> Gazetteer:
    """Name and place lists from Faker's locale data (installed, nothing downloaded).

    Labels are generic (FIRST_NAME, LAST_NAME, COUNTRY, STATE, CITY,
    STREET_WORD): gazetteer hits are features, and the CRF learns what each
    means for a corpus's own labels. The lists are copied into the model
    directory at training time, so a later Faker release cannot change a
    trained model. Treat the returned object as read-only (it is cached).

    For Spanish the hand-written quasi-identifier lists are added too
    (NATIONALITY, KINSHIP, PROFESSION, MARITAL_STATUS, ORIENTATION, RELIGION;
    ``lexicons.spanish_quasi_identifiers``): MEDDOCAN labels these words,
    and a model otherwise leaves verbatim every one it never saw in training.
    They match lower-case words only (``Gazetteer.lowercase_labels``).
    """
    if lang == "es":
        from faker.providers.address.es_ES import Provider as Address
        from faker.providers.person.es_ES import Provider as Person

        states = list(getattr(Address, "states", ())) + list(getattr(Address, "regions", ()))
        street = list(getattr(Address, "street_prefixes", ()))
    else:
        from faker.providers.address.en_US import Provider as Address
        from faker.providers.person.en_US import Provider as Person

        states = list(Address.states) + list(getattr(Address, "states_abbr", ()))
        street = list(getattr(Address, "street_suffixes", ()))
    lists = {
        "FIRST_NAME": list(Person.first_names),
        "LAST_NAME": list(Person.last_names),
        "COUNTRY": list(getattr(Address, "countries", ())),
        "STATE": states,
        "CITY": _faker_cities(),
        "STREET_WORD": street,
    }
    quasi: dict[str, tuple[str, ...]] = {}
    if lang == "es":
        from deid_core.engine.lexicons import spanish_quasi_identifiers

        quasi = spanish_quasi_identifiers()
        lists.update({k: list(v) for k, v in quasi.items()})
    gaz = Gazetteer(lowercase_labels=quasi)
    for label, phrases in lists.items():
        for phrase in phrases:
            words = _phrase_words(str(phrase), lang)
            if words:
                gaz.add(label, words)
    return gaz
