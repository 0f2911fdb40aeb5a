"""spaCy ``DocBin``: documents with entities, for training spaCy pipelines.

Docs are built with the project's clinical tokenizer (a ``spacy.blank`` pipeline
with extra infix rules) and entities with ``Doc.char_span(...,
alignment_mode="expand")``, so a span that ends inside a token grows to cover
that token instead of being lost; spans that then overlap are resolved with
``spacy.util.filter_spans`` (longest first) and the losses counted. The
document id is kept in ``doc.user_data["id"]``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from spacy.tokens import DocBin
from spacy.util import filter_spans

from deid_core.corpus import atomic_write_text
from deid_core.engine.tokenize import spacy_doc
from deid_core.errors import CorpusFormatError
from deid_core.spans import Document, Span


@dataclass
class DocBinStats:
    documents: int = 0
    entities: int = 0
    expanded: int = 0  # spans widened to token edges
    dropped: int = 0  # spans lost to an overlap after widening, or with no token at all


def build_docbin(docs: Iterable[Document], *, lang: str = "en") -> tuple[DocBin, DocBinStats]:
    stats = DocBinStats()
    db = DocBin(attrs=["ORTH", "ENT_IOB", "ENT_TYPE"], store_user_data=True)
    for doc in docs:
        sdoc = spacy_doc(doc.text, lang)
        ents = []
        for s in doc.spans:
            ent = sdoc.char_span(s.start, s.end, label=s.label, alignment_mode="expand")
            if ent is None or not ent.text.strip():
                stats.dropped += 1
                continue
            if (ent.start_char, ent.end_char) != (s.start, s.end):
                stats.expanded += 1
            ents.append(ent)
        kept = filter_spans(ents)
        stats.dropped += len(ents) - len(kept)
        sdoc.ents = kept
        sdoc.user_data["id"] = doc.id
        db.add(sdoc)
        stats.documents += 1
        stats.entities += len(kept)
    return db, stats


def write_docbin(path: str | os.PathLike[str], docs: Iterable[Document], *, lang: str = "en") -> DocBinStats:
    db, stats = build_docbin(docs, lang=lang)
    data = db.to_bytes()
    atomic_write_text(path, lambda fh: fh.write(data), mode="wb")
    return stats


def read_docbin(path: str | os.PathLike[str], *, lang: str = "en") -> list[Document]:
    """Documents back from a ``.spacy`` file (spans carry source ``"docbin"``)."""
    import spacy

    try:
        db = DocBin().from_disk(path)
    except (OSError, ValueError) as exc:
        raise CorpusFormatError(f"not a spaCy DocBin ({type(exc).__name__})", path=str(path)) from None
    nlp = spacy.blank(lang)
    out = []
    for i, sdoc in enumerate(db.get_docs(nlp.vocab)):
        doc_id = str(sdoc.user_data.get("id", i))
        spans = tuple(Span(e.start_char, e.end_char, e.label_, "docbin") for e in sdoc.ents)
        out.append(Document(doc_id, sdoc.text, spans))
    return out
