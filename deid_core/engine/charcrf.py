"""The character-level CRF of paper 000 (section 3.2.3): every character is an item.

It sees what the token CRF cannot: PHI glued to other text ("pacienteJuan"),
ids and phone numbers the tokenizer cuts oddly, names inside longer strings.
Its spans carry the source ``charcrf:<model version>`` and win overlaps over
the token CRF's (``merge.DEFAULT_PRIORITY``: rule > charcrf > crf).

Features per character (the same code builds them for training and tagging):
lower-cased character uni- and bigrams in a window, centred trigrams, the
character class (``A`` upper, ``a`` lower, ``#`` digit, ``-`` punctuation,
``_`` space, ``n`` line break) of the character and its neighbours, its
position in its token (``B I E S``, index), the token's short shape and word,
the neighbouring words, and the rule hits at that character.

Speed: characters are ~5x more items than tokens. In ``mode="windows"`` the
character CRF runs only on windows of ``context`` tokens around *uncertain*
tokens: the token CRF's best marginal below ``1 - uncertainty``, or a word the
token CRF never saw that has a capital or a digit. ``mode="all"`` runs it on
every line. Training uses windows around gold PHI tokens and around every
token with a capital or a digit (no token CRF exists yet to say which are
uncertain), so the training windows cover what tagging will meet.

Stacking (``stack=True``, paper 000's "general NER information"): the
character CRF also reads the token CRF's own labels and confidence at each
character (``TokenView``). Trained on the token CRF's *out-of-fold* labels
(``stack_folds`` models, each trained without the notes it labels), it learns
where the token CRF tends to be wrong rather than copying a tagger that has
seen its training notes. Its training windows are then the ones tagging will
meet: around the tokens the out-of-fold token CRF is uncertain about.

Weights are read from the binary model file and decoded by our own decoder,
so the O-label bias applies to the character model too.
"""

from __future__ import annotations

import tempfile
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from deid_core.engine.crf import CRFParams, CRFWeights, read_weights, train_crf
from deid_core.engine.decoder import forward_backward, viterbi
from deid_core.engine.features import short_shape
from deid_core.engine.tagging import OUTSIDE
from deid_core.engine.tokenize import Token
from deid_core.errors import ModelError
from deid_core.spans import Span

ProgressFn = Callable[[str, float], None]
MODES = ("windows", "all")
POLICIES = ("priority", "add", "score", "subtoken", "fill")


@dataclass(frozen=True)
class CharCRFConfig:
    """How the character CRF is trained and where it runs. Stored with the model."""

    mode: str = "windows"  # "windows" (around uncertain tokens) or "all" (every line)
    context: int = 3  # tokens on each side of an uncertain token, within its line
    uncertainty: float = 0.05  # a token is uncertain when its best marginal < 1 - this
    oov_trigger: bool = True  # unseen words with a capital or a digit are uncertain too
    ngram_window: int = 3  # unigrams and bigrams at offsets -w..w
    c1: float = 0.1
    c2: float = 0.01
    max_iterations: int = 40
    #: "priority": paper 000, charcrf spans win overlaps over token CRF spans;
    #: "add": charcrf spans are kept only where no token CRF span is;
    #: "score": a charcrf span is kept where no token CRF span is, or where its
    #: score beats every token CRF span it overlaps (those are then dropped);
    #: "subtoken": only charcrf spans with an edge inside a token (what the
    #: token CRF cannot express: glued forms, odd splits) go on, with priority;
    #: "fill": the character CRF only fills gaps and fixes edges: a charcrf span
    #: is added where no token CRF span is, or replaces the one token CRF span
    #: it overlaps when both have the same label (a boundary fix); never else.
    policy: str = "subtoken"
    #: "fill" and "add": character spans scoring below this (min character marginal) are dropped.
    min_score: float = 0.0
    #: Stacking: the token CRF's labels and confidence are character features
    #: (out-of-fold labels in training, from ``stack_folds`` token models).
    stack: bool = False
    stack_folds: int = 3
    #: Share of the capitalised/digit tokens away from PHI that training
    #: windows are built around (all gold PHI tokens always are): training time.
    negative_share: float = 0.3
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ModelError(f"unknown character CRF mode {self.mode!r}: use one of {MODES}")
        if self.policy not in POLICIES:
            raise ModelError(f"unknown character CRF policy {self.policy!r}: use one of {POLICIES}")
        if self.stack and self.stack_folds < 2:
            raise ModelError(f"stacking needs stack_folds >= 2 out-of-fold token models, got {self.stack_folds}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> CharCRFConfig:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})

    def crf_params(self) -> CRFParams:
        return CRFParams(c1=self.c1, c2=self.c2, max_iterations=self.max_iterations)


# -- characters -> attribute columns ---------------------------------------------------

_WS_MAP = {"\n": "¶", "\r": "¶", "\t": "→", " ": "·", "\x00": "?"}


def _norm(text: str) -> str:
    """Lower-cased text of the same length, white space made visible (attributes are one line)."""
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two ("İ")
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    return low.translate(str.maketrans(_WS_MAP))


def _class(c: str) -> str:
    if c.isupper():
        return "A"
    if c.isalpha():
        return "a"
    if c.isdigit():
        return "#"
    if c in "\n\r":
        return "n"
    if c.isspace():
        return "_"
    return "-"


def _classes(text: str) -> str:
    if text.isascii():
        return text.translate(_ASCII_CLASS)
    return "".join(_class(c) for c in text)


_ASCII_CLASS = {i: _class(chr(i)) for i in range(128)}


@dataclass(frozen=True)
class TokenView:
    """What the token CRF says about a note's tokens: the stacking features and the window triggers.

    ``tags[k]`` is token ``k``'s most probable tag (argmax of its marginals, so
    it does not depend on the bias), ``conf[k]`` that tag's marginal.
    """

    tags: tuple[str, ...]
    conf: tuple[float, ...]
    triggers: tuple[int, ...]


def token_view(
    tokens: Sequence[Token],
    marginals: np.ndarray,
    tag_names: Sequence[str],
    known_word: Callable[[str], bool],
    config: CharCRFConfig,
) -> TokenView:
    """The token CRF's view of a note, read from its marginals (the same at training and tagging)."""
    if not len(tokens):
        return TokenView((), (), ())
    best = marginals.argmax(axis=1)
    conf = marginals.max(axis=1)
    return TokenView(
        tuple(tag_names[int(i)] for i in best),
        tuple(float(x) for x in conf),
        tuple(uncertain_tokens(tokens, marginals, known_word, config)),
    )


def uncertain_tokens(
    tokens: Sequence[Token], marginals: np.ndarray, known_word: Callable[[str], bool], config: CharCRFConfig
) -> list[int]:
    """Low best marginal, or (``oov_trigger``) an unseen word with a capital or a digit."""
    if not len(tokens):
        return []
    low = np.flatnonzero(marginals.max(axis=1) < 1.0 - config.uncertainty).tolist()
    if not config.oov_trigger:
        return low
    oov = [
        k for k, t in enumerate(tokens)
        if any(c.isupper() or c.isdigit() for c in t.text) and not known_word(t.text)
    ]
    return sorted(set(low) | set(oov))


def _conf_bucket(p: float) -> str:
    return "h" if p >= 0.99 else "m" if p >= 0.9 else "l" if p >= 0.7 else "v"


@dataclass(frozen=True)
class NoteChars:
    """Per-note arrays the character features read: normalised text, classes, token of each char."""

    text: str
    norm: str  # padded by ``pad`` on each side
    cls: str  # padded likewise
    pad: int
    tokens: tuple[Token, ...]
    tok_starts: list[int]
    tok_ends: list[int]
    rule_marks: dict[int, list[str]]  # char offset -> rule marks there
    view: TokenView | None = None  # the token CRF's labels, when stacking


def note_chars(
    text: str, tokens: Sequence[Token], rule_spans: Sequence[Span], pad: int, view: TokenView | None = None
) -> NoteChars:
    marks: dict[int, list[str]] = {}
    for s in rule_spans:
        for k in range(s.start, s.end):
            mark = ("B-" if k == s.start else "I-") + s.label
            bucket = marks.setdefault(k, [])
            if mark not in bucket:
                bucket.append(mark)
    edge_l, edge_r = "⟨" * pad, "⟩" * pad
    return NoteChars(
        text=text,
        norm=edge_l + _norm(text) + edge_r,
        cls="<" * pad + _classes(text) + ">" * pad,
        pad=pad,
        tokens=tuple(tokens),
        tok_starts=[t.start for t in tokens],
        tok_ends=[t.end for t in tokens],
        rule_marks=marks,
        view=view,
    )


def _word(tok: Token) -> str:
    w = tok.text.lower()
    return w if len(w) <= 24 else w[:24] + "…"


def char_columns(nc: NoteChars, a: int, b: int, window: int) -> list[list[str]]:
    """Attribute columns for characters ``a..b``: ``columns[j][i]`` is template ``j`` at char ``a+i``.

    Columns, not rows, so that tagging can look every template up at once.
    Features may look past the window into the rest of the note.
    """
    n = b - a
    p = nc.pad
    P, K = nc.norm, nc.cls
    cols: list[list[str]] = []
    for o in range(-window, window + 1):
        seg = P[a + p + o : b + p + o]
        cols.append([f"u{o}={c}" for c in seg])
    for o in range(-window, window):
        s1 = P[a + p + o : b + p + o]
        s2 = P[a + p + o + 1 : b + p + o + 1]
        cols.append([f"b{o}={x}{y}" for x, y in zip(s1, s2)])
    for o in (-2, -1, 0):
        s1 = P[a + p + o : b + p + o]
        s2 = P[a + p + o + 1 : b + p + o + 1]
        s3 = P[a + p + o + 2 : b + p + o + 2]
        cols.append([f"t{o}={x}{y}{z}" for x, y, z in zip(s1, s2, s3)])
    k_prev = K[a + p - 1 : b + p - 1]
    k_cur = K[a + p : b + p]
    k_next = K[a + p + 1 : b + p + 1]
    cols.append([f"k={c}" for c in k_cur])
    cols.append([f"kk={x}{y}{z}" for x, y, z in zip(k_prev, k_cur, k_next)])
    # Position in the token, token shape and word, neighbouring words.
    pos_col, idx_col, shape_col, word_col, prev_col, next_col = [], [], [], [], [], []
    tokens, starts, ends = nc.tokens, nc.tok_starts, nc.tok_ends
    k = bisect_right(ends, a)  # first token ending after a
    ntok = len(tokens)
    for c in range(a, b):
        while k < ntok and ends[k] <= c:
            k += 1
        if k < ntok and starts[k] <= c:
            tok = tokens[k]
            i, last = c - tok.start, tok.end - 1 - c
            pos_col.append("tp=S" if i == 0 and last == 0 else "tp=B" if i == 0 else "tp=E" if last == 0 else "tp=I")
            idx_col.append(f"ti={min(i, 5)}")
            shape_col.append(f"ts={short_shape(tok.text)[:8]}")
            word_col.append(f"tw={_word(tok)}")
            prev_col.append(f"pw={_word(tokens[k - 1])}" if k > 0 else "pw=BOS")
            next_col.append(f"nw={_word(tokens[k + 1])}" if k + 1 < ntok else "nw=EOS")
        else:  # white space between tokens
            pos_col.append("tp=ws")
            idx_col.append("ti=ws")
            shape_col.append("ts=ws")
            word_col.append("tw=ws")
            prev_col.append(f"pw={_word(tokens[k - 1])}" if k > 0 else "pw=BOS")
            next_col.append(f"nw={_word(tokens[k])}" if k < ntok else "nw=EOS")
    cols.extend((pos_col, idx_col, shape_col, word_col, prev_col, next_col))
    if nc.view is not None:
        cols.extend(_stack_columns(nc, a, b, pos_col))
    if nc.rule_marks:
        marks = nc.rule_marks
        widest = max((len(marks.get(c, ())) for c in range(a, b)), default=0)
        for j in range(widest):
            col = []
            for c in range(a, b):
                here = marks.get(c)
                col.append(f"r={here[j]}" if here is not None and j < len(here) else "")
            cols.append(col)
    assert all(len(col) == n for col in cols)
    return cols


def _stack_columns(nc: NoteChars, a: int, b: int, pos_col: list[str]) -> list[list[str]]:
    """The token CRF's tag at each character, its confidence, its neighbours' tags, tag x position.

    White space between two tokens of one token CRF span reads ``sl=ws-in``:
    the character CRF should learn to carry the span across it.
    """
    assert nc.view is not None
    tags, conf = nc.view.tags, nc.view.conf
    starts, ends = nc.tok_starts, nc.tok_ends
    ntok = len(tags)
    lab, cnf, prev, nxt, cross = [], [], [], [], []
    k = bisect_right(ends, a)
    for i, c in enumerate(range(a, b)):
        while k < ntok and ends[k] <= c:
            k += 1
        before = tags[k - 1] if k > 0 else "BOS"
        if k < ntok and starts[k] <= c:
            tag = tags[k]
            lab.append(f"sl={tag}")
            cnf.append(f"sc={_conf_bucket(conf[k])}")
            prev.append(f"sp={before}")
            nxt.append(f"sn={tags[k + 1] if k + 1 < ntok else 'EOS'}")
            cross.append(f"sx={tag}|{pos_col[i]}")
        else:
            after = tags[k] if k < ntok else "EOS"
            inside = before != OUTSIDE and after.startswith("I-")
            lab.append("sl=ws-in" if inside else "sl=ws")
            cnf.append("")
            prev.append(f"sp={before}")
            nxt.append(f"sn={after}")
            cross.append("")
    return [lab, cnf, prev, nxt, cross]


def char_items(cols: list[list[str]]) -> list[list[str]]:
    """Columns to per-character attribute lists (the training format)."""
    return [[v for v in row if v] for row in zip(*cols)]


# -- windows ---------------------------------------------------------------------------


def token_windows(tokens: Sequence[Token], triggers: Sequence[int], context: int) -> list[tuple[int, int]]:
    """Character ranges of ``context`` tokens around each trigger token (within its line), merged."""
    if not triggers:
        return []
    n = len(tokens)
    ranges = []
    for k in sorted(set(triggers)):
        line = tokens[k].line
        lo = k
        while lo > 0 and k - lo < context and tokens[lo - 1].line == line:
            lo -= 1
        hi = k
        while hi + 1 < n and hi - k < context and tokens[hi + 1].line == line:
            hi += 1
        ranges.append((tokens[lo].start, tokens[hi].end))
    merged: list[tuple[int, int]] = []
    for a, b in ranges:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def stack_windows(tokens: Sequence[Token], view: TokenView, context: int) -> list[tuple[int, int]]:
    """``token_windows`` around the view's triggers, widened so that no token CRF span is cut.

    A window edge inside a span the token CRF found cuts the character CRF's
    view of it, and its span then ends at the window edge (MEDDOCAN dev: most
    wrong "fill" edits were such truncated addresses and hospital names).
    Widening follows the token CRF's ``I-`` tags across lines too.
    """
    n = len(tokens)
    tags = view.tags
    starts = [t.start for t in tokens]
    ends = [t.end for t in tokens]
    out: list[tuple[int, int]] = []
    for a, b in token_windows(tokens, view.triggers, context):
        lo = bisect_left(starts, a)
        hi = bisect_right(ends, b) - 1
        while lo > 0 and tags[lo].startswith("I-"):
            lo -= 1
        while hi + 1 < n and tags[hi + 1].startswith("I-"):
            hi += 1
        a, b = tokens[lo].start, tokens[hi].end
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def line_windows(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """One window per line that has tokens: the ``mode="all"`` setting."""
    out: list[tuple[int, int]] = []
    last_line = -1
    for tok in tokens:
        if out and tok.line == last_line:
            out[-1] = (out[-1][0], tok.end)
        else:
            out.append((tok.start, tok.end))
        last_line = tok.line
    return out


def training_triggers(
    tokens: Sequence[Token], gold: Sequence[Span], share: float, rng: np.random.Generator
) -> list[int]:
    """Tokens a training window is built around: gold PHI, and a ``share`` of those with a capital or a digit."""
    starts = [t.start for t in tokens]
    ends = [t.end for t in tokens]
    draws = rng.random(len(tokens))
    out = {
        k for k, t in enumerate(tokens)
        if draws[k] < share and any(c.isupper() or c.isdigit() for c in t.text)
    }
    for s in gold:
        out.update(range(bisect_right(ends, s.start), bisect_left(starts, s.end)))
    return sorted(out)


def char_tags(text_len: int, windows: Sequence[tuple[int, int]], gold: Sequence[Span]) -> list[str]:
    """BIO tags of the characters in ``windows`` (concatenated), from gold spans."""
    label_at: dict[int, str] = {}
    begins: set[int] = set()
    for s in gold:
        begins.add(s.start)
        for c in range(s.start, s.end):
            label_at[c] = s.label
    out = []
    for a, b in windows:
        for c in range(a, b):
            lab = label_at.get(c)
            if lab is None:
                out.append(OUTSIDE)
            else:
                out.append(("B-" if c in begins else "I-") + lab)
    return out


# -- the tagger ------------------------------------------------------------------------


@dataclass(frozen=True)
class CharEncoded:
    """A note's character windows with everything the bias does not change."""

    windows: tuple[tuple[int, int], ...]  # char ranges in the note
    bounds: tuple[tuple[int, int], ...]  # the same as row ranges of ``emissions``
    emissions: np.ndarray  # (chars in windows, tags)
    marginals: np.ndarray


EMPTY_CHARS = CharEncoded((), (), np.zeros((0, 0)), np.zeros((0, 0)))


class CharTagger:
    """Character CRF weights plus feature lookup, Viterbi with the O bias, and span reading."""

    def __init__(self, crf_bytes: bytes, config: CharCRFConfig, weights: CRFWeights | None = None) -> None:
        self.config = config
        self.crf_bytes = crf_bytes
        if weights is None:
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "charcrf.crfsuite"
                path.write_bytes(crf_bytes)
                weights = read_weights(path)
        self.weights = weights
        self.tag_names = tuple(weights.labels)
        if OUTSIDE not in self.tag_names:
            raise ModelError(f"character CRF has no {OUTSIDE!r} tag")
        self.o_index = self.tag_names.index(OUTSIDE)
        self.ids = {a: i for i, a in enumerate(weights.attributes)}
        n_attrs = len(weights.attributes)
        # One zero row at the end for unknown attributes (and empty cells).
        self.state = np.zeros((n_attrs + 1, len(self.tag_names)))
        self.state[:n_attrs] = weights.state.toarray()
        self.unknown = n_attrs
        self.ids[""] = n_attrs

    def with_config(self, config: CharCRFConfig) -> CharTagger:
        """The same weights run another way (mode, window triggers, policy)."""
        return CharTagger(self.crf_bytes, config, self.weights)

    def triggers(
        self,
        tokens: Sequence[Token],
        marginals: np.ndarray,
        known_word: Callable[[str], bool],
    ) -> list[int]:
        """Uncertain tokens: low best marginal, or unseen words with a capital or a digit."""
        return uncertain_tokens(tokens, marginals, known_word, self.config)

    def encode(
        self,
        text: str,
        tokens: Sequence[Token],
        rule_spans: Sequence[Span],
        marginals: np.ndarray,
        known_word: Callable[[str], bool],
        tag_names: Sequence[str] = (),
    ) -> CharEncoded:
        """Emissions and marginals on the note's windows; ``tag_names`` (the token CRF's) when stacking."""
        view = None
        if self.config.stack:
            if not tag_names:
                raise ModelError("a stacked character CRF needs the token CRF's tag names")
            view = token_view(tokens, marginals, tag_names, known_word, self.config)
        if self.config.mode == "all":
            windows = line_windows(tokens)
        elif view is not None:
            windows = stack_windows(tokens, view, self.config.context)
        else:
            windows = token_windows(tokens, self.triggers(tokens, marginals, known_word), self.config.context)
        if not windows:
            return EMPTY_CHARS
        nc = note_chars(text, tokens, rule_spans, self.config.ngram_window + 2, view)
        n_chars = sum(b - a for a, b in windows)
        out = np.empty((n_chars, len(self.tag_names)))
        bounds = []
        row = 0
        get, unknown, state = self.ids.get, self.unknown, self.state
        for a, b in windows:
            cols = char_columns(nc, a, b, self.config.ngram_window)
            block = np.zeros((b - a, len(self.tag_names)))
            for col in cols:
                ids = np.fromiter((get(v, unknown) for v in col), dtype=np.int64, count=b - a)
                block += state[ids]
            out[row : row + b - a] = block
            bounds.append((row, row + b - a))
            row += b - a
        marg, _ = forward_backward(out, bounds, self.weights.transitions)
        return CharEncoded(tuple(windows), tuple(bounds), out, marg)

    def path(self, enc: CharEncoded, bias: float) -> np.ndarray:
        if not enc.windows:
            return np.zeros(0, dtype=np.int64)
        path, _ = viterbi(enc.emissions, enc.bounds, self.weights.transitions, bias=bias, o_index=self.o_index)
        return path

    def spans(self, text: str, enc: CharEncoded, path: np.ndarray, source: str) -> list[Span]:
        """Spans read leniently from the character tags, trimmed of white space at the edges."""
        out: list[Span] = []
        names = self.tag_names
        scores = enc.marginals[np.arange(len(path)), path] if len(path) else np.zeros(0)
        for (a, b), (r0, _r1) in zip(enc.windows, enc.bounds):
            cur: str | None = None
            start = 0
            best = 1.0
            for c in range(a, b + 1):
                tag = names[int(path[r0 + c - a])] if c < b else OUTSIDE
                prefix, _, label = tag.partition("-")
                if cur is not None and (tag == OUTSIDE or prefix == "B" or label != cur):
                    span = _trimmed(text, start, c, cur, source, best)
                    if span is not None:
                        out.append(span)
                    cur = None
                if tag != OUTSIDE and cur is None:
                    cur, start, best = label, c, 1.0
                if cur is not None:
                    best = min(best, float(scores[r0 + c - a]))
        return out


def _trimmed(text: str, start: int, end: int, label: str, source: str, score: float) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Span(start, end, label, source, score) if end > start else None


def train_char_crf(
    notes: Sequence[tuple[str, Sequence[Token], Sequence[Span], Sequence[Span]]],
    config: CharCRFConfig,
    model_path: str | Path,
    progress: ProgressFn | None = None,
    views: Sequence[TokenView] | None = None,
) -> tuple[CharTagger, dict[str, Any]]:
    """Train on ``(text, tokens, raw rule spans, gold spans)`` per note; returns the tagger and counts.

    ``views`` (one per note, required when ``config.stack``) are the token
    CRF's out-of-fold labels: features, and the triggers of the windows.
    """
    if config.stack and (views is None or len(views) != len(notes)):
        raise ModelError("a stacked character CRF needs one out-of-fold token view per training note")
    xs: list[list[list[str]]] = []
    ys: list[list[str]] = []
    pad = config.ngram_window + 2
    n_chars = 0
    rng = np.random.default_rng(config.seed)
    for i, (text, tokens, rule_spans, gold) in enumerate(notes):
        view = views[i] if config.stack and views is not None else None
        if config.mode == "all":
            windows = line_windows(tokens)
        elif view is not None:
            windows = stack_windows(tokens, view, config.context)
        else:
            windows = token_windows(tokens, training_triggers(tokens, gold, config.negative_share, rng), config.context)
        if not windows:
            continue
        nc = note_chars(text, tokens, rule_spans, pad, view)
        tags = char_tags(len(text), windows, gold)
        pos = 0
        for a, b in windows:
            xs.append(char_items(char_columns(nc, a, b, config.ngram_window)))
            ys.append(tags[pos : pos + b - a])
            pos += b - a
        n_chars += pos
    if not any(t != OUTSIDE for y in ys for t in y):
        raise ModelError("the character CRF has no PHI characters to learn from")
    train_crf(xs, ys, model_path, config.crf_params(), progress=progress)
    data = Path(model_path).read_bytes()
    weights = read_weights(model_path)
    stats = {"sequences": len(xs), "characters": n_chars, "attributes": len(weights.attributes)}
    return CharTagger(data, config, weights), stats


def resolve(
    char_spans: Sequence[Span],
    crf_spans: Sequence[Span],
    policy: str,
    tokens: Sequence[Token] = (),
    min_score: float = 0.0,
) -> tuple[list[Span], list[Span]]:
    """Which character and token CRF spans go on to the merge under ``policy`` (see ``CharCRFConfig``)."""
    if policy == "subtoken":
        starts = {t.start for t in tokens}
        ends = {t.end for t in tokens}
        char_spans = [c for c in char_spans if c.start not in starts or c.end not in ends]
        policy = "priority"
    if policy in ("fill", "add"):
        char_spans = [c for c in char_spans if c.score >= min_score]
    if policy == "fill":
        return _fill(char_spans, crf_spans)
    if policy == "priority" or not char_spans:
        return list(char_spans), list(crf_spans)
    ordered = sorted(crf_spans, key=lambda s: s.start)
    starts = [s.start for s in ordered]
    beaten: set[int] = set()
    kept = []
    for c in char_spans:
        hits = _overlapping(ordered, starts, c)
        if not hits:
            kept.append(c)
        elif policy == "score" and all(c.score > ordered[h].score for h in hits):
            kept.append(c)
            beaten.update(hits)
    return kept, [s for k, s in enumerate(ordered) if k not in beaten]


def _overlapping(ordered: Sequence[Span], starts: Sequence[int], span: Span) -> list[int]:
    """Indexes of the spans in ``ordered`` (non-overlapping, by start; ``starts`` theirs) that ``span`` overlaps."""
    i = bisect_left(starts, span.start)
    while i > 0 and ordered[i - 1].end > span.start:
        i -= 1
    hits = []
    while i < len(ordered) and ordered[i].start < span.end:
        if ordered[i].end > span.start:
            hits.append(i)
        i += 1
    return hits


def _fill(char_spans: Sequence[Span], crf_spans: Sequence[Span]) -> tuple[list[Span], list[Span]]:
    """The "fill" policy: char spans fill gaps, or move the edges of the one same-label token span they overlap.

    A char span that overlaps two token spans, or one of another label, is
    dropped: the token CRF keeps what it found. Several char spans may split
    one token span between them.
    """
    ordered = sorted(crf_spans, key=lambda s: (s.start, s.end))
    starts = [s.start for s in ordered]
    replaced: set[int] = set()
    kept = []
    for c in sorted(char_spans, key=lambda s: (s.start, s.end)):
        hits = _overlapping(ordered, starts, c)
        if not hits:
            kept.append(c)
        elif len(hits) == 1 and ordered[hits[0]].label == c.label:
            t = ordered[hits[0]]
            if (t.start, t.end) != (c.start, c.end):  # same edges: the token CRF's span stays
                kept.append(c)
                replaced.add(hits[0])
    return kept, [s for k, s in enumerate(ordered) if k not in replaced]
