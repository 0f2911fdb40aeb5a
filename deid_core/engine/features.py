"""Token features for the CRF (paper 000 section 3.2.2, paper 004 Table 2, paper 001).

Feature extraction is the tagging bottleneck, so features come in two parts:

* *type features* depend only on a word and its offset in the window (the
  word itself, affixes, the two shapes, orthographic flags). They are cached
  per ``(offset, word)`` and, on the decoding side, mapped to attribute ids
  once per word type (see ``deid_core.engine.decoder.AttrIndex``);
* *context features* depend on the token's place in the note (sentence,
  line, section header, "Key: value" structure, gazetteer and rule matches).
  There are only a handful per token.

Every attribute is a plain string, which python-crfsuite accepts as a feature
of weight 1. No POS tags: there is no pretrained tagger to load.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, NamedTuple

from deid_core.engine.gazetteers import Gazetteer
from deid_core.engine.lexicons import LEXICON_VERSION, Lexicon, load_lexicon
from deid_core.engine.tokenize import Token, Tokenized
from deid_core.engine.validators import case_counts
from deid_core.errors import ModelError
from deid_core.spans import Span

FEATURE_FORMAT_VERSION = 1

#: Feature augmentation (Daume 2007, "Frustratingly easy domain adaptation"):
#: a note of the target domain (the project's reviewed notes) carries every
#: attribute twice, as is (the general copy, shared with the starter's notes)
#: and with this prefix (the in-domain copy). The CRF can then learn where the
#: project differs from the starter without unlearning what they share.
DOMAIN_PREFIX = "\x1ed:"

BOS = "\x02BOS"
EOS = "\x03EOS"

#: Known section headers (lower case, without trailing ``:`` or ``.``). Header
#: lines are also detected generically; these catch headers written as prose.
KNOWN_HEADERS: dict[str, frozenset[str]] = {
    "en": frozenset({
        "history", "history of present illness", "hpi", "past medical history", "pmh",
        "medications", "allergies", "assessment", "plan", "assessment and plan",
        "impression", "diagnosis", "diagnoses", "physical exam", "physical examination",
        "hospital course", "discharge diagnosis", "discharge medications", "social history",
        "family history", "review of systems", "chief complaint", "labs", "results",
        "disposition", "follow up", "follow-up", "signed", "electronically signed",
        "patient information", "vital signs", "procedures", "findings",
    }),
    "es": frozenset({
        "datos del paciente", "datos asistenciales", "antecedentes", "antecedentes personales",
        "anamnesis", "enfermedad actual", "exploración física", "exploración",
        "pruebas complementarias", "evolución", "diagnóstico", "diagnóstico diferencial",
        "tratamiento", "juicio clínico", "discusión", "informe clínico", "remitido por",
        "bibliografía", "conclusiones", "resultados", "caso clínico", "comentario",
        "exploraciones complementarias", "tratamiento y evolución",
    }),
}

_CLOSERS = {".", "?", "!", ":", ";"}
_OPENERS = ("(", "[")
_CLOSING_BRACKETS = (")", "]")
_LPOS = tuple(f"lpos={k}" for k in range(5))
_KVP = ("", "kvp=1", "kvp=2", "kvp=3", "kvp=4+")


@dataclass(frozen=True)
class FeatureConfig:
    """What the extractor emits. Stored in the model directory with the model."""

    window: int = 2  # context words on each side
    affix_max: int = 5  # prefixes and suffixes of length 1..affix_max
    bigrams: bool = True
    sentence: bool = True
    lines: bool = True
    headers: bool = True
    key_value: bool = True
    gazetteer: bool = True
    rules: bool = True
    #: The built-in lexicon (English names, places, common words) the word
    #: features read, by version; "" for none. Its features depend on the word
    #: alone, whatever its case, so they work in capitals and lower-case notes.
    lexicon: str = LEXICON_VERSION
    #: A feature on every token of a line written all in capitals or all in
    #: lower case: where the word shape says nothing about a name.
    line_case: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": FEATURE_FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> FeatureConfig:
        """A stored configuration; one saved before the lexicon and line-case features had neither."""
        known = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in raw.items() if k in known}
        kwargs.setdefault("lexicon", "")
        kwargs.setdefault("line_case", False)
        return cls(**kwargs)


def augment_domain(features: list[list[str]]) -> list[list[str]]:
    """Each token's attributes plus their in-domain copies (``DOMAIN_PREFIX``)."""
    return [feats + [DOMAIN_PREFIX + f for f in feats] for feats in features]


def _clean(word: str) -> str:
    """Attribute-safe text: crfsuite attributes are NUL-terminated UTF-8 on one dump line."""
    if word.isprintable():
        return word
    return "".join(c if c.isprintable() else "?" for c in word).encode(
        "utf-8", "replace"
    ).decode("utf-8")


_ASCII_SHAPE = {
    i: ("A" if chr(i).isupper() else "a" if chr(i).islower() else "#" if chr(i).isdigit() else "-")
    for i in range(128)
}


def _char_shape(c: str) -> str:
    if c.isupper():
        return "A"
    if c.islower() or c.isalpha():
        return "a"
    if c.isdigit():
        return "#"
    return "-"


def word_shape(word: str) -> str:
    """Long shape: upper ``A``, lower ``a``, digit ``#``, anything else ``-`` ("PO/5mg" -> "AA-#aa")."""
    if word.isascii():
        return word.translate(_ASCII_SHAPE)
    return "".join(_char_shape(c) for c in word)


def short_shape(word: str) -> str:
    """Short shape: runs of one class collapsed ("PO/5mg" -> "A-#a")."""
    long = word_shape(word)
    out = [long[0]] if long else []
    for c in long[1:]:
        if out[-1] != c:
            out.append(c)
    return "".join(out)


def _length_bucket(n: int) -> str:
    if n <= 4:
        return str(n)
    if n <= 6:
        return "5-6"
    if n <= 9:
        return "7-9"
    return "10+"


def _sentence_bucket(n: int) -> str:
    for limit in (1, 3, 6, 10, 20, 40):
        if n <= limit:
            return str(limit)
    return "40+"


#: ``str.translate`` tables that keep only the ASCII capitals / lower-case letters.


def _line_case(words: Sequence[str]) -> str | None:
    """"lcase=caps" for a line in capitals, "lcase=lower" for one without a capital letter."""
    upper, lower = case_counts("".join(words))
    if upper >= 6 and upper > 3 * lower:
        return "lcase=caps"
    if lower >= 6 and upper == 0:
        return "lcase=lower"
    return None


class FeatureExtractor:
    """Builds per-token attribute lists for one language and configuration."""

    def __init__(
        self,
        config: FeatureConfig | None = None,
        *,
        lang: str = "en",
        gazetteer: Gazetteer | None = None,
    ) -> None:
        self.config = config or FeatureConfig()
        self.lang = lang
        self.gazetteer = gazetteer if self.config.gazetteer else None
        self._headers = KNOWN_HEADERS.get(lang, frozenset())
        self._type_cache: dict[tuple[int, str], list[str]] = {}
        self._offsets = [o for o in range(-self.config.window, self.config.window + 1)]
        self._lexicon: Lexicon | None = None
        if self.config.lexicon and lang == "en":
            if self.config.lexicon != LEXICON_VERSION:
                raise ModelError(
                    f"features use lexicon {self.config.lexicon!r}, this installation has {LEXICON_VERSION!r}"
                )
            self._lexicon = load_lexicon(lang)

    # -- type features -------------------------------------------------------

    def type_features(self, offset: int, word: str) -> list[str]:
        """Features of ``word`` seen at ``offset`` from the current token (cached, for training).

        Tagging does not need this cache: ``EmissionScorer`` keeps the summed
        weights of each word instead and calls ``word_type_features`` once.
        """
        key = (offset, word)
        cached = self._type_cache.get(key)
        if cached is not None:
            return cached
        feats = self.compute_type_features(offset, word)
        if len(self._type_cache) < 2_000_000:
            self._type_cache[key] = feats
        return feats

    def compute_type_features(self, offset: int, word: str) -> list[str]:
        if word in (BOS, EOS):
            return self._edge(offset, word)
        w = _clean(word)
        return self._type_at(offset, w, w.lower(), short_shape(w))

    def word_type_features(self, word: str) -> list[list[str]]:
        """``compute_type_features`` at every window offset (``offsets`` order), sharing the work."""
        if word in (BOS, EOS):
            return [self._edge(off, word) for off in self._offsets]
        w = _clean(word)
        low, ss = w.lower(), short_shape(w)
        return [self._type_at(off, w, low, ss) for off in self._offsets]

    @staticmethod
    def _edge(offset: int, word: str) -> list[str]:
        return [f"{offset}:" + ("BOS" if word == BOS else "EOS")]

    def _lexicon_features(self, p: str, low: str, offset: int) -> list[str]:
        lexicon = self._lexicon
        assert lexicon is not None
        feats = [f"{p}lex={lexicon.classify(low)}"]
        if offset == 0:
            if low in lexicon.first:
                feats.append(p + "lexfirst")
            if low in lexicon.last:
                feats.append(p + ("lexlast" if lexicon.last[low] < 5000 else "lexlast_rare"))
            if low in lexicon.places:
                feats.append(p + "lexplace")
        return feats

    def _type_at(self, offset: int, w: str, low: str, ss: str) -> list[str]:
        p = f"{offset}:"
        if offset != 0:
            feats = [f"{p}w={low}", f"{p}ss={ss}"]
            if w.istitle():
                feats.append(p + "title")
            if self._lexicon is not None and -1 <= offset <= 1 and w.isalpha():
                feats.extend(self._lexicon_features(p, low, offset))
            return feats
        feats = [f"{p}w={low}", f"{p}sh={word_shape(w)[:16]}", f"{p}ss={ss}"]
        n = len(w)
        for k in range(1, min(self.config.affix_max, n) + 1):
            feats.append(f"{p}p{k}={low[:k]}")
            feats.append(f"{p}s{k}={low[-k:]}")
        feats.append(f"{p}len={_length_bucket(n)}")
        if w.isdigit():
            feats.append(f"{p}ndig={min(n, 12)}")
        elif any(c.isdigit() for c in w):
            feats.append(p + "hasdigit")
        if w.isalpha():
            if w.isupper():
                feats.append(p + ("init" if n == 1 else "upper"))
            elif w.istitle():
                feats.append(p + "title")
            elif w.islower():
                feats.append(p + "lower")
            else:
                feats.append(p + "mixed")
        elif not any(c.isalnum() for c in w):
            feats.append(p + "punct")
        if self._lexicon is not None and w.isalpha():
            feats.extend(self._lexicon_features(p, low, 0))
        return feats

    # -- context features ----------------------------------------------------

    def _line_info(self, tokens: Sequence[Token]) -> tuple[list[list[str]], list[str | None]]:
        """Per token: line-position, header and "Key: value" features; and the section feature."""
        n = len(tokens)
        extras: list[list[str]] = [[] for _ in range(n)]
        section: list[str | None] = [None] * n
        cfg = self.config
        current_section: str | None = None
        i = 0
        while i < n:
            line_no = tokens[i].line
            j = i
            while j < n and tokens[j].line == line_no:
                j += 1
            words = [t.text for t in tokens[i:j]]
            size = j - i
            is_header = self._is_header_line(words)
            case_feat = _line_case(words) if cfg.line_case else None
            if is_header:
                name = "_".join(w.lower() for w in words if w.isalpha())[:40]
                current_section = f"sec={_clean(name)}" if name else None
            key: str | None = None
            key_feats: tuple[str, str, str] = ("", "", "")
            key_pos = 0
            for k in range(size):
                feats = extras[i + k]
                if case_feat is not None:
                    feats.append(case_feat)
                if cfg.lines:
                    feats.append(_LPOS[k] if k < 4 else _LPOS[4])
                    if k == size - 1:
                        feats.append("llast")
                if cfg.headers:
                    if is_header:
                        feats.append("hdr")
                    elif current_section is not None:
                        section[i + k] = current_section
                if cfg.key_value and not is_header:
                    if words[k] == ":" and k > 0 and k < size - 1:
                        key, key_start = self._key_before(words, k)
                        key_pos = 0
                        if key is not None:
                            key_feats = (f"kv={key}", f"kv1={key}", f"kv2={key}")
                            feats.append("kvcolon")
                            for b in range(key_start, k):
                                extras[i + b].append("inkey")
                        continue
                    if key is not None:
                        key_pos += 1
                        feats.append(key_feats[0])
                        feats.append(_KVP[key_pos] if key_pos <= 3 else _KVP[4])
                        if key_pos <= 2:
                            feats.append(key_feats[key_pos])
            i = j
        return extras, section

    def _is_header_line(self, words: Sequence[str]) -> bool:
        if not words or len(words) > 8:
            return False
        alpha = [w for w in words if w.isalpha()]
        if not alpha:
            return False
        if words[-1] == ":":
            return True
        if all(w.isupper() for w in alpha) and any(len(w) > 1 for w in alpha) and len(words) > 1:
            return True
        text = " ".join(w.lower() for w in words).rstrip(" .:")
        return text in self._headers

    @staticmethod
    def _key_before(words: Sequence[str], colon: int) -> tuple[str | None, int]:
        """Lower-cased words (up to 3, back to a capital) before a colon, and where they start.

        "Fecha de nacimiento: ..." -> "fecha_de_nacimiento"; in "Edad: 70 años
        Sexo: H." the second key is "sexo", since a key starts with a capital.
        """
        parts = []
        k = colon - 1
        while k >= 0 and len(parts) < 3 and words[k].isalpha():
            parts.append(words[k].lower())
            if words[k][0].isupper():
                break
            k -= 1
        if not parts:
            return None, colon
        return _clean("_".join(reversed(parts))), colon - len(parts)

    @staticmethod
    def _rule_marks(tokens: Sequence[Token], rule_spans: Sequence[Span]) -> list[list[str]]:
        marks: list[list[str]] = [[] for _ in tokens]
        if not rule_spans:
            return marks
        starts = [t.start for t in tokens]
        ends = [t.end for t in tokens]
        for span in rule_spans:
            i = bisect_right(ends, span.start)
            j = bisect_left(starts, span.end)
            for k in range(i, j):
                mark = ("B-" if k == i else "I-") + span.label
                if mark not in marks[k]:
                    marks[k].append(mark)
        return marks

    # -- assembly ------------------------------------------------------------

    @property
    def offsets(self) -> list[int]:
        return list(self._offsets)

    def window_words(self, tokenized: Tokenized) -> list[list[str]]:
        """For each window offset (in ``offsets`` order), the word seen there by every token.

        Flat in document order; ``BOS``/``EOS`` past a sentence edge. Paired
        with ``type_features`` this gives all type features without building
        a string per token.
        """
        width = self.config.window
        out: list[list[str]] = [[] for _ in self._offsets]
        tokens = tokenized.tokens
        pad_l = [BOS] * width
        pad_r = [EOS] * width
        for a, b in tokenized.sentences:
            padded = pad_l + [t.text for t in tokens[a:b]] + pad_r
            n = b - a
            for j, off in enumerate(self._offsets):
                out[j].extend(padded[width + off : width + off + n])
        return out

    def context_features(self, tokenized: Tokenized, rule_spans: Sequence[Span] = ()) -> list[list[str]]:
        """Per token (flat, document order): sentence, line, header, gazetteer and rule features."""
        return self._context(tokenized, rule_spans, self.gazetteer)

    def _context(
        self,
        tokenized: Tokenized,
        rule_spans: Sequence[Span],
        gazetteer: Gazetteer | None,
        cuts: list[int] | None = None,
    ) -> list[list[str]]:
        """``context_features`` with a given gazetteer; without one, ``cuts`` gets where its marks go."""
        cfg = self.config
        tokens = tokenized.tokens
        out, sections = self._line_info(tokens)
        rule_marks = self._rule_marks(tokens, rule_spans) if cfg.rules else None
        for a, b in tokenized.sentences:
            words = [t.text for t in tokens[a:b]]
            size = b - a
            if cfg.sentence:
                sentence = (f"slen={_sentence_bucket(size)}", f"send={words[-1] if words[-1] in _CLOSERS else 'w'}")
                depth = 0
                for k, w in enumerate(words):
                    feats = out[a + k]
                    feats += sentence
                    if depth > 0:
                        feats.append("inbracket")
                    if w in _OPENERS:
                        depth += 1
                    elif depth > 0 and w in _CLOSING_BRACKETS:
                        depth -= 1
            if cfg.bigrams:
                lows = ["<s>", *[_clean(w.lower()) for w in words], "</s>"]
                for k in range(size):
                    out[a + k] += (f"b-={lows[k]}|{lows[k + 1]}", f"b+={lows[k + 1]}|{lows[k + 2]}")
            if gazetteer is not None:
                for k, marks in gazetteer.marks_at(words):
                    out[a + k].extend([f"gaz={m}" for m in marks])
            elif cuts is not None:
                cuts.extend(len(out[k]) for k in range(a, b))
        if cfg.headers:
            for k, sec in enumerate(sections):
                if sec is not None:
                    out[k].append(sec)
        if rule_marks is not None:
            for k, marks in enumerate(rule_marks):
                if marks:
                    out[k].extend(f"rule={m}" for m in marks)
        return out

    def sentence_features(
        self, tokenized: Tokenized, rule_spans: Sequence[Span] = ()
    ) -> list[list[list[str]]]:
        """Per sentence, per token, the attribute strings python-crfsuite trains on."""
        flat = self.with_gazetteer(tokenized, self.fold_free_features(tokenized, rule_spans))
        return [flat[a:b] for a, b in tokenized.sentences]

    def fold_free_features(self, tokenized: Tokenized, rule_spans: Sequence[Span] = ()) -> FoldFreeFeatures:
        """Every training attribute of each token but the gazetteer's, and where those go.

        The gazetteer is the one part that depends on which notes a model is
        trained with (it is harvested from them), so a retraining round that
        trains several models on overlapping notes computes this once per note
        and adds each model's gazetteer marks with :meth:`with_gazetteer`.
        """
        tf = self.type_features
        offsets = self._offsets
        window = self.window_words(tokenized)
        cuts: list[int] | None = [] if self.config.gazetteer else None
        context = self._context(tokenized, rule_spans, None, cuts)
        flat = []
        for k, extras in enumerate(context):
            feats: list[str] = []
            for j, off in enumerate(offsets):
                feats.extend(tf(off, window[j][k]))
            if cuts is not None:
                cuts[k] += len(feats)
            feats.extend(extras)
            flat.append(feats)
        return FoldFreeFeatures(flat, cuts)

    def with_gazetteer(self, tokenized: Tokenized, base: FoldFreeFeatures) -> list[list[str]]:
        """Per token (flat), ``base`` with this extractor's gazetteer marks in their place.

        Tokens without a mark share ``base``'s lists, so callers must not mutate the result.
        """
        if self.gazetteer is None or base.cuts is None:
            return base.features
        flat = list(base.features)
        tokens = tokenized.tokens
        for a, b in tokenized.sentences:
            for k, marks in self.gazetteer.marks_at([t.text for t in tokens[a:b]]):
                feats, cut = flat[a + k], base.cuts[a + k]
                flat[a + k] = [*feats[:cut], *(f"gaz={m}" for m in marks), *feats[cut:]]
        return flat


class FoldFreeFeatures(NamedTuple):
    """Per token (flat): the attributes that do not depend on the gazetteer, and where its marks go."""

    features: list[list[str]]
    cuts: list[int] | None  # None: the configuration has no gazetteer features
