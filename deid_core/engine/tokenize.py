"""Clinical tokenisation that keeps every character's offset.

spaCy's blank ``en``/``es`` tokenizer plus zero-width infix rules from paper
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


@lru_cache(maxsize=8)
def _spacy_tokenizer(lang: str, lean: bool = False):  # type: ignore[no-untyped-def]
    """spaCy's tokenizer with the clinical rules; ``lean``: for our own tokens only.

    A lean tokenizer's vocabulary computes no lexical attributes (shape,
    like_num, norm...) for new words: tagging reads only each token's text
    and offset, and those attributes were a third of the tokenizer's time on
    unseen notes. Splitting does not depend on them. ``spacy_doc`` keeps them
    for callers that want full spaCy objects.
    """
    if lang not in SUPPORTED_LANGUAGES:
        raise UnsupportedFormat(
            f"unsupported language {lang!r}: use one of {', '.join(SUPPORTED_LANGUAGES)}"
        )
    nlp = spacy.blank(lang)
    infixes = list(nlp.Defaults.infixes or []) + CLINICAL_INFIXES
    nlp.tokenizer.infix_finditer = compile_infix_regex(infixes).finditer
    prefixes = [re.escape(c) for c in _INVISIBLE] + list(nlp.Defaults.prefixes or [])
    nlp.tokenizer.prefix_search = compile_prefix_regex(prefixes).search
    # spaCy's special cases keep "H." or "Dr." whole; in clinical notes the
    # period is rarely part of the PHI ("Sexo: H."), so every period is its own
    # token and the sentence splitter handles abbreviations instead.
    nlp.tokenizer.rules = {}
    suffixes = [r"\."] + list(nlp.Defaults.suffixes or [])
    nlp.tokenizer.suffix_search = compile_suffix_regex(suffixes).search
    # The URL matcher swallows "E-mail:ana@x.es" whole; emails and URLs are
    # found by the rules instead, and tokens must split at the colon.
    nlp.tokenizer.token_match = None
    nlp.tokenizer.url_match = None
    if lean:
        nlp.vocab.lex_attr_getters = {}
    return nlp.tokenizer


def spacy_doc(text: str, lang: str = "en"):  # type: ignore[no-untyped-def]
    """The raw spaCy ``Doc`` (whitespace tokens included), for callers that want spaCy objects."""
    return _spacy_tokenizer(lang)(text)


def _is_blank(s: str) -> bool:
    if s and not (s[0] in _INVISIBLE or s[0].isspace()):
        return False  # fast path: almost every token starts with a visible character
    return s.isspace() or all(c in _INVISIBLE or c.isspace() for c in s)


class ClinicalTokenizer:
    """Tokeniser and sentence/line segmenter for one language."""

    def __init__(self, lang: str = "en") -> None:
        self.lang = lang
        self._tok = _spacy_tokenizer(lang, lean=True)

    def tokenize(self, text: str) -> Tokenized:
        doc = self._tok(text)
        tokens: list[Token] = []
        line = 0
        pos = 0
        line_start = True
        for t in doc:
            s = t.text
            start = t.idx
            if start > pos:
                gap_newlines = text.count("\n", pos, start)
                if gap_newlines:
                    line += gap_newlines
                    line_start = True
            if _is_blank(s):
                nl = s.count("\n")
                if nl:
                    line += nl
                    line_start = True
                pos = start + len(s)
                continue
            end = start + len(s)
            # spaCy may keep an invisible character glued to a word; peel it off.
            while s and s[0] in _INVISIBLE:
                s = s[1:]
                start += 1
            tokens.append(Token(s, start, end, line, line_start))
            line_start = False
            pos = end
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
