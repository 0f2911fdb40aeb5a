"""Clinical tokenisation that keeps every character's offset.

spaCy's ``en``/``es`` tokenization rules (its prefix, suffix and infix
expressions, run by ``ClinicalTokenizer`` without building spaCy objects)
plus zero-width infix rules from paper
004 (Table 1) and paper 003: split between letters and digits, after a run of
upper case before a capitalised word, at lower-to-upper case changes, and
after ``Dr.``-style abbreviations glued to a name. Splitting more only helps:
a PHI span can always be rebuilt from several tokens, but never from half a
token.

Whitespace is not a token here; it stays in the text between token offsets,
so ``text[t.start:t.end] == t.text`` for every token and every non-space
character belongs to exactly one token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import spacy
from spacy.util import compile_infix_regex, compile_prefix_regex, compile_suffix_regex

from deid_core.errors import UnsupportedFormat

SUPPORTED_LANGUAGES = ("en", "es")

# Zero-width splits. Each is a lookbehind/lookahead pair, so no character is lost.
CLINICAL_INFIXES = [
    r"(?<=[^\W\d_])(?=\d)",  # a26 -> a | 26 ; NHC12 -> NHC | 12
    r"(?<=\d)(?=[^\W\d_])",  # 2098SOS -> 2098 | SOS ; 5mg -> 5 | mg
    r"(?<=[A-Z]{2})(?=[A-Z][a-z]{2,})",  # USMeaningful -> US | Meaningful
    r"(?<=[a-z])(?=[A-Z])",  # WhalenChief -> Whalen | Chief
    r"(?<=[^\W_])(?=[^\w\s])",  # word | punctuation: 09/14, Calle:X, john.smith@x
    r"(?<=[^\w\s])(?=[^\W_])",  # punctuation | word
]

# Characters that never start a token on their own: byte-order mark, zero-width spaces.
_INVISIBLE = "\ufeff\u200b\u200c\u200d\u2060"

_ABBREVIATIONS = {
    "dr.", "dra.", "drs.", "mr.", "mrs.", "ms.", "sr.", "sra.", "srta.", "prof.", "st.",
    "dña.", "dn.", "d.", "no.", "nº.", "n.", "vs.", "approx.", "etc.", "e.g.", "i.e.",
    "jr.", "sgt.", "av.", "avda.", "c.", "ud.", "uds.", "tel.", "fax.", "p.", "pág.",
}


class Token(NamedTuple):
    """One token; a named tuple because a note has hundreds and a frozen dataclass is slow to build."""

    text: str
    start: int
    end: int
    line: int  # 0-based line number in the note
    line_start: bool  # first token on its line


@dataclass(frozen=True, slots=True)
class Tokenized:
    """A tokenised note: tokens, sentence and line boundaries, all by token index."""

    text: str
    tokens: tuple[Token, ...]
    sentences: tuple[tuple[int, int], ...]  # [start, end) token index ranges

    def sentence_tokens(self) -> list[tuple[Token, ...]]:
        return [self.tokens[a:b] for a, b in self.sentences]

    def sentence_char_ranges(self) -> list[tuple[int, int]]:
        return [(self.tokens[a].start, self.tokens[b - 1].end) for a, b in self.sentences]


class _AffixRegexes(NamedTuple):
    prefix_search: Callable[[str], re.Match[str] | None]
    suffix_search: Callable[[str], re.Match[str] | None]
    infix_finditer: Callable[[str], Iterator[re.Match[str]]]


def _check_language(lang: str) -> None:
    if lang not in SUPPORTED_LANGUAGES:
        raise UnsupportedFormat(
            f"unsupported language {lang!r}: use one of {', '.join(SUPPORTED_LANGUAGES)}"
        )


@lru_cache(maxsize=8)
def _affix_regexes(lang: str) -> _AffixRegexes:
    """spaCy's prefix, suffix and infix expressions for ``lang`` plus the clinical ones.

    Read from the language's defaults, without building a spaCy pipeline
    (``spacy.blank`` and its 4,000 special cases cost more than the first
    hundred notes' tokenization).
    """
    _check_language(lang)
    defaults = spacy.util.get_lang_class(lang).Defaults
    infixes = list(defaults.infixes or []) + CLINICAL_INFIXES
    prefixes = [re.escape(c) for c in _INVISIBLE] + list(defaults.prefixes or [])
    # spaCy's special cases keep "H." or "Dr." whole; in clinical notes the
    # period is rarely part of the PHI ("Sexo: H."), so every period is its own
    # token and the sentence splitter handles abbreviations instead.
    suffixes = [r"\."] + list(defaults.suffixes or [])
    return _AffixRegexes(
        compile_prefix_regex(prefixes).search,
        compile_suffix_regex(suffixes).search,
        compile_infix_regex(infixes).finditer,
    )


@lru_cache(maxsize=8)
def _spacy_tokenizer(lang: str):  # type: ignore[no-untyped-def]
    """spaCy's tokenizer with the clinical rules.

    Tagging does not run it: ``ClinicalTokenizer`` splits the same way
    without building spaCy objects. It serves ``spacy_doc`` and is the
    reference the tests hold ``ClinicalTokenizer`` to.
    """
    regexes = _affix_regexes(lang)
    nlp = spacy.blank(lang)
    nlp.tokenizer.infix_finditer = regexes.infix_finditer
    nlp.tokenizer.prefix_search = regexes.prefix_search
    nlp.tokenizer.rules = {}  # no special cases (see _affix_regexes)
    nlp.tokenizer.suffix_search = regexes.suffix_search
    # The URL matcher swallows "E-mail:ana@x.es" whole; emails and URLs are
    # found by the rules instead, and tokens must split at the colon.
    nlp.tokenizer.token_match = None
    nlp.tokenizer.url_match = None
    return nlp.tokenizer


def spacy_doc(text: str, lang: str = "en"):  # type: ignore[no-untyped-def]
    """The raw spaCy ``Doc`` (whitespace tokens included), for callers that want spaCy objects."""
    return _spacy_tokenizer(lang)(text)


def _is_blank(s: str) -> bool:
    if s and not (s[0] in _INVISIBLE or s[0].isspace()):
        return False  # fast path: almost every token starts with a visible character
    return s.isspace() or all(c in _INVISIBLE or c.isspace() for c in s)


#: A line break, or a run of characters that are not white space: spaCy's
#: chunks (``str.isspace`` is the test on both sides).
_CHUNK = re.compile(r"\n|\S+")

#: One chunk's tokens: (text, start, end) relative to the chunk, blanks left out.
_Pieces = tuple[tuple[str, int, int], ...]


class ClinicalTokenizer:
    """Tokeniser and sentence/line segmenter for one language.

    It splits exactly as spaCy's tokenizer configured by ``_spacy_tokenizer``
    (the tests compare the two on random text), but in plain Python over
    spaCy's own regular expressions: a note is cut into white-space chunks and
    each distinct chunk is split once and remembered, as spaCy's cache does,
    without building a ``Doc`` and reading its tokens back (two thirds of the
    old tokenizer's time). Repeated words come back as the same string
    objects, whose hashes later dictionary lookups reuse.
    """

    #: Distinct chunks remembered; then the memory starts over.
    MAX_CACHE = 200_000

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang
        self._regexes = _affix_regexes(lang)
        self._cache: dict[str, _Pieces] = {}

    def _split(self, chunk: str) -> _Pieces:
        """A chunk's tokens: spaCy's ``_split_affixes`` and ``_attach_tokens`` without special cases."""
        prefix_search, suffix_search, infix_finditer = self._regexes
        prefixes: list[str] = []
        suffixes: list[str] = []
        string = chunk
        last_size = 0
        while string and len(string) != last_size:
            last_size = len(string)
            m = prefix_search(string)
            pre_len = m.end() - m.start() if m is not None else 0
            m = suffix_search(string[pre_len:])
            suf_len = m.end() - m.start() if m is not None else 0
            if pre_len and suf_len and pre_len + suf_len <= len(string):
                prefixes.append(string[:pre_len])
                suffixes.append(string[-suf_len:])
                string = string[pre_len:-suf_len]
            elif pre_len:
                prefixes.append(string[:pre_len])
                string = string[pre_len:]
            elif suf_len:
                suffixes.append(string[-suf_len:])
                string = string[:-suf_len]
        pieces = prefixes
        if string:
            start = 0
            for match in infix_finditer(string):
                infix_start, infix_end = match.start(), match.end()
                if infix_start == 0:
                    continue
                if infix_start != start:
                    pieces.append(string[start:infix_start])
                if infix_start != infix_end:
                    pieces.append(string[infix_start:infix_end])
                start = infix_end
            if start < len(string):
                pieces.append(string[start:])
        pieces.extend(reversed(suffixes))
        out = []
        pos = 0
        for s in pieces:
            start, end = pos, pos + len(s)
            pos = end
            if _is_blank(s):
                continue
            # An invisible character may stay glued to a word; peel it off.
            while s[0] in _INVISIBLE:
                s = s[1:]
                start += 1
            out.append((s, start, end))
        return tuple(out)

    def tokenize(self, text: str) -> Tokenized:
        tokens: list[Token] = []
        append = tokens.append
        cache = self._cache
        new = tuple.__new__  # Token(...) without its Python-level __new__: half the cost per token
        line = 0
        line_start = True
        for m in _CHUNK.finditer(text):
            chunk = m.group()
            if chunk == "\n":
                line += 1
                line_start = True
                continue
            pieces = cache.get(chunk)
            if pieces is None:
                pieces = self._split(chunk)
                if len(cache) >= self.MAX_CACHE:
                    cache.clear()
                cache[chunk] = pieces
            base = m.start()
            for s, a, b in pieces:
                append(new(Token, (s, base + a, base + b, line, line_start)))
                line_start = False
        return Tokenized(text, tuple(tokens), tuple(_sentences(text, tokens)))


def _sentences(text: str, tokens: list[Token]) -> list[tuple[int, int]]:
    """Split at line breaks and at sentence-final punctuation before a capital or digit.

    Abbreviations (``Dr.``) and single initials (``J.``) do not end a sentence:
    paper 004 notes that splitting "Dr. | Vincent" loses the strongest cue for
    a doctor's name.
    """
    out: list[tuple[int, int]] = []
    begin = 0
    n = len(tokens)
    for i in range(n - 1):
        cur, nxt = tokens[i], tokens[i + 1]
        split = False
        if nxt.line != cur.line:
            split = True
        elif cur.text in (".", "!", "?", "..."):
            prev = tokens[i - 1].text.lower() + "." if i > 0 and cur.text == "." else ""
            glued = i > 0 and tokens[i - 1].end == cur.start
            is_abbrev = glued and (prev in _ABBREVIATIONS or (len(prev) == 2 and prev[0].isalpha()))
            if not is_abbrev and cur.end < nxt.start and (nxt.text[0].isupper() or nxt.text[0].isdigit()):
                split = True
        elif cur.text.endswith(".") and len(cur.text) > 1 and cur.text.lower() not in _ABBREVIATIONS:
            if cur.end < nxt.start and nxt.text[0].isupper() and not (len(cur.text) == 2 and cur.text[0].isupper()):
                split = True
        if split:
            out.append((begin, i + 1))
            begin = i + 1
    if n:
        out.append((begin, n))
    return out


@lru_cache(maxsize=4)
def get_tokenizer(lang: str = "en") -> ClinicalTokenizer:
    return ClinicalTokenizer(lang)


def tokenize(text: str, lang: str = "en") -> Tokenized:
    return get_tokenizer(lang).tokenize(text)
