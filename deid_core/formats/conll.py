"""CoNLL BIO: one token and its tag per line, a blank line between sentences.

Tokens and sentences come from the project's clinical tokenizer, so the tags
agree with what the CRF trains on. Each document starts with a
``-DOCSTART-`` line (as in CoNLL 2003) that carries the document id, so a
reader can split the file back into documents. A span that does not align
with token boundaries is snapped to the tokens it touches and counted, never
silently dropped (see ``tagging.spans_to_tags``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from deid_core.corpus import atomic_write_text
from deid_core.engine.tagging import spans_to_tags
from deid_core.engine.tokenize import tokenize
from deid_core.errors import CorpusFormatError
from deid_core.spans import Document

DOCSTART = "-DOCSTART-"


@dataclass
class ConllStats:
    documents: int = 0
    tokens: int = 0
    misaligned: int = 0  # spans snapped to token edges
    dropped: int = 0  # spans that could not be tagged (inside one token with another span)


def conll_lines(doc: Document, *, lang: str = "en", scheme: str = "BIO", stats: ConllStats | None = None) -> Iterator[str]:
    tok = tokenize(doc.text, lang)
    alignment = spans_to_tags(tok.tokens, doc.spans, scheme, snap=True)
    if stats is not None:
        stats.documents += 1
        stats.tokens += len(tok.tokens)
        stats.misaligned += len(alignment.misaligned)
        stats.dropped += len(alignment.dropped)
    yield f"{DOCSTART}\t{doc.id}\n"
    for a, b in tok.sentences:
        yield "\n"
        for k in range(a, b):
            yield f"{tok.tokens[k].text}\t{alignment.tags[k]}\n"
    yield "\n"


def write_conll(
    path: str | os.PathLike[str], docs: Iterable[Document], *, lang: str = "en", scheme: str = "BIO"
) -> ConllStats:
    """Write all documents to one file atomically; returns token and alignment counts."""
    stats = ConllStats()
    docs = list(docs)
    for doc in docs:
        if "\t" in doc.id or "\n" in doc.id:
            raise CorpusFormatError("document id contains a tab or newline", doc_id=doc.id)

    def write(fh: Any) -> None:
        for doc in docs:
            for line in conll_lines(doc, lang=lang, scheme=scheme, stats=stats):
                fh.write(line)

    atomic_write_text(path, write)
    return stats


def read_conll(path: str | os.PathLike[str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """``[(doc_id, [(token, tag), ...]), ...]``: enough to check a file, not to rebuild text."""
    out: list[tuple[str, list[tuple[str, str]]]] = []
    p = str(path)
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.rstrip("\n")
            if not line:
                continue
            token, sep, tag = line.partition("\t")
            if not sep:
                raise CorpusFormatError("expected 'token<TAB>tag'", path=p, line=lineno)
            if token == DOCSTART:
                out.append((tag, []))
            elif not out:
                raise CorpusFormatError(f"token before the first {DOCSTART}", path=p, line=lineno)
            else:
                out[-1][1].append((token, tag))
    return out
