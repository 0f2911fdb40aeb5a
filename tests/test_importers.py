"""Importing files into a project: every format, gold/predictions/none, duplicates, malformed input."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from deid_core.corpus import write_jsonl
from deid_core.errors import CorpusFormatError, StoreError
from deid_core.formats import write_brat, write_i2b2_xml
from deid_core.spans import Document, Span
from deid_core.store import repository as repo
from deid_core.store.importers import import_paths

TEXTS = [
    "Pt. Alex Moss seen 2067-05-03.",
    "Dr. Ruth Kahn called 555-0101.",
    "Seen at Mercy Hospital by Dr. Lee.",
]
SPANS = [
    (Span(4, 13, "PATIENT"), Span(19, 29, "DATE")),
    (Span(4, 13, "DOCTOR"), Span(21, 29, "PHONE")),
    (Span(8, 22, "HOSPITAL"), Span(30, 33, "DOCTOR")),
]


def gold_docs() -> list[Document]:
    return [Document(f"doc{i}", t, s, {"patient_id": f"P{i}"})
            for i, (t, s) in enumerate(zip(TEXTS, SPANS))]


def _write(fmt: str, root: Path) -> Path:
    docs = gold_docs()
    if fmt == "jsonl":
        write_jsonl(root / "c.jsonl", docs)
        return root / "c.jsonl"
    if fmt == "brat":
        for d in docs:
            write_brat(d, root / "brat")
        return root / "brat"
    if fmt == "i2b2":
        (root / "xml").mkdir()
        for d in docs:
            (root / "xml" / f"{d.id}.xml").write_text(write_i2b2_xml(d), encoding="utf-8")
        return root / "xml"
    if fmt == "txt":
        with zipfile.ZipFile(root / "notes.zip", "w") as zf:
            for d in docs:
                zf.writestr(f"{d.id}.txt", d.text)
        return root / "notes.zip"
    rows = ["id,mrn,note"] + [f'{d.id},P{i},"{d.text}"' for i, d in enumerate(docs)]
    (root / "c.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    return root / "c.csv"


@pytest.fixture
def project(store):  # type: ignore[no-untyped-def]
    repo.create_project(store, "imp")
    return "imp"


CSV_OPTS = {"text_column": "note", "id_column": "id", "patient_column": "mrn"}


@pytest.mark.parametrize(
    "fmt,annotations",
    [
        ("jsonl", "gold"), ("jsonl", "predictions"), ("jsonl", "none"),
        ("brat", "gold"), ("brat", "predictions"),
        ("i2b2", "gold"), ("i2b2", "predictions"),
        ("txt", "none"), ("csv", "none"),
    ],
)
def test_import_each_format(store, project, tmp_path, fmt, annotations) -> None:  # type: ignore[no-untyped-def]
    path = _write(fmt, tmp_path)
    fractions: list[float] = []
    res = import_paths(store, project, [path], fmt=fmt, annotations=annotations,
                       progress=lambda _m, f: fractions.append(f),
                       **(CSV_OPTS if fmt == "csv" else {}))
    assert res.n_imported == 3 and res.n_duplicates == 0
    assert fractions[-1] == 1.0
    layers = repo.get_document(store, repo.find_document(store, project, "doc1"))
    assert layers.document.text == TEXTS[1]
    expected = [s.key for s in SPANS[1]]
    if annotations == "gold":
        assert [s.key for s in layers.document.spans] == expected
        assert sorted(d.id for d in repo.reviewed_corpus(store, project)) == ["doc0", "doc1", "doc2"]
    elif annotations == "predictions":
        assert layers.prediction is not None
        assert [s.key for s in layers.prediction.spans] == expected
        assert layers.status == "new"
    else:
        assert layers.document.spans == () and layers.prediction is None
    if fmt in ("jsonl", "csv"):
        assert layers.document.meta["patient_id"] == "P1"
    # A second import of the same files is all duplicates.
    again = import_paths(store, project, [path], fmt=fmt, annotations=annotations,
                         **(CSV_OPTS if fmt == "csv" else {}))
    assert again.n_imported == 0 and again.n_duplicates == 3


def _bad_jsonl(root: Path, spans: list[dict]) -> Path:
    p = root / "bad.jsonl"
    good = json.dumps({"id": "ok", "text": "fine note"})
    bad = json.dumps({"id": "b", "text": "Alex Moss here", "spans": spans})
    p.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    return p


def _bad_ann(root: Path, ann: str) -> Path:
    d = root / "brat"
    d.mkdir()
    (d / "a.txt").write_text("fine note", encoding="utf-8")
    (d / "b.txt").write_text("Alex Moss here", encoding="utf-8")
    (d / "b.ann").write_text(ann, encoding="utf-8")
    return d


def _bad_xml(root: Path, content: str) -> Path:
    d = root / "xml"
    d.mkdir()
    (d / "a.xml").write_text(write_i2b2_xml(Document("a", "fine note")), encoding="utf-8")
    (d / "b.xml").write_text(content, encoding="utf-8")
    return d


XML_OK = write_i2b2_xml(Document("b", "Alex Moss here", (Span(0, 9, "PATIENT"),)))
XXE = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
       "<deIdi2b2><TEXT>&x;</TEXT><TAGS/></deIdi2b2>")
BOMB = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;">]><deIdi2b2><TEXT>&c;</TEXT><TAGS/></deIdi2b2>')


def _truncated_zip(root: Path) -> Path:
    z = root / "n.zip"
    with zipfile.ZipFile(z, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for i in range(4):
            zf.writestr(f"n{i}.txt", f"note {i} " * 300)
    data = z.read_bytes()
    z.write_bytes(data[: len(data) - 40])
    return z


def _latin1(root: Path) -> Path:
    d = root / "txt"
    d.mkdir()
    (d / "a.txt").write_text("fine note", encoding="utf-8")
    (d / "b.txt").write_bytes("first\nJosé Pérez".encode("latin-1"))
    return d


MALFORMED = [
    ("jsonl", lambda r: _bad_jsonl(r, [{"start": 5, "end": 99, "label": "PATIENT"}]),
     {}, "out of range", 2),
    ("jsonl", lambda r: _bad_jsonl(r, [{"start": 0, "end": 9, "label": "PATIENT"},
                                       {"start": 5, "end": 14, "label": "PATIENT"}]),
     {}, "overlap", 2),
    ("jsonl", lambda r: _bad_jsonl(r, [{"start": 0, "end": 9, "label": "PATIENT"},
                                       {"start": 0, "end": 9, "label": "PATIENT"}]),
     {}, "duplicate span", 2),
    ("brat", lambda r: _bad_ann(r, "T1\tPATIENT 0 9\tAlex Moss\nT2\tDATE 10 40\tx\n"),
     {}, "out of range", 2),
    ("brat", lambda r: _bad_ann(r, "T1\tPATIENT 0 9\tAlex Moss\nT2\tNAME 5 14\tMoss here\n"),
     {}, "overlap", 2),
    ("brat", lambda r: _bad_ann(r, "T1\tPATIENT 0 9\tAlex Moss\nT2\tPATIENT 0 9\tAlex Moss\n"),
     {}, "duplicate span", 2),
    ("i2b2", lambda r: _bad_xml(r, XML_OK.replace('end="9"', 'end="99"')), {}, "out of range", 5),
    ("i2b2", lambda r: _bad_xml(r, XXE), {}, "refused for safety", None),
    ("i2b2", lambda r: _bad_xml(r, BOMB), {}, "refused for safety", None),
    ("txt", _truncated_zip, {}, "truncated or corrupt", None),
    ("txt", _latin1, {}, "UTF-8", 2),
    ("csv", lambda r: _write("csv", r), {"text_column": "body"}, "text column 'body'", 1),
]


@pytest.mark.parametrize("fmt,make,opts,fragment,line", MALFORMED)
def test_malformed_input_stores_nothing(store, project, tmp_path, fmt, make, opts, fragment,
                                        line) -> None:  # type: ignore[no-untyped-def]
    path = make(tmp_path)
    with pytest.raises(CorpusFormatError) as err:
        import_paths(store, project, [path], fmt=fmt, annotations="none", **opts)
    assert fragment in str(err.value)
    assert err.value.path is not None and err.value.line == line
    for secret in ("Alex", "Moss", "José", "root:"):
        assert secret not in str(err.value)
    assert repo.count_documents(store, project) == 0


def test_second_file_error_rolls_back_first_file(store, project, tmp_path) -> None:  # type: ignore[no-untyped-def]
    good = tmp_path / "good.jsonl"
    write_jsonl(good, gold_docs())
    bad = _bad_jsonl(tmp_path, [{"start": 0, "end": 99, "label": "X"}])
    with pytest.raises(CorpusFormatError):
        import_paths(store, project, [good, bad], fmt="jsonl", annotations="gold")
    assert repo.count_documents(store, project) == 0
    assert list(repo.reviewed_corpus(store, project)) == []


@pytest.mark.parametrize("fmt", ["txt", "csv"])
def test_spanless_formats_cannot_be_gold(store, project, tmp_path, fmt) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="no annotations"):
        import_paths(store, project, [_write(fmt, tmp_path)], fmt=fmt, annotations="gold")


def test_unknown_format_and_no_paths(store, project) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(StoreError, match="unknown import format"):
        import_paths(store, project, ["x"], fmt="docx")
    with pytest.raises(StoreError, match="nothing to import"):
        import_paths(store, project, [], fmt="jsonl")
