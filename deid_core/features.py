"""Token features for the CRF (paper 000 section 3.2.2, paper 004 Table 2, paper 001).

Feature extraction is the tagging bottleneck, so features come in two parts:

* *type features* depend only on a word and its offset in the window (the
  word itself, affixes, the two shapes, orthographic flags). They are cached
  per ``(offset, word)`` and, on the decoding side, mapped to attribute ids
  once per word type (see ``deid_core.decoder.AttrIndex``);
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
from typing import Any

from deid_core.gazetteers import Gazetteer
from deid_core.spans import Span
from deid_core.tokenize import Token, Tokenized

FEATURE_FORMAT_VERSION = 1

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

    def to_dict(self) -> dict[str, Any]:
        return {"format_version": FEATURE_FORMAT_VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> FeatureConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


def _clean(word: str) -> str:
    """Attribute-safe text: crfsuite attributes are NUL-terminated UTF-8 on one dump line."""
    if word.isprintable():
        return word
    return "".join(c if c.isprintable() else "?" for c in word).encode(
        "utf-8", "replace"
    ).decode("utf-8")


def word_shape(word: str) -> str:
    """Long shape: upper ``A``, lower ``a``, digit ``#``, anything else ``-`` ("PO/5mg" -> "AA-#aa")."""
    out = []
    for c in word:
        if c.isupper():
            out.append("A")
        elif c.islower():
            out.append("a")
        elif c.isdigit():
            out.append("#")
        elif c.isalpha():
            out.append("a")
        else:
            out.append("-")
    return "".join(out)


def short_shape(word: str) -> str:
    """Short shape: runs of one class collapsed ("PO/5mg" -> "A-#a")."""
    long = word_shape(word)
    out = []
    for c in long:
        if not out or out[-1] != c:
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

    # -- type features -------------------------------------------------------

    def type_features(self, offset: int, word: str) -> list[str]:
        """Features of ``word`` seen at ``offset`` from the current token (cached)."""
        key = (offset, word)
        cached = self._type_cache.get(key)
        if cached is not None:
            return cached
        feats = self._compute_type_features(offset, word)
        if len(self._type_cache) < 2_000_000:
            self._type_cache[key] = feats
        return feats

    def _compute_type_features(self, offset: int, word: str) -> list[str]:
        p = f"{offset}:"
        if word in (BOS, EOS):
            return [p + ("BOS" if word == BOS else "EOS")]
        w = _clean(word)
        low = w.lower()
        ss = short_shape(w)
        if offset != 0:
            feats = [f"{p}w={low}", f"{p}ss={ss}"]
            if w.istitle():
                feats.append(p + "title")
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
        return feats

    # -- context features ----------------------------------------------------

    def _line_info(self, tokens: Sequence[Token]) -> tuple[list[list[str]], list[str | None]]:
        """Per token: line-position, header and "Key: value" features; and the section key."""
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
            if is_header:
                current_section = "_".join(w.lower() for w in words if w.isalpha())[:40] or None
            key: str | None = None
            key_pos = 0
            for k in range(size):
                feats = extras[i + k]
                if cfg.lines:
                    feats.append(f"lpos={min(k, 4)}")
                    if k == size - 1:
                        feats.append("llast")
                if cfg.headers:
                    if is_header:
                        feats.append("hdr")
                    elif current_section is not None:
                        section[i + k] = current_section
                if cfg.key_value and not is_header:
                    if words[k] == ":" and k > 0 and k < size - 1:
                        key = self._key_before(words, k)
                        key_pos = 0
                        if key is not None:
                            feats.append("kvcolon")
                            for b in range(max(0, k - 3), k):
                                if words[b].isalpha():
                                    extras[i + b].append("inkey")
                        continue
                    if key is not None:
                        key_pos += 1
                        feats.append(f"kv={key}")
                        pos = str(key_pos) if key_pos <= 3 else "4+"
                        feats.append(f"kvp={pos}")
                        if key_pos <= 2:
                            feats.append(f"kv{pos}={key}")
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
    def _key_before(words: Sequence[str], colon: int) -> str | None:
        """Lower-cased words (up to 3, back to a capital) before a colon: "Fecha de nacimiento"."""
        parts = []
        k = colon - 1
        while k >= 0 and len(parts) < 3 and words[k].isalpha():
            parts.append(words[k].lower())
            if words[k][0].isupper():
                break  # a key starts with a capital: "Edad: 70 años Sexo: H" -> "sexo"
            k -= 1
        if not parts:
            return None
        return _clean("_".join(reversed(parts)))

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
                marks[k].append(("B-" if k == i else "I-") + span.label)
        return marks

    # -- assembly ------------------------------------------------------------

    def token_parts(
        self, tokenized: Tokenized, rule_spans: Sequence[Span] = ()
    ) -> list[list[tuple[list[tuple[int, str]], list[str]]]]:
        """Per sentence, per token: ``(type keys, context features)``.

        A type key is ``(offset, word)``; ``type_features`` turns it into
        strings. Keeping the two apart lets the decoder cache attribute ids by
        word type instead of hashing every string of every token.
        """
        cfg = self.config
        tokens = tokenized.tokens
        line_extras, sections = self._line_info(tokens)
        rule_marks = self._rule_marks(tokens, rule_spans) if cfg.rules else None
        out = []
        for a, b in tokenized.sentences:
            words = [t.text for t in tokens[a:b]]
            size = b - a
            gaz_marks = self.gazetteer.marks(words) if self.gazetteer is not None else None
            lows = [w.lower() for w in words] if cfg.bigrams else []
            depth = 0
            slen = f"slen={_sentence_bucket(size)}"
            send = f"send={words[-1] if words[-1] in _CLOSERS else 'w'}"
            sent: list[tuple[list[tuple[int, str]], list[str]]] = []
            for k in range(size):
                keys = []
                for off in self._offsets:
                    pos = k + off
                    if pos < 0:
                        keys.append((off, BOS))
                    elif pos >= size:
                        keys.append((off, EOS))
                    else:
                        keys.append((off, words[pos]))
                extras = list(line_extras[a + k])
                if cfg.sentence:
                    extras.append(slen)
                    extras.append(send)
                    if depth > 0:
                        extras.append("inbracket")
                    w = words[k]
                    if w in ("(", "["):
                        depth += 1
                    elif w in (")", "]") and depth > 0:
                        depth -= 1
                if cfg.headers and sections[a + k] is not None:
                    extras.append(f"sec={sections[a + k]}")
                if cfg.bigrams:
                    prev = lows[k - 1] if k > 0 else "<s>"
                    nxt = lows[k + 1] if k + 1 < size else "</s>"
                    extras.append(_clean(f"b-={prev}|{lows[k]}"))
                    extras.append(_clean(f"b+={lows[k]}|{nxt}"))
                if gaz_marks is not None:
                    extras.extend(f"gaz={m}" for m in gaz_marks[k])
                if rule_marks is not None:
                    extras.extend(f"rule={m}" for m in rule_marks[a + k])
                sent.append((keys, list(dict.fromkeys(extras))))
            out.append(sent)
        return out

    def sentence_features(
        self, tokenized: Tokenized, rule_spans: Sequence[Span] = ()
    ) -> list[list[list[str]]]:
        """Per sentence, per token, the attribute strings python-crfsuite trains on."""
        tf = self.type_features
        return [
            [[f for key in keys for f in tf(*key)] + extras for keys, extras in sent]
            for sent in self.token_parts(tokenized, rule_spans)
        ]
